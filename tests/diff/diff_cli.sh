#!/bin/bash
# Integration test of `idlescope diff` on synthetic traces written by tools/gen_trace
# (libprotobuf): the figures, the normalization line, the gates and every documented exit code.
#   diff_cli.sh GEN_TRACE IDLESCOPE WORKDIR
set -u
gen=$1 idlescope=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# bad: pageable copies + synchronous checkpoints; fixed: pinned copies, no checkpoints, and a
# shorter run (fewer steps), so the comparison must be per step.
"$gen" --out "$work/bad" --events 20000 --causes pageable,checkpoint >/dev/null || fail gen bad
"$gen" --out "$work/fixed" --events 8000 --causes pinned >/dev/null || fail gen fixed
"$gen" --out "$work/ddp" --events 20000 --ranks 2 --causes nccl >/dev/null || fail gen ddp
"$gen" --out "$work/ddp_short" --events 8000 --ranks 2 --causes nccl,straggler >/dev/null ||
  fail gen ddp_short

out=$("$idlescope" diff "$work/bad" "$work/fixed") || fail "diff bad fixed exited $?"
echo "$out"
grep -q "normalization: per step: steps = launches of the most frequent kernel" <<<"$out" ||
  fail "no per-step normalization line"
grep -Eq "^ +checkpointing .* -100\.0%" <<<"$out" || fail "checkpointing not reduced by 100%"
grep -Eq "^speedup: [0-9.]+x \(wall time per step" <<<"$out" || fail "no speedup line"
grep -q "utilization, paper (compute)" <<<"$out" || fail "no paper utilization"
grep -q "utilization, nvidia-smi (any kernel)" <<<"$out" || fail "no nvidia-smi utilization"

# The same pair reversed with gates: a regression, exit 3, and the tripped gate named.
out=$("$idlescope" diff --fail-if-slower 5 --fail-if-cause-grows checkpointing:10 \
      "$work/fixed" "$work/bad" 2>"$work/stderr")
rc=$?
echo "$out"; cat "$work/stderr"
[ $rc -eq 3 ] || fail "gate: expected exit 3, got $rc"
grep -q "fail-if-cause-grows checkpointing:10% *TRIPPED" <<<"$out" || fail "cause gate not shown"
grep -q "gate tripped: fail-if-slower 5%" "$work/stderr" || fail "stderr does not name the gate"

# Gates that hold: exit 0.
"$idlescope" diff --fail-if-slower 5 --fail-if-cause-grows checkpointing:10 \
  "$work/bad" "$work/fixed" >/dev/null || fail "gates on an improvement tripped"

# Runs of different lengths with NCCL: steps are the repeating compute kernel (it comes before the
# collectives, whose count per step a communication fix may change; the NCCL fallback is unit
# tested in diff_test.cc).
out=$("$idlescope" diff --json "$work/ddp" "$work/ddp_short") || fail "diff ddp exited $?"
grep -q '"basis": "kernel"' <<<"$out" || fail "no kernel normalization: $out"
grep -q '"unit": "step"' <<<"$out" || fail "DDP pair not per step"
grep -q '"schema_version": 1' <<<"$out" || fail "no schema version"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["before"]["steps"] > d["after"]["steps"] > 0, d["normalization"]' <<<"$out" ||
  fail "JSON does not parse or has wrong step counts"

# --per-run forces whole-run figures.
"$idlescope" diff --per-run "$work/bad" "$work/fixed" | grep -q "normalization: per run" ||
  fail "--per-run ignored"

# A trace written in format v1 (older idlescope) against the same job in v2: nothing changes, and
# a gate on any growth holds.
"$gen" --out "$work/bad_v1" --events 20000 --causes pageable,checkpoint --format 1 >/dev/null ||
  fail gen bad_v1
out=$("$idlescope" diff --fail-if-slower 0.001 --fail-if-cause-grows host_gpu_transfer:0.001 \
      "$work/bad_v1" "$work/bad") || fail "diff v1 v2 exited $?"
grep -q "^speedup: 1.00x" <<<"$out" || fail "v1 and v2 of one job differ: $out"
grep -Eq "^ +host_gpu_transfer .* \+0\.000 s +\+0\.0%" <<<"$out" || fail "v1/v2 cause differs: $out"

# Usage errors: 2. Unreadable input: 1.
"$idlescope" diff "$work/bad" >/dev/null 2>&1; [ $? -eq 2 ] || fail "one input: expected 2"
"$idlescope" diff --fail-if-cause-grows disk:5 "$work/bad" "$work/fixed" >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown cause: expected 2"
"$idlescope" diff --bogus "$work/bad" "$work/fixed" >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option: expected 2"
echo "not a trace" >"$work/junk.idlescope"
"$idlescope" diff "$work/bad" "$work/junk.idlescope" >/dev/null 2>&1
[ $? -eq 1 ] || fail "unreadable AFTER: expected 1"
"$idlescope" diff "$work/missing" "$work/fixed" >/dev/null 2>&1
[ $? -eq 1 ] || fail "missing BEFORE: expected 1"
echo PASS
