# Run under the tracer by tests/python/python_stacks_test.cc: every line marked "MARK:name" makes
# an event (or calls the function that does) whose Python frames the test checks against this
# file's path and the marked line numbers. Usage: stack_script.py DATA_DIR [--cuda]
import ctypes
import multiprocessing
import os
import sys
import threading
import time

# The tracer takes at most one stack per 50 us on a thread (but always for a call that blocked
# 100 us): the open() just before each marked call took it, so wait out the interval.
STACK_INTERVAL_S = 0.001


def write_file(path):  # MARK:def-write
    with open(path, "wb", buffering=0) as f:
        time.sleep(STACK_INTERVAL_S)
        f.write(b"x" * 4096)  # MARK:write


def read_file(path):
    with open(path, "rb", buffering=0) as f:
        time.sleep(STACK_INTERVAL_S)
        return f.read()  # MARK:read


def thread_main(path):
    write_file(path)  # MARK:thread-write


def worker(path):
    read_file(path)  # MARK:worker-read


def gen_write(path):
    with open(path, "wb", buffering=0) as f:
        time.sleep(STACK_INTERVAL_S)
        f.write(b"g" * 512)  # MARK:gen-write
        yield 1


class Saver:
    def __init__(self, path):
        with open(path, "wb", buffering=0) as f:
            time.sleep(STACK_INTERVAL_S)
            f.write(b"i" * 64)  # MARK:init-write


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def launch(cudart, kernel):
    one = Dim3(1, 1, 1)
    assert cudart.cudaLaunchKernel(kernel, one, Dim3(32, 1, 1), None, ctypes.c_size_t(0), None) == 0
    assert cudart.cudaDeviceSynchronize() == 0


def copy_pageable():
    # simgpu's libcudart (first on LD_LIBRARY_PATH): a 64 MiB H2D copy from pageable memory
    # between two kernels, so that the GPU waits for it (the report's host_gpu_transfer). The
    # calls are looked up in the process's global scope, as a program's own calls are bound (a
    # lookup in libcudart's handle would find libcudart's symbol and bypass the interposer).
    ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
    cudart = ctypes.CDLL(None)
    # A kernel registered as nvcc's static initializers register one (simgpu runs no device
    # code: a host address and a name are a kernel).
    cudart.__cudaRegisterFatBinary.restype = ctypes.c_void_p
    module = cudart.__cudaRegisterFatBinary(ctypes.c_void_p(0))
    kernel = ctypes.create_string_buffer(b"_Z4stepv")
    cudart.__cudaRegisterFunction(ctypes.c_void_p(module), kernel, kernel, kernel, -1,
                                  None, None, None, None, None)
    size = 64 << 20
    device = ctypes.c_void_p()
    assert cudart.cudaMalloc(ctypes.byref(device), ctypes.c_size_t(size)) == 0
    host = ctypes.create_string_buffer(size)
    launch(cudart, kernel)
    assert cudart.cudaMemcpy(device, host, ctypes.c_size_t(size), 1) == 0  # MARK:memcpy
    launch(cudart, kernel)
    cudart.cudaFree(device)


def main(data, cuda):
    main_bin = os.path.join(data, "main.bin")
    write_file(main_bin)  # MARK:main-write
    read_file(main_bin)  # MARK:main-read
    # Called from C (map): a native evaluation loop starts at write_file.
    list(map(write_file, [os.path.join(data, "map.bin")]))  # MARK:map-write

    # A generator's frame (owned by the generator, not the thread's stack) resumed by a for loop.
    for _ in gen_write(os.path.join(data, "gen.bin")):  # MARK:main-gen
        pass

    # Called often enough to be specialized: 3.13 then pushes a cleanup frame under __init__.
    for i in range(20):
        Saver(os.path.join(data, "init%d.bin" % i))  # MARK:main-init

    thread = threading.Thread(target=thread_main, args=(os.path.join(data, "thread.bin"),))
    thread.start()
    thread.join()

    for method in ("fork", "spawn"):
        path = os.path.join(data, method + ".bin")
        write_file(path)
        process = multiprocessing.get_context(method).Process(target=worker, args=(path,))
        process.start()
        process.join()
        assert process.exitcode == 0, (method, process.exitcode)

    if cuda:
        copy_pageable()  # MARK:main-memcpy
    print("stack_script done")


if __name__ == "__main__":
    main(sys.argv[1], "--cuda" in sys.argv[2:])  # MARK:module-main
