#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: what `ctest -L fuzz` runs.
#   run_fuzzer.sh FUZZER SECONDS CORPUS SCRATCH [MAX_LEN]
# Seeds: CORPUS (tests/fuzz/corpus/<target>, kept minimised in the repository) and the golden
# traces (tests/golden/*/, one file per input). New inputs go to SCRATCH/new, never into the
# repository (to keep one: `FUZZER -merge=1 CORPUS SCRATCH/new`). Prints the executions and the
# coverage libFuzzer reached (cov: edges, ft: features); on a crash, the input and the command that
# replays it, and fails.
set -euo pipefail
fuzzer=$1 seconds=$2 corpus=$3 scratch=$4 max_len=${5:-8192}
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$scratch"
mkdir -p "$scratch/new" "$scratch/crashes"
seeds=("$corpus")
for dir in "$root"/tests/golden/*/; do seeds+=("$dir"); done

status=0
"$fuzzer" -max_total_time="$seconds" -max_len="$max_len" -print_final_stats=1 \
  -timeout=30 -rss_limit_mb=2560 \
  -artifact_prefix="$scratch/crashes/" "$scratch/new" "${seeds[@]}" >"$scratch/log" 2>&1 || status=$?

name=$(basename "$fuzzer")
grep -E 'INITED|DONE' "$scratch/log" | sed "s/^/$name: /" || true
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' \
  "$scratch/log" | sed "s/^/$name: /" || true
if [ "$status" -ne 0 ]; then
  echo "$name: FAILED (exit $status); the end of its log ($scratch/log):"
  tail -n 60 "$scratch/log" | sed "s/^/$name: /"
  for crash in "$scratch"/crashes/*; do
    [ -e "$crash" ] || continue
    echo "$name: input: $crash (replay: $fuzzer $crash; keep it in tests/fuzz/regressions/)"
  done
fi
exit "$status"
