# I/O in a signal handler while Python runs (tests/python/python_stacks_test.cc): CPython's C-level
# handler writes the signal number to the wakeup fd (what asyncio sets up), so our write hook runs
# inside a signal handler that interrupted the interpreter at an arbitrary instruction, perhaps in
# the middle of pushing a frame. Those events must take no Python frames (and not crash); the
# script's own reads of the socket take them as usual. Usage: signal_wakeup.py SECONDS
import signal
import socket
import sys
import time


def step(n):
    return n + 1


def main(seconds):
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno())
    signal.signal(signal.SIGALRM, lambda signum, frame: None)
    signal.setitimer(signal.ITIMER_REAL, 0.0003, 0.0003)
    end = time.monotonic() + seconds
    calls = received = 0
    while time.monotonic() < end:
        for _ in range(500):
            calls = step(calls)  # frames pushed and popped all the time
        try:
            received += len(reader.recv(4096))  # MARK:recv
        except BlockingIOError:
            pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.set_wakeup_fd(-1)
    print("signals received through the wakeup fd:", received > 0)


main(float(sys.argv[1]))
