#!/usr/bin/env bash
# Done-when 4: throughput and memory of `idlescope report` on generated traces of 1M and 10M
# events (tools/gen_trace, all causes mixed, 2 ranks). Prints events/s and peak RSS of each run
# and the RSS ratio; fails if peak RSS at 10M is not below 2x that at 1M (bounded memory).
#   report_bench.sh GEN_TRACE IDLESCOPE WORK_DIR
set -euo pipefail
gen=$1
idlescope=$2
work=$3
causes=pageable,checkpoint,upload,dataload,straggler,sync,tail
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
declare -A rss
for events in 1000000 10000000; do
  dir=$work/trace-$events
  "$gen" --out "$dir" --events "$events" --ranks 2 --causes "$causes" --seed 11 >/dev/null
  echo "trace of $events events: $(du -sh "$dir" | cut -f1)"
  line=$("$idlescope" report "$dir" 2>&1 >/dev/null | grep '^idlescope report:')
  echo "  $line"
  rss[$events]=$(sed -E 's/.*peak RSS ([0-9.]+) MiB.*/\1/' <<<"$line")
  rm -rf "$dir"
done
ratio=$(awk -v a="${rss[10000000]}" -v b="${rss[1000000]}" 'BEGIN { printf "%.2f", a / b }')
echo "peak RSS: ${rss[1000000]} MiB at 1M events, ${rss[10000000]} MiB at 10M events: ratio $ratio (must be < 2)"
awk -v r="$ratio" 'BEGIN { exit !(r < 2.0) }'
