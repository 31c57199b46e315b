#!/usr/bin/env python3
"""idlescope report on a Dask cluster: the analysis of a job too large for one machine.

    dask_report.py [--scheduler ADDRESS | --local-workers N] [--idlescope PATH]
                   [--format text|json] [-o FILE] [--min-gap MS] [--top N]
                   [--reorder-window MS] [--no-python-frames] [--files-per-task K]
                   DIR|FILE...

The report is the one `idlescope report` prints for the same traces: both run the same four
steps (docs/architecture.md, "Analysis in shards"), here spread over the cluster's workers:

  1. index  on the workers, K files a task: each trace file's header, end and (for jobs on
            several hosts) the ends of its first collectives;
  2. plan   on the client, from the indexes: the job's shards (a rank and its family each);
  3. map    on the workers, a shard a task: the shard's summary;
  4. merge  on the client, from the summaries: the report.

Workers read the trace files where they lie (a filesystem every worker sees under the same
paths) and run the idlescope binary (--idlescope: the same path on every worker and the client);
only indexes, the plan and summaries travel, as bytes. A cluster is given by its scheduler's
address (a `dask scheduler` with `dask worker`s, a dask-jobqueue SLURMCluster's
`cluster.scheduler_address`, ...); --local-workers N starts a LocalCluster of N worker processes on
this machine instead.

Needs Python 3 with dask.distributed (Debian: python3-distributed). Exit status: 0 report written,
1 an error (one line), 2 usage.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def run_idlescope(binary, args, stdin_files=None):
    """Runs idlescope with args; returns (status, stdout, stderr)."""
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# --- tasks (run on the workers; module-level so that Dask can ship them) ---


def list_inputs(binary, inputs):
    status, out, err = run_idlescope(binary, ["index", "--list"] + inputs)
    if status != 0:
        raise RuntimeError(err.strip() or f"idlescope index --list exited with {status}")
    files = []
    for line in out.splitlines():
        kind, _, path = line.partition(" ")
        files.append((kind == "listed", path))
    return files


def index_files(binary, paths, listed, align):
    with tempfile.TemporaryDirectory(prefix="idlescope-index-") as tmp:
        out = os.path.join(tmp, "index")
        args = ["index", "-o", out] + (["--align"] if align else [])
        args += (["--listed"] if listed else []) + list(paths)
        status, _, err = run_idlescope(binary, args)
        if status != 0:
            raise RuntimeError(err.strip() or f"idlescope index exited with {status}")
        with open(out, "rb") as f:
            return f.read()


def map_shard(binary, plan, shard):
    with tempfile.TemporaryDirectory(prefix="idlescope-map-") as tmp:
        plan_path = os.path.join(tmp, "plan")
        with open(plan_path, "wb") as f:
            f.write(plan)
        out = os.path.join(tmp, "summary")
        status, _, err = run_idlescope(binary, ["map", "-o", out, plan_path, str(shard)])
        if status != 0:
            raise RuntimeError(err.strip() or f"idlescope map exited with {status}")
        with open(out, "rb") as f:
            return f.read()


# --- the driver (on the client) ---


def chunks(items, size):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def default_binary():
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "build", "bin", "idlescope"),
                      os.path.join(here, "..", "bin", "idlescope")):
        if os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return shutil.which("idlescope") or "idlescope"


def analyze(client, args, tmp):
    binary = args.idlescope
    files = client.submit(list_inputs, binary, args.inputs, pure=False).result()
    # Index K files a task, files named and found in directories apart (a directory's file that
    # is no trace is skipped; a named one is an error), in the order idlescope report reads them.
    groups = []
    for listed, path in files:
        if groups and groups[-1][0] == listed and len(groups[-1][1]) < args.files_per_task:
            groups[-1][1].append(path)
        else:
            groups.append((listed, [path]))
    plan_args = ["plan", "-o", os.path.join(tmp, "plan")]
    if args.min_gap is not None:
        plan_args += ["--min-gap", args.min_gap]
    if args.top is not None:
        plan_args += ["--top", args.top]
    if args.reorder_window is not None:
        plan_args += ["--reorder-window", args.reorder_window]
    if args.no_python_frames:
        plan_args.append("--no-python-frames")
    for align in (False, True):
        futures = [client.submit(index_files, binary, paths, listed, align, pure=False)
                   for listed, paths in groups]
        indexes = client.gather(futures)
        index_paths = []
        for i, data in enumerate(indexes):
            path = os.path.join(tmp, f"index-{i}")
            with open(path, "wb") as f:
                f.write(data)
            index_paths.append(path)
        status, out, err = run_idlescope(binary, plan_args + index_paths)
        if status == 3 and not align:
            continue  # the job spans hosts: index again with the collectives' ends
        if status != 0:
            raise RuntimeError(err.strip() or f"idlescope plan exited with {status}")
        break
    plan_path = os.path.join(tmp, "plan")
    shards = int(out.split()[0])
    summaries = {}  # shard -> path

    def map_all(plan_path, which):
        with open(plan_path, "rb") as f:
            plan = f.read()
        plan_future = client.scatter(plan, broadcast=True)
        futures = {s: client.submit(map_shard, binary, plan_future, s, pure=False) for s in which}
        for s, future in futures.items():
            path = os.path.join(tmp, f"summary-{os.path.basename(plan_path)}-{s}")
            with open(path, "wb") as f:
                f.write(future.result())
            summaries[(plan_path, s)] = path

    map_all(plan_path, range(shards))
    merge_args = ["merge", "--format", args.format]
    if args.output:
        merge_args += ["-o", args.output]
    for round_ in range(8):
        replan = os.path.join(tmp, f"plan-{round_ + 1}")
        status, out, err = run_idlescope(
            binary, merge_args + ["--replan", replan, plan_path] + list(summaries.values()))
        if status == 0:
            sys.stdout.write(out)
            return 0
        if status != 4:
            raise RuntimeError(err.strip() or f"idlescope merge exited with {status}")
        # Shards to map (again): the merge's plan keeps the other summaries valid.
        plan_path = replan
        map_all(plan_path, [int(s) for s in out.split()])
    raise RuntimeError("the summaries did not merge after 8 rounds")


def main():
    parser = argparse.ArgumentParser(
        description="idlescope report on a Dask cluster (the same report, the analysis spread "
        "over the workers)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", help="address of a running Dask scheduler")
    where.add_argument("--local-workers", type=int, default=0,
                       help="start a LocalCluster of N worker processes here")
    parser.add_argument("--idlescope", default=default_binary(),
                        help="the idlescope binary (the same path on every worker)")
    parser.add_argument("--format", default="text", choices=["text", "json"])
    parser.add_argument("-o", "--output")
    parser.add_argument("--min-gap")
    parser.add_argument("--top")
    parser.add_argument("--reorder-window")
    parser.add_argument("--no-python-frames", action="store_true")
    parser.add_argument("--files-per-task", type=int, default=16)
    parser.add_argument("inputs", nargs="+", metavar="DIR|FILE")
    args = parser.parse_args()
    if not args.scheduler and args.local_workers <= 0:
        parser.error("give --scheduler ADDRESS or --local-workers N")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask_report.py: dask.distributed is not installed (Debian: apt-get install "
              "python3-distributed)", file=sys.stderr)
        return 1
    # Workers see the inputs under the paths the client gives: make them absolute.
    args.inputs = [os.path.abspath(i) for i in args.inputs]
    if args.output:
        args.output = os.path.abspath(args.output)
    cluster = None
    try:
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            cluster = LocalCluster(n_workers=args.local_workers, threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            client = Client(cluster)
        with client, tempfile.TemporaryDirectory(prefix="idlescope-dask-") as tmp:
            return analyze(client, args, tmp)
    except RuntimeError as e:
        print(f"dask_report.py: {e}", file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    sys.exit(main())
