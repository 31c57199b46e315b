#!/usr/bin/python3
"""How often the recorder's writer thread wakes (ctest writer_wakes, label integration).

Runs tests/bench/sampled_threads.py (4 Python threads that feed simgpu, then compute 0.5 ms and
sleep 4.5 ms in turn, their sleeps hooked) traced, RUNS times with the sampler off and RUNS times
at 200 Hz, and counts the writer's wakes (its voluntary context switches) over each run's timed
second. The writer wakes for its flushes (IDLESCOPE_FLUSH_MS, 500 by default: 2 a second) and
the sampler's looks (at most IDLESCOPE_SAMPLE_HZ a second; fewer while the threads are steady),
and for nothing else a hooked call does: a flush time left set once the writer ran made every
hooked call wake it (750 wakes a second instead of 200 in about half the runs, 15-20 us of the
writer's CPU each on a 2-core VM). A wake that ends a look's wait early costs one more, and a
loaded machine delays none of them, so the bounds are the flushes and looks plus a tenth.

Usage: writer_wakes.py --preload LIB --simgpu-lib DIR
"""

import argparse
import os
import subprocess
import sys
import tempfile

RUNS = 6
SECONDS = 1.0
FLUSHES_PER_S = 2  # IDLESCOPE_FLUSH_MS=500


def WakesPerSecond(opts, hz, out):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sampled_threads.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDLESCOPE_")}
    env.update(LD_PRELOAD=opts.preload, IDLESCOPE_OUT=out, IDLESCOPE_QUIET="1",
               IDLESCOPE_SAMPLE_HZ=str(hz), IDLESCOPE_FLUSH_MS="500",
               LD_LIBRARY_PATH=opts.simgpu_lib + ":" + env.get("LD_LIBRARY_PATH", ""))
    line = subprocess.run(["/usr/bin/python3", script, "4", str(SECONDS)], env=env, check=True,
                          stdout=subprocess.PIPE, text=True, timeout=120).stdout.split()
    wall_ns, wakes = int(line[2]), int(line[5])
    return wakes / (wall_ns / 1e9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simgpu-lib", required=True)
    opts = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="writer-wakes-") as tmp:
        for run in range(RUNS):
            for hz in (0, 200):
                rate = WakesPerSecond(opts, hz, os.path.join(tmp, "%d-%d" % (hz, run)))
                bound = (FLUSHES_PER_S + hz) * 1.1 + 2
                print("sampler %3d Hz: writer woke %6.1f times a second (bound %.1f)"
                      % (hz, rate, bound))
                if rate > bound:
                    failures.append("%d Hz: %.1f wakes a second > %.1f" % (hz, rate, bound))
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
