#!/usr/bin/env python3
"""End-to-end: steps from the job's NVTX markers (issue 26, Done-when 2). tests/e2e/nvtx_steps.cu
runs 120 steps, each an NVTX range "train_step#N" (a nested "forward" range inside) around 4
launches of one kernel with one grid, on simgpu under `idlescope run` (which sets
NVTX_INJECTION64_PATH to the preload library):
- the trace holds the NVTX ranges (NVTX_RANGE events: 240 ranges, 2 marks);
- `idlescope diff` finds 119 steps from NVTX ranges named train_step (the step number dropped),
  where the GPU work alone shows none (one kernel, one grid: no anchor);
- a run whose every 4th step sleeps 3 ms before its launches (a step of 2 ms, simgpu's kernels
  taking 500 us, then takes 2.5 times as long, not 10: no outlier): its step time (p25 plus the
  outliers' excess) stays within 5%, its mean step is 10% longer or more; `--step-marker forward` finds none (forward ranges are nested, never outermost).
"""
import json
import os
import subprocess
import sys

from e2e_common import FreshWork, Parser, RunTraced, SimgpuEnv, Finish


def Diff(opts, before, after, extra=()):
    run = subprocess.run([opts.idlescope, "diff", "--json"] + list(extra) + [before, after],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit("FAIL: diff: %s" % run.stderr)
    return json.loads(run.stdout)


def main():
    opts = Parser().parse_args()
    FreshWork(opts)
    failures = []
    env = SimgpuEnv(opts, SIMGPU_KERNEL_US="layer=500")  # a step of 4 kernels: 2 ms
    env.pop("NVTX_INJECTION64_PATH", None)
    plain = os.path.join(opts.work, "plain")
    slow = os.path.join(opts.work, "slow")
    RunTraced(opts, plain, [], env, "nvtx_steps")
    RunTraced(opts, slow, ["--slow-every", "4", "--slow-us", "3000"], env, "nvtx_steps --slow")
    files = sorted(os.listdir(plain))
    dump = subprocess.run([opts.idlescope, "dump", os.path.join(plain, files[0])],
                          stdout=subprocess.PIPE, text=True, timeout=60).stdout
    ranges = dump.count(" NVTX_RANGE ")
    print("NVTX_RANGE events in the trace: %d" % ranges)
    if ranges != 242:
        failures.append("%d NVTX_RANGE events, expected 240 ranges and 2 marks" % ranges)
    d = Diff(opts, plain, slow)
    b, a = d["before"]["step_times"], d["after"]["step_times"]
    print("steps: before %s; after %s" % (b, a))
    print("step time %s; mean step %s" % (d["step_time"], d["mean_step_time"]))
    for side, st in (("before", b), ("after", a)):
        if st["source"] != "nvtx" or st["anchor"] != "train_step" or st["count"] != 119:
            failures.append("%s: steps %s, expected 119 from the NVTX ranges train_step" %
                            (side, st))
    if abs(d["step_time"]["change_pct"]) > 5:
        failures.append("the step time moved %.1f%% with slow steps one in four" %
                        d["step_time"]["change_pct"])
    if d["mean_step_time"]["change_pct"] < 10:
        failures.append("the mean step moved only %.1f%% with 3 ms more one step in four" %
                        d["mean_step_time"]["change_pct"])
    f = Diff(opts, plain, plain, ["--step-marker", "forward"])["before"]["step_times"]
    print("--step-marker forward: %s" % f)
    if f["count"] != 0:  # forward ranges are nested (depth 2): never an outermost marker
        failures.append("--step-marker forward: %s, expected none (forward is nested)" % f)
    Finish(failures, "nvtx_steps")


if __name__ == "__main__":
    main()
