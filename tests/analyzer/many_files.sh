#!/usr/bin/env bash
# Issue 16: the analyzer's memory is bounded by what the results need, not by the number of trace
# files. A job whose processes come and go (DataLoader workers respawned every epoch, a traced
# test suite: 3000 files) is reported with one file open at a time and a few KiB per file. Fails
# when peak RSS grows by more than 64 KiB per file between 200 and 2000 short-lived processes, or
# when the report fails under `ulimit -n 1024` (2000 files: more than the fds it may hold).
#   many_files.sh GEN_TRACE IDLESCOPE WORK_DIR
set -euo pipefail
gen=$1 idlescope=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
declare -A rss files
for n in 200 2000; do
  "$gen" --out "$work/$n" --ranks 1 --events 20000 --short-lived "$n" --causes dataload >/dev/null
  line=$( (ulimit -n 1024 && "$idlescope" report --verbose "$work/$n" 2>&1 >/dev/null) | tail -n 1) || true
  if ! [[ $line =~ from\ ([0-9]+)\ files:.*peak\ RSS\ ([0-9.]+)\ MiB ]]; then
    echo "FAIL: idlescope report of $n short-lived processes (ulimit -n 1024): $line"
    exit 1
  fi
  files[$n]=${BASH_REMATCH[1]} rss[$n]=${BASH_REMATCH[2]}
  echo "$n short-lived processes: ${files[$n]} files, peak RSS ${rss[$n]} MiB"
done
per_file=$(awk -v a="${rss[2000]}" -v b="${rss[200]}" -v fa="${files[2000]}" -v fb="${files[200]}" \
  'BEGIN { printf "%.1f", (a - b) * 1024 / (fa - fb) }')
echo "peak RSS per extra file: $per_file KiB (must be <= 64)"
awk -v p="$per_file" 'BEGIN { exit !(p <= 64) }'
