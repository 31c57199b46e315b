#!/usr/bin/python3
"""Renders `idlescope report --format html` in headless Chromium (issue 14, "Done when" 1).

Three pages:
  example  an example of examples/cuda/ traced on simgpu under `idlescope run` (the README's
           mixed job by default): the page must show the largest cause's name, its seconds and
           its fix, exactly as `idlescope report --format json` has them; every cause with more
           than 1% of the idle time must be visible on the strip (its colour on at least 20 of
           the canvas's pixels), each cause's share of the strip's cause pixels must be its
           share of the idle time (within 3 points + 20% of it), the card of the estimated saving of all fixes must give it in
           GPU-seconds (the JSON's savings summed), and at 800 px the page must not scroll
           sideways (issue 27);
  ranks    a generated job of --ranks ranks (tools/gen_trace): the page must stay under 5 MB and
           render in under 2 s, and show its largest cause, its strip and its cards the same
           way;
  diff     `idlescope diff --format html` of two runs (--before, --after) with a gate that
           trips: the page must give the verdict, the gate and the cause, and not scroll
           sideways at 800 px.
render_page.js (puppeteer-core driving /usr/bin/chromium) checks that the page made no network
request and logged no console error, clicks a gap to check the strip zooms to it, and takes a
full-page screenshot, kept in --work as a test artifact. The figures are printed.

Only the Python standard library is used (run with /usr/bin/python3).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys


def Run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    for line in proc.stdout.splitlines():
        print("  | " + line)
    if proc.returncode != 0:
        sys.exit("FAIL: %s exited with %d" % (cmd[0], proc.returncode))
    return proc.stdout


def GpuSeconds(ns):
    return "%.3f GPU-s" % (ns / 1e9)


def CheckPage(opts, trace, name, extra=()):
    page = os.path.join(opts.work, name + ".html")
    Run([opts.idlescope, "report", "--format", "html", "-o", page, trace])
    report = json.loads(
        subprocess.run([opts.idlescope, "report", "--json", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, check=True).stdout)
    top = report["causes"][0]
    expect = [top["cause"], GpuSeconds(int(top["idle_ns"])), top["fix"]]
    cmd = [opts.node, opts.render, "--chromium", opts.chromium, "--page", page,
           "--screenshot", os.path.join(opts.work, name + ".png"), "--click-gap", "--narrow",
           "800"]
    for e in expect:
        cmd += ["--expect", e]
    # Every cause the overview names with more than 1% of the idle time is on the strip, each
    # in proportion to its idle time.
    idle = sum(int(c["idle_ns"]) for c in report["causes"])
    for c in report["causes"]:
        share = int(c["idle_ns"]) / idle if idle > 0 else 0
        cmd += ["--strip-cause", "%s=%.6f" % (c["cause"], share)]
        print("cause %s: %.1f%% of idle time" % (c["cause"], 100 * share))
    saving = sum(int(c["saving_ns"]) for c in report["causes"])
    cmd += ["--card", "estimated saving of all fixes=" + GpuSeconds(saving)]
    Run(cmd + list(extra), env=dict(os.environ, NODE_PATH=opts.node_modules))
    print("%s: largest cause %s %s, page %d bytes" %
          (name, top["cause"], GpuSeconds(int(top["idle_ns"])), os.path.getsize(page)))


def CheckDiffPage(opts):
    """`idlescope diff --format html` with a gate that trips: the page must give the verdict,
    the gate, and the cause that grew with its figures as the JSON diff has them."""
    page = os.path.join(opts.work, "diff.html")
    gate = ["--fail-if-slower", "5", "--fail-if-cause-grows", "data_loading:10"]
    proc = subprocess.run([opts.idlescope, "diff", "--format", "html", "-o", page] + gate +
                          [opts.before, opts.after], stderr=subprocess.PIPE, text=True)
    if proc.returncode != 3:
        sys.exit("FAIL: diff with a tripping gate exited %d, expected 3" % proc.returncode)
    Run([opts.node, opts.render, "--chromium", opts.chromium, "--page", page, "--screenshot",
         os.path.join(opts.work, "diff.png"), "--narrow", "800", "--expect",
         "gate tripped (exit 3)", "--expect",
         "fail-if-cause-grows data_loading:10%", "--expect", "data_loading"],
        env=dict(os.environ, NODE_PATH=opts.node_modules))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--idlescope", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--render", required=True, help="render_page.js")
    p.add_argument("--node-modules", required=True)
    p.add_argument("--chromium", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--examples", help="built examples/cuda (for `example`)")
    p.add_argument("--simgpu-lib", help="simgpu's libraries (for `example`)")
    p.add_argument("--example", default="mixed")
    p.add_argument("--example-args", default="--dir checkpoints")
    p.add_argument("--gen-trace", help="tools/gen_trace (for `ranks`)")
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--events", type=int, default=2000000)
    p.add_argument("--before", help="a trace directory (for `diff`)")
    p.add_argument("--after", help="a trace directory (for `diff`)")
    p.add_argument("job", choices=["example", "ranks", "diff"])
    opts = p.parse_args()
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)

    if opts.job == "example":
        trace = os.path.join(opts.work, "trace")
        cwd = os.path.join(opts.work, "cwd")
        os.makedirs(cwd)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = opts.simgpu_lib + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        Run([opts.idlescope, "run", "-o", trace, "--",
             os.path.join(opts.examples, opts.example)] + opts.example_args.split(),
            cwd=cwd, env=env, timeout=240)
        CheckPage(opts, trace, opts.example)
    elif opts.job == "diff":
        CheckDiffPage(opts)
    else:
        trace = os.path.join(opts.work, "trace")
        Run([opts.gen_trace, "--out", trace, "--ranks", str(opts.ranks), "--events",
             str(opts.events), "--causes", "pageable,checkpoint,dataload,nccl,straggler"])
        CheckPage(opts, trace, "ranks%d" % opts.ranks,
                  ["--max-ms", "2000", "--max-bytes", str(5 * 1024 * 1024)])


if __name__ == "__main__":
    main()
