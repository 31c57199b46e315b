#!/bin/bash
# examples/gpu/pack-kit.sh BUILD_DIR KIT_DIR: packs a built idlescope for a GPU machine that
# cannot build it (no abseil/protobuf development packages, no network). The kit is the `cpack`
# tarball of BUILD_DIR unpacked (bin/idlescope, statically linked, and lib/libidlescope.so, which
# needs glibc 2.17 at the most: cmake/install.cmake), plus the nvcc-built CUDA examples and test
# programs that examples/gpu/check.sh runs. On the GPU machine:
#   examples/gpu/check.sh --skip-build --build-dir KIT_DIR
set -euo pipefail
build=$(cd "$1" && pwd) kit=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cpack -G TGZ --config "$build/CPackConfig.cmake" -B "$scratch" > "$scratch/cpack.log"
rm -rf "$kit" && mkdir -p "$kit"
tar -xzf "$scratch"/idlescope-*.tar.gz -C "$kit" --strip-components=1
mkdir -p "$kit/examples" "$kit/tests/cuda"
cp -r "$build/examples/cuda" "$kit/examples/"
rm -rf "$kit/examples/cuda/CMakeFiles" "$kit/examples/cuda/"*.cmake
for p in cuda_copies cuda_memcpy_bench; do
  [ -x "$build/tests/cuda/$p" ] && cp "$build/tests/cuda/$p" "$kit/tests/cuda/"
done
du -sh "$kit"
