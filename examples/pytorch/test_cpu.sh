#!/bin/bash
# The CPU-capable PyTorch examples under the real tracer (issue 7, Done-when 2), with Debian's
# python3-torch: the synchronous torch.save checkpoint (checkpoint.py) and the DataLoader workers
# (dataloader_workers.py --fix) must be in the trace and in `idlescope report`.
#   test_cpu.sh IDLESCOPE WORKDIR [PYTHON]
set -u
idlescope=$1 work=$2 python=${3:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "SKIP: $python has no torch"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1

"$idlescope" run -o ckpt.trace -- "$python" "$here/checkpoint.py" --device cpu --steps 6 \
  --every 3 --dir checkpoints || fail "checkpoint.py under idlescope run"
"$idlescope" run -o loader.trace -- "$python" "$here/dataloader_workers.py" --device cpu --fix \
  --workers 2 --steps 6 --batch 8 --data data || fail "dataloader_workers.py under idlescope run"

# torch.save on the training thread: writes of the .pt file by the main thread (tid == pid).
"$idlescope" dump ckpt.trace/*.idlescope >ckpt.dump || fail "dump"
pid=$(sed -nE "s/.* main_tid=([0-9]+).*/\1/p" ckpt.dump | head -1)
writes=$(grep -cE "tid $pid FILE_WRITE .*checkpoints/model_step000[36]\.pt" ckpt.dump)
echo "checkpoint: $writes write events of model_step*.pt on the training thread (pid $pid)"
[ "$writes" -ge 2 ] || { grep "model_step" ckpt.dump | head; fail "no torch.save writes on the main thread"; }
"$idlescope" report ckpt.trace >ckpt.report || fail "report ckpt"
cat ckpt.report
# The report itself (host activity, no GPU here) names the torch.save file, written by the main
# thread, and the no_gpu_work cause lists the checkpoint writes.
grep -qE "^  checkpoint_writes +[0-9.]+ s" ckpt.report || fail "no checkpoint_writes in the host activity"
grep -qE "model_step000[36]\.pt \(.*pid $pid main thread" ckpt.report ||
  fail "report does not name the .pt checkpoint written by the main thread"
grep -qE "^    - checkpoint_writes: .*model_step000[36]\.pt" ckpt.report ||
  fail "no_gpu_work does not point at the checkpoint writes"

# DataLoader workers: one traced process per worker, children of the training process.
"$idlescope" report loader.trace >loader.report || fail "report loader"
cat loader.report
procs=$(sed -nE 's/^idlescope report: ([0-9]+) processes.*/\1/p' loader.report)
echo "dataloader: $procs processes in the report (training process + workers)"
[ "${procs:-0}" -ge 3 ] || fail "expected the training process and 2 workers, got ${procs:-none}"
# The report names the DataLoader workers: 2 forked children that read the dataset.
grep -qE "worker processes: 2 fork\(\)ed children .*, 2 reading files" loader.report ||
  fail "report does not list the 2 DataLoader worker processes reading files"
reads=$(for f in loader.trace/*.idlescope; do "$idlescope" dump "$f"; done |
        grep -cE "FILE_READ .*data/sample[0-9]+\.bin")
echo "dataloader: $reads dataset read events"
[ "$reads" -ge 1 ] || fail "no dataset reads traced"
echo PASS
