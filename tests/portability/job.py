"""The Python job of old_glibc_test.sh, run by the older system's own python3: a training loop
whose steps copy a pageable batch to the device and run a kernel through simgpu's libcudart
(ctypes; when JOB_CUDA=1), with a checkpoint written and fsynced every four steps.
    python3 job.py CHECKPOINT_PATH
"""
import ctypes
import os
import sys

BATCH = 64 << 20
CUDA_MEMCPY_HOST_TO_DEVICE = 1


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def main():
    checkpoint = sys.argv[1]
    host = ctypes.create_string_buffer(BATCH)
    cudart = None
    if os.environ.get("JOB_CUDA") == "1":
        # Loaded into the global scope and called through it, as a program linked with -lcudart
        # calls it: the preload library's hooks come first there (a call through the library's
        # own handle would bypass them).
        ctypes.CDLL("libcudart.so.13", mode=ctypes.RTLD_GLOBAL)
        cudart = ctypes.CDLL(None)
        cudart.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_int]
        cudart.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p,
                                            ctypes.c_size_t, ctypes.c_void_p]
        cudart.__cudaRegisterFatBinary.restype = ctypes.c_void_p
        # What nvcc's generated code registers at start: simgpu runs no device code, and the
        # kernel is known by its host stub's address (here any unique one) and its name.
        stub = ctypes.create_string_buffer(16)
        module = cudart.__cudaRegisterFatBinary(ctypes.create_string_buffer(16))
        cudart.__cudaRegisterFunction(ctypes.c_void_p(module), stub, b"train_step",
                                      b"train_step", -1, None, None, None, None, None)
        dev = ctypes.c_void_p()
        if cudart.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(BATCH)) != 0:
            sys.exit("job.py: cudaMalloc failed")
        args = (ctypes.c_void_p * 1)(ctypes.addressof(dev))
    for step in range(8):
        if cudart is not None:
            if cudart.cudaMemcpy(dev, host, BATCH, CUDA_MEMCPY_HOST_TO_DEVICE) != 0:
                sys.exit("job.py: cudaMemcpy failed")
            if cudart.cudaLaunchKernel(ctypes.addressof(stub), Dim3(1024, 1, 1),
                                       Dim3(256, 1, 1), args, 0, None) != 0:
                sys.exit("job.py: cudaLaunchKernel failed")
        if step % 4 == 3:
            with open(checkpoint, "wb") as f:
                f.write(host.raw[:16 << 20])
                f.flush()
                os.fsync(f.fileno())
    if cudart is not None:
        cudart.cudaDeviceSynchronize()
    print(f"job.py: 8 steps on Python {sys.version.split()[0]}, "
          f"{'simgpu' if cudart else 'no GPU'}, 2 checkpoints")


main()
