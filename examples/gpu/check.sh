#!/bin/bash
# examples/gpu/check.sh: the GPU validation kit (issue 7). On a GPU machine (e.g. an H200 with
# PyTorch, nvcc and ncu, no network): builds idlescope, runs every CUDA and PyTorch root-cause
# example bare and under `idlescope run`, and prints one table:
#   example, expected cause, found cause (the report's largest other than startup and tail),
#   match, overhead (traced/bare wall)
# then, per pair whose twins both ran, the top cause's predicted saving (`job_saving_ns`) against
# the measured one (bad span - fixed span; tests/e2e/predictions.py does the same on simgpu, with
# the median of 3 runs and a 25% bound)
# Reports (text and JSON) and logs go under $OUT (./out when unset). Meant to finish in a few
# minutes; each run is capped by --run-timeout.
#
#   examples/gpu/check.sh [--simgpu] [--quick] [--only a,b,...] [--build-dir DIR] [--skip-build]
#                         [--run-timeout S]
#   --simgpu       no GPU: run the CUDA examples on simgpu (tests/simgpu's fake CUDA libraries);
#                  the PyTorch examples with a CPU fallback (checkpoint, dataloader_workers) run
#                  on the CPU, where the report can only say no_gpu_work (match: "cpu"), and the
#                  GPU-only ones (pin_memory, batch_size, ddp) are skipped
#   --quick        smaller runs (CI)
#   --only LIST    only these examples (names as in the table, e.g. checkpoint,pt_checkpoint)
# Exit status: 0 when every example that ran matched, 1 otherwise.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
simgpu=0 quick=0 only="" build_dir="$root/build-gpucheck" skip_build=0 run_timeout=120
while [ $# -gt 0 ]; do
  case $1 in
    --simgpu) simgpu=1 ;;
    --quick) quick=1 ;;
    --only) only=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --skip-build) skip_build=1 ;;
    --run-timeout) run_timeout=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$build_dir" && build_dir=$(cd "$build_dir" && pwd)  # the runs cd into their own dirs
out=${OUT:-./out}
mkdir -p "$out" && out=$(cd "$out" && pwd)
# The first python3 that imports torch: GPU images often keep PyTorch in a venv first on PATH,
# Debian keeps python3-torch under /usr/bin/python3. PYTHON overrides.
python=${PYTHON:-}
if [ -z "$python" ]; then
  for p in "$(command -v python3)" /usr/bin/python3; do
    [ -x "$p" ] && "$p" -c "import torch" 2>/dev/null && { python=$p; break; }
  done
  python=${python:-$(command -v python3 || echo /usr/bin/python3)}
fi

# --- build ---------------------------------------------------------------------------------
if [ $skip_build = 0 ]; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  echo "== building idlescope in $build_dir (log: $out/build.log)"
  { cmake -S "$root" -B "$build_dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$build_dir" -j "$(nproc)" --target idlescope idlescope_preload cuda_examples \
      $([ $simgpu = 1 ] && echo simgpu); } >"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; echo "check.sh: build failed"; exit 1; }
fi
idlescope="$build_dir/bin/idlescope"
examples="$build_dir/examples/cuda"
[ -x "$idlescope" ] || { echo "check.sh: no $idlescope"; exit 1; }
if [ $simgpu = 1 ]; then
  export LD_LIBRARY_PATH="$build_dir/tests/simgpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  gpus=2  # SIMGPU_DEVICES=2 for the examples that need two (one GPU for the others)
  echo "== simgpu: fake CUDA libraries from $build_dir/tests/simgpu/lib"
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
    sed 's/^/== GPU: /'
fi
torch_cuda=$("$python" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo none)

# --- one example ----------------------------------------------------------------------------
rows=()
failures=0
wall() { date +%s.%N; }
# run NAME EXPECTED CMD...: bare, then traced; fills a table row. EXPECTED "-": a fixed twin,
# run for its overhead (and the diff), not matched.
run() {
  local name=$1 expected=$2; shift 2
  local dir="$out/$name"
  rm -rf "$dir" && mkdir -p "$dir/bare.cwd" "$dir/traced.cwd"
  local t0 t1 t2 bare traced
  t0=$(wall)
  (cd "$dir/bare.cwd" && timeout "$run_timeout" "$@") >"$dir/bare.log" 2>&1 ||
    { rows+=("$name|$expected|run failed (bare, see $dir/bare.log)|no|-"); failures=$((failures+1)); return; }
  t1=$(wall)
  (cd "$dir/traced.cwd" && timeout "$run_timeout" "$idlescope" run -o "$dir/trace" -- "$@") \
    >"$dir/traced.log" 2>&1 ||
    { rows+=("$name|$expected|run failed (traced, see $dir/traced.log)|no|-"); failures=$((failures+1)); return; }
  t2=$(wall)
  # What the example wrote (checkpoints of 64 MB and more) is not needed once it ran.
  rm -rf "$dir/bare.cwd" "$dir/traced.cwd"
  "$idlescope" report "$dir/trace" >"$dir/report.txt" 2>"$dir/report.err"
  "$idlescope" report --json "$dir/trace" >"$dir/report.json" 2>/dev/null
  # The cause table is sorted, largest first. The examples plant a steady-state cause; startup
  # (imports, CUDA context: ~7-9 s of a short PyTorch run on an H200) and tail are skipped.
  local found
  found=$(awk '/^  CAUSE +IDLE/ { t = 1; next } t && NF == 0 { exit }
               t && $1 != "startup" && $1 != "tail" { print $1; exit }' "$dir/report.txt")
  found=${found:-none}
  local match=no
  if [ "$expected" = - ]; then match=-
  elif [ "$expected" = "$found" ]; then match=yes
  elif [ "$found" = no_gpu_work ] && [ "${CPU_RUN:-0}" = 1 ]; then match=cpu
  fi
  [ $match = no ] && failures=$((failures+1))
  rows+=("$name|$expected|$found|$match|$(awk -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "%.2fx (%.2f/%.2f s)", (c - b) / (b - a), c - b, b - a }')")
}
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

# --- CUDA examples (bad twins; the fixed twins for overhead) ---------------------------------
q() { [ $quick = 1 ] && echo "$@"; }
declare -A cuda_expected=(
  [host_transfer]=host_gpu_transfer [checkpoint]=checkpointing [small_batch]=small_batch
  [allreduce]=communication [dataloader]=data_loading [startup_install]=library_installation
  [unused_gpus]=unused_gpus)
declare -A cuda_args=(
  [host_transfer]="$(q --steps 100)" [checkpoint]="--dir checkpoints $(q --steps 200 --every 50)"
  [small_batch]="$(q --samples 8192)" [allreduce]="--ranks 2 --grad-mb 1"
  [dataloader]="$(q --steps 100)" [startup_install]="" [unused_gpus]="$(q --steps 100)")
for ex in host_transfer checkpoint small_batch allreduce dataloader startup_install unused_gpus; do
  want "$ex" || continue
  if [ ! -x "$examples/$ex" ]; then
    rows+=("$ex|${cuda_expected[$ex]}|not built (needs nvcc)|no|-"); failures=$((failures+1)); continue
  fi
  if { [ $ex = allreduce ] || [ $ex = unused_gpus ]; } && [ "$gpus" -lt 2 ]; then
    rows+=("$ex|${cuda_expected[$ex]}|skipped: needs 2 GPUs, $gpus visible|-|-"); continue
  fi
  env_extra=()
  # As tests/e2e/run_pair.py: two simulated GPUs where needed, a slow network for the all-reduce.
  [ $ex = allreduce ] && [ $simgpu = 1 ] && env_extra=(SIMGPU_DEVICES=2 SIMGPU_NCCL_GBPS=0.5)
  [ $ex = unused_gpus ] && [ $simgpu = 1 ] && env_extra=(SIMGPU_DEVICES=2)
  # shellcheck disable=SC2086
  run "$ex" "${cuda_expected[$ex]}" env "${env_extra[@]}" "$examples/$ex" ${cuda_args[$ex]}
  # shellcheck disable=SC2086
  run "$ex.fixed" "-" env "${env_extra[@]}" "$examples/$ex" ${cuda_args[$ex]} --fixed
  "$idlescope" diff "$out/$ex/trace" "$out/$ex.fixed/trace" >"$out/$ex.diff.txt" 2>&1
done

# --- PyTorch examples -----------------------------------------------------------------------
pt="$root/examples/pytorch"
declare -A pt_expected=(
  [pt_pin_memory]=host_gpu_transfer [pt_checkpoint]=checkpointing [pt_batch_size]=small_batch
  [pt_ddp]=communication [pt_dataloader_workers]=data_loading)
declare -A pt_args=(
  [pt_pin_memory]="pin_memory.py $(q --steps 20)" [pt_checkpoint]="checkpoint.py $(q --steps 20 --every 5)"
  [pt_batch_size]="batch_size.py $(q --samples 4096)" [pt_ddp]="ddp.py $(q --steps 10)"
  [pt_dataloader_workers]="dataloader_workers.py $(q --steps 10)")
for ex in pt_pin_memory pt_checkpoint pt_batch_size pt_ddp pt_dataloader_workers; do
  want "$ex" || continue
  if [ "$torch_cuda" = none ]; then
    rows+=("$ex|${pt_expected[$ex]}|skipped: no torch for $python|-|-"); continue
  fi
  if [ "$torch_cuda" = 0 ]; then
    case $ex in
      pt_checkpoint|pt_dataloader_workers)
        # shellcheck disable=SC2086
        CPU_RUN=1 run "$ex" "${pt_expected[$ex]}" "$python" "$pt/"${pt_args[$ex]} --device cpu ;;
      *) rows+=("$ex|${pt_expected[$ex]}|skipped: torch has no CUDA (GPU-only example)|-|-") ;;
    esac
    continue
  fi
  if [ $ex = pt_ddp ] && [ "$gpus" -lt 2 ]; then
    rows+=("$ex|${pt_expected[$ex]}|skipped: needs 2 GPUs, $gpus visible|-|-"); continue
  fi
  # shellcheck disable=SC2086
  run "$ex" "${pt_expected[$ex]}" "$python" "$pt/"${pt_args[$ex]}
  # shellcheck disable=SC2086
  run "$ex.fixed" "-" "$python" "$pt/"${pt_args[$ex]} --fix
  "$idlescope" diff "$out/$ex/trace" "$out/$ex.fixed/trace" >"$out/$ex.diff.txt" 2>&1
done

# --- table ----------------------------------------------------------------------------------
{
  echo
  printf '%-24s %-22s %-40s %-6s %s\n' EXAMPLE EXPECTED "FOUND (LARGEST BUT STARTUP/TAIL)" MATCH "OVERHEAD (TRACED/BARE)"
  for r in "${rows[@]}"; do
    IFS='|' read -r a b c d e <<<"$r"
    printf '%-24s %-22s %-40s %-6s %s\n' "$a" "$b" "$c" "$d" "$e"
  done
  echo
  echo "idlescope diff BAD FIXED (the fix's effect, measured by idlescope):"
  for f in "$out"/*.diff.txt; do
    [ -e "$f" ] || continue
    printf '  %-22s %s; %s\n' "$(basename "$f" .diff.txt)" \
      "$(grep -m1 '^speedup:' "$f" | sed 's/ (wall time.*//')" "$(grep -m1 '^largest change:' "$f")"
  done
  echo
  echo "Predicted saving (the bad twin's top cause: job_saving_ns) vs measured (bad span - fixed span), one run each:"
  python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def report(name):
    try:
        with open(os.path.join(out, name, "report.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
print("  %-24s %-22s %10s %10s %6s  %s" % ("PAIR", "TOP CAUSE", "PREDICTED", "MEASURED", "RATIO",
                                          "BASIS"))
for name in sorted(os.listdir(out)):
    bad, fixed = report(name), report(name + ".fixed")
    if name.endswith(".fixed") or bad is None or fixed is None:
        continue
    causes = [c for c in bad.get("causes", []) if c["cause"] not in ("startup", "tail")]
    if not causes:
        continue
    top = causes[0]
    predicted = int(top.get("job_saving_ns", 0)) / 1e9
    measured = (int(bad["job"]["span_ns"]) - int(fixed["job"]["span_ns"])) / 1e9
    ratio = "%.2f" % (predicted / measured) if measured > 0 else "-"
    print("  %-24s %-22s %9.3fs %9.3fs %6s  %s" % (name, top["cause"], predicted, measured, ratio,
                                                 top.get("saving", {}).get("method", "")))
PY
  echo
  echo "mode: $([ $simgpu = 1 ] && echo "simgpu (1 simulated GPU, 2 for allreduce/unused_gpus)" || echo "GPU ($gpus visible)"); torch CUDA: $torch_cuda; reports under $out"
} | tee "$out/table.txt"
[ $failures = 0 ] && echo "check.sh: all examples that ran matched" || echo "check.sh: $failures mismatch(es) or failure(s)"
[ $failures = 0 ]
