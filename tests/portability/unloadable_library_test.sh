#!/bin/bash
# `idlescope run` never turns a job away: with a preload library the dynamic loader cannot load
# here (a copy of libidlescope.so whose need of GLIBC_2.17 is renamed GLIBC_9.17, a version no
# glibc has: what a system below the library's floor sees), the command runs untraced, with its
# own output, environment and exit status, after one line of idlescope's that gives the loader's
# reason. Without the probe the job itself would fail to start (ld.so exits 1 or 127). And a run
# of a static program, which no preload library can trace, says so.
#   unloadable_library_test.sh IDLESCOPE PRELOAD_LIB WORK_DIR
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND exited $?"' ERR
idlescope=$1 lib=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)

# The unloadable copy: the version name patched in .dynstr (same length, so nothing moves).
cp "$lib" "$work/libidlescope.so"
perl -pi -e 's/GLIBC_2\.17\0/GLIBC_9.17\0/' "$work/libidlescope.so"
readelf -V -W "$work/libidlescope.so" | grep 'Name: GLIBC_9.17' > /dev/null ||
  { echo "FAIL: could not make the copy unloadable (no GLIBC_2.17 need in $lib?)"; exit 1; }
direct=0
LD_PRELOAD="$work/libidlescope.so" /bin/true 2> "$work/direct.err" || direct=$?
echo "LD_PRELOAD=copy /bin/true: exit $direct, $(head -1 "$work/direct.err")"
[ "$direct" -ne 0 ] || { echo "FAIL: the copy loads after all; the test proves nothing"; exit 1; }

job='echo "job ran, LD_PRELOAD=[${LD_PRELOAD:-}] IDLESCOPE_OUT=[${IDLESCOPE_OUT:-}]"; exit 7'
echo "$ IDLESCOPE_LIB=copy idlescope run -o $work/trace -- sh -c '...; exit 7'"
status=0
IDLESCOPE_LIB="$work/libidlescope.so" LD_PRELOAD= "$idlescope" run -o "$work/trace" -- \
  sh -c "$job" > "$work/out" 2> "$work/err" || status=$?
cat "$work/out" "$work/err"
[ "$status" -eq 7 ] || { echo "FAIL: exit status $status, the job's was 7"; exit 1; }
grep -qx 'job ran, LD_PRELOAD=\[\] IDLESCOPE_OUT=\[\]' "$work/out" ||
  { echo "FAIL: the job did not run untraced with its own environment"; exit 1; }
[ "$(wc -l < "$work/err")" -eq 1 ] || { echo "FAIL: not one line on stderr"; exit 1; }
grep -q "cannot be loaded here (.*version .GLIBC_9.17' not found.*); running sh untraced" \
  "$work/err" || { echo "FAIL: the line does not give the loader's reason"; exit 1; }
if ls "$work/trace" | grep . > /dev/null; then
  echo "FAIL: files in the output directory: $(ls -A "$work/trace")"; exit 1
fi

# The default output directory, which run creates itself, is not left behind empty.
(cd "$work" && IDLESCOPE_LIB="$work/libidlescope.so" "$idlescope" run -- true 2> /dev/null)
if ls -d "$work"/idlescope-* > /dev/null 2>&1; then
  echo "FAIL: an empty default output directory was left: $(ls -d "$work"/idlescope-*)"; exit 1
fi

# The real library, the same job: traced, and nothing said about loading.
IDLESCOPE_LIB="$lib" "$idlescope" run -o "$work/traced" -- sh -c "$job" > "$work/out2" 2> "$work/err2" ||
  true
grep -q "cannot be loaded" "$work/err2" && { echo "FAIL: the loadable library was refused"; exit 1; }
ls "$work/traced"/*.idlescope > /dev/null || { echo "FAIL: no trace with the real library"; exit 1; }

# A statically linked program (the CLI itself) loads no preload library: the summary says that,
# not a guess.
IDLESCOPE_LIB="$lib" "$idlescope" run -o "$work/static" -- "$idlescope" --version > /dev/null \
  2> "$work/err3"
cat "$work/err3"
grep -q "no trace file was written to .*: it is statically linked" "$work/err3" ||
  { echo "FAIL: the summary does not say the program is static"; exit 1; }
echo ok
