#!/bin/bash
# cmake --install into a temporary prefix, then the installed `idlescope run` + `report` on an
# example (examples/cuda/host_transfer on simgpu when it is built, else a shell job that reads a
# file), with IDLESCOPE_LIB unset: the installed CLI must find the installed preload library by
# itself. The installed binaries carry no DWARF (it lies beside them in <file>.debug, named by
# their .gnu_debuglink) but keep their symbol table; the CLI is statically linked;
# dask_report.py is installed beside it and finds it. Then `cpack` in a scratch directory, the
# tarball unpacked elsewhere, and its bin/idlescope run on a golden trace (no build tree on any
# path).
#   install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR [SIMGPU_LIB_DIR EXAMPLES_DIR]
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) work=$3 simgpu=${4:-} examples=${5:-}
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
[ -z "$examples" ] || examples=$(cd "$examples" && pwd)
[ -z "$simgpu" ] || simgpu=$(cd "$simgpu" && pwd)
unset IDLESCOPE_LIB

echo "$ cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/idlescope bin/idlescope.debug bin/dask_report.py lib/libidlescope.so \
         lib/libidlescope.so.debug share/doc/idlescope/README.md \
         share/doc/idlescope/docs/html-report.md; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
echo "installed: $(cd "$work/prefix" && find . -type f | wc -l) files, $(du -sh "$work/prefix" | cut -f1)"

# Stripped of DWARF, symbol table kept, debug information beside (found through the debuglink).
for f in bin/idlescope lib/libidlescope.so; do
  sections=$(readelf -SW "$work/prefix/$f")
  if grep -q '\.debug_info' <<< "$sections"; then echo "FAIL: $f keeps its DWARF"; exit 1; fi
  grep -q '\.symtab' <<< "$sections" || { echo "FAIL: $f lost its symbol table"; exit 1; }
  link=$(readelf -p .gnu_debuglink "$work/prefix/$f" 2>/dev/null | grep -o "$(basename "$f").debug")
  [ -n "$link" ] || { echo "FAIL: $f does not name $(basename "$f").debug"; exit 1; }
  readelf -SW "$work/prefix/$f.debug" | grep '\.debug_info' > /dev/null ||
    { echo "FAIL: $f.debug has no DWARF"; exit 1; }
  echo "$f: $(stat -c %s "$work/prefix/$f") bytes, $f.debug: $(stat -c %s "$work/prefix/$f.debug") bytes"
done
# Statically linked: no loader, so it runs whatever the system's glibc and libstdc++.
if readelf -lW "$work/prefix/bin/idlescope" | grep INTERP > /dev/null; then
  echo "FAIL: the installed idlescope is dynamically linked"; exit 1
fi
# dask_report.py runs the idlescope beside it by default.
found=$(python3 -c 'import importlib.util as u, sys
spec = u.spec_from_file_location("dask_report", sys.argv[1])
module = u.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.default_binary())' "$work/prefix/bin/dask_report.py")
[ "$found" = "$work/prefix/bin/idlescope" ] ||
  { echo "FAIL: the installed dask_report.py runs $found"; exit 1; }
echo "dask_report.py runs $found"

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
for f in bin/idlescope bin/idlescope.debug bin/dask_report.py lib/libidlescope.so \
         lib/libidlescope.so.debug; do
  [ -e "$root/$f" ] || { echo "FAIL: the tarball has no $f"; exit 1; }
done
# Into a file, then head: a pipe to head could end the report with SIGPIPE (pipefail).
"$root/bin/idlescope" report "$src/tests/golden/transfer_checkpoint" > "$work/unpacked.txt" 2> /dev/null
head -3 "$work/unpacked.txt"
# The installed and unpacked copies (300 MB with their debug files) are not needed any more.
rm -rf "$work/prefix" "$work/package" "$work/unpacked"
echo ok
