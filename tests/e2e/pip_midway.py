#!/usr/bin/env python3
"""End-to-end: an installer run between steps, its output read through popen, system or a pipe
with read(2) (docs/attribution.md, "Tiers and precedence"), is library_installation with the
caller's stack. Runs tests/e2e/pip_midway.cu on simgpu under `idlescope run` once per way:
library_installation holds at least 90% of the idle time between kernels, data_loading and
unknown under 5%, and install_missing_package is in the first stack of library_installation.
"""
import os

from e2e_common import FreshWork, Parser, Report, RunTraced, SimgpuEnv, StackText, Finish


def main():
    ap = Parser()
    ap.add_argument("--pip", required=True)
    opts = ap.parse_args()
    FreshWork(opts)
    env = SimgpuEnv(opts, SIMGPU_KERNEL_US="train_step=5000", IDLESCOPE_FAKE_PIP_SECONDS="0.3")
    failures = []
    for via in ("popen", "system", "pipe"):
        trace_dir = os.path.join(opts.work, via + ".trace")
        RunTraced(opts, trace_dir, ["--pip", opts.pip, "--via", via], env, via)
        report = Report(opts, trace_dir)
        causes = {c["cause"]: c for c in report["causes"]}
        ms = {k: v["idle_ns"] / 1e6 for k, v in causes.items()}
        between = sum(v for k, v in ms.items() if k not in ("startup", "tail"))
        install = causes.get("library_installation")
        first = ""
        if install and install["stacks"]:
            first = StackText(report, install["stacks"][0]["stack_id"])
        print("%s: idle by cause (ms) %s; first stack: %s" %
              (via, {k: round(v, 1) for k, v in ms.items()}, first[:160]))
        if ms.get("library_installation", 0) < 0.9 * between:
            failures.append("%s: library_installation %.1f ms of %.1f ms between kernels" %
                            (via, ms.get("library_installation", 0), between))
        for other in ("data_loading", "unknown"):
            if ms.get(other, 0) > 0.05 * between:
                failures.append("%s: %s %.1f ms" % (via, other, ms[other]))
        if "install_missing_package" not in first:
            failures.append("%s: install_missing_package not in library_installation's first "
                            "stack" % via)
    Finish(failures, "pip_midway")


if __name__ == "__main__":
    main()
