#!/usr/bin/env python3
"""End-to-end: a job that waits for its user at a prompt, reading the answer with fgets from its
terminal (a pseudo-terminal here), is interactive (docs/attribution.md, "Candidates"). Runs
tests/e2e/prompt.cu on simgpu under `idlescope run` with a pty as its stdin and answers after
0.4 s: interactive holds at least 90% of the idle time between kernels, unknown under 5%, and
ask_user is in interactive's first stack.
"""
import os
import pty
import subprocess
import sys
import time

from e2e_common import FreshWork, Parser, Report, SimgpuEnv, StackText, Finish


def main():
    opts = Parser().parse_args()
    FreshWork(opts)
    env = SimgpuEnv(opts, SIMGPU_KERNEL_US="train_step=5000")
    trace_dir = os.path.join(opts.work, "trace")
    master, slave = pty.openpty()
    cmd = [opts.idlescope, "run", "-o", trace_dir, "--", opts.program]
    print("$ " + " ".join(cmd) + "  (stdin: a pty, answered after 0.4 s)", flush=True)
    proc = subprocess.Popen(cmd, cwd=opts.work, env=env, stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    os.close(slave)
    time.sleep(0.4)
    os.write(master, b"y\n")
    out, _ = proc.communicate(timeout=120)
    os.close(master)
    print(out, end="")
    if proc.returncode != 0 or "prompt: 20 steps" not in out:
        sys.exit("FAIL: the program exited with status %d" % proc.returncode)
    report = Report(opts, trace_dir)
    causes = {c["cause"]: c for c in report["causes"]}
    ms = {k: v["idle_ns"] / 1e6 for k, v in causes.items()}
    between = sum(v for k, v in ms.items() if k not in ("startup", "tail"))
    interactive = causes.get("interactive")
    first = ""
    if interactive and interactive["stacks"]:
        first = StackText(report, interactive["stacks"][0]["stack_id"])
    print("idle by cause (ms): %s; interactive's first stack: %s" %
          ({k: round(v, 1) for k, v in ms.items()}, first[:160]))
    failures = []
    if ms.get("interactive", 0) < 0.9 * between:
        failures.append("interactive %.1f ms of %.1f ms between kernels" %
                        (ms.get("interactive", 0), between))
    if ms.get("unknown", 0) > 0.05 * between:
        failures.append("unknown %.1f ms" % ms["unknown"])
    if "ask_user" not in first:
        failures.append("ask_user is not in interactive's first stack")
    Finish(failures, "prompt")


if __name__ == "__main__":
    main()
