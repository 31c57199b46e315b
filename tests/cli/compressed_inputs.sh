#!/usr/bin/env bash
# Traces read compressed (zstd), from standard input and through a pipe (issue 27, item 5;
# analyzer/cli/input_copies.h): `report`, `export`, `dump` and `diff` of each form print what they
# print for the plain files, leave nothing in TMPDIR, and a bad input is one line and exit 1.
#   compressed_inputs.sh IDLESCOPE JOB_DIR WORK
# JOB_DIR: a job's trace directory (several files); its first file stands for a one-file job.
set -euo pipefail
idlescope=$1
job=$2
work=$3
rm -rf "$work"
mkdir -p "$work/tmp" "$work/zst"
export TMPDIR="$work/tmp"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# The same output as the plain input's, and TMPDIR left empty.
same() {
  local what=$1 expected=$2 got=$3
  if ! cmp -s "$expected" "$got"; then
    fail "$what differs from the plain input's:"
    diff "$expected" "$got" | head -5
  elif [ -n "$(ls -A "$TMPDIR")" ]; then
    fail "$what left $(ls -A "$TMPDIR") in TMPDIR"
  else
    echo "ok: $what ($(wc -l < "$got") lines)"
  fi
}

for f in "$job"/*.idlescope; do zstd -q -19 "$f" -o "$work/zst/$(basename "$f").zst"; done
one=$(ls "$job"/*.idlescope | head -1)
one_zst="$work/zst/$(basename "$one").zst"
echo "job: $(ls "$job"/*.idlescope | wc -l) files, $(du -cb "$job"/*.idlescope | tail -1 | cut -f1)" \
  "bytes; compressed $(du -cb "$work"/zst/*.zst | tail -1 | cut -f1) bytes"

"$idlescope" report "$job" > "$work/job.txt"
"$idlescope" report "$work/zst" > "$work/job-zst.txt"
same "report DIR of .zst files" "$work/job.txt" "$work/job-zst.txt"
# JSON: the same but the files' paths, which name the .zst files as given.
"$idlescope" report --format json "$job" | sed -E 's|"path": "[^"]*/|"path": "|' > "$work/job.json"
"$idlescope" report --format json "$work/zst"/*.zst > "$work/job-zst-full.json"
sed -E 's|"path": "[^"]*/([^"/]*)\.zst"|"path": "\1"|' "$work/job-zst-full.json" > "$work/job-zst.json"
same "report --format json of .zst files named" "$work/job.json" "$work/job-zst.json"
grep -q "\"path\": \"$work/zst/$(basename "$one").zst\"" "$work/job-zst-full.json" ||
  fail "the JSON's files do not name the .zst files as given"

"$idlescope" report --single-process "$work/zst" > "$work/job-zst-single.txt"
same "report --single-process DIR of .zst files" "$work/job.txt" "$work/job-zst-single.txt"

"$idlescope" report "$one" > "$work/one.txt"
"$idlescope" report "$one_zst" > "$work/one-zst.txt"
same "report FILE.zst" "$work/one.txt" "$work/one-zst.txt"
"$idlescope" report - < "$one" > "$work/one-stdin.txt"
same "report - < FILE" "$work/one.txt" "$work/one-stdin.txt"
zstd -dc "$one_zst" | "$idlescope" report - > "$work/one-pipe.txt"
same "zstd -dc FILE.zst | report -" "$work/one.txt" "$work/one-pipe.txt"
"$idlescope" report - < "$one_zst" > "$work/one-stdin-zst.txt"
same "report - < FILE.zst" "$work/one.txt" "$work/one-stdin-zst.txt"
bash -c '"$0" report <(zstd -dc "$1")' "$idlescope" "$one_zst" > "$work/one-fifo.txt"
same "report <(zstd -dc FILE.zst)" "$work/one.txt" "$work/one-fifo.txt"

"$idlescope" export --format chrome -o "$work/one.json" "$one"
"$idlescope" export --format chrome -o "$work/one-zst.json" "$one_zst"
same "export --format chrome FILE.zst" "$work/one.json" "$work/one-zst.json"
"$idlescope" dump "$one" | tail -n +2 > "$work/one.dump"
"$idlescope" dump "$one_zst" | tail -n +2 > "$work/one-zst.dump"
same "dump FILE.zst (after its first line)" "$work/one.dump" "$work/one-zst.dump"
# diff names its sides as given: "-" and the directory of .zst files.
"$idlescope" diff "$one" "$job" | grep -vE '^  (before|after):' > "$work/diff.txt" || true
"$idlescope" diff - "$work/zst" < "$one_zst" > "$work/diff-zst-full.txt" || true
grep -vE '^  (before|after):' "$work/diff-zst-full.txt" > "$work/diff-zst.txt" || true
same "diff - DIR (a .zst on stdin, a directory of .zst files)" "$work/diff.txt" "$work/diff-zst.txt"
grep -qE '^  before: - ' "$work/diff-zst-full.txt" || fail "diff does not name its stdin side '-'"
grep -qE "^  after:  $work/zst " "$work/diff-zst-full.txt" || fail "diff does not name the directory"


# Bad input: one line, exit 1, nothing left behind.
head -c 2000 "$one_zst" > "$work/cut.idlescope.zst"
bad() {
  local what=$1 expect=$2
  shift 2
  set +e
  "$@" > "$work/bad.out" 2> "$work/bad.err"
  local status=$?
  set -e
  if [ "$status" -ne 1 ] || [ "$(wc -l < "$work/bad.err")" -ne 1 ] ||
     ! grep -q "$expect" "$work/bad.err"; then
    fail "$what: exit $status, stderr: $(cat "$work/bad.err")"
  elif [ -n "$(ls -A "$TMPDIR")" ]; then
    fail "$what left $(ls -A "$TMPDIR") in TMPDIR"
  else
    echo "ok: $what -> exit 1: $(cat "$work/bad.err")"
  fi
}
bad "a cut .zst" "cut short" "$idlescope" report "$work/cut.idlescope.zst"
printf '\x28\xb5\x2f\xfdnot zstd at all' > "$work/junk.idlescope.zst"
bad "a corrupt .zst" "not a valid zstd stream" "$idlescope" report "$work/junk.idlescope.zst"
bad "stdin twice" "given twice" "$idlescope" report - - < "$one"

if [ "$failures" -ne 0 ]; then
  echo "FAILED: $failures checks"
  exit 1
fi
echo "PASSED: compressed_inputs"
