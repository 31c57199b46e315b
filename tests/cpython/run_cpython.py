#!/usr/bin/env python3
"""CPython's own regression tests as a peer suite: bare and traced, test by test.

Runs a fixed selection of CPython's regression test modules (Debian's libpython3.11-testsuite,
`/usr/bin/python3.11 -m test`) once bare and once under the real preload library, each module
with a time limit (a hang is a failure, not a stuck CI), reads the per-test results from
`--junit-xml` (or, for a module that did not finish, from its `-v` output), and fails if a test
that passes bare fails, errors or hangs traced. A test that differs is run again, alone, bare and
traced, to tell a flaky test from one the tracer breaks; only a confirmed difference fails.

Prints one table: per module, the tests run, passing bare, passing traced and the differing
tests with their failure text. These modules are the ones a tracer of processes, threads, fds and
signals can break: they fork, exec, spawn, close fds, count fds, send signals, use pipes, ptys,
sockets and mmap.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

# The full selection, 23 modules; test_multiprocessing_fork is the longest (it forks pools of
# workers from a process full of threads, as PyTorch's DataLoader does).
MODULES = [
    "test_os", "test_posix", "test_subprocess", "test_signal", "test_threading", "test_fork1",
    "test_io", "test_fileio", "test_select", "test_selectors", "test_poll", "test_epoll",
    "test_socket", "test_mmap", "test_pty", "test_fcntl", "test_tempfile", "test_shutil",
    "test_wait4", "test_threadsignals", "test_atexit", "test_faulthandler",
    "test_multiprocessing_fork",
]
# What every test command runs: the modules that take seconds, not minutes, bare and traced, and
# still fork, exec, spawn, count fds, use ptys, mmap, signals and atexit.
QUICK = [
    "test_os", "test_posix", "test_fork1", "test_fcntl", "test_pty", "test_select", "test_epoll",
    "test_mmap", "test_fileio", "test_tempfile", "test_atexit", "test_wait4",
    "test_threadsignals", "test_faulthandler",
]


# Tests left out of both runs because they fail the same way without the tracer on the build VMs.
ENVIRONMENT_IGNORES = {
    # accept() on an AF_VSOCK socket waits forever on a VM that has a vsock device and no peer.
    "test_socket": ["*ThreadedVSOCKSocketStreamTest*"],
}

# A module some interpreters' installations lack (pyenv's 3.12.1 has no test_multiprocessing_fork
# package, only the shared test._test_multiprocessing it installs its tests from): written into
# a test directory of the run's own (regrtest --testdir), as 3.11's one-file module, under a
# name of its own (3.12's regrtest expects the stdlib's directory for a package of this name).
STAND_INS = {
    "test_multiprocessing_fork": ("test._test_multiprocessing", "test_mp_fork_stand_in",
                                  "import unittest\n"
                                  "import test._test_multiprocessing\n"
                                  "from test import support\n"
                                  "if support.PGO:\n"
                                  "    raise unittest.SkipTest('test is not helpful for PGO')\n"
                                  "test._test_multiprocessing.install_tests_in_module_dict(\n"
                                  "    globals(), 'fork')\n"),
}

RESULT_START = re.compile(r"^(test\w*) \(([\w.]+)\)(?:\n[^\n]*?)? \.\.\. ", re.M)
# The verdict unittest prints after " ... ", or at the start of a line when the test wrote
# output of its own in between.
VERDICT = re.compile(r"(?:^|\.\.\. )(ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
                     re.M)


def parse_junit(path):
    """{test id: (outcome, text)} from regrtest's --junit-xml; outcome: pass/fail/error/skip."""
    results = {}
    root = ET.parse(path).getroot()
    for tc in root.iter("testcase"):
        # support/testresult.py: name = the test's id(), e.g. "test.test_os.FileTests.test_access"
        name = tc.get("name", "")
        outcome, text = "pass", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome = "fail" if child.tag == "failure" else "error"
                text = (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "skipped":
                outcome = "skip"
        results[name] = (outcome, text.strip())
    return results


def parse_verbose(output):
    """Per-test results from unittest's -v lines ("test_x (mod.Class.test_x) ... ok"), for a
    module that was killed before it wrote its XML. A test that started and has no verdict is the
    one that hung (regrtest's --timeout killed the process in it)."""
    results = {}
    starts = list(RESULT_START.finditer(output))
    for i, m in enumerate(starts):
        test_id = m.group(2)
        if not test_id.endswith("." + m.group(1)):  # 3.10 and older print the class only
            test_id = "%s.%s" % (test_id, m.group(1))
        end = starts[i + 1].start() if i + 1 < len(starts) else len(output)
        verdict = VERDICT.search(output, m.end() - 4, end)
        word = verdict.group(1) if verdict else ""
        if word in ("ok", "expected failure"):
            results[test_id] = ("pass", "")
        elif word == "skipped":
            results[test_id] = ("skip", "")
        elif word in ("FAIL", "unexpected success"):
            results[test_id] = ("fail", output[m.end():end].strip()[-400:])
        elif word == "ERROR":
            results[test_id] = ("error", output[m.end():end].strip()[-400:])
        else:
            results[test_id] = ("hung", "started, no verdict: " +
                                (output[m.end():end].strip()[-300:] or "(no output)"))
    return results


class Runner:
    def __init__(self, python, preload, timeout, test_timeout, work):
        self.python = python
        self.preload = preload
        self.timeout = timeout
        self.test_timeout = test_timeout
        self.work = work

    def stand_in(self, module):
        """(a test directory, the name to run) for `module` where the interpreter lacks it
        (STAND_INS), else None."""
        if module not in STAND_INS or subprocess.run(
                [self.python, "-c", "import test." + module], capture_output=True).returncode == 0:
            return None
        shared, name, text = STAND_INS[module]
        if subprocess.run([self.python, "-c", "import " + shared],
                          capture_output=True).returncode != 0:
            return None
        d = os.path.join(self.work, "stand-ins")
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")  # the bare and traced runs at once
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(d, name + ".py"))
        return d, name

    def env(self, traced, trace_dir):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("IDLESCOPE_") and k not in ("LD_PRELOAD", "PYTHONPATH",
                                                               "PYTHONHOME")}
        env["LC_ALL"] = "C.UTF-8"
        if traced:
            env["LD_PRELOAD"] = self.preload
            env["IDLESCOPE_OUT"] = trace_dir
        return env

    def run(self, module, traced, match=None, ignore=(), tag=""):
        """Runs one module (or the tests matching `match`), skipping the tests in `ignore`;
        returns (results, seconds, status, traces written)."""
        label = "%s-%s%s" % (module, "traced" if traced else "bare", tag)
        d = tempfile.mkdtemp(prefix=label + "-", dir=self.work)
        xml = os.path.join(d, "junit.xml")
        trace_dir = os.path.join(d, "traces")
        os.makedirs(trace_dir)
        argv = [self.python, "-m", "test", "-v", "--junit-xml", xml,
                "--timeout", str(self.test_timeout)]
        if match:
            argv += ["--match", match]
        stand_in = self.stand_in(module)
        if stand_in:
            argv += ["--testdir", stand_in[0]]
        for test in list(ignore) + ENVIRONMENT_IGNORES.get(module, []):
            argv += ["--ignore", test]
        argv.append(stand_in[1] if stand_in else module)
        started = time.monotonic()
        # Output to a file, not a pipe: children the tests leave behind (a multiprocessing
        # manager whose parent died) would hold a pipe open after the module ended.
        with open(d + ".log", "w+b") as log:
            log.write((" ".join(argv) + "\n").encode())
            log.flush()
            proc = subprocess.Popen(argv, cwd=d, env=self.env(traced, trace_dir),
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                status = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                status = "timeout"
            try:  # the module's leftovers (and the module itself after a timeout)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            log.write(("\n[exit status: %s]\n" % (
                "timeout after %d s" % self.timeout if status == "timeout" else
                "killed by %s" % signal.Signals(-status).name if status < 0 else status)).encode())
            log.seek(0)
            output = log.read().decode(errors="replace")
        seconds = time.monotonic() - started
        results = {}
        if os.path.exists(xml):
            try:
                results = parse_junit(xml)
            except ET.ParseError:
                results = {}
        if not results:
            results = parse_verbose(output)
            if status != "timeout" and not (isinstance(status, int) and status == 1 and
                                            "Timeout (" in output):
                # No verdict and no regrtest timeout: the module's process died in that test.
                for test, (outcome, text) in results.items():
                    if outcome == "hung":
                        results[test] = ("died", "the module's process ended in this test "
                                         "(exit status %s)" % status)
        traces = len(os.listdir(trace_dir))
        shutil.rmtree(d, ignore_errors=True)
        return results, seconds, status, traces

    def module(self, module, traced):
        """The whole module; after a test hangs (regrtest kills the process in it) or the process
        dies in it, the module runs again without those tests, so the tests after them still get
        a result."""
        results, seconds, traces, hung = {}, 0.0, 0, []
        for attempt in range(4):
            r, s, status, t = self.run(module, traced, ignore=hung,
                                       tag="-resumed%d" % attempt if attempt else "")
            seconds += s
            traces += t
            for test, result in r.items():
                results.setdefault(test, result)
            new_hangs = [test for test, (o, _) in r.items()
                         if o in ("hung", "died") and test not in hung]
            if not new_hangs:
                break
            hung += new_hangs
        return results, seconds, traces


def passing(results):
    return {t for t, (o, _) in results.items() if o == "pass"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preload", required=True, help="libidlescope.so")
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--selection", choices=("full", "quick"), default="full",
                    help="full: %d modules; quick: %d of them" % (len(MODULES), len(QUICK)))
    ap.add_argument("--modules", help="comma-separated, instead of a selection")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per module run")
    ap.add_argument("--test-timeout", type=int, default=120,
                    help="seconds per test (regrtest --timeout): longer is a hang")
    ap.add_argument("--jobs", type=int, default=2, help="module runs at once")
    ap.add_argument("--work", help="scratch directory")
    ap.add_argument("--known", default="", help="file of test ids expected to differ (one a "
                    "line, '# finding' comments): reported, not failing")
    args = ap.parse_args()
    if subprocess.run([args.python, "-c", "import test.test_os"],
                      capture_output=True).returncode != 0:
        print("CPython's test suite is not installed for %s (Debian's python3.11: "
              "libpython3.11-testsuite)" % args.python)
        return 1
    known = {}
    if args.known and os.path.exists(args.known):
        for line in open(args.known):
            test, _, why = line.partition("#")
            if test.strip():
                known[test.strip()] = why.strip()
    if args.modules:
        modules = [m for m in args.modules.split(",") if m]
    else:
        modules = MODULES if args.selection == "full" else QUICK
    work = args.work or tempfile.mkdtemp(prefix="idlescope-cpython-")
    os.makedirs(work, exist_ok=True)
    runner = Runner(args.python, os.path.abspath(args.preload), args.timeout, args.test_timeout,
                    work)
    started = time.monotonic()
    jobs = [(m, traced) for m in modules for traced in (False, True)]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = dict(zip(jobs, pool.map(lambda j: runner.module(*j), jobs)))
    rows, differing, unconfirmed = [], [], []
    for m in modules:
        bare, bare_s, _ = done[(m, False)]
        traced, traced_s, traces = done[(m, True)]
        diffs = sorted(passing(bare) - passing(traced))
        confirmed = []
        for test in diffs:
            outcome, text = traced.get(test, ("missing", "no result traced"))
            # Alone again, bare then traced: only a test that passes bare and fails traced again
            # counts. A test that hung is not run again (it would cost the whole timeout).
            # A known difference (--known) is not run again either: it is reported, not failing.
            if outcome in ("hung", "died", "missing") or test in known:
                confirmed.append((test, outcome, text))
                continue
            match = test.rsplit(".", 1)[-1]
            b = runner.run(m, False, match=match, tag="-again")[0]
            t = runner.run(m, True, match=match, tag="-again")[0]
            if test in passing(b) and test not in passing(t):
                again = t.get(test, (outcome, text))
                confirmed.append((test, again[0], again[1] or text))
            else:
                unconfirmed.append((m, test))
        rows.append((m, len(bare), len(passing(bare)), len(passing(traced)), bare_s, traced_s,
                     traces, confirmed))
        differing += [(m,) + c for c in confirmed]

    print("\nCPython %s regression tests, bare vs traced (%s)" % (
        subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                       capture_output=True, text=True).stdout.strip(), args.preload))
    print("%-26s %6s %6s %7s %5s %8s %8s %7s" % ("module", "tests", "bare", "traced", "diff",
                                                 "bare s", "traced s", "traces"))
    tot = [0, 0, 0, 0]
    for m, n, pb, pt, bs, ts, traces, confirmed in rows:
        print("%-26s %6d %6d %7d %5d %8.1f %8.1f %7d" % (m, n, pb, pt, len(confirmed), bs, ts,
                                                          traces))
        tot = [tot[0] + n, tot[1] + pb, tot[2] + pt, tot[3] + len(confirmed)]
    print("%-26s %6d %6d %7d %5d   (%.0f s wall, %d jobs)" % (
        "total (%d modules)" % len(rows), tot[0], tot[1], tot[2], tot[3],
        time.monotonic() - started, args.jobs))
    failing = []
    if differing:
        print("\npass bare, fail traced:")
        for m, test, outcome, text in differing:
            why = known.get(test)
            mark = " [known: %s]" % why if why else ""
            if not why:
                failing.append(test)
            first = [] if why else [l for l in text.splitlines() if l.strip()][-3:]
            print("  %s: %s%s%s" % (test, outcome, mark,
                                    "".join("\n      " + l for l in first)))
    gone = sorted(set(known) - {test for _, test, _, _ in differing}
                  - {test for _, test in unconfirmed})
    ran = {t for m in modules for t in done[(m, True)][0]}
    gone = [t for t in gone if t in ran]
    if gone:
        print("\nknown to differ but passed traced (remove from --known): %s" % ", ".join(gone))
    if unconfirmed:
        print("\nflaky (differed once, not when run again alone): %s" %
              ", ".join(t for _, t in unconfirmed))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print("\n%d differing: %d known, %d not known%s" % (
        len(differing), len(differing) - len(failing), len(failing),
        " (these fail the suite: %s)" % ", ".join(failing) if failing else ""))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
