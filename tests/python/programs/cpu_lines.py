# Run under the tracer by tests/python/sampled_lines_test.cc, with simgpu's libcudart first on
# LD_LIBRARY_PATH (ctypes, as stack_script.py). Usage: cpu_lines.py MODE
#   spin   a training loop whose steps compute in pure Python between their kernels (augment, the
#          line marked "augment"): the sampler must find that line, and the report name it as
#          the cpu_work evidence.
#   churn  threads that feed the GPU, then recurse up and down (and run generators) as fast as
#          they can, and end, round after round: frames change under every look of the sampler,
#          which must read only frames of this file (or the interpreter's own), and never crash.
#   workers  a training loop that waits for two forked workers (os.fork, no exec: DataLoader's
#          default) decoding in pure Python (the line marked "decode"): the sampler reads the
#          workers' frames from the training process, and the report names that line as the
#          data_loading evidence.
import ctypes
import os
import sys
import threading
import time


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def load_cudart():
    # The calls are looked up in the process's global scope, as a program's own calls are bound
    # (libcudart's handle would bypass the interposer).
    ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    cudart = ctypes.CDLL(None)
    cudart.__cudaRegisterFatBinary.restype = ctypes.c_void_p
    module = cudart.__cudaRegisterFatBinary(ctypes.c_void_p(0))
    kernel = ctypes.create_string_buffer(b"_Z4stepv")
    cudart.__cudaRegisterFunction(ctypes.c_void_p(module), kernel, kernel, kernel, -1,
                                  None, None, None, None, None)
    return cudart, kernel


def step(cudart, kernel):
    one = Dim3(1, 1, 1)
    assert cudart.cudaLaunchKernel(kernel, one, Dim3(32, 1, 1), None, ctypes.c_size_t(0), None) == 0
    assert cudart.cudaDeviceSynchronize() == 0


def augment(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end: total = (total * 31 + 7) % 1000003  # MARK:augment
    return total


def spin():
    cudart, kernel = load_cudart()
    for _ in range(25):
        step(cudart, kernel)
        augment(0.04)


def deep(n):
    if n == 0:
        return sum(x for x in range(3))
    return deep(n - 1) + 1


def churner(cudart, seconds):
    assert cudart.cudaDeviceSynchronize() == 0  # joins the sampler
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        deep(n % 40)
        n += 7


def churn():
    cudart, kernel = load_cudart()
    step(cudart, kernel)
    for _ in range(6):
        threads = [threading.Thread(target=churner, args=(cudart, 0.15)) for _ in range(4)]
        for t in threads:
            t.start()
        deep(30)
        for t in threads:
            t.join()
    step(cudart, kernel)


def decode(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end: total = (total * 17 + 3) % 1000003  # MARK:decode
    return total


def worker_loop(tasks, results):
    while os.read(tasks, 1):
        decode(0.03)
        os.write(results, b"x")
    os._exit(0)


def workers():
    cudart, kernel = load_cudart()
    step(cudart, kernel)  # joins the sampler before the workers are forked
    pipes = []
    for _ in range(2):
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        if os.fork() == 0:
            for fd in [task_w, result_r] + [fd for pair in pipes for fd in pair]:
                os.close(fd)  # the others' ends: the loop's close of a task pipe ends its worker
            worker_loop(task_r, result_w)
        os.close(task_r)
        os.close(result_w)
        pipes.append((task_w, result_r))
    for _ in range(25):
        for task_w, _ in pipes:
            os.write(task_w, b"t")
        for _, result_r in pipes:
            os.read(result_r, 1)  # the training loop waits for its workers
        step(cudart, kernel)
    for task_w, _ in pipes:
        os.close(task_w)
    for _ in pipes:
        os.wait()


if __name__ == "__main__":
    {"spin": spin, "churn": churn, "workers": workers}[sys.argv[1]]()
