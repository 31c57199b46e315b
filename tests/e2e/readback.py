#!/usr/bin/env python3
"""End-to-end: host work exposed by a per-step read-back is the synchronization's
(docs/attribution.md, "Host work after a synchronizing call"). Runs tests/e2e/readback.cu on
simgpu under `idlescope run`, bad twin (loss read back, then logged, before the next launch) and
fixed twin (the next step queued before the read-back):
- bad: synchronization holds at least half of the idle time between kernels, and with the
  read-back's copy itself (host_gpu_transfer) at least 90%; a host_work_after_sync finding holds
  at least half of synchronization, read_back_loss is in its first stack; unknown is under 5%;
- fixed: synchronization shrinks by at least 80%.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def Run(opts, name, extra):
    trace_dir = os.path.join(opts.work, name + ".trace")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = opts.simgpu_lib + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["SIMGPU_KERNEL_US"] = "step_work=4000"
    cmd = [opts.idlescope, "run", "-o", trace_dir, "--", opts.program] + extra
    print("$ " + " ".join(cmd), flush=True)
    run = subprocess.run(cmd, cwd=opts.work, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=180)
    print(run.stdout, end="")
    if run.returncode != 0:
        sys.exit("FAIL: %s exited with status %d" % (name, run.returncode))
    rep = subprocess.run([opts.idlescope, "report", "--json", trace_dir], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    if rep.returncode != 0:
        sys.exit("FAIL: idlescope report: %s" % rep.stderr.strip())
    return json.loads(rep.stdout)


def Causes(report):
    return {c["cause"]: c for c in report["causes"]}


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
    failures = []
    bad_report = Run(opts, "bad", [])
    fixed_report = Run(opts, "fixed", ["--fixed"])
    bad, fixed = Causes(bad_report), Causes(fixed_report)

    def ms(causes, name):
        return causes[name]["idle_ns"] / 1e6 if name in causes else 0.0

    print("bad twin (ms):   %s" % {k: round(v["idle_ns"] / 1e6, 1) for k, v in bad.items()})
    print("fixed twin (ms): %s" % {k: round(v["idle_ns"] / 1e6, 1) for k, v in fixed.items()})
    between = sum(ms(bad, c) for c in bad if c not in ("startup", "tail"))
    sync = ms(bad, "synchronization")
    readback = sync + ms(bad, "host_gpu_transfer")  # the 4-byte copy itself is a transfer
    if readback < 0.9 * between or sync < 0.5 * between:
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
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASSED: readback")


if __name__ == "__main__":
    main()
