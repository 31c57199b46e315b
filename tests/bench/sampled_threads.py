# The thread sampler's Python workload in tests/bench/run.sh: sampled_threads.cu's job in Python
# (simgpu's libcudart through ctypes, first on LD_LIBRARY_PATH): THREADS threads that each feed the
# GPU, then for SECONDS compute in pure Python for 0.5 ms and sleep for 4.5 ms, again and again. The
# sampler reads their Python frames at looks that find them computing. With WORKERS, as many
# worker processes forked before (no exec: DataLoader's default) do the same without feeding the
# GPU, and the sampler reads theirs from the job's writer. Usage:
#   sampled_threads.py THREADS SECONDS [WORKERS]
# Prints one line: "sampled_threads THREADS WALL_NS CPU_NS WRITER_NS WRITER_WAKES" (the timed part:
# wall time, the process's CPU time, all threads, so the recorder's writer, which samples, counts;
# the writer thread's own CPU time, "idlescope-wr", from its schedstat: the sampler's cost without
# the noise of four Python threads contending for the GIL; and how many times the writer woke; 0
# without a writer).
import ctypes
import os
import sys
import threading
import time


def compute_and_sleep(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        spin_until = time.monotonic() + 0.0005
        while time.monotonic() < spin_until:
            n += 1
        time.sleep(0.0045)


def feeder(cudart, start, seconds):
    device = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(device), ctypes.c_size_t(4096)) == 0
    assert cudart.cudaMemset(device, 0, ctypes.c_size_t(4096)) == 0
    assert cudart.cudaDeviceSynchronize() == 0
    start.wait()
    compute_and_sleep(seconds)


def writer_figures():
    """The recorder's writer thread's CPU time so far (schedstat's first field) and its count of
    wakes (voluntary context switches: each is a wait that ended), or (0, 0)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                if f.read().strip() != "idlescope-wr":
                    continue
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                cpu = int(f.read().split()[0])
            with open("/proc/self/task/%s/status" % tid) as f:
                wakes = [int(line.split()[1]) for line in f
                         if line.startswith("voluntary_ctxt_switches:")][0]
            return cpu, wakes
        except OSError:
            continue
    return 0, 0


def main():
    threads, seconds = int(sys.argv[1]), float(sys.argv[2])
    forked = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    cudart = ctypes.CDLL(None)  # the global scope: the interposer's symbols
    assert cudart.cudaDeviceSynchronize() == 0  # the writer runs before the workers are forked
    children = []
    for _ in range(forked):
        pid = os.fork()
        if pid == 0:
            time.sleep(0.15)  # adopted after 100 ms: sampled from the start of the timed part
            compute_and_sleep(seconds + 0.2)
            os._exit(0)
        children.append(pid)
    start = threading.Barrier(threads + 1)
    workers = [threading.Thread(target=feeder, args=(cudart, start, seconds))
               for _ in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    wall0, cpu0, writer0 = time.monotonic_ns(), time.process_time_ns(), writer_figures()
    for w in workers:
        w.join()
    writer = writer_figures()
    for pid in children:
        os.waitpid(pid, 0)
    print("sampled_threads %d %d %d %d %d" % (threads, time.monotonic_ns() - wall0,
                                              time.process_time_ns() - cpu0,
                                              writer[0] - writer0[0], writer[1] - writer0[1]))


if __name__ == "__main__":
    main()
