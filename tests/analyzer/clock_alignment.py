#!/usr/bin/env python3
"""Issue 15: clock alignment across hosts. gen_trace writes a job of 8 ranks on 4 hosts whose
CLOCK_REALTIME snapshots are wrong by up to +-50 ms (NTP) and whose collectives end within 20 us
of each other on every rank; `idlescope report` must recover every host's error to within
100 us from the collectives and print the residual skew per host.

  clock_alignment.py GEN_TRACE IDLESCOPE WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

TOLERANCE_NS = 100_000


def main():
    gen_trace, idlescope, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = []
    for seed in (1, 2, 3):
        out = os.path.join(work, "seed%d" % seed)
        shutil.rmtree(out, ignore_errors=True)
        truth = {}
        gen = subprocess.run([gen_trace, "--out", out, "--hosts", "4", "--ranks", "8",
                              "--clock-error-ms", "50", "--end-jitter-us", "20", "--seed",
                              str(seed)], check=True, capture_output=True, text=True)
        for line in gen.stdout.splitlines():
            _, host, ns = line.split()
            truth[host] = int(ns)
        report = json.loads(subprocess.run([idlescope, "report", "--format", "json", out],
                                           check=True, capture_output=True, text=True).stdout)
        text = subprocess.run([idlescope, "report", out], check=True, capture_output=True,
                              text=True).stdout
        clocks = {c["host"]: c for c in report["clocks"]}
        print("seed %d" % seed)
        print("  %-10s %-12s %14s %14s %10s %10s" % ("host", "method", "true ns", "found ns",
                                                     "error us", "residual"))
        for host, true_ns in sorted(truth.items()):
            c = clocks.get(host)
            if c is None:
                failures.append("seed %d: no clock for %s" % (seed, host))
                continue
            found = c["correction_ns"]
            print("  %-10s %-12s %14d %14d %10.1f %7.1f us" % (
                host, c["method"], true_ns, found, (found - true_ns) / 1e3,
                c["residual_ns"] / 1e3))
            if true_ns != 0 and c["method"] != "collectives":
                failures.append("seed %d: %s aligned by %s" % (seed, host, c["method"]))
            if abs(found - true_ns) > TOLERANCE_NS:
                failures.append("seed %d: %s off by %.1f us" % (seed, host,
                                                                 (found - true_ns) / 1e3))
        section = text[text.find("Host clocks"):]
        if "RESIDUAL" not in section or not all(h in section for h in truth):
            failures.append("seed %d: the text report has no host clock section with the "
                            "residual skew of every host" % seed)
        shutil.rmtree(out, ignore_errors=True)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("PASSED: every host's clock error recovered to within %d us" % (TOLERANCE_NS // 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
