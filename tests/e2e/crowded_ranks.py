#!/usr/bin/env python3
"""End-to-end: ranks of an Open MPI-shaped job crowd onto one GPU while another stays unused
(docs/attribution.md, "Whole devices"). Runs tests/e2e/crowded_ranks.cu on simgpu with two
GPUs under `idlescope run`, bad twin (no cudaSetDevice) and fixed twin (--set-device):
- both: the report's ranks are 0 and 1, read from OMPI_COMM_WORLD_RANK (no RANK is set);
- bad: unused_gpus holds one GPU-span, with a ranks_share_device finding naming the crowded
  device, 2 ranks from rank 0, 1 unused visible device;
- fixed: no unused_gpus, no such finding.
"""
import os

from e2e_common import FreshWork, Parser, Report, RunTraced, SimgpuEnv, Finish


def Run(opts, name, extra):
    trace_dir = os.path.join(opts.work, name + ".trace")
    env = SimgpuEnv(opts, SIMGPU_DEVICES="2", SIMGPU_KERNEL_US="crowd_work=2000")
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                "PMI_RANK", "SLURM_PROCID"):
        env.pop(var, None)
    RunTraced(opts, trace_dir, extra, env, name)
    return Report(opts, trace_dir)


def Shared(report):
    for c in report["causes"]:
        if c["cause"] == "unused_gpus":
            return c, [f for f in c["findings"] if f["kind"] == "ranks_share_device"]
    return None, []


def main():
    opts = Parser().parse_args()
    FreshWork(opts)
    failures = []
    bad = Run(opts, "bad", [])
    fixed = Run(opts, "fixed", ["--set-device"])
    for name, report in (("bad", bad), ("fixed", fixed)):
        if report["job"]["ranks"] != [0, 1]:
            failures.append("%s twin: ranks %s, expected [0, 1] from OMPI_COMM_WORLD_RANK" %
                            (name, report["job"]["ranks"]))
    cause, shared = Shared(bad)
    span = bad["job"]["span_ns"]
    print("bad twin: unused_gpus %.3f s of span %.3f s; findings %s" %
          ((cause["idle_ns"] if cause else 0) / 1e9, span / 1e9, shared))
    if cause is None or cause["idle_ns"] < 0.99 * span:
        failures.append("bad twin: unused_gpus is not the unused GPU's span")
    if len(shared) != 1:
        failures.append("bad twin: %d ranks_share_device findings, expected 1" % len(shared))
    else:
        f = shared[0]
        if f["ranks"] != 2 or f["rank"] != 0 or f["unused_visible_devices"] != 1:
            failures.append("bad twin: finding %s, expected 2 ranks from rank 0, 1 unused" % f)
        if f["device"] not in [d["id"] for d in bad["devices"] if d["kernels"] > 0]:
            failures.append("bad twin: the finding names %s, not the crowded device" % f["device"])
    cause, shared = Shared(fixed)
    print("fixed twin: unused_gpus %s; findings %s" %
          ("none" if cause is None else "%.3f s" % (cause["idle_ns"] / 1e9), shared))
    if cause is not None or shared:
        failures.append("fixed twin: each rank on its own GPU, yet unused_gpus or a finding")
    Finish(failures, "crowded_ranks")


if __name__ == "__main__":
    main()
