#!/usr/bin/env python3
"""End-to-end: a job that waits for its user at a prompt, reading the answer with fgets from its
terminal (a pseudo-terminal here), is interactive (docs/attribution.md, "Candidates"). Runs
tests/e2e/prompt.cu on simgpu under `idlescope run` with a pty as its stdin and answers after
0.4 s: interactive holds at least 90% of the idle time between kernels, unknown under 5%, and
ask_user is in interactive's first stack.
"""
import argparse
import json
import os
import pty
import shutil
import subprocess
import sys
import time


def StackText(report, stack_id):
    for s in report["stacks"]:
        if s["id"] == stack_id:
            return " <- ".join(f.get("function") or "?" for f in s["frames"])
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idlescope", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--simgpu-lib", required=True)
    ap.add_argument("--work", required=True)
    opts = ap.parse_args()
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = opts.simgpu_lib + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["SIMGPU_KERNEL_US"] = "train_step=5000"
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
    rep = subprocess.run([opts.idlescope, "report", "--json", trace_dir], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    if rep.returncode != 0:
        sys.exit("FAIL: idlescope report: %s" % rep.stderr.strip())
    report = json.loads(rep.stdout)
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
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASSED: prompt")


if __name__ == "__main__":
    main()
