#!/bin/bash
# cmake --install into a temporary prefix, then the installed `idlescope run` + `report` on an
# example (examples/cuda/host_transfer on simgpu when it is built, else a shell job that reads a
# file), with IDLESCOPE_LIB unset: the installed CLI must find the installed preload library by
# itself. Then `cpack` in a scratch directory, the tarball unpacked elsewhere, and its
# bin/idlescope run on a golden trace with its bundled libraries (no build tree on any path).
#   install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [SIMGPU_LIB_DIR EXAMPLES_DIR]
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) work=$3 simgpu=${4:-} examples=${5:-}
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
[ -z "$examples" ] || examples=$(cd "$examples" && pwd)
[ -z "$simgpu" ] || simgpu=$(cd "$simgpu" && pwd)
unset IDLESCOPE_LIB

echo "$ cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/idlescope lib/libidlescope.so share/doc/idlescope/README.md \
         share/doc/idlescope/docs/html-report.md; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
echo "installed: $(cd "$work/prefix" && find . -type f | wc -l) files, $(du -sh "$work/prefix" | cut -f1)"

installed=$work/prefix/bin/idlescope
"$installed" --version
cd "$work"
if [ -n "$simgpu" ] && [ -x "$examples/host_transfer" ]; then
  echo "$ $installed run -o trace -- host_transfer (simgpu)"
  LD_LIBRARY_PATH="$simgpu" "$installed" run -o "$work/trace" -- "$examples/host_transfer" > run.log
  expect=host_gpu_transfer
else
  echo "$ $installed run -o trace -- sh -c 'cat README.md > /dev/null'"
  "$installed" run -o "$work/trace" -- sh -c "cat '$src/README.md' > /dev/null"
  expect=no_gpu_work
fi
ls "$work/trace"/*.idlescope > /dev/null || { echo "FAIL: the installed run wrote no trace"; exit 1; }
"$installed" report --format json -o "$work/report.json" "$work/trace" 2> /dev/null
grep -q "\"cause\": \"$expect\"" "$work/report.json" ||
  { echo "FAIL: the installed report does not name $expect"; exit 1; }
echo "installed run + report: $expect found"

echo "$ cpack -G TGZ --config $build/CPackConfig.cmake -B $work/package"
cpack -G TGZ --config "$build/CPackConfig.cmake" -B "$work/package" > "$work/cpack.log"
tarball=$(ls "$work"/package/idlescope-*.tar.gz)
echo "tarball: $(basename "$tarball"), $(stat -c %s "$tarball") bytes"
mkdir -p "$work/unpacked" && tar -xzf "$tarball" -C "$work/unpacked"
root=$(ls -d "$work"/unpacked/idlescope-*)
# The unpacked CLI must load its bundled libraries, not the build tree's or the system's.
if ldd "$root/bin/idlescope" | grep -E "libprotobuf|libabsl" | grep -v "=> $root/" |
   grep -q .; then
  echo "FAIL: the unpacked idlescope loads protobuf/abseil from outside the tarball:"
  ldd "$root/bin/idlescope" | grep -E "libprotobuf|libabsl" | head -5
  exit 1
fi
# Into a file, then head: a pipe to head could end the report with SIGPIPE (pipefail).
"$root/bin/idlescope" report "$src/tests/golden/transfer_checkpoint" > "$work/unpacked.txt" 2> /dev/null
head -3 "$work/unpacked.txt"
[ -e "$root/lib/libidlescope.so" ] || { echo "FAIL: the tarball has no lib/libidlescope.so"; exit 1; }
echo ok
