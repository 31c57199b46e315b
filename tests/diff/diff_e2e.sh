#!/bin/bash
# Issue 7, Done-when 1 (diff part): the checkpoint example pair (examples/cuda/checkpoint) runs on
# simgpu under the real tracer; `idlescope diff bad fixed` must report checkpointing reduced (by
# at least half: tests/e2e/run_pair.py holds the pair itself to the 80% bar) and a speedup > 1,
# and `idlescope diff` with gates on the reversed pair (fixed -> bad) must exit 3.
#   diff_e2e.sh IDLESCOPE EXAMPLES_DIR SIMGPU_LIB_DIR WORKDIR
# simgpu runs in wall-clock time: a pair blurred by a loaded machine is run once more.
set -u
idlescope=$1 examples=$2 simgpu=$3 work=$4
export LD_LIBRARY_PATH="$simgpu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

attempt() {
  rm -rf "$work" && mkdir -p "$work/cwd"
  for twin in bad fixed; do
    flag=""; [ $twin = fixed ] && flag=--fixed
    (cd "$work/cwd" && "$idlescope" run -o "$work/$twin" -- "$examples/checkpoint" \
       --dir checkpoints $flag) >"$work/$twin.log" 2>&1 ||
      { cat "$work/$twin.log"; echo "checkpoint $twin failed"; return 1; }
  done
  out=$("$idlescope" diff "$work/bad" "$work/fixed")
  rc=$?
  echo "$out"
  [ $rc -eq 0 ] || { echo "diff bad fixed exited $rc"; return 1; }
  line=$(grep -E "^ +checkpointing " <<<"$out") || { echo "no checkpointing row"; return 1; }
  rel=$(awk '{print $NF}' <<<"$line" | tr -d '%+')
  awk -v r="$rel" 'BEGIN { exit !(r <= -50) }' ||
    { echo "checkpointing reduced by only $rel%"; return 1; }
  speedup=$(sed -nE 's/^speedup: ([0-9.]+)x.*/\1/p' <<<"$out")
  awk -v s="$speedup" 'BEGIN { exit !(s > 1) }' || { echo "speedup $speedup <= 1"; return 1; }
  echo "figures: checkpointing ${rel}%, speedup ${speedup}x"

  out=$("$idlescope" diff --fail-if-slower 5 --fail-if-cause-grows checkpointing:10 \
        "$work/fixed" "$work/bad" 2>&1)
  rc=$?
  echo "$out"
  [ $rc -eq 3 ] || { echo "gated diff fixed bad: expected exit 3, got $rc"; return 1; }
  grep -q "gate tripped: fail-if-cause-grows checkpointing:10%" <<<"$out" ||
    { echo "checkpointing gate did not trip"; return 1; }
  return 0
}

for i in 1 2; do
  echo "=== attempt $i"
  attempt && { echo PASS; exit 0; }
done
echo FAIL
exit 1
