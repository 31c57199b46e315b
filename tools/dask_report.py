#!/usr/bin/env python3
"""idlescope report on a Dask cluster: the analysis of a job too large for one machine.

    dask_report.py [--scheduler ADDRESS | --local-workers N] [--idlescope PATH]
                   [--format text|json] [-o FILE] [--min-gap MS] [--top N]
                   [--reorder-window MS] [--no-python-frames] [--files-per-task K]
                   [--no-workers-timeout S] [-v] DIR|FILE...

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

A worker that dies (killed, out of memory, its machine lost) costs only its tasks: Dask runs them
again on another worker, and a task whose workers kept dying (Dask's KilledWorker) is submitted
once more, twice at most; the report is the same. A cluster left without any worker (they died
and were not restarted) is given up after --no-workers-timeout seconds. When it cannot go on, the
driver says why in one line (--verbose: Dask's own log lines too).

Needs Python 3 with dask.distributed (Debian: python3-distributed). Exit status: 0 report written,
1 an error (one line), 2 usage.
"""

import argparse
import concurrent.futures
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings


# How many times a task whose workers died is submitted again after Dask gave up on it.
RESUBMISSIONS = 2


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


def results(client, submit, items, what, patience):
    """{item: submit(item)'s result} for every item. A task that Dask gave up on because the
    workers running it died (KilledWorker), or that was cancelled with them, is submitted again,
    RESUBMISSIONS times at most; then it is an error (RuntimeError: one line). So is a cluster
    left without a worker for `patience` seconds (Dask would wait for one for ever)."""
    from distributed import KilledWorker
    futures = {item: submit(item) for item in items}
    out = {}
    for item, future in futures.items():
        for attempt in range(RESUBMISSIONS + 1):
            try:
                out[item] = result(client, future, patience)
                break
            except (KilledWorker, concurrent.futures.CancelledError, asyncio_cancelled()) as e:
                if attempt == RESUBMISSIONS:
                    raise RuntimeError(
                        "%s: the workers running it died, %d times submitted (%s)" %
                        (what(item), attempt + 1, type(e).__name__))
                future = submit(item)
    return out


def result(client, future, patience):
    """future.result(), or RuntimeError once the cluster has had no worker for `patience` s."""
    alone_since = None
    while True:
        try:
            return future.result(timeout=2)
        except TimeoutError:  # asyncio's and concurrent.futures' too, in Python 3.11
            pass
        if client.nthreads():
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > patience:
            raise RuntimeError("the cluster has had no worker for %d s (workers that died were "
                               "not restarted, or none joined)" % patience)


def asyncio_cancelled():
    import asyncio
    return asyncio.CancelledError


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
    patience = args.no_workers_timeout
    files = results(client, lambda _: client.submit(list_inputs, binary, args.inputs, pure=False),
                    [0], lambda _: "listing the inputs", patience)[0]
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
        indexed = results(
            client, lambda i: client.submit(index_files, binary, groups[i][1], groups[i][0], align,
                                            pure=False),
            range(len(groups)), lambda i: "indexing %s" % groups[i][1][0], patience)
        indexes = [indexed[i] for i in range(len(groups))]
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
        # The plan goes with each task (a plan is some bytes per file of the job): a task that
        # depends on nothing else runs again wherever a worker is left; data scattered to the
        # workers, or a task's result held by them, is lost with them.
        mapped = results(client, lambda s: client.submit(map_shard, binary, plan, s, pure=False),
                         which, lambda s: "mapping shard %d" % s, patience)
        for s in which:
            path = os.path.join(tmp, f"summary-{os.path.basename(plan_path)}-{s}")
            with open(path, "wb") as f:
                f.write(mapped[s])
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
    parser.add_argument("--no-workers-timeout", type=float, default=300, metavar="S",
                        help="give up when the cluster has had no worker for S seconds "
                        "(default 300)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="Dask's own log lines (a worker that died and was restarted, ...)")
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
    # Dask logs a worker's death and restart as warnings: what the driver goes on from needs no
    # line, and what it cannot go on from gets its own one.
    quiet = False if args.verbose else logging.CRITICAL  # False: LocalCluster's logging unchanged
    if not args.verbose:
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        # Also its warnings, such as "Port 8787 is already in use" for the dashboard of a second
        # cluster on the machine: the dashboard moves to another port and the report is the same.
        warnings.filterwarnings("ignore", module="distributed")
    cluster = None
    say = sys.stderr  # where the driver's own lines go
    try:
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            if not args.verbose:
                say = keep_cluster_stderr_apart()
            cluster = LocalCluster(n_workers=args.local_workers, threads_per_worker=1,
                                   processes=True, dashboard_address=None, silence_logs=quiet)
            client = Client(cluster)
        with client, tempfile.TemporaryDirectory(prefix="idlescope-dask-") as tmp:
            return analyze(client, args, tmp)
    except RuntimeError as e:
        print(f"dask_report.py: {e}", file=say)
        return 1
    except KeyboardInterrupt:
        print("dask_report.py: interrupted", file=say)
        return 130
    except Exception as e:  # Dask's and the OS's errors: one line, never a traceback
        print(f"dask_report.py: {type(e).__name__}: {e}", file=say)
        return 1
    finally:
        if cluster is not None:
            try:
                cluster.close()
            except Exception:  # a cluster whose workers are gone may fail to close: it is going
                pass
        say.flush()


def keep_cluster_stderr_apart():
    """The local cluster prints on stderr as its workers die: the worker processes (their own
    tracebacks, from Dask's code, as they are killed, on the fd 2 they inherit) and this process
    (a nanny's CancelledError as it starts a worker that is killed, asyncio's "Task was
    destroyed" at exit, through sys.stderr). Both go to an unlinked file from here to the end of
    the process; returns the real stderr, for the driver's own lines."""
    saved = os.dup(2)
    with tempfile.TemporaryFile(prefix="idlescope-dask-workers-") as log:
        os.dup2(log.fileno(), 2)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    return os.fdopen(saved, "w", buffering=1)


if __name__ == "__main__":
    sys.exit(main())
