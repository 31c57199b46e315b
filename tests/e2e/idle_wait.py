#!/usr/bin/env python3
"""End-to-end: a training loop that waits between its steps (tests/e2e/idle_wait.cu on simgpu,
under `idlescope run`): (a) select() on its terminal (a pty here) until a line comes, answered
0.4 s after the program says it waits; (b) a 300 ms nanosleep. Both are interactive
(docs/attribution.md, "Waits"): interactive holds at least 85% of the idle time between kernels
and unknown under 5%; interactive's stacks include wait_for_line's and sleep_between_steps's; the
host activity lists the terminal wait under `terminal` and the sleep under `idle_waits`.
"""
import os
import pty
import select
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
    print("$ " + " ".join(cmd) + "  (stdin: a pty, answered 0.4 s after the program waits)",
          flush=True)
    proc = subprocess.Popen(cmd, cwd=opts.work, env=env, stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 120
    while b"waiting for a line\n" not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            out += chunk
    time.sleep(0.4)
    os.write(master, b"y\n")
    rest, _ = proc.communicate(timeout=120)
    os.close(master)
    out = (out + rest).decode(errors="replace")
    print(out, end="")
    if proc.returncode != 0 or "idle_wait: 30 steps" not in out:
        sys.exit("FAIL: the program exited with status %d" % proc.returncode)

    report = Report(opts, trace_dir)
    causes = {c["cause"]: c for c in report["causes"]}
    ms = {k: v["idle_ns"] / 1e6 for k, v in causes.items()}
    between = sum(v for k, v in ms.items() if k not in ("startup", "tail"))
    interactive = causes.get("interactive")
    stacks = [StackText(report, s["stack_id"]) for s in (interactive or {}).get("stacks", [])]
    groups = {g["kind"]: g for g in report["host_activity"]["groups"]}
    items = {kind: [i.get("what", "") for i in g["items"]] for kind, g in groups.items()}
    print("idle by cause (ms): %s" % {k: round(v, 1) for k, v in ms.items()})
    print("interactive's stacks: %s" % [s[:120] for s in stacks])
    print("host activity items: terminal %s, idle_waits %s" %
          (items.get("terminal"), items.get("idle_waits")))
    failures = []
    if ms.get("interactive", 0) < 0.85 * between:
        failures.append("interactive %.1f ms of %.1f ms between kernels" %
                        (ms.get("interactive", 0), between))
    if ms.get("interactive", 0) < 550:
        failures.append("interactive %.1f ms: less than the 0.4 s wait and most of the 0.3 s sleep" %
                        ms.get("interactive", 0))
    if ms.get("unknown", 0) > 0.05 * between:
        failures.append("unknown %.1f ms" % ms["unknown"])
    if not any("wait_for_line" in s for s in stacks):
        failures.append("wait_for_line (the select on the terminal) is not in interactive's stacks")
    if not any("sleep_between_steps" in s for s in stacks):
        failures.append("sleep_between_steps (the nanosleep) is not in interactive's stacks")
    if not any(w.startswith("/dev/pts/") for w in items.get("terminal", [])):
        failures.append("no terminal item in the host activity")
    if "nanosleep" not in items.get("idle_waits", []):
        failures.append("no nanosleep item among the host activity's idle waits")
    Finish(failures, "idle_wait")


if __name__ == "__main__":
    main()
