#!/usr/bin/env bash
# `idlescope diff` reads each trace once: the CPU time (user + system) of `diff A B` on two
# generated traces of EVENTS events each (tools/gen_trace) against that of `report A` plus
# `report B`, measured in the same run, alternating, REPS times, the files in the page cache after
# one warm-up run. Each repetition gives a ratio diff / (report A + report B); the median ratio is
# the figure (a loaded machine moves single runs by 20%, a ratio of neighbouring runs much less).
# Target: at most 1.1. With a BASELINE idlescope (an older build:
# tests/analyzer/build_baseline.sh) its diff is timed too (before the step census became a sink,
# diff read every file twice: the analysis, then the census).
#   diff_bench.sh GEN_TRACE IDLESCOPE WORK_DIR [EVENTS [BASELINE_IDLESCOPE [REPS]]]
set -euo pipefail
gen=$1
idlescope=$2
work=$3
events=${4:-10000000}
baseline=${5:-}
reps=${6:-5}
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
"$gen" --out "$work/a" --events "$events" --ranks 2 --causes pageable,checkpoint,straggler \
  --seed 11 >/dev/null
"$gen" --out "$work/b" --events "$events" --ranks 2 --causes pinned,straggler --seed 12 >/dev/null
echo "traces of $events events: a $(du -sh "$work/a" | cut -f1), b $(du -sh "$work/b" | cut -f1)"

seconds() {  # CPU seconds (user + system) of a command, its output discarded
  local TIMEFORMAT='%U %S' t
  t=$({ time "$@" >/dev/null 2>&1; } 2>&1)
  awk '{ printf "%.3f", $1 + $2 }' <<<"$t"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

"$idlescope" diff "$work/a" "$work/b" >/dev/null  # warm-up: the files in the page cache
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
reports=() diffs=() old_diffs=() ratios=() old_ratios=()
for ((i = 0; i < reps; i++)); do
  ra=$(seconds "$idlescope" report "$work/a")
  rb=$(seconds "$idlescope" report "$work/b")
  both=$(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%.3f", a + b }')
  d=$(seconds "$idlescope" diff "$work/a" "$work/b")
  reports+=("$both") diffs+=("$d") ratios+=("$(ratio "$d" "$both")")
  if [ -n "$baseline" ]; then
    d=$(seconds "$baseline" diff "$work/a" "$work/b")
    old_diffs+=("$d") old_ratios+=("$(ratio "$d" "$both")")
  fi
done
echo "CPU seconds, $reps repetitions:"
echo "  report a + report b: ${reports[*]}"
echo "  diff a b:            ${diffs[*]}"
echo "  diff / (report a + report b): ${ratios[*]}"
echo "diff / (report a + report b) = $(printf '%s\n' "${ratios[@]}" | median) (median; target <= 1.10)"
if [ -n "$baseline" ]; then
  echo "  baseline diff a b:   ${old_diffs[*]}"
  echo "baseline diff / (report a + report b) = $(printf '%s\n' "${old_ratios[@]}" | median) (median)"
fi
