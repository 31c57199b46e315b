#!/usr/bin/env python3
"""A job analyzed in shards gives the report of the job analyzed in one pass.

For generated jobs (tools/gen_trace) of the shapes that cross the shards' boundaries (ranks on
several hosts, launchers and installers read as guests, ranks crowding onto one device, an
installer started through popen, asynchronous checkpoints, processes killed without a footer),
`idlescope report` is run in shards on 2 threads and on 1, in one pass (--single-process), and
step by step through `idlescope index`, `plan`, `map` and `merge` (the shards the merge sends
back mapped again); every text and JSON report must be the same, byte for byte. With --dask, the
Dask driver (tools/dask_report.py, a LocalCluster of 2 worker processes) too; it is skipped, with
a message, only when dask.distributed cannot be imported.

    shards.py --idlescope BIN --gen-trace BIN --work DIR [--dask DRIVER --python PYTHON]
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

CASES = {
    # Collective ends align the hosts' clocks; every rank a shard of its own.
    "hosts": ["--hosts", "4", "--ranks", "8", "--clock-error-ms", "30", "--end-jitter-us", "20",
              "--seed", "3"],
    # DataLoader workers in their ranks' shards; a pip per rank, read by every shard.
    "mix": ["--ranks", "4", "--events", "200000",
            "--causes", "dataload,pageable,straggler,checkpoint,install,upload,sync"],
    # Ranks crowding onto one device: their shards are united by the merge.
    "crowded": ["--ranks", "4", "--events", "100000", "--causes", "crowded,mpi,dataload"],
    # popen of an installer, asynchronous checkpoints, a prompt, idle waits.
    "misc": ["--ranks", "3", "--events", "100000",
             "--causes", "nccl,asyncckpt,readback,popen,idlewait,prompt"],
}


def run(cmd, **kwargs):
    p = subprocess.run(cmd, capture_output=True, **kwargs)
    return p.returncode, p.stdout, p.stderr


def cut_footers(directory):
    """Drops the last packet (the footer) of every trace file: processes killed at their end."""
    for path in sorted(glob.glob(os.path.join(directory, "*.idlescope"))):
        with open(path, "rb") as f:
            data = f.read()
        at, last = 0, None
        while at < len(data) and data[at] == 0x0A:
            length, shift, i = 0, 0, at + 1
            while True:
                b = data[i]
                length |= (b & 0x7F) << shift
                i += 1
                shift += 7
                if b < 0x80:
                    break
            last = at
            at = i + length
        with open(path, "r+b") as f:
            f.truncate(last)


def step_by_step(idlescope, trace_dir, work, fmt):
    """index, plan, map every shard, merge (mapping what the merge sends back): the report."""
    os.makedirs(work, exist_ok=True)
    index = os.path.join(work, "index")
    status, _, err = run([idlescope, "index", "-o", index, trace_dir])
    assert status == 0, err
    plan = os.path.join(work, "plan")
    status, out, err = run([idlescope, "plan", "-o", plan, index])
    if status == 3:  # several hosts: the collectives' ends are needed
        status, _, err = run([idlescope, "index", "--align", "-o", index, trace_dir])
        assert status == 0, err
        status, out, err = run([idlescope, "plan", "-o", plan, index])
    assert status == 0, err
    summaries = []

    def map_shards(plan, shards):
        for s in shards:
            summary = os.path.join(work, "summary-%s-%d" % (os.path.basename(plan), s))
            status, _, err = run([idlescope, "map", "-o", summary, plan, str(s)])
            assert status == 0, err
            summaries.append(summary)

    map_shards(plan, range(int(out.split()[0])))
    remapped = 0
    for round_ in range(8):
        replan = os.path.join(work, "plan%d" % (round_ + 1))
        status, out, err = run([idlescope, "merge", "--format", fmt, "--replan", replan, plan] +
                               summaries)
        if status == 0:
            return out, remapped
        assert status == 4, err
        plan = replan
        shards = [int(s) for s in out.split()]
        remapped += len(shards)
        map_shards(plan, shards)
    raise AssertionError("no report after 8 rounds")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idlescope", required=True)
    parser.add_argument("--gen-trace", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--dask", help="tools/dask_report.py: check it too")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs --dask")
    parser.add_argument("--cases", default=",".join(list(CASES) + ["cut"]))
    opts = parser.parse_args()
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    dask = opts.dask
    if dask:
        status, _, _ = run([opts.python, "-c", "import distributed"])
        if status != 0:
            print("SKIPPED the Dask driver: %s cannot import dask.distributed (Debian: apt-get "
                  "install python3-distributed)" % opts.python)
            dask = None
    failures = 0
    for case in opts.cases.split(","):
        trace_dir = os.path.join(opts.work, case)
        args = CASES["mix" if case == "cut" else case]
        status, _, err = run([opts.gen_trace, "--out", trace_dir] + args)
        assert status == 0, err
        if case == "cut":
            cut_footers(trace_dir)
        for fmt in ("text", "json"):
            reports = {}
            status, reports["shards, 2 threads"], err = run(
                [opts.idlescope, "report", "--verbose", "--format", fmt, "--jobs", "2", trace_dir])
            assert status == 0, err
            closing = err.decode().strip().splitlines()[-1]
            status, reports["shards, 1 thread"], err = run(
                [opts.idlescope, "report", "-q", "--format", fmt, "--jobs", "1", trace_dir])
            assert status == 0, err
            status, reports["one pass"], err = run(
                [opts.idlescope, "report", "-q", "--format", fmt, "--single-process", trace_dir])
            assert status == 0, err
            reports["index/plan/map/merge"], remapped = step_by_step(
                opts.idlescope, os.path.abspath(trace_dir),
                os.path.join(opts.work, case + "-steps-" + fmt), fmt)
            if dask:
                status, reports["Dask, 2 workers"], err = run(
                    [opts.python, dask, "--local-workers", "2", "--idlescope", opts.idlescope,
                     "--format", fmt, os.path.abspath(trace_dir)])
                assert status == 0, err
            # The step-by-step and Dask runs name the files by absolute path.
            absolute = os.path.abspath(trace_dir).encode()
            base = reports["shards, 2 threads"]
            same = []
            for name, report in reports.items():
                if report.replace(absolute, trace_dir.encode()) == base or report == base:
                    same.append(name)
                else:
                    failures += 1
                    print("FAIL %s %s: %s differs from shards, 2 threads" % (case, fmt, name))
                    path = os.path.join(opts.work, "%s-%s-%s.out" % (case, fmt, name.split(",")[0]))
                    with open(path, "wb") as f:
                        f.write(report)
            print("%-8s %-4s same: %s (%s; mapped again step by step: %d)"
                  % (case, fmt, ", ".join(same), closing.split(": ", 1)[1], remapped))
    if failures:
        print("%d reports differ" % failures)
        return 1
    shutil.rmtree(opts.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
