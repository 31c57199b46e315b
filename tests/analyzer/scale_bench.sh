#!/usr/bin/env bash
# Costs that grow with the job, not faster (docs/architecture.md, "Analyzer and CLI"): analysis
# time and peak memory of `idlescope report` on generated jobs (tools/gen_trace) of many ranks.
#
#   scale_bench.sh GEN_TRACE IDLESCOPE WORK_DIR [options]
#     --mode MODES              how each job is analyzed, a comma list of: single (one pass,
#                               `idlescope report --single-process`), shards (`idlescope report`:
#                               the job in shards, one per rank, mapped on every core, then
#                               merged); default single,shards: both, on the same traces
#     --sweep "2 8 32 64 600"   rank counts of the sweep (each rank a trace file and its
#                               DataLoader worker's); "" skips it
#     --events-per-rank N       events of each rank in the sweep (default 1000000)
#     --big-ranks R             ranks of the long job (default 64; 0 skips it)
#     --big-seconds S           its length in job seconds (default 3600)
#     --jobs J                  gen_trace writer processes (default 2)
#
# The sweep prints, per rank count and mode, events per CPU second (every thread's) and per wall
# second, and peak RSS, each CPU rate as a ratio to the 2-rank figure of the same mode and run; it
# says "missed" when a rate is below 0.8 of it or peak RSS grows by more than 256 KiB per trace file
# over the smallest job, and fails when a job fails under `ulimit -n 1024`. The long job has the event rate of the real PyTorch job
# measured on an H200 (about 8,000 host and GPU records per second per rank, examples/gpu/
# RESULTS.md) and prints its analysis time and peak RSS (targets: under 10 min, under 2 GiB).
# Ranks other than the first and the last (the straggler) are copies of the first with their own
# header and device (gen_trace --replicate): generating a 1-hour job event by event takes longer
# than analyzing it. Generated traces are deleted as soon as they are analyzed. Mind the disk: the 1-hour 64-rank
# job takes about 30 GB (`df -h` of WORK_DIR is printed first).
set -euo pipefail
gen=$1 idlescope=$2 work=$3
shift 3
modes=single,shards sweep="2 8 32 64 600" per_rank=1000000 big_ranks=64 big_seconds=3600 jobs=2
# A missed target is printed ("missed"); it fails the run only with --gate (errors always do): in
# ctest this is a benchmark that prints its figures, not a timing test.
gate=0
while [ $# -gt 0 ]; do
  case $1 in
    --gate) gate=1; shift; continue ;;
    --mode) modes=$2 ;;
    --sweep) sweep=$2 ;;
    --events-per-rank) per_rank=$2 ;;
    --big-ranks) big_ranks=$2 ;;
    --big-seconds) big_seconds=$2 ;;
    --jobs) jobs=$2 ;;
    *) echo "scale_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
for mode in ${modes//,/ }; do
  case $mode in
    single | shards) ;;
    *) echo "scale_bench.sh: --mode: single, shards or both (single,shards)" >&2; exit 2 ;;
  esac
done
# The mix of a data-parallel job: DataLoader workers, pageable copies, all-reduces with a
# straggler, checkpoints, uploads, syncs; 300 kernels of 100 us a step give the H200 job's record
# rate.
causes=dataload,pageable,straggler,checkpoint,upload,sync
kernel_us=100 kernels=300
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); disk: $(df -h "$work" | awk 'NR == 2 { print $4 " free of " $2 }')"

# One report: "RECORDS FILES CPU_S RATE RSS_MIB WALL_S" from its last stderr line.
analyze() {
  local dir=$1 mode=$2 line status=0
  local start end flags=()
  [ "$mode" = single ] && flags=(--single-process)
  start=$(date +%s.%N)
  line=$( (ulimit -n 1024 && "$idlescope" report --verbose "${flags[@]}" "$dir" 2>&1 >/dev/null) | grep '^idlescope report:') || status=$?
  end=$(date +%s.%N)
  if [ $status -ne 0 ] || [ -z "$line" ]; then
    echo "FAIL: idlescope report $dir (ulimit -n 1024): $line" >&2
    return 1
  fi
  sed -E 's/^idlescope report: ([0-9]+) events .* from ([0-9]+) files: ([0-9.]+) s CPU \(([0-9.]+) M events\/s\).*peak RSS ([0-9.]+) MiB.*/\1 \2 \3 \4 \5/' <<<"$line" |
    awk -v wall="$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" '{ print $0, wall }'
}

failed=0
if [ -n "$sweep" ]; then
  echo "sweep: $per_rank events per rank, modes $modes"
  printf '%-7s %6s %6s %12s %10s %8s %10s %10s %9s\n' mode ranks files events "M ev/CPU-s" "x 2-rank" "M ev/s" "RSS MiB" "KiB/file"
  declare -A base_rate base_rss base_files
  for ranks in $sweep; do
    dir=$work/sweep-$ranks
    "$gen" --out "$dir" --ranks "$ranks" --events $((ranks * per_rank)) --causes "$causes" \
      --kernel-us $kernel_us --kernels-per-step $kernels --jobs "$jobs" --replicate --seed 5 >/dev/null
    for mode in ${modes//,/ }; do
      read -r records files cpu rate rss wall < <(analyze "$dir" "$mode") || { failed=1; continue; }
      if [ -z "${base_rate[$mode]:-}" ]; then
        base_rate[$mode]=$rate base_rss[$mode]=$rss base_files[$mode]=$files
      fi
      ratio=$(awk -v a="$rate" -v b="${base_rate[$mode]}" 'BEGIN { printf "%.2f", a / b }')
      per_file=$(awk -v r="$rss" -v b="${base_rss[$mode]}" -v f="$files" -v bf="${base_files[$mode]}" \
        'BEGIN { printf "%.0f", (f > bf) ? (r - b) * 1024 / (f - bf) : 0 }')
      wall_rate=$(awk -v n="$records" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0 ? n / w / 1e6 : 0) }')
      printf '%-7s %6d %6d %12d %10.2f %8.2f %10.2f %10.1f %9s\n' "$mode" "$ranks" "$files" "$records" "$rate" "$ratio" "$wall_rate" "$rss" "$per_file"
      if awk -v r="$ratio" 'BEGIN { exit !(r < 0.8) }'; then
        echo "missed: $mode, $ranks ranks analyze at $ratio of the 2-rank rate (target >= 0.8)"
        missed=1
      fi
      if [ "$per_file" -gt 256 ]; then
        echo "missed: $mode, peak RSS grows by $per_file KiB per trace file (target <= 256)"
        missed=1
      fi
    done
    rm -rf "$dir"
  done
fi

if [ "$big_ranks" -gt 0 ]; then
  dir=$work/big
  gen_start=$(date +%s)
  "$gen" --out "$dir" --ranks "$big_ranks" --duration-s "$big_seconds" --causes "$causes" \
    --kernel-us $kernel_us --kernels-per-step $kernels --jobs "$jobs" --replicate --seed 7 >/dev/null
  gen_s=$(($(date +%s) - gen_start))
  size=$(du -sh "$dir" | cut -f1)
  echo "long job: $big_ranks ranks x $big_seconds s, $size of traces (generated in $gen_s s)"
  for mode in ${modes//,/ }; do
    echo " $mode (load $(cut -d' ' -f1-3 /proc/loadavg)):"
    if read -r records files cpu rate rss wall < <(analyze "$dir" "$mode"); then
      awk -v n="$records" -v r="$big_ranks" -v s="$big_seconds" -v cpu="$cpu" -v rate="$rate" \
          -v rss="$rss" -v wall="$wall" -v files="$files" 'BEGIN {
        printf "  %d records from %d files (%.0f per rank per second): %.1f s wall, %.1f s CPU (%.2f M records/CPU-s), peak RSS %.0f MiB\n",
               n, files, n / r / s, wall, cpu, rate, rss
        printf "  targets: under 600 s (%s), under 2048 MiB (%s)\n", wall < 600 ? "met" : "MISSED", rss < 2048 ? "met" : "MISSED" }'
    else
      failed=1
    fi
  done
  rm -rf "$dir"
fi
if [ "$gate" -eq 1 ] && [ "${missed:-0}" -eq 1 ]; then failed=1; fi
exit $failed
