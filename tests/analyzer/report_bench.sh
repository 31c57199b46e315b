#!/usr/bin/env bash
# Throughput and memory of `idlescope report` on generated traces of 1M and 10M events
# (tools/gen_trace, all causes mixed, 2 ranks). Prints events/s (per CPU second: the analysis is
# single-threaded) and peak RSS of each run, and the RSS ratio; fails if peak RSS at 10M is not
# below 2x that at 1M (bounded memory).
#
# With a BASELINE idlescope (an older build, e.g. tests/analyzer/build_baseline.sh 6d156fe DIR),
# the same traces are analyzed by both binaries in the same run, alternating, REPS times each,
# and the ratio of their median throughputs (this build / baseline) is printed: a refactor of the
# analysis must keep it at 0.95 or more. The figures of a loaded machine move by more than 5%
# between runs, which is why they are medians of alternating runs.
#   report_bench.sh GEN_TRACE IDLESCOPE WORK_DIR [BASELINE_IDLESCOPE [REPS]]
set -euo pipefail
gen=$1
idlescope=$2
work=$3
baseline=${4:-}
reps=${5:-5}
causes=pageable,checkpoint,upload,dataload,straggler,sync,tail
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# One report: "EVENTS_PER_CPU_S RSS_MIB" (M events/s, MiB) from its last stderr line.
measure() {
  local line
  line=$("$1" report --verbose "$2" 2>&1 >/dev/null | grep '^idlescope report:')
  sed -E 's/.*CPU \(([0-9.]+) M events\/s\).*peak RSS ([0-9.]+) MiB.*/\1 \2/' <<<"$line"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A rss
for events in 1000000 10000000; do
  dir=$work/trace-$events
  "$gen" --out "$dir" --events "$events" --ranks 2 --causes "$causes" --seed 11 >/dev/null
  echo "trace of $events events: $(du -sh "$dir" | cut -f1)"
  new_rates=() old_rates=() ratios=() new_rss=0 old_rss=0
  runs=1
  [ -n "$baseline" ] && runs=$reps
  for ((i = 0; i < runs; i++)); do
    read -r rate mib < <(measure "$idlescope" "$dir")
    new_rates+=("$rate") new_rss=$mib
    if [ -n "$baseline" ]; then
      read -r old_rate mib < <(measure "$baseline" "$dir")
      old_rates+=("$old_rate") old_rss=$mib
      ratios+=("$(awk -v a="$rate" -v b="$old_rate" 'BEGIN { printf "%.3f", a / b }')")
    fi
  done
  new=$(printf '%s\n' "${new_rates[@]}" | median)
  echo "  this build: ${new} M events/s per CPU second (median of ${#new_rates[@]}: ${new_rates[*]}), peak RSS ${new_rss} MiB"
  rss[$events]=$new_rss
  if [ -n "$baseline" ]; then
    old=$(printf '%s\n' "${old_rates[@]}" | median)
    echo "  baseline:   ${old} M events/s per CPU second (median of ${#old_rates[@]}: ${old_rates[*]}), peak RSS ${old_rss} MiB"
    echo "  throughput this build / baseline at $events events: $(printf '%s\n' "${ratios[@]}" | median) (median of ${ratios[*]}; target >= 0.95)"
  fi
  rm -rf "$dir"
done
ratio=$(awk -v a="${rss[10000000]}" -v b="${rss[1000000]}" 'BEGIN { printf "%.2f", a / b }')
echo "peak RSS: ${rss[1000000]} MiB at 1M events, ${rss[10000000]} MiB at 10M events: ratio $ratio (must be < 2)"
awk -v r="$ratio" 'BEGIN { exit !(r < 2.0) }'
