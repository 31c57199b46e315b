#!/usr/bin/env bash
# Builds the idlescope of an older commit in a scratch directory, for the benchmarks that compare
# against it in the same run (report_bench.sh, tests/diff/diff_bench.sh). Only the analyzer and
# gen_trace are built (no CUDA parts). Prints the path of its idlescope.
#   build_baseline.sh COMMIT DIR     (run inside the repository)
set -euo pipefail
commit=$1
dir=$2
rm -rf "$dir/src"
mkdir -p "$dir/src"
git archive "$commit" | tar -x -C "$dir/src"
cmake -S "$dir/src" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DIDLESCOPE_WITH_CUDA=OFF >"$dir/cmake.log"
cmake --build "$dir/build" -j2 --target idlescope gen_trace >"$dir/build.log"
echo "$dir/build/bin/idlescope"
