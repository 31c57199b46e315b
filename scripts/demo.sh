#!/usr/bin/env bash
# The README's first command: installs what idlescope needs, builds it (into build/, like
# scripts/test.sh), traces the bundled example job that mixes several root causes
# (examples/cuda/mixed.cu: pageable host-GPU copies, a synchronous checkpoint, small batches) and
# prints idlescope's report.
#
# On a machine where `nvidia-smi -L` lists a GPU the job runs on it; otherwise on simgpu, the
# simulated CUDA stack (tests/simgpu/), whose libraries go first on LD_LIBRARY_PATH.
#
#   scripts/demo.sh            the bad job and its report
#   scripts/demo.sh --fixed    the same job with its three causes fixed, for comparison
# Traces are written to build/demo/<bad|fixed>/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${IDLESCOPE_JOBS:-$(nproc)}

variant=bad
example_args=()
if [ "${1:-}" = "--fixed" ]; then
  variant=fixed
  example_args+=(--fixed)
elif [ $# -gt 0 ]; then
  echo "usage: scripts/demo.sh [--fixed]" >&2
  exit 2
fi

scripts/install-deps.sh

echo "== build (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs" --target idlescope idlescope_preload cuda_examples

example=$root/build/examples/cuda/mixed
if [ ! -x "$example" ]; then
  echo "demo: $example was not built (nvcc not found? the CUDA toolkit is expected in" \
    "/usr/local/cuda)" >&2
  exit 1
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== running on the GPU: $(nvidia-smi -L | head -n 1)"
else
  cmake --build build -j "$jobs" --target simgpu
  simgpu_lib=$root/build/tests/simgpu/lib
  export LD_LIBRARY_PATH="$simgpu_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "== no GPU found (nvidia-smi -L): running on simgpu ($simgpu_lib)"
fi

out=$root/build/demo/$variant
rm -rf "$out"
job_dir=$root/build/demo/$variant-job
rm -rf "$job_dir"
mkdir -p "$out" "$job_dir"
echo "== idlescope run -o $out -- examples/cuda/mixed ${example_args[*]}"
# The job writes its checkpoints under its working directory.
(cd "$job_dir" && "$root/build/bin/idlescope" run -o "$out" -- "$example" "${example_args[@]}")

echo "== idlescope report $out"
build/bin/idlescope report "$out"
