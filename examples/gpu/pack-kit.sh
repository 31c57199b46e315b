#!/bin/bash
# examples/gpu/pack-kit.sh BUILD_DIR KIT_DIR: packs a built idlescope (bin/idlescope,
# lib/libidlescope.so, the nvcc-built CUDA examples and test programs) into KIT_DIR for a GPU
# machine that cannot build it (no abseil/protobuf development packages, no network). The CLI's
# own shared libraries (libprotobuf, libabsl_*) are copied into KIT_DIR/cli-lib and found through
# its RUNPATH, so nothing is set in the environment of the traced job. libidlescope.so needs only
# libc and the loader. On the GPU machine:
#   examples/gpu/check.sh --skip-build --build-dir KIT_DIR
set -euo pipefail
build=$1 kit=$2
command -v patchelf >/dev/null || { echo "pack-kit.sh: needs patchelf (apt-get install patchelf)" >&2; exit 1; }
rm -rf "$kit" && mkdir -p "$kit/bin" "$kit/lib" "$kit/cli-lib" "$kit/examples" "$kit/tests/cuda"
cp "$build/bin/idlescope" "$kit/bin/"
cp "$build/lib/libidlescope.so" "$kit/lib/"
cp -r "$build/examples/cuda" "$kit/examples/"
rm -rf "$kit/examples/cuda/CMakeFiles" "$kit/examples/cuda/"*.cmake
for p in cuda_copies cuda_memcpy_bench; do
  [ -x "$build/tests/cuda/$p" ] && cp "$build/tests/cuda/$p" "$kit/tests/cuda/"
done
# Only the libraries a stock CUDA image lacks: protobuf and abseil (libstdc++, libz, libc are there).
ldd "$build/bin/idlescope" | awk '/libprotobuf|libabsl/ { print $3 }' | xargs -r cp -L -t "$kit/cli-lib"
patchelf --set-rpath '$ORIGIN/../cli-lib' "$kit/bin/idlescope"
for so in "$kit/cli-lib"/*.so*; do patchelf --set-rpath '$ORIGIN' "$so"; done
du -sh "$kit"
