#!/usr/bin/env python3
"""End-to-end: an installer run between steps, its output read through popen, system or a pipe
with read(2) (docs/attribution.md, "Tiers and precedence"), is library_installation with the
caller's stack. Runs tests/e2e/pip_midway.cu on simgpu under `idlescope run` once per way:
library_installation holds at least 90% of the idle time between kernels, data_loading and
unknown under 5%, and install_missing_package is in the first stack of library_installation.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def StackText(report, stack_id):
    for s in report["stacks"]:
        if s["id"] == stack_id:
            return " <- ".join(f.get("function") or "?" for f in s["frames"])
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idlescope", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--pip", required=True)
    ap.add_argument("--simgpu-lib", required=True)
    ap.add_argument("--work", required=True)
    opts = ap.parse_args()
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = opts.simgpu_lib + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["SIMGPU_KERNEL_US"] = "train_step=5000"
    env["IDLESCOPE_FAKE_PIP_SECONDS"] = "0.3"
    failures = []
    for via in ("popen", "system", "pipe"):
        trace_dir = os.path.join(opts.work, via + ".trace")
        cmd = [opts.idlescope, "run", "-o", trace_dir, "--", opts.program, "--pip", opts.pip,
               "--via", via]
        print("$ " + " ".join(cmd), flush=True)
        run = subprocess.run(cmd, cwd=opts.work, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=180)
        print(run.stdout, end="")
        if run.returncode != 0:
            sys.exit("FAIL: %s exited with status %d" % (via, run.returncode))
        rep = subprocess.run([opts.idlescope, "report", "--json", trace_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=120)
        if rep.returncode != 0:
            sys.exit("FAIL: idlescope report: %s" % rep.stderr.strip())
        report = json.loads(rep.stdout)
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
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASSED: pip_midway")


if __name__ == "__main__":
    main()
