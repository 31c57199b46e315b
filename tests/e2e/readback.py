#!/usr/bin/env python3
"""End-to-end: host work exposed by a per-step read-back is the synchronization's
(docs/attribution.md, "Host work after a synchronizing call"). Runs tests/e2e/readback.cu on
simgpu under `idlescope run`, bad twin (loss read back, then logged, before the next launch) and
fixed twin (the next step queued before the read-back):
- bad: synchronization holds at least half of the idle time between kernels (less the time the
  thread waited for a CPU, cpu_starvation, on a loaded machine), and with the
  read-back's copy itself (host_gpu_transfer) and the host work beyond what the read-back's wait
  could hide (cpu_work) at least 90%; a host_work_after_sync finding holds
  at least half of synchronization, read_back_loss is in its first stack; unknown is under 5%;
- fixed: synchronization shrinks by at least 80%.
"""
import os

from e2e_common import FreshWork, Parser, Report, RunTraced, SimgpuEnv, StackText, Finish


def Run(opts, name, extra):
    trace_dir = os.path.join(opts.work, name + ".trace")
    RunTraced(opts, trace_dir, extra, SimgpuEnv(opts, SIMGPU_KERNEL_US="step_work=4000"), name)
    return Report(opts, trace_dir)


def Causes(report):
    return {c["cause"]: c for c in report["causes"]}


def main():
    opts = Parser().parse_args()
    FreshWork(opts)
    failures = []
    bad_report = Run(opts, "bad", [])
    fixed_report = Run(opts, "fixed", ["--fixed"])
    bad, fixed = Causes(bad_report), Causes(fixed_report)

    def ms(causes, name):
        return causes[name]["idle_ns"] / 1e6 if name in causes else 0.0

    print("bad twin (ms):   %s" % {k: round(v["idle_ns"] / 1e6, 1) for k, v in bad.items()})
    print("fixed twin (ms): %s" % {k: round(v["idle_ns"] / 1e6, 1) for k, v in fixed.items()})
    # The time the thread waited for a CPU is the machine's load (two hogs beside it: the
    # e2e_loaded tests), named cpu_starvation, not the program's.
    between = sum(ms(bad, c) for c in bad if c not in ("startup", "tail", "cpu_starvation"))
    sync = ms(bad, "synchronization")
    readback = sync + ms(bad, "host_gpu_transfer")  # the 4-byte copy itself is a transfer
    # Host work longer than the GPU work it could hide behind (the call's own wait) is the
    # thread's CPU work beyond it (a loaded machine stretches it).
    if readback + ms(bad, "cpu_work") < 0.9 * between or sync < 0.5 * between:
        failures.append("bad twin: synchronization %.1f ms (with the copy %.1f ms) of %.1f ms "
                        "between kernels" % (sync, readback, between))
    if ms(bad, "unknown") > 0.05 * sync:
        failures.append("bad twin: unknown %.1f ms (the host work after the read-back)" %
                        ms(bad, "unknown"))
    c = bad.get("synchronization", {"findings": [], "stacks": []})
    exposed = [f["idle_ns"] / 1e6 for f in c["findings"] if f["kind"] == "host_work_after_sync"]
    print("bad twin: host_work_after_sync %s ms" % [round(x, 1) for x in exposed])
    if not exposed or exposed[0] < 0.5 * sync:
        failures.append("bad twin: host_work_after_sync %s ms of %.1f ms" % (exposed, sync))
    first = StackText(bad_report, c["stacks"][0]["stack_id"]) if c["stacks"] else ""
    print("bad twin: synchronization's first stack: %s" % first[:200])
    if "read_back_loss" not in first:
        failures.append("bad twin: read_back_loss is not in synchronization's first stack")
    if sync > 0 and ms(fixed, "synchronization") > 0.2 * sync:
        failures.append("fixed twin: synchronization %.1f ms, not 80%% below %.1f ms" %
                        (ms(fixed, "synchronization"), sync))
    Finish(failures, "readback")


if __name__ == "__main__":
    main()
