#!/usr/bin/env python3
"""The fault matrix: small programs that do what real jobs do to a tracer, run bare and traced.

Each case runs one of our programs (tests/faults/programs/), a shell or Python one-liner, bare and
under the real preload library (simgpu first on LD_LIBRARY_PATH for CUDA cases), and compares
what a user can observe: stdout, stderr, the exit status or signal, and the files the program
wrote (path, size and content of every file under its working directory). A traced run that
hangs past its timeout is a failure, never a stuck CI. Then the traces must be readable:
`idlescope dump --summary` succeeds on every file, with a footer where the process ended cleanly
(exit, SIGTERM, SIGINT), and `idlescope report` succeeds on the directory.

Random choices (signal delays, which signal) come from one seed, printed first: `--seed N`
replays a run. `--case REGEX` selects cases, `--list` lists them.

Findings that other work is fixing are expected failures (KNOWN below, and tests/faults/KNOWN.md):
such a check is reported XFAIL with the finding's name and does not fail the run; when it passes
it is reported XPASS, and the mark should be removed. Every other failed check fails the run.
"""

import argparse
import dataclasses
import glob
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

# Check-name patterns (re.fullmatch) that fail today because of a finding another change fixes.
# The finding names match tests/faults/KNOWN.md (what fails, how often, the command). Remove an
# entry when its fix has merged: its checks then report XPASS.
KNOWN = {
}


@dataclasses.dataclass
class Paths:
    preload: str
    idlescope: str
    programs: str
    simgpu_lib: str
    work: str
    gen_trace: str = ""  # tools/gen_trace: generated jobs for the CLI's cases
    dask: str = ""  # tools/dask_report.py
    dask_python: str = ""  # a Python with dask.distributed


    def program(self, name):
        return os.path.join(self.programs, name)


@dataclasses.dataclass
class Run:
    """One execution of a program."""

    argv: list
    env: dict = dataclasses.field(default_factory=dict)  # added to the base environment
    stdin: object = "devnull"  # "devnull", "closed", or bytes fed through a pipe
    rlimits: dict = dataclasses.field(default_factory=dict)  # resource.RLIMIT_* -> (soft, hard)
    timeout: float = 30.0
    cuda: bool = False  # simgpu first on LD_LIBRARY_PATH
    # (signal number, seconds after the program printed "ready"): sent to the process itself.
    signal_after_ready: tuple = None
    setup: object = None  # callable(cwd): prepares the working directory (input files)


@dataclasses.dataclass
class Result:
    status: object  # exit code (int >= 0), -N for signal N, or "hung"
    stdout: bytes
    stderr: bytes
    files: dict  # relative path -> (size, sha256)
    wall: float
    signal_to_exit: float = None  # seconds from our signal to the process's end

    def describe_status(self):
        if self.status == "hung":
            return "hung (killed after the timeout)"
        if isinstance(self.status, int) and self.status < 0:
            return "killed by %s" % signal.Signals(-self.status).name
        return "exit %s" % self.status


class Matrix:
    def __init__(self, paths, seed, verbose):
        self.paths = paths
        self.rng = random.Random(seed)
        self.verbose = verbose
        self.results = []  # (state, name, detail)
        self.run_index = 0

    # ----------------------------------------------------------------------------------------
    # Running programs

    def base_env(self, cuda):
        env = {k: v for k, v in os.environ.items() if not k.startswith("IDLESCOPE_")
               and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
        env["LC_ALL"] = "C"
        if cuda:
            env["LD_LIBRARY_PATH"] = self.paths.simgpu_lib + (
                ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        return env

    def new_dir(self, what):
        self.run_index += 1
        d = os.path.join(self.paths.work, "%03d-%s" % (self.run_index, what))
        os.makedirs(d)
        return d

    def execute(self, run, traced, trace_dir=None, trace_env=None, tag="run", copy_at_signal=None):
        """Runs `run` in a fresh working directory; traced runs write traces into trace_dir. With
        copy_at_signal (a directory), the trace files as they are the moment before the signal
        are copied there."""
        cwd = self.new_dir(("traced-" if traced else "bare-") + tag)
        if run.setup:
            run.setup(cwd)
        before = snapshot(cwd)
        env = self.base_env(run.cuda)
        env.update(run.env)
        if traced:
            env["LD_PRELOAD"] = self.paths.preload
            env["IDLESCOPE_OUT"] = trace_dir
            env.update(trace_env or {})

        def preexec():
            for limit, value in run.rlimits.items():
                resource.setrlimit(limit, value)
            if run.stdin == "closed":
                try:
                    os.close(0)
                except OSError:  # already closed in the harness
                    pass

        stdin = subprocess.PIPE if isinstance(run.stdin, bytes) else (
            None if run.stdin == "closed" else subprocess.DEVNULL)
        start = time.monotonic()
        proc = subprocess.Popen(run.argv, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=preexec, start_new_session=True)
        out, err = bytearray(), bytearray()
        ready = threading.Event()

        def pump(stream, buf, watch):
            while True:
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    return
                buf.extend(chunk)
                if watch and b"ready\n" in buf:
                    ready.set()

        pumps = [threading.Thread(target=pump, args=(proc.stdout, out, True), daemon=True),
                 threading.Thread(target=pump, args=(proc.stderr, err, False), daemon=True)]
        for t in pumps:
            t.start()
        if isinstance(run.stdin, bytes):
            try:
                proc.stdin.write(run.stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        signalled_at = None
        deadline = start + run.timeout
        if run.signal_after_ready:
            sig, delay = run.signal_after_ready
            if ready.wait(max(0.0, deadline - time.monotonic())):
                time.sleep(delay)
                if copy_at_signal:
                    copy_traces(trace_dir, copy_at_signal)
                signalled_at = time.monotonic()
                try:
                    os.kill(proc.pid, sig)
                except ProcessLookupError:
                    pass
        try:
            status = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = "hung"
        ended = time.monotonic()
        # Whatever is left of the job (children of a hung run, or of one killed by our signal).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if status == "hung":
            proc.wait()
        for t in pumps:
            t.join(timeout=5)
        after = snapshot(cwd)
        files = {k: v for k, v in after.items() if before.get(k) != v}
        return Result(status=status, stdout=bytes(out), stderr=bytes(err), files=files,
                      wall=ended - start,
                      signal_to_exit=None if signalled_at is None else ended - signalled_at)

    # ----------------------------------------------------------------------------------------
    # Checks

    def check(self, name, ok, detail=""):
        known = next((finding for pattern, finding in KNOWN.items()
                      if re.fullmatch(pattern, name)), None)
        if ok:
            state = "XPASS" if known else "PASS"
            if known:
                detail = "expected to fail (%s)" % known
        else:
            state = "XFAIL" if known else "FAIL"
            if known:
                detail = "%s [known: %s]" % (detail, known)
        self.results.append((state, name, detail, known))
        # An intermittent finding passes most of its checks: those are counted per finding at the
        # end, and listed one by one only with -v.
        if state in ("PASS", "XPASS") and not self.verbose:
            print("%-5s %s" % (state, name), flush=True)
        else:
            print("%-5s %s%s" % (state, name, (": " + detail) if detail else ""), flush=True)
        return ok

    def compare(self, name, bare, traced, what=("status", "stdout", "stderr", "files"),
                idlescope_lines=0):
        """Checks that the traced run looked like the bare one. `idlescope_lines`: how many lines
        starting with "idlescope:" the traced stderr may have (a bad output directory: one per
        job), removed before comparing."""
        ok = True
        if traced.status == "hung" or bare.status == "hung":
            return self.check(name + "/status", False,
                              "bare %s, traced %s" % (bare.describe_status(),
                                                      traced.describe_status()))
        if "status" in what:
            ok &= self.check(name + "/status", bare.status == traced.status,
                             "bare %s, traced %s" % (bare.describe_status(),
                                                     traced.describe_status()))
        if "stdout" in what:
            ok &= self.check(name + "/stdout", bare.stdout == traced.stdout,
                             first_difference(bare.stdout, traced.stdout))
        if "stderr" in what:
            lines = traced.stderr.splitlines(keepends=True)
            ours = [l for l in lines if l.startswith(b"idlescope:")]
            rest = b"".join(l for l in lines if not l.startswith(b"idlescope:"))
            if idlescope_lines:
                ok &= self.check(name + "/idlescope-lines", len(ours) <= idlescope_lines,
                                 "%d lines of ours on stderr (at most %d), first: %r" %
                                 (len(ours), idlescope_lines, ours[:1]))
                traced_err = rest
            else:
                traced_err = traced.stderr
            ok &= self.check(name + "/stderr", bare.stderr == traced_err,
                             first_difference(bare.stderr, traced_err))
        if "files" in what:
            ok &= self.check(name + "/files", bare.files == traced.files,
                             files_difference(bare.files, traced.files))
        return ok

    def read_traces(self, trace_dir):
        """{file: summary dict} for every trace file; a file dump cannot read maps to None."""
        traces = {}
        for entry in sorted(os.listdir(trace_dir)):
            if not entry.endswith(".idlescope"):
                continue
            path = os.path.join(trace_dir, entry)
            p = subprocess.run([self.paths.idlescope, "dump", "--summary", path],
                               capture_output=True, timeout=60)
            traces[entry] = parse_summary(p.stdout) if p.returncode == 0 else {
                "error": p.stderr.decode(errors="replace").strip(),
                "bytes": os.path.getsize(path)}
        return traces

    def check_traces(self, name, trace_dir, footer="all", min_files=1, report=True,
                     min_events=0):
        """The traces of a run: every file readable by dump, a footer in each ("all") or in none
        required ("none"), at least min_events host events in all, and `report` succeeds."""
        traces = self.read_traces(trace_dir)
        ok = self.check(name + "/trace-files", len(traces) >= min_files,
                        "%d trace files, expected at least %d" % (len(traces), min_files))
        bad = {f: t["error"] for f, t in traces.items() if "error" in t}
        ok &= self.check(name + "/trace-readable", not bad,
                         "; ".join("%s: %s" % (f, e) for f, e in sorted(bad.items())[:3]))
        if footer == "all":
            missing = [f for f, t in traces.items() if "error" not in t and not t["footer"]]
            ok &= self.check(name + "/trace-footer", not missing,
                             "%d of %d files have no footer (%s)" %
                             (len(missing), len(traces), ", ".join(missing[:3])))
        if min_events:
            events = sum(t.get("events", 0) for t in traces.values())
            ok &= self.check(name + "/trace-events", events >= min_events,
                             "%d host events in the traces, expected at least %d" %
                             (events, min_events))
        if report and traces:
            p = subprocess.run([self.paths.idlescope, "report", trace_dir], capture_output=True,
                               timeout=120)
            ok &= self.check(name + "/report", p.returncode == 0,
                             "idlescope report exit %d: %s" %
                             (p.returncode, p.stderr.decode(errors="replace").strip()[-300:]))
        return traces

    def trace_dir(self, tag):
        d = self.new_dir("traces-" + tag)
        return d

    def traced_as_bare(self, name, run, trace_env=None, **trace_checks):
        """The common case: the traced run looks like the bare one, and its traces read."""
        _, _, trace_dir = self.bare_and_traced(name, run, trace_env=trace_env)
        return self.check_traces(name, trace_dir, **trace_checks)

    def bare_and_traced(self, name, run, trace_env=None, **compare_args):
        bare = self.execute(run, traced=False, tag=name.replace("/", "-"))
        trace_dir = self.trace_dir(name.replace("/", "-"))
        traced = self.execute(run, traced=True, trace_dir=trace_dir, trace_env=trace_env,
                              tag=name.replace("/", "-"))
        self.compare(name, bare, traced, **compare_args)
        return bare, traced, trace_dir


# --------------------------------------------------------------------------------------------
# Helpers

def copy_traces(trace_dir, to):
    """The trace files of a running process as they are now (a chunk being written may be cut)."""
    os.makedirs(to, exist_ok=True)
    for entry in os.listdir(trace_dir):
        if entry.endswith(".idlescope"):
            try:
                with open(os.path.join(trace_dir, entry), "rb") as f:
                    data = f.read()
            except OSError:
                continue
            with open(os.path.join(to, entry), "wb") as f:
                f.write(data)


def snapshot(root):
    files = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except OSError as e:
                data = ("unreadable: %s" % e).encode()
            files[os.path.relpath(p, root)] = (len(data), hashlib.sha256(data).hexdigest()[:16])
    return files


def first_difference(a, b):
    if a == b:
        return ""
    al, bl = a.splitlines(), b.splitlines()
    for i in range(max(len(al), len(bl))):
        x = al[i] if i < len(al) else None
        y = bl[i] if i < len(bl) else None
        if x != y:
            return "line %d: bare %r, traced %r" % (i + 1, x, y)
    return "bare %r, traced %r" % (a[-80:], b[-80:])


def files_difference(a, b):
    if a == b:
        return ""
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            out.append("%s: bare %s, traced %s" % (k, a.get(k, "absent"), b.get(k, "absent")))
    return "; ".join(out[:4]) + (" (+%d more)" % (len(out) - 4) if len(out) > 4 else "")


SUMMARY = re.compile(rb"summary: (\d+) packets .*?\), (\d+) events, (\d+) gpu activities, "
                     rb"(\d+) events dropped")
PACKET = re.compile(rb"^packet \d+ @\d+: (\w+) ?(.*)$")


def parse_summary(text):
    """What `idlescope dump --summary` says of a file: host events, GPU records and drops, the
    footer's fields, the notices, whether the tail was cut."""
    info = {"footer": False, "events": 0, "gpu": 0, "dropped": 0, "notices": [],
            "truncated": False, "footer_fields": {}}
    for line in text.splitlines():
        m = SUMMARY.search(line)
        if m:
            info["events"], info["gpu"], info["dropped"] = (int(m.group(2)), int(m.group(3)),
                                                            int(m.group(4)))
        p = PACKET.match(line)
        if p and p.group(1) == b"footer":
            info["footer"] = True
            for field in p.group(2).split():
                k, _, v = field.partition(b"=")
                info["footer_fields"][k.decode()] = v.decode()
        elif p and p.group(1) == b"notice":
            info["notices"].append(p.group(2).decode(errors="replace"))
        if line.startswith(b"truncated:") or line.startswith(b"corrupt:"):
            info["truncated"] = True
    return info


# --------------------------------------------------------------------------------------------
# Cases. Each is a function of the Matrix; its name is the case name.

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def storm(m, mode, count, threads=64):
    run = Run([m.paths.program("proc_storm"), mode, str(count), str(threads)], timeout=60)
    # The parent, and one file per child (fork and exec children, spawned leaves; vfork children
    # exec /bin/true at once, whose traces are files too).
    m.traced_as_bare("proc_storm/" + mode, run, min_files=1 + count)


@case
def proc_fork(m):
    storm(m, "fork", 60)


@case
def proc_fork_first_calls(m):
    """Forks while 64 threads make their first calls of 24 hooked functions: 3 runs of 60."""
    for i in range(3):
        name = "proc_fork_first_calls/run%d" % i
        run = Run([m.paths.program("proc_storm"), "first", "60", "64"], timeout=40)
        m.traced_as_bare(name, run, min_files=1, footer="none", report=False)


@case
def proc_vfork(m):
    storm(m, "vfork", 60)


@case
def proc_spawn(m):
    storm(m, "spawn", 40)


@case
def proc_exec(m):
    storm(m, "exec", 40)


@case
def vfork_memory(m):
    m.traced_as_bare("vfork_memory", Run([m.paths.program("vfork_shares_memory")]))
    m.traced_as_bare("vfork_memory/handlers",
                     Run([m.paths.program("vfork_shares_memory"), "handlers"]), min_files=2)
    # The same through CPython: subprocess.run uses vfork, whose child resets the handlers; the
    # parent's KeyboardInterrupt must still come.
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    code = ("import os, signal, subprocess, time\n"
            "subprocess.run(['/bin/true'])\n"
            "try:\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "    time.sleep(1)\n"
            "    print('no KeyboardInterrupt')\n"
            "except KeyboardInterrupt:\n"
            "    print('KeyboardInterrupt')\n")
    m.traced_as_bare("vfork_memory/python_sigint", Run([python, "-c", code]), min_files=2)


@case
def pthread_exit_main(m):
    m.traced_as_bare("pthread_exit_main", Run([m.paths.program("pthread_exit_main")], timeout=10))
    m.traced_as_bare("pthread_exit_main/forked",
                     Run([m.paths.program("pthread_exit_main"), "forked"], timeout=10),
                     min_files=2)


def pyenv_pythons(versions):
    """{version: interpreter} for the pyenv CPythons of `versions` found on this machine."""
    found = {}
    root = os.path.expanduser(os.environ.get("PYENV_ROOT", "~/.pyenv"))
    for v in versions:
        for d in sorted(glob.glob(os.path.join(root, "versions", v + ".*")), reverse=True):
            exe = os.path.join(d, "bin", "python3")
            if os.access(exe, os.X_OK):
                found[v] = exe
                break
    return found


# A DataLoader-style job: the main process forks 4 workers that read their shard of a file and
# send what they read back through pipes, then end in os._exit, as multiprocessing's fork workers
# do. Under -W error a warning is an exception (and the exit status 1).
FORK_WORKERS = """
import os, sys
with open("data.bin", "wb") as f:
    f.write(bytes(range(256)) * 4096)
pipes = []
for w in range(4):
    r, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        with open("data.bin", "rb") as f:
            f.seek(w << 18)
            n = len(f.read(1 << 18))
        os.write(wr, str(n).encode())
        os._exit(0)
    os.close(wr)
    pipes.append((pid, r))
total = 0
for pid, r in pipes:
    total += int(os.read(r, 64))
    os.close(r)
    os.waitpid(pid, 0)
print("workers read", total, "threads", len(os.listdir("/proc/self/task")))
"""


@case
def sandboxes(m):
    """What a thread of ours would break (issue 25): unshare(CLONE_NEWUSER) needs a
    single-threaded process; a privilege drop with per-thread capabilities (setpriv) makes glibc's
    set*id broadcast abort where another thread cannot follow; CPython 3.12+ warns on each fork of
    a multi-threaded process (-W error: an exception). A process that issues no device work has no
    thread of ours, and each of these behaves as bare."""
    # unshare -U fails the same way bare where user namespaces are off (a container without them):
    # then both runs say so and compare equal.
    if shutil.which("unshare"):
        m.traced_as_bare("sandboxes/unshare_user", Run(["unshare", "-U", "-r", "id", "-u"]),
                         min_files=1)
    if shutil.which("setpriv") and os.geteuid() == 0:
        # The dropped process (and `id`, which it execs) write their traces as nobody.
        name = "sandboxes/setpriv_drop"
        run = Run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "id", "-u"])
        bare = m.execute(run, traced=False, tag="setpriv")
        trace_dir = m.trace_dir("setpriv")
        os.chmod(m.paths.work, 0o711)  # mkdtemp's 0700: nobody could not reach the traces
        os.chmod(trace_dir, 0o1777)
        traced = m.execute(run, traced=True, trace_dir=trace_dir, tag="setpriv")
        m.compare(name, bare, traced)
        m.check_traces(name, trace_dir, min_files=2)
    # Seccomp after traced work: the trace ends there (footer EXIT_DETACHED) and the program goes on
    # untouched; before, strict mode died of a signal and the allow-list of SIGSYS.
    for mode in ("strict", "filter"):
        traces = m.traced_as_bare("sandboxes/seccomp_" + mode,
                                  Run([m.paths.program("sandboxed"), mode]))
        m.check("sandboxes/seccomp_%s/events" % mode,
                sum(t.get("events", 0) for t in traces.values() if "error" not in t) > 0,
                "no event before the sandbox reached the trace")
    # SIGTERM with 4 KB of stack left: the kernel's signal frame fits (3-4 KB with AVX-512 state),
    # the flush does not (tens of KB): the handler's work runs on stacks of ours. With 3 KB or 1 KB
    # left the frame itself does not fit the thread's stack: it goes on our alternate stack (the
    # kernel killed the process with SIGSEGV before, finding sigterm-no-frame-room).
    for room in (4096, 3072, 1024):
        m.traced_as_bare("sandboxes/sigterm_stack_%dk" % (room // 1024),
                         Run([m.paths.program("stack_nearly_full"), str(room)],
                             signal_after_ready=(signal.SIGTERM, 0.3), timeout=20))
    # The alternate stack that holds our SIGTERM handler's frame is not the program's to see.
    m.traced_as_bare("sandboxes/altstack_hidden", Run([m.paths.program("altstack_probe")]))
    # A sandbox that installs a filter and execs its worker, whose filter kills what the worker never
    # calls and a tracer creating its file could (mkdir, linkat): the worker's trace is made with
    # open and write (finding seccomp-exec-filter, KNOWN.md's Fixed).
    worker = [m.paths.program("sandboxed"), "exec", "/bin/echo", "worker"]
    traces = m.traced_as_bare("sandboxes/seccomp_exec", Run(worker), min_files=2)
    m.check("sandboxes/seccomp_exec/worker-events",
            any(t.get("events", 0) > 0 for t in traces.values() if "error" not in t),
            "no trace of the worker holds an event: %r" % traces)
    # The same when nothing made the output directory before the filter: the worker's tracer does
    # not make it (no mkdir under a filter); the worker runs untraced, one line of ours at most.
    no_dir = os.path.join(m.new_dir("seccomp-no-dir"), "traces")
    inner = worker[:2] + ["/usr/bin/env", "LD_PRELOAD=" + m.paths.preload,
                          "IDLESCOPE_OUT=" + no_dir] + worker[2:]
    bare = m.execute(Run(worker), traced=False, tag="sandboxes-seccomp_exec_no_dir")
    preloaded = m.execute(Run(inner), traced=False, tag="sandboxes-seccomp_exec_no_dir")
    m.compare("sandboxes/seccomp_exec_no_dir", bare, preloaded, idlescope_lines=1)
    m.traced_as_bare("sandboxes/one_thread",
                     Run([sys.executable, "-c",
                          "import os; print(len(os.listdir('/proc/self/task')))"]))
    pythons = pyenv_pythons(["3.12", "3.13"])
    m.check("sandboxes/pythons", len(pythons) == 2,
            "pyenv CPythons found: %s (3.12 and 3.13 expected)" % sorted(pythons))
    for version, python in sorted(pythons.items()):
        m.traced_as_bare("sandboxes/python%s_fork_workers" % version,
                         Run([python, "-W", "error", "-c", FORK_WORKERS]), min_files=5)


def signal_runs(m, name, argv_for, handlers, cuda, runs_per_signal):
    """SIGTERM, SIGINT and SIGKILL at random points after "ready", with and without a handler:
    the traced process must end like the bare one (same signal, or the handler's exit), soon after
    the signal; its trace readable, with a footer and the events before the signal unless it was
    SIGKILL (then readable up to the last flush)."""
    flush_ms = 50
    for handler in handlers:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            if handler == "handler" and sig == signal.SIGKILL:
                continue
            full = argv_for(handler)
            for i in range(runs_per_signal):
                delay = round(m.rng.uniform(0.0, 0.3), 3)
                tag = "%s/%s/%s/run%d" % (name, handler, sig.name, i)
                run = Run(full, cuda=cuda, signal_after_ready=(sig, delay), timeout=30)
                if i == 0:  # one bare run per signal: the expected end
                    bare = m.execute(run, traced=False, tag=tag.replace("/", "-"))
                trace_dir = m.trace_dir(tag.replace("/", "-"))
                clean = sig != signal.SIGKILL
                at_signal = None if clean else trace_dir + "-at-signal"
                traced = m.execute(run, traced=True, trace_dir=trace_dir,
                                   trace_env={"IDLESCOPE_FLUSH_MS": str(flush_ms)},
                                   tag=tag.replace("/", "-"), copy_at_signal=at_signal)
                what = ("status",) if handler == "default" else ("status", "stdout", "stderr")
                m.compare(tag + " (delay %.3f s)" % delay, bare, traced, what=what)
                if traced.signal_to_exit is not None:
                    # The tracer's flush on SIGTERM/SIGINT must not hold the exit: a job's
                    # launcher waits for it (a stall of 3 s was seen with the strings mutex).
                    m.check(tag + "/exit-latency", traced.signal_to_exit < 2.0,
                            "ended %.2f s after the signal (bare: %.2f s)" %
                            (traced.signal_to_exit, bare.signal_to_exit or 0))
                min_files = min_events = 1
                if not clean:
                    # SIGKILL keeps what was flushed before it, never less: every file and event
                    # readable from a copy taken just before the signal. How much that is depends
                    # on the load (the start does not wait for the writer thread, which creates the
                    # file; under -j2 a file was still missing 0.2 s after "ready" in CI), so the
                    # copy, not a delay, says what must be there.
                    before = [t for t in m.read_traces(at_signal).values() if "error" not in t]
                    min_files = len(before)
                    min_events = sum(t.get("events", 0) for t in before)
                m.check_traces(tag, trace_dir, footer="all" if clean else "none",
                               min_files=min_files, min_events=min_events, report=i == 0)


@case
def signals(m):
    signal_runs(m, "signals", lambda h: [m.paths.program("signal_target"), h, "8"],
                ["default", "handler"], cuda=False, runs_per_signal=3)
    # The main thread alone, interning a new path per failed open: a signal most likely lands
    # while it holds the tracer's string table (a 3 s stall and no footer were seen so).
    signal_runs(m, "signals_lookups", lambda h: [m.paths.program("signal_target"), "lookups", "0"],
                ["lookups"], cuda=False, runs_per_signal=8)


@case
def signals_cuda(m):
    signal_runs(m, "signals_cuda", lambda h: [m.paths.program("cuda_copies"), "0"], ["default"],
                cuda=True, runs_per_signal=2)


@case
def fd_numbers(m):
    m.traced_as_bare("fd_numbers", Run([m.paths.program("fd_probe"), "numbers"]))


@case
def fd_low_nofile(m):
    for limit in (32, 64):
        name = "fd_low_nofile/%d" % limit
        m.traced_as_bare(name, Run([m.paths.program("fd_probe"), "nofile", str(limit)]))
    # The limit set from outside, before the program (and the tracer) start.
    name = "fd_low_nofile/rlimit-16"
    m.traced_as_bare(name, Run([m.paths.program("fd_probe"), "nofile", "16"],
                  rlimits={resource.RLIMIT_NOFILE: (16, 16)}))


@case
def fd_every_number(m):
    m.traced_as_bare("fd_every_number", Run([m.paths.program("fd_probe"), "every"]))


@case
def stdin_closed(m):
    for stdin in ("closed", b"some input\n"):
        name = "stdin_closed/" + ("closed" if stdin == "closed" else "pipe")
        m.traced_as_bare(name, Run([m.paths.program("fd_probe"), "stdin"], stdin=stdin))


@case
def close_all_fds(m):
    for method in ("close_range", "close_range_syscall", "closefrom", "loop"):
        for scope in ("above2", "all"):
            name = "close_all_fds/%s/%s" % (method, scope)
            m.traced_as_bare(name, Run([m.paths.program("close_all"), method, scope]),
                             min_files=2 if scope == "above2" else 1)


def write_input(cwd):
    with open(os.path.join(cwd, "in.txt"), "w") as f:
        f.write("".join("input line %d\n" % i for i in range(200)))


@case
def shell_fds(m):
    """bash reading fd 3 and writing fd 4, the numbers a tracer's own pipe would take."""
    script = ("exec 3<in.txt 4>out.txt; n=0; while read -r line <&3; do n=$((n+1)); "
              "echo \"$line\" >&4; done; echo \"read $n lines\"; echo hello >&4; exec 4>&-; "
              "exec 0<&-; cat in.txt | wc -l; ls /proc/self/fd | wc -l")
    m.traced_as_bare("shell_fds", Run(["/bin/bash", "-c", script], setup=write_input),
                     min_files=2)


@case
def python_close_fds(m):
    """subprocess(close_fds=True), whose child closes every fd above 2 before exec."""
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    code = ("import subprocess, os\n"
            "r = subprocess.run(['/bin/sh', '-c', 'echo out; echo err >&2; ls /proc/self/fd'], "
            "close_fds=True, capture_output=True)\n"
            "print(r.returncode, r.stdout, r.stderr)\n"
            "print(os.pipe())\n")
    m.traced_as_bare("python_close_fds", Run([python, "-c", code]), min_files=2)


def out_dir_case(m, name, make_out_dir, cleanup=None, rlimits=None):
    """A job whose output directory cannot take its traces: the job must run exactly as bare
    (at most one line of ours on its stderr, for the whole job), and whatever traces were
    written must still make a report."""
    run = Run([m.paths.program("workers"), "8"], rlimits=rlimits or {})
    bare = m.execute(run, traced=False, tag=name.replace("/", "-"))
    out = make_out_dir()
    try:
        traced = m.execute(run, traced=True, trace_dir=out, tag=name.replace("/", "-"))
        m.compare(name, bare, traced, idlescope_lines=1)
        if os.path.isdir(out) and any(f.endswith(".idlescope") for f in os.listdir(out)):
            traces = m.read_traces(out)
            p = subprocess.run([m.paths.idlescope, "report", out], capture_output=True,
                               timeout=120)
            m.check(name + "/report", p.returncode == 0,
                    "idlescope report exit %d on %d files (%d unreadable): %s" %
                    (p.returncode, len(traces), sum("error" in t for t in traces.values()),
                     p.stderr.decode(errors="replace").strip()[-300:]))
    finally:
        if cleanup:
            cleanup(out)


@case
def out_dir_missing(m):
    # A directory that cannot be created: its parent is a regular file.
    def make():
        parent = m.new_dir("not-a-dir")
        blocker = os.path.join(parent, "file")
        open(blocker, "w").close()
        return os.path.join(blocker, "traces")
    out_dir_case(m, "out_dir_missing", make)


def mount(*args):
    return subprocess.run(["mount"] + list(args), capture_output=True).returncode == 0


@case
def out_dir_read_only(m):
    def make():
        d = m.new_dir("ro")
        if os.geteuid() == 0:
            # root writes through permission bits: a read-only bind mount is what stops it.
            if mount("--bind", d, d) and mount("-o", "remount,bind,ro", d):
                return d
            print("note: read-only bind mount failed; using chmod", flush=True)
        os.chmod(d, 0o555)
        return d

    def cleanup(d):
        if os.geteuid() == 0:
            subprocess.run(["umount", d], capture_output=True)
        os.chmod(d, 0o755)
    out_dir_case(m, "out_dir_read_only", make, cleanup)


@case
def out_dir_full(m):
    """A filesystem that fills up while the traces are written: a 16 KiB tmpfs as root (four
    pages: four of the job's ten files get a page, the others none), and RLIMIT_FSIZE at 512
    bytes (every trace cut a little after its header; the job's own files are smaller)."""
    if os.geteuid() == 0:
        def make():
            d = m.new_dir("full")
            if not mount("-t", "tmpfs", "-o", "size=16k", "tmpfs", d):
                raise RuntimeError("mount tmpfs failed")
            return d

        def cleanup(d):
            subprocess.run(["umount", d], capture_output=True)
        out_dir_case(m, "out_dir_full/tmpfs", make, cleanup)
    # Past the limit, write() fails with EFBIG and raises SIGXFSZ in the writing thread, whose
    # default action kills the process: the tracer's writes must not end the job.
    out_dir_case(m, "out_dir_full/fsize", lambda: m.new_dir("fsize"),
                 rlimits={resource.RLIMIT_FSIZE: (512, 512)})


@case
def cupti_unavailable(m):
    """CUPTI that cannot load or start: host-side tracing goes on, the trace says so with a
    notice and holds no GPU records, and the job runs as bare."""
    run = Run([m.paths.program("cuda_copies"), "20"], cuda=True)
    # An explicit IDLESCOPE_CUPTI_LIB that does not exist: the search goes on (README) and finds
    # simgpu's libcupti first on LD_LIBRARY_PATH.
    name = "cupti_unavailable/explicit_path_missing"
    found = m.traced_as_bare(name, run, min_events=20,
                             trace_env={"IDLESCOPE_CUPTI_LIB": "/nonexistent/libcupti.so.13"})
    gpu = sum(t.get("gpu", 0) for t in found.values())
    m.check(name + "/gpu-records", gpu > 0, "no GPU records: the search did not find simgpu's")

    def simgpu_without_cupti(broken):
        lib = m.new_dir("simgpu-no-cupti")
        for entry in os.listdir(m.paths.simgpu_lib):
            if "cupti" not in entry:
                os.symlink(os.path.join(m.paths.simgpu_lib, entry), os.path.join(lib, entry))
        if broken:  # first on the path, beside libcudart: dlopen fails ("file too short")
            open(os.path.join(lib, "libcupti.so.13"), "w").close()
        return Run(run.argv, env={"LD_LIBRARY_PATH": lib})

    # Nothing loadable anywhere: an empty libcupti.so.13 where every search looks first.
    name = "cupti_unavailable/broken_libcupti"
    check_cupti_trace(m, name, m.traced_as_bare(
        name, simgpu_without_cupti(True), min_events=20,
        trace_env={"IDLESCOPE_CUPTI_LIB": "/nonexistent/libcupti.so.13"}))
    # No libcupti beside simgpu: the ld cache's (the CUDA toolkit's real one) loads and fails to
    # start without a driver.
    name = "cupti_unavailable/cupti_fails_to_start"
    check_cupti_trace(m, name, m.traced_as_bare(name, simgpu_without_cupti(False), min_events=20))


def check_cupti_trace(m, name, traces):
    notices = [n for t in traces.values() for n in t.get("notices", [])]
    m.check(name + "/notice", any("cupti" in n.lower() for n in notices),
            "no notice about CUPTI in the trace: %s" % notices[:3])
    gpu = sum(t.get("gpu", 0) for t in traces.values())
    m.check(name + "/no-gpu-records", gpu == 0, "%d GPU records without CUPTI" % gpu)


@case
def buffers_exhausted(m):
    """16 KiB rings and a flood of events: drops are counted, the job never blocks."""
    threads, calls = 4, 50000
    run = Run([m.paths.program("event_flood"), str(threads), str(calls)], timeout=60)
    traces = m.traced_as_bare("buffers_exhausted", run, trace_env={"IDLESCOPE_BUFFER_KB": "16"})
    t = next(iter(traces.values()), {})
    fields = t.get("footer_fields", {})
    recorded = int(fields.get("events", 0))
    dropped = int(fields.get("events_dropped", 0))
    m.check("buffers_exhausted/dropped-counted",
            dropped > 0 and recorded + dropped >= 2 * threads * calls,
            "footer: %d events recorded, %d dropped, the program made %d" %
            (recorded, dropped, 2 * threads * calls))


@case
def non_utf8_names(m):
    """File names, an environment value and a command-line argument that are not UTF-8 (Latin-1
    bytes): the job runs as bare, the trace keeps the bytes, `report` names the files, and
    `report --json` is valid JSON (RFC 8259: UTF-8) that still names them."""
    script = ("for i in 0 1 2; do head -c 300000 /dev/zero > \"$(printf 'caf\\351-%d.bin' $i)\"; "
              "done; sync; ls | od -c | head -3")
    run = Run(["/bin/bash", "-c", script, "arg-\xe9".encode("latin-1")],
              env={"CUDA_VISIBLE_DEVICES": b"0,\xff".decode("latin-1")})
    traces_dir = m.bare_and_traced("non_utf8_names", run)[2]
    m.check_traces("non_utf8_names", traces_dir, min_files=2)
    text = subprocess.run([m.paths.idlescope, "report", traces_dir], capture_output=True).stdout
    m.check("non_utf8_names/text", b"caf\xe9-0.bin" in text,
            "the text report does not name caf\\xe9-0.bin")
    out = subprocess.run([m.paths.idlescope, "report", "--json", traces_dir],
                         capture_output=True).stdout
    try:
        names = "caf" in json.dumps(json.loads(out.decode("utf-8")))
        problem = "" if names else "valid JSON, but caf...-0.bin is not in it"
    except (UnicodeDecodeError, ValueError) as e:
        names, problem = False, "not valid UTF-8 JSON: %s" % e
    m.check("non_utf8_names/json", names, problem)


# --------------------------------------------------------------------------------------------
# The idlescope CLI where a hostile world meets it: what it writes (-o, stdout), the names it
# prints, the shard files it is handed, the Dask driver's workers dying, signals during a report.
# These run the CLI on jobs made by tools/gen_trace (or traced here), not a program bare and
# traced: what is compared is what a shell redirect, a terminal or a report of the same files
# would give.

def gen_job(m, tag, args):
    d = m.new_dir("job-" + tag)
    p = subprocess.run([m.paths.gen_trace, "--out", d] + args, capture_output=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("gen_trace %s: %s" % (args, p.stderr.decode(errors="replace")))
    return d


def cli(m, args, timeout=120, **kwargs):
    """Runs idlescope ARGS: (status, stdout, stderr), status -N for signal N; one that runs past
    `timeout` is killed (-SIGKILL, and stderr says so)."""
    try:
        p = subprocess.run([m.paths.idlescope] + args, capture_output=True, timeout=timeout,
                           **kwargs)
    except subprocess.TimeoutExpired:
        return -signal.SIGKILL, b"", b"(killed: still running after %d s)" % timeout
    return p.returncode, p.stdout, p.stderr


def one_line_error(status, err, prefix=b"idlescope"):
    """An error as the CLI promises it: a non-zero exit status (not a signal) and one line."""
    lines = err.splitlines()
    return status > 0 and len(lines) == 1 and lines[0].startswith(prefix)


def describe_end(status, err):
    how = ("killed by %s" % signal.Signals(-status).name) if status < 0 else ("exit %d" % status)
    return "%s, stderr %r" % (how, err[-300:])


def file_problem(path, expected=None, mode=None, owner=None, kind=stat.S_ISREG):
    """"" when `path` is a file of `kind` holding `expected` with `mode` and `owner`, else what
    is not."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return "%s: %s" % (path, e)
    if not kind(st.st_mode):
        return "%s is now of type %o" % (path, stat.S_IFMT(st.st_mode))
    if mode is not None and stat.S_IMODE(st.st_mode) != mode:
        return "%s has mode %o, expected %o" % (path, stat.S_IMODE(st.st_mode), mode)
    if owner is not None and (st.st_uid, st.st_gid) != owner:
        return "%s is owned by %d:%d, expected %d:%d" % ((path, st.st_uid, st.st_gid) + owner)
    if expected is not None:
        with open(path, "rb") as f:
            data = f.read()
        if data != expected:
            return "%s holds %d bytes, not the %d expected" % (path, len(data), len(expected))
    return ""


def write_targets(m, name, command, expected):
    """`command` + [path] writes `expected` to each kind of path as a shell's `> path` would."""
    d = m.new_dir("outputs-" + name)
    root = os.geteuid() == 0
    umask = os.umask(0o022)
    os.umask(umask)

    def old(path, mode=0o644):
        with open(path, "wb") as f:
            f.write(b"what was there before\n")
        os.chmod(path, mode)

    def written(kind, path, check, before=None):
        status, _, err = cli(m, command + [path])
        m.check("%s/%s/status" % (name, kind), status == 0 and not err, describe_end(status, err))
        if before is not None:
            before()
        problem = check()
        m.check("%s/%s/file" % (name, kind), not problem, problem)

    new = os.path.join(d, "new")
    written("new", new, lambda: file_problem(new, expected, mode=0o666 & ~umask))
    private = os.path.join(d, "private")
    old(private, 0o600)
    owner = (65534, 65534) if root else (os.getuid(), os.getgid())
    if root:
        os.chown(private, *owner)
    written("mode600", private, lambda: file_problem(private, expected, mode=0o600, owner=owner))
    target, link = os.path.join(d, "target"), os.path.join(d, "link")
    old(target)
    os.symlink("target", link)
    written("symlink", link, lambda: file_problem(link, kind=stat.S_ISLNK) or
            file_problem(target, expected))
    first, second = os.path.join(d, "first"), os.path.join(d, "second")
    old(first)
    os.link(first, second)
    written("hardlink", first, lambda: file_problem(first, expected) or
            file_problem(second, expected) or
            ("" if os.stat(first).st_ino == os.stat(second).st_ino else "the link was broken"))
    # A device: a copy of /dev/null here as root (never the system's own: a failure would break
    # every program on the machine), /dev/null itself otherwise (a rename over it fails).
    if root:
        device = os.path.join(d, "null")
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        device = "/dev/null"
    written("device", device, lambda: file_problem(device, kind=stat.S_ISCHR))
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    got = bytearray()

    def read_fifo():
        with open(fifo, "rb") as f:
            got.extend(f.read())
    reader = threading.Thread(target=read_fifo, daemon=True)
    reader.start()
    written("fifo", fifo, lambda: file_problem(fifo, kind=stat.S_ISFIFO) or (
        "" if bytes(got) == expected else "the reader got %d bytes, not the %d expected" %
        (len(got), len(expected))), before=lambda: reader.join(timeout=10))


@case
def cli_output(m):
    """`-o FILE` of report (and of map, a summary) replaces a regular file whole, keeping its mode
    and owner, and writes anything else in place: a device, a FIFO (its reader gets the bytes), a
    symlink's target, a file with hard links (every name sees the new bytes)."""
    job = gen_job(m, "output", ["--ranks", "2", "--events", "20000"])
    status, expected, err = cli(m, ["report", "-q", job])
    if not m.check("cli_output/report", status == 0 and expected, describe_end(status, err)):
        return
    write_targets(m, "cli_output/report", ["report", "-q", job, "-o"], expected)
    steps = m.new_dir("output-steps")
    index, plan = os.path.join(steps, "index"), os.path.join(steps, "plan")
    status, _, err = cli(m, ["index", "-o", index, job])
    status2, _, err2 = cli(m, ["plan", "-o", plan, index])
    summary = os.path.join(steps, "summary")
    status3, _, err3 = cli(m, ["map", "-o", summary, plan, "0"])
    if not m.check("cli_output/map", status == status2 == status3 == 0,
                   (err + err2 + err3)[-300:]):
        return
    with open(summary, "rb") as f:
        expected = f.read()
    write_targets(m, "cli_output/map", ["map", plan, "0", "-o"], expected)


@case
def cli_write_errors(m):
    """Output that cannot be written (/dev/full, a full filesystem, a pipe whose reader has gone)
    is a one-line error and a non-zero exit status, never exit 0 with the output cut; `-o` to a
    full filesystem leaves the file that was there as it was."""
    job = gen_job(m, "write-errors", ["--ranks", "2", "--events", "20000"])
    trace = sorted(os.path.join(job, f) for f in os.listdir(job))[0]
    commands = {
        "report": ["report", "-q", job],
        "report-json": ["report", "-q", "--format", "json", job],
        "dump": ["dump", trace],
        "index-list": ["index", "--list", job],
        "version": ["--version"],
        "help": ["report", "--help"],
    }
    for name, args in commands.items():
        with open("/dev/full", "wb") as full:
            p = subprocess.run([m.paths.idlescope] + args, stdout=full, stderr=subprocess.PIPE,
                               timeout=120)
        m.check("cli_write_errors/dev-full/%s" % name, one_line_error(p.returncode, p.stderr),
                describe_end(p.returncode, p.stderr))
    for name in ("report", "dump"):
        r, w = os.pipe()
        os.close(r)  # the reader has gone: writes fail with EPIPE
        p = subprocess.run([m.paths.idlescope] + commands[name], stdout=w,
                           stderr=subprocess.PIPE, timeout=120)
        os.close(w)
        m.check("cli_write_errors/closed-pipe/%s" % name, one_line_error(p.returncode, p.stderr),
                describe_end(p.returncode, p.stderr))
    if os.geteuid() != 0:
        print("note: not root: no full tmpfs", flush=True)
        return
    # A 16 KiB tmpfs (four pages) with one page left: the JSON report (some 6 KiB) cannot fit.
    status, report, err = cli(m, commands["report-json"])
    if len(report) <= 4096:
        raise RuntimeError("the JSON report is %d bytes: the case needs more than a page" %
                           len(report))
    d = m.new_dir("full")
    if not mount("-t", "tmpfs", "-o", "size=16k", "tmpfs", d):
        raise RuntimeError("mount tmpfs failed")
    try:
        with open(os.path.join(d, "filler"), "wb") as f:
            f.write(bytes(3 * 4096))
        with open(os.path.join(d, "stdout.json"), "wb") as out:
            p = subprocess.run([m.paths.idlescope] + commands["report-json"], stdout=out,
                               stderr=subprocess.PIPE, timeout=120)
        m.check("cli_write_errors/full-fs/stdout", one_line_error(p.returncode, p.stderr),
                describe_end(p.returncode, p.stderr))
        os.remove(os.path.join(d, "stdout.json"))
        # The last page taken by the file that is there: the new one cannot be written at all.
        kept = os.path.join(d, "report.json")
        with open(kept, "wb") as f:
            f.write(b"the last good report\n")
        status, _, err = cli(m, commands["report-json"] + ["-o", kept])
        m.check("cli_write_errors/full-fs/output", one_line_error(status, err),
                describe_end(status, err))
        left = sorted(os.listdir(d))
        m.check("cli_write_errors/full-fs/kept", left == ["filler", "report.json"] and
                not file_problem(kept, b"the last good report\n"),
                "the directory holds %s; %s" % (left, file_problem(kept, b"the last good report\n")))
    finally:
        subprocess.run(["umount", d], capture_output=True)


# Traced names that would drive a terminal or forge report lines: an escape sequence that clears
# the screen and retitles the window, a newline followed by a report line of our own shape.
HOSTILE_NAMES = ["esc-\x1b[2J\x1b]0;owned\x07-%d.bin", "nl-%d.bin\n 9. forged: 99.999 s idle"]
HOSTILE_HOST = b"evil\x1b[31m\nforged"


@case
def host_name_in_path(m):
    """A host named `../../x` (any bytes sethostname takes): the trace file stays in IDLESCOPE_OUT,
    named with the host name made safe; the header keeps the name."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        m.check("host_name_in_path/root", True, "not root: the host name cannot be changed")
        return
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    outside = m.new_dir("host-outside")
    trace_dir = os.path.join(outside, "a", "traces")
    os.makedirs(trace_dir)
    argv = ["unshare", "--uts", python, "-c",
            "import os, socket, sys; socket.sethostname(b'../../x'); "
            "os.execv(sys.argv[1], sys.argv[1:])", "/bin/true"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDLESCOPE_")}
    env.update(LD_PRELOAD=m.paths.preload, IDLESCOPE_OUT=trace_dir)
    p = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    m.check("host_name_in_path/status", p.returncode == 0, describe_end(p.returncode, p.stderr))
    escaped = [os.path.relpath(os.path.join(d, f), outside) for d, _, fs in os.walk(outside)
               for f in fs if not os.path.join(d, f).startswith(trace_dir + "/")]
    m.check("host_name_in_path/inside", not escaped, "written outside IDLESCOPE_OUT: %s" % escaped)
    names = sorted(os.listdir(trace_dir))
    m.check("host_name_in_path/named", any(n.startswith("______x-") for n in names),
            "trace files: %s" % names)


@case
def names_escaped(m):
    """Control characters in file names, a host name and a trace file name: the text report,
    dump and the CLI's stderr show them escaped (as `\\x1b`, `\\n`), so no escape sequence reaches
    the terminal and no line of the report is forged; JSON stays valid."""
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    job = ("import os, subprocess, sys\n"
           "for i in range(3):\n"
           "    for name in %r:\n"
           "        with open(name %% i, 'wb') as f:\n"
           "            f.write(bytes(300000))\n"
           "os.sync()\n"
           "if len(sys.argv) > 1:\n"
           "    subprocess.run([sys.argv[1], '20'], check=True)\n" % HOSTILE_NAMES)
    argv = [python, "-c", job]
    cuda = os.path.exists(m.paths.program("cuda_copies")) and bool(m.paths.simgpu_lib)
    if cuda:
        argv.append(m.paths.program("cuda_copies"))
    root = os.geteuid() == 0
    if root:
        # A UTS namespace of its own, named with control characters, then the job.
        argv = ["unshare", "--uts", python, "-c",
                "import os, socket, sys; socket.sethostname(%r); os.execv(sys.argv[1], sys.argv[1:])"
                % HOSTILE_HOST] + argv
    else:
        print("note: not root: the host name is not changed", flush=True)
    _, _, trace_dir = m.bare_and_traced("names_escaped", Run(argv, cuda=cuda, timeout=60))
    m.check_traces("names_escaped", trace_dir, min_files=2, report=False)
    # A file of the directory that is no trace, its name hostile too: skipped with a warning.
    open(os.path.join(trace_dir, "x\x1b[2J\n 9. forged.idlescope"), "w").close()
    # --top 20: every hostile name among the evidence, whichever write was slowest (on a loaded
    # machine the default top 3 may leave one out: a CI run lost nl-0.bin that way).
    status, text, err = cli(m, ["report", "--top", "20", trace_dir])
    m.check("names_escaped/report", status == 0, describe_end(status, err))
    lines = text.splitlines() + err.splitlines()
    raw = [l for l in lines if re.search(rb"[\x00-\x1f\x7f]", l)]
    m.check("names_escaped/no-control-characters", not raw,
            "%d lines with control characters, first %r" % (len(raw), raw[:1]))
    forged = [l for l in lines if l.lstrip().startswith(b"9. forged")]
    m.check("names_escaped/no-forged-line", not forged, "forged lines: %r" % forged[:2])
    shown = [b"esc-\\x1b[2J\\x1b]0;owned\\x07-", b"nl-0.bin\\n 9. forged"]
    if root and cuda:
        shown.append(b"evil\\x1b[31m\\nforged")
    missing = [s for s in shown if s not in text]
    m.check("names_escaped/named", not missing, "not in the text report: %r" % missing)
    status, out, err = cli(m, ["report", "--format", "json", trace_dir])
    try:
        json.loads(out.decode("utf-8"))
        problem = ""
    except (UnicodeDecodeError, ValueError) as e:
        problem = "not valid JSON: %s" % e
    m.check("names_escaped/json", status == 0 and not problem, problem or describe_end(status, err))
    for entry in sorted(os.listdir(trace_dir)):
        if entry.startswith("x"):
            continue
        status, out, err = cli(m, ["dump", os.path.join(trace_dir, entry)])
        raw = [l for l in out.splitlines() + err.splitlines()
               if re.search(rb"[\x00-\x1f\x7f]", l)]
        m.check("names_escaped/dump/%s" % entry.encode("unicode_escape").decode(),
                status == 0 and not raw, "%s; first raw line %r" % (describe_end(status, err),
                                                                    raw[:1]))


def shard_steps(m, job, work, plan=None, shards=0, index=None):
    """index (unless `index` is given) and plan (unless `plan`, of `shards` shards, is given), map
    every shard, merge: (status, report, stderr) of the first step that failed, else of the
    merge."""
    if plan is None:
        steps = [["plan", "-o", os.path.join(work, "plan"), index or os.path.join(work, "index")]]
        if index is None:
            steps.insert(0, ["index", "-o", os.path.join(work, "index"), job])
        plan = os.path.join(work, "plan")
        for args in steps:
            status, out, err = cli(m, args)
            if status != 0:
                return status, out, err
        shards = int(out.split()[0])
    summaries = []
    for s in range(shards):
        summary = os.path.join(work, "summary-%d" % s)
        status, out, err = cli(m, ["map", "-o", summary, plan, str(s)])
        if status != 0:
            return status, out, err
        summaries.append(summary)
    return cli(m, ["merge", plan] + summaries)


def flip_bit(data, bit):
    flipped = bytearray(data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    return bytes(flipped)


SHARD_FILE_FLIPS = 64  # single bit flips tried in each index, plan and summary


@case
def shard_files(m):
    """Indexes, plans and summaries handed over between machines: a trace file swapped between
    `plan` and `map` (also with the time of the file it replaces, so that only its content
    tells), a summary of another job's plan, and single bit flips in an index, a plan or a
    summary, are a one-line error (or, for a flip that changes nothing the report reads, the
    same report); never another report with exit 0."""
    args = ["--ranks", "3", "--events", "30000", "--causes", "nccl,dataload,checkpoint,straggler"]
    job = gen_job(m, "shards", args + ["--seed", "1"])
    other = gen_job(m, "shards-other", args + ["--seed", "2"])
    work = m.new_dir("shard-steps")
    status, expected, err = shard_steps(m, job, work)
    if not m.check("shard_files/steps", status == 0, describe_end(status, err)):
        return
    status, report, err = cli(m, ["report", "-q", job])
    m.check("shard_files/same-as-report", report == expected, "the steps' report differs")
    plan, index = os.path.join(work, "plan"), os.path.join(work, "index")
    with open(plan, "rb") as f:
        plan_bytes = f.read()
    with open(index, "rb") as f:
        index_bytes = f.read()
    shards = len([f for f in os.listdir(work) if f.startswith("summary-")])

    # Another job's file in place of one of this job's, between plan and map.
    swapped = m.new_dir("shards-swapped")
    for entry in os.listdir(job):
        shutil.copy2(os.path.join(job, entry), swapped)
    swap_work = m.new_dir("shard-steps-swapped")
    index, swap_plan = os.path.join(swap_work, "index"), os.path.join(swap_work, "plan")
    cli(m, ["index", "-o", index, swapped])
    cli(m, ["plan", "-o", swap_plan, index])
    victim = sorted(os.listdir(other))[1]
    planned = os.stat(os.path.join(swapped, victim))
    shutil.copy2(os.path.join(other, victim), os.path.join(swapped, victim))
    status, out, err = shard_steps(m, swapped, swap_work, plan=swap_plan, shards=shards)
    m.check("shard_files/swapped-trace", one_line_error(status, err),
            "%s%s" % (describe_end(status, err),
                      "; a report of two jobs" if status == 0 else ""))
    os.utime(os.path.join(swapped, victim), ns=(planned.st_atime_ns, planned.st_mtime_ns))
    swapped_size = os.path.getsize(os.path.join(swapped, victim))
    status, out, err = shard_steps(m, swapped, swap_work, plan=swap_plan, shards=shards)
    m.check("shard_files/swapped-trace-same-time", one_line_error(status, err),
            "%s (sizes %d and %d)%s" % (describe_end(status, err), planned.st_size, swapped_size,
                                        "; a report of two jobs" if status == 0 else ""))

    # A summary of the other job's plan among this plan's summaries.
    other_work = m.new_dir("shard-steps-other")
    status, _, err = shard_steps(m, other, other_work)
    if m.check("shard_files/other-steps", status == 0, describe_end(status, err)):
        summaries = [os.path.join(work, "summary-%d" % s) for s in range(shards)]
        summaries[1] = os.path.join(other_work, "summary-1")
        status, out, err = cli(m, ["merge", plan] + summaries)
        m.check("shard_files/other-plan-summary", one_line_error(status, err),
                describe_end(status, err) + ("; a report of two jobs" if status == 0 else ""))

    def flips(what, path, original, run):
        outcomes = {"error": 0, "same": 0, "different": 0, "bad-error": 0}
        examples = []
        for i in range(SHARD_FILE_FLIPS):
            bit = m.rng.randrange(len(original) * 8)
            with open(path, "wb") as f:
                f.write(flip_bit(original, bit))
            status, out, err = run()
            if status == 0:
                kind = "same" if out == expected else "different"
            else:
                kind = "error" if one_line_error(status, err) else "bad-error"
            outcomes[kind] += 1
            if kind in ("different", "bad-error") and len(examples) < 3:
                examples.append("bit %d: %s" % (bit, describe_end(status, err)))
        with open(path, "wb") as f:
            f.write(original)
        m.check("shard_files/%s-bit-flips" % what,
                outcomes["different"] == 0 and outcomes["bad-error"] == 0,
                "of %d single bit flips: %d one-line errors, %d the same report, %d another "
                "report with exit 0, %d other ends (%s)" % (
                    SHARD_FILE_FLIPS, outcomes["error"], outcomes["same"], outcomes["different"],
                    outcomes["bad-error"], "; ".join(examples)))

    flip_work = m.new_dir("shard-steps-flipped")
    flipped_index = os.path.join(flip_work, "flipped-index")
    flips("index", flipped_index, index_bytes,
          lambda: shard_steps(m, job, flip_work, index=flipped_index))
    flipped_plan = os.path.join(flip_work, "flipped-plan")
    flips("plan", flipped_plan, plan_bytes,
          lambda: shard_steps(m, job, flip_work, plan=flipped_plan, shards=shards))
    summaries = [os.path.join(work, "summary-%d" % s) for s in range(shards)]
    for s, summary in enumerate(summaries):
        with open(summary, "rb") as f:
            original = f.read()
        flips("summary-%d" % s, summary, original, lambda: cli(m, ["merge", plan] + summaries))


DASK_KILLER = """#!/bin/sh
# idlescope for the Dask workers, except that each of the first %(kills)d maps of the run kills
# the worker that runs it (its parent: dask_report.py's task runs idlescope as a child).
if [ "$1" = map ]; then
  k=1
  while [ $k -le %(kills)d ]; do
    if mkdir "%(marks)s/kill-$k" 2>/dev/null; then kill -9 $PPID; sleep 30; exit 1; fi
    k=$((k + 1))
  done
fi
exec %(idlescope)s "$@"
"""

DASK_CHANGER = """#!/bin/sh
# idlescope for the Dask workers, except that the first map copies another job's file over one
# of this job's first (the job's files rewritten under the analysis, after they were indexed).
# Every map waits for the copy: one that read the file before it would rightly report the job.
if [ "$1" = map ]; then
  if mkdir "%(marks)s/changed" 2>/dev/null; then
    cp "%(other)s" "%(victim)s" && touch "%(marks)s/copied"
  fi
  while [ ! -e "%(marks)s/copied" ]; do sleep 0.05; done
fi
exec %(idlescope)s "$@"
"""


@case
def dask_workers_killed(m):
    """tools/dask_report.py on a LocalCluster of 2 workers whose map tasks kill their worker: the
    first map (one worker killed once) or the first 2 (both workers killed once): the report of
    `idlescope report`; every map: one line saying why it cannot go on, never a traceback. And
    another job's trace file copied over one of the job's after the index: the map's line,
    passed on."""
    probe = subprocess.run([m.paths.dask_python, "-c", "import distributed"], capture_output=True)
    if not m.check("dask_workers_killed/dask", probe.returncode == 0,
                   "%s cannot import dask.distributed (Debian: python3-distributed)" %
                   m.paths.dask_python):
        return
    job = gen_job(m, "dask", ["--ranks", "4", "--events", "40000"])
    status, expected, err = cli(m, ["report", "-q", job])
    for name, kills in (("one-once", 1), ("both-once", 2), ("always", 1000)):
        marks = m.new_dir("dask-marks-" + name)
        wrapper = os.path.join(marks, "idlescope")
        with open(wrapper, "w") as f:
            f.write(DASK_KILLER % {"kills": kills, "marks": marks, "idlescope": m.paths.idlescope})
        os.chmod(wrapper, 0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("IDLESCOPE_")}
        started = time.monotonic()
        p = subprocess.run([m.paths.dask_python, m.paths.dask, "--local-workers", "2",
                            "--idlescope", wrapper, job], capture_output=True, env=env,
                           timeout=600, cwd=marks)
        wall = time.monotonic() - started
        killed = len([e for e in os.listdir(marks) if e.startswith("kill-")])
        detail = "%s after %.1f s, %d workers killed" % (describe_end(p.returncode, p.stderr),
                                                          wall, killed)
        if name != "always":
            m.check("dask_workers_killed/%s/report" % name,
                    p.returncode == 0 and p.stdout == expected and killed == kills,
                    detail + ("; the report differs" if p.returncode == 0 and p.stdout != expected
                              else ""))
        else:
            m.check("dask_workers_killed/%s/one-line" % name,
                    one_line_error(p.returncode, p.stderr, prefix=b"dask_report.py:") and
                    b"Traceback" not in p.stderr, detail)

    other = gen_job(m, "dask-other", ["--ranks", "4", "--events", "40000", "--seed", "2"])
    changed = m.new_dir("job-dask-changed")
    for entry in os.listdir(job):
        shutil.copy2(os.path.join(job, entry), changed)
    marks = m.new_dir("dask-marks-changed")
    wrapper = os.path.join(marks, "idlescope")
    with open(wrapper, "w") as f:
        victim = sorted(os.listdir(changed))[1]
        f.write(DASK_CHANGER % {"marks": marks, "idlescope": m.paths.idlescope,
                                "victim": os.path.join(changed, victim),
                                "other": os.path.join(other, victim)})
    os.chmod(wrapper, 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDLESCOPE_")}
    p = subprocess.run([m.paths.dask_python, m.paths.dask, "--local-workers", "2",
                        "--idlescope", wrapper, changed], capture_output=True, env=env,
                       timeout=600, cwd=marks)
    m.check("dask_workers_killed/trace-changed/one-line",
            one_line_error(p.returncode, p.stderr, prefix=b"dask_report.py: idlescope map:") and
            b"changed since it was indexed" in p.stderr,
            describe_end(p.returncode, p.stderr) +
            ("; a report of two jobs" if p.returncode == 0 and p.stdout != expected else ""))


# Every signal whose default action ends the process and that a program can catch: the CLI's
# handler (analyzer/cli/temporary_paths.h) must remove its temporary paths on each.
CLI_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1,
               signal.SIGUSR2, signal.SIGALRM, signal.SIGABRT, signal.SIGSTKFLT, signal.SIGXCPU,
               signal.SIGVTALRM, signal.SIGPROF, signal.SIGIO, signal.SIGPWR, signal.SIGRTMIN,
               signal.SIGRTMAX]


@case
def cli_signals(m):
    """A signal that ends `idlescope report` (every one in CLI_SIGNALS) while its shards are
    mapped, or (SIGTERM, SIGQUIT, SIGUSR1) while its zstd-compressed traces are decompressed into
    TMPDIR: the shards' directory and the copies' under TMPDIR are removed, and the report dies of
    that signal (as a shell and a scheduler expect)."""
    job = gen_job(m, "signals", ["--ranks", "8", "--events", "8000000"])
    compressed = m.new_dir("job-signals-zst")
    for entry in sorted(os.listdir(job)):
        subprocess.run(["zstd", "-q", "-1", os.path.join(job, entry), "-o",
                        os.path.join(compressed, entry + ".zst")], check=True)
    runs = [(sig.name, sig, job) for sig in CLI_SIGNALS]
    runs += [("zstd/" + sig.name, sig, compressed)
             for sig in (signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1)]
    for label, sig, inputs in runs:
        name = "cli_signals/" + label
        tmp = m.new_dir("tmpdir-" + label.replace("/", "-"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("IDLESCOPE_")}
        env["TMPDIR"] = tmp
        p = subprocess.Popen([m.paths.idlescope, "report", "-q", "--jobs", "1", inputs], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        deadline = time.monotonic() + 60
        while p.poll() is None and not os.listdir(tmp) and time.monotonic() < deadline:
            time.sleep(0.001)
        sent = p.poll() is None
        if sent:
            time.sleep(m.rng.uniform(0.0, 0.05))
            p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        left = os.listdir(tmp)
        m.check(name + "/removed", not left, "left in TMPDIR: %s" % left)
        m.check(name + "/status", sent and p.returncode == -sig,
                "%s%s" % (describe_end(p.returncode, err),
                          "" if sent else "; the report ended before its shards' directory"))


# --------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=False, help="build tree (lib/, bin/, tests/faults/)")
    ap.add_argument("--preload")
    ap.add_argument("--idlescope")
    ap.add_argument("--programs")
    ap.add_argument("--simgpu-lib")
    ap.add_argument("--gen-trace", help="tools/gen_trace (the CLI's cases)")
    ap.add_argument("--dask", help="tools/dask_report.py")
    ap.add_argument("--dask-python", help="a Python with dask.distributed (default /usr/bin/python3)")
    ap.add_argument("--work", help="scratch directory (default: a new temporary one)")
    ap.add_argument("--case", default=".*", help="regex of the cases to run")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    b = args.build or ""
    paths = Paths(
        preload=os.path.abspath(args.preload or os.path.join(b, "lib", "libidlescope.so")),
        idlescope=os.path.abspath(args.idlescope or os.path.join(b, "bin", "idlescope")),
        programs=os.path.abspath(args.programs or os.path.join(b, "tests", "faults", "programs")),
        simgpu_lib=os.path.abspath(args.simgpu_lib or os.path.join(b, "tests", "simgpu", "lib")),
        work="",
        gen_trace=os.path.abspath(args.gen_trace or os.path.join(b, "bin", "gen_trace")),
        dask=os.path.abspath(args.dask or os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "tools", "dask_report.py")),
        dask_python=args.dask_python or "/usr/bin/python3")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    selected = [n for n in CASES if re.search(args.case, n)]
    if not selected:
        print("no case matches %r (--list)" % args.case)
        return 2
    print("fault matrix: seed %d (replay: --seed %d --case '%s')" % (seed, seed, args.case),
          flush=True)
    paths.work = args.work or tempfile.mkdtemp(prefix="idlescope-faults-")
    os.makedirs(paths.work, exist_ok=True)
    m = Matrix(paths, seed, args.verbose)
    started = time.monotonic()
    try:
        for name in selected:
            CASES[name](m)
    finally:
        if not args.keep and not args.work:
            shutil.rmtree(paths.work, ignore_errors=True)
    counts, by_finding = {}, {}
    for state, _, _, known in m.results:
        counts[state] = counts.get(state, 0) + 1
        if known:
            by_finding.setdefault(known, {"XFAIL": 0, "XPASS": 0})[state] += 1
    for known, n in sorted(by_finding.items()):
        print("known finding %s: %d checks failed (XFAIL), %d passed (XPASS)%s" % (
            known, n["XFAIL"], n["XPASS"],
            "" if n["XFAIL"] else "; none failed: drop its KNOWN entries once it never fails"))
    print("fault matrix: %s in %.1f s (seed %d)" % (
        ", ".join("%d %s" % (counts[s], s) for s in ("PASS", "FAIL", "XFAIL", "XPASS")
                  if s in counts), time.monotonic() - started, seed))
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
