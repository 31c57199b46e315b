#!/usr/bin/env python3
"""The I/O overhead benchmark: write- and read-heavy workloads on tmpfs, run bare, under
idlescope (LD_PRELOAD) and under strace (what people use today), from one run.

Prints, per workload, the median loop time of each mode and the ratios traced/bare and
strace/bare. Targets (issue 5): traced/bare <= 1.10 for 4 KB writes, <= 1.02 for 1 MB writes.
Usage: overhead_bench.py IO_BENCH PRELOAD_LIB [--reps N] [--dir DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

WORKLOADS = [
    # name, mode, block bytes, file MB, total MB
    ("write 4 KB", "write", 4096, 64, 256),
    ("write 1 MB", "write", 1 << 20, 64, 2048),
    ("read 4 KB", "read", 4096, 64, 256),
    ("read 1 MB", "read", 1 << 20, 64, 2048),
]


def run(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    return int(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("io_bench")
    ap.add_argument("preload")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="idlescope-bench-", dir=args.dir)
    traces = tempfile.mkdtemp(prefix="idlescope-bench-traces-")
    strace = shutil.which("strace")
    bare_env = {k: v for k, v in os.environ.items()
                if not k.startswith("IDLESCOPE_") and k != "LD_PRELOAD"}
    traced_env = dict(bare_env, LD_PRELOAD=os.path.abspath(args.preload), IDLESCOPE_OUT=traces,
                      IDLESCOPE_QUIET="1")
    path = os.path.join(work, "bench.bin")
    try:
        # The read workloads need the file.
        run([args.io_bench, "write", path, str(1 << 20), "64", "64"], bare_env)
        print(f"tmpfs dir: {work}; {args.reps} interleaved repetitions, median loop time")
        print(f"{'workload':<12} {'bare ms':>9} {'traced ms':>10} {'strace ms':>10} "
              f"{'traced/bare':>12} {'strace/bare':>12}")
        results = {}
        for name, mode, block, file_mb, total_mb in WORKLOADS:
            cmd = [args.io_bench, mode, path, str(block), str(file_mb), str(total_mb)]
            times = {"bare": [], "traced": [], "strace": []}
            for _ in range(args.reps):
                times["bare"].append(run(cmd, bare_env))
                times["traced"].append(run(cmd, traced_env))
                if strace:
                    times["strace"].append(run(
                        [strace, "-f", "-e", "trace=%file,write,read", "-o", "/dev/null"] + cmd,
                        bare_env))
            med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
            results[name] = med
            print(f"{name:<12} {med['bare'] / 1e6:9.1f} {med['traced'] / 1e6:10.1f} "
                  f"{med['strace'] / 1e6:10.1f} {med['traced'] / med['bare']:12.3f} "
                  f"{med['strace'] / med['bare']:12.3f}")
        size = sum(os.path.getsize(os.path.join(traces, f)) for f in os.listdir(traces))
        print(f"trace files: {len(os.listdir(traces))}, {size} bytes in all")
        for name, target in (("write 4 KB", 1.10), ("write 1 MB", 1.02)):
            ratio = results[name]["traced"] / results[name]["bare"]
            verdict = "meets" if ratio <= target else "MISSES"
            print(f"target {name}: traced/bare {ratio:.3f} {verdict} <= {target}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(traces, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
