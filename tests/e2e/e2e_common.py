"""What the end-to-end checks of tests/e2e/ share: the command line every program's check takes,
a traced run on simgpu, the JSON report, and a stack as text."""
import argparse
import json
import os
import shutil
import subprocess
import sys


def Parser():
    """--idlescope, --program, --simgpu-lib, --work: what tests/e2e/CMakeLists.txt passes."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--idlescope", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--simgpu-lib", required=True)
    ap.add_argument("--work", required=True)
    return ap


def FreshWork(opts):
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)


def SimgpuEnv(opts, **simgpu):
    """The environment with simgpu's libraries first and the given SIMGPU_* variables."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = opts.simgpu_lib + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.update(simgpu)
    return env


def RunTraced(opts, trace_dir, args, env, name="the program"):
    """`idlescope run -o trace_dir -- program args`; its output printed; exits on failure."""
    cmd = [opts.idlescope, "run", "-o", trace_dir, "--", opts.program] + args
    print("$ " + " ".join(cmd), flush=True)
    run = subprocess.run(cmd, cwd=opts.work, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=180)
    print(run.stdout, end="")
    if run.returncode != 0:
        sys.exit("FAIL: %s exited with status %d" % (name, run.returncode))
    return run.stdout


def Report(opts, trace_dir):
    """`idlescope report --json trace_dir`, parsed; exits on failure."""
    rep = subprocess.run([opts.idlescope, "report", "--json", trace_dir], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    if rep.returncode != 0:
        sys.exit("FAIL: idlescope report: %s" % rep.stderr.strip())
    return json.loads(rep.stdout)


def StackText(report, stack_id):
    """The report's stack `stack_id`, its functions innermost first."""
    for s in report["stacks"]:
        if s["id"] == stack_id:
            return " <- ".join(f.get("function") or "?" for f in s["frames"])
    return ""


def Finish(failures, name):
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASSED: " + name)
