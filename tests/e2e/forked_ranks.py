#!/usr/bin/env python3
"""End-to-end: one rank's activity never explains another rank's GPU (docs/attribution.md,
"Tiers and precedence"). Runs tests/e2e/forked_ranks.cu on simgpu under `idlescope run`: rank 0
forks rank 1 (same program, no exec, so rank 1 is in rank 0's process family), both all-reduce
in one NCCL communicator, and rank 0 spends --cpu-ms of its own CPU time between kernels while
rank 1 synchronizes and writes its log. GPU 0's gaps must come out as rank 0's own CPU work
(cpu_work, from the thread sampler; unknown without samples), never as rank 1's synchronization
or log writes (intermediate_upload): at
most rank 0's own last wait is synchronization: under 5 ms (about 1 ms on an idle machine; it also
covers the host's delay in waking simgpu's device thread, 1.2 ms at load 11 in a test-command run),
where rank 1's syncs, taken wrongly, would be about 340 ms.
"""
import os
import sys

from e2e_common import FreshWork, Parser, Report, RunTraced, SimgpuEnv


def main():
    ap = Parser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--cpu-ms", type=float, default=20)
    opts = ap.parse_args()
    FreshWork(opts)
    trace_dir = os.path.join(opts.work, "trace")
    # rank 1's wait: 8 ms of rank 0's 20
    env = SimgpuEnv(opts, SIMGPU_DEVICES="2", SIMGPU_KERNEL_US="long_work=8000")
    RunTraced(opts, trace_dir, ["--steps", str(opts.steps), "--cpu-ms", str(opts.cpu_ms)], env)
    report = Report(opts, trace_dir)
    # Rank 0 drives ordinal 0: "host/0" (no uuid), or simgpu's uuid of device 0, "GPU-01...".
    gpu0 = [d for d in report["devices"] if d["id"].endswith("/0") or "/GPU-01" in d["id"]]
    if len(gpu0) != 1:
        sys.exit("FAIL: no single device of rank 0 among %s" %
                 [d["id"] for d in report["devices"]])
    causes = gpu0[0]["idle_by_cause_ns"]
    print("rank 0's device %s: idle by cause (ms): %s" %
          (gpu0[0]["id"], {k: round(v / 1e6, 1) for k, v in causes.items()}))
    failures = []
    # Rank 0 writes no file, and waits once, at the end, when rank 1 is already there.
    for leaked, allowed_ms in (("synchronization", 5.0), ("intermediate_upload", 0.0)):
        if causes.get(leaked, 0) > allowed_ms * 1e6:
            failures.append("%s %.1f ms on rank 0's device: taken from rank 1" %
                            (leaked, causes[leaked] / 1e6))
    # Its own CPU work, steps x cpu_ms less the first step's startup, shows as cpu_work (or
    # unknown where a run of the sampler did not cover it), as cpu_starvation where a loaded
    # machine kept it from a core, or as communication where rank 1 was slower still: the gaps did
    # happen.
    expected = (opts.steps - 1) * opts.cpu_ms * 1e6 * 0.8
    own = ("cpu_work", "unknown", "cpu_starvation", "communication")
    seen = sum(causes.get(c, 0) for c in own)
    if seen < expected:
        failures.append("%s %.1f ms < %.1f ms of rank 0's own CPU work" %
                        (" + ".join(own), seen / 1e6, expected / 1e6))
    # The sampler saw that CPU work: most of it is named.
    if causes.get("unknown", 0) > 0.25 * seen:
        failures.append("unknown %.1f ms of %.1f ms: the sampler's runs did not name it" %
                        (causes.get("unknown", 0) / 1e6, seen / 1e6))
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
