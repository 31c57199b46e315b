#!/usr/bin/env python3
"""Runs a command with CPU-hogging processes beside it, as on a busy machine (users' machines and CI
are not idle): `with_cpu_hogs.py --hogs N -- COMMAND...` starts N processes that spin on a CPU
until the command ends, then stops them, and exits with the command's status. The e2e_loaded
tests run the e2e suite so (tests/e2e/CMakeLists.txt): with two hogs on the build machine's two
cores, the job's threads wait for a CPU (docs/attribution.md, "Samples").
"""
import argparse
import os
import signal
import subprocess
import sys

# A hog dies with this script, however it ends (ctest kills a test that runs too long with SIGKILL,
# which no handler here sees): PR_SET_PDEATHSIG, and a parent gone before that took effect.
SPIN = """import ctypes, os, sys
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)
while True:
    pass
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    opts = ap.parse_args()
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        sys.exit("with_cpu_hogs.py: no command")
    hogs = [subprocess.Popen([sys.executable, "-c", SPIN, str(os.getpid())])
            for _ in range(opts.hogs)]

    def stop_hogs():
        for hog in hogs:
            if hog.poll() is None:
                hog.kill()
        for hog in hogs:
            hog.wait()

    def on_signal(signum, _frame):
        stop_hogs()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    try:
        print("with_cpu_hogs.py: %d processes spinning (pids %s)" %
              (len(hogs), " ".join(str(h.pid) for h in hogs)), flush=True)
        # The test knows it runs beside hogs (run_pair.py leaves out its wall-time checks).
        env = dict(os.environ, IDLESCOPE_TEST_CPU_HOGS=str(len(hogs)))
        status = subprocess.call(command, env=env)
    finally:
        stop_hogs()
    sys.exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main()
