#!/usr/bin/env python3
"""Issue 16: an allocation failure is a one-line error, not std::bad_alloc and exit 134.

Under an address-space limit (RLIMIT_AS, `ulimit -v`) that leaves a normal report room, a trace
whose packets intern three strings of 60 MiB (the interned tables keep them all: more than the
limit) must end `idlescope report` with exit status 1 and one line naming the problem. The same
limit with the trace alone (no big packet) must report normally: the limit is not too low.
  out_of_memory.py IDLESCOPE TRACE_FILE WORK_DIR
"""
import os
import resource
import shutil
import subprocess
import sys

LIMIT = 192 << 20
STRING = 60 << 20


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, payload):  # length-delimited
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def run(idlescope, path):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))
    p = subprocess.run([idlescope, "report", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, preexec_fn=limit, timeout=120)
    return p.returncode, p.stderr.strip()


def main():
    idlescope, trace, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        with open(trace, "rb") as f:
            good = f.read()
        control = os.path.join(work, "control.idlescope")
        with open(control, "wb") as f:
            f.write(good)
        status, err = run(idlescope, control)
        if status != 0:
            sys.exit("FAIL: the control report fails under the limit (%d): %s" % (status, err))
        big = os.path.join(work, "big.idlescope")
        with open(big, "wb") as f:
            f.write(good)
            for i in range(3):
                # InternedString{id, str: 60 MiB} in Interned.strings in Packet.interned (2).
                entry = varint(1 << 3 | 0) + varint(1000000 + i) + field(2, b"x" * STRING)
                f.write(field(1, field(2, field(1, entry))))
        status, err = run(idlescope, big)
        print("under RLIMIT_AS %d MiB: exit %d: %s" % (LIMIT >> 20, status, err))
        if status != 1 or "\n" in err or "out of memory" not in err:
            sys.exit("FAIL: expected exit 1 and one line saying 'out of memory'")
        print("PASS")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
