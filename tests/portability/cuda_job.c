// A small CUDA job for the older-system test (old_glibc_test.sh), built on this machine to run on
// glibc 2.17+: a training loop whose steps copy a pageable batch to the device, which waits for
// it (host_gpu_transfer), then run a kernel, with a checkpoint written and fsynced every four
// steps (checkpointing). Runs on simgpu (SIMGPU_KERNEL_US sets the kernel's time).
//   cuda_job CHECKPOINT_PATH
//
// Dynamically linked, not static: the dynamic loader ignores LD_PRELOAD for a static program, so
// a static one could not be traced, and libcudart is a shared library. What would tie it to this
// machine's glibc is one reference: crt1.o (glibc 2.34+) calls __libc_start_main@GLIBC_2.34.
// The link wraps it (-Wl,--wrap=__libc_start_main, tests/portability/CMakeLists.txt) to
// __libc_start_main@GLIBC_2.2.5, what crt1.o called before 2.34 and every glibc still has. The old
// entry point runs the program's constructors only through its `init` argument (the old crt1.o
// passed __libc_csu_init; the new one passes NULL, glibc 2.34+ finding them itself), so the
// wrapper passes a function that runs .init_array.
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*MainFn)(int, char**, char**);
extern int glibc_2_2_5_start_main(MainFn main, int argc, char** argv, MainFn init,
                                  void (*fini)(void), void (*rtld_fini)(void), void* stack_end);
__asm__(".symver glibc_2_2_5_start_main,__libc_start_main@GLIBC_2.2.5");

// The linker's bounds of this executable's .init_array.
extern void (*__init_array_start[])(int, char**, char**) __attribute__((visibility("hidden")));
extern void (*__init_array_end[])(int, char**, char**) __attribute__((visibility("hidden")));

static int RunInitArray(int argc, char** argv, char** envp) {
  for (void (**f)(int, char**, char**) = __init_array_start; f < __init_array_end; ++f) {
    (*f)(argc, argv, envp);
  }
  return 0;
}

int __wrap___libc_start_main(MainFn main, int argc, char** argv, MainFn init, void (*fini)(void),
                             void (*rtld_fini)(void), void* stack_end) {
  return glibc_2_2_5_start_main(main, argc, argv, init != NULL ? init : RunInitArray, fini,
                                rtld_fini, stack_end);
}

// What nvcc's generated code registers at start, by hand: simgpu runs no device code, and the
// kernel is known by its host stub's address and its name.
extern void** __cudaRegisterFatBinary(void* fat_cubin);
extern void __cudaRegisterFatBinaryEnd(void** handle);
extern void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun,
                                   const char* device_name, int thread_limit, uint3* tid,
                                   uint3* bid, dim3* bdim, dim3* gdim, int* wsize);
static void TrainStep(void) {}

static void Check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    fprintf(stderr, "cuda_job: %s: %s\n", what, cudaGetErrorString(err));
    exit(1);
  }
}

static dim3 dim3_of(unsigned x) {
  dim3 d = {x, 1, 1};
  return d;
}

static void WriteCheckpoint(const char* path, const char* data, size_t bytes) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, data, bytes) != (ssize_t)bytes || fsync(fd) != 0) {
    perror("cuda_job: checkpoint");
    exit(1);
  }
  close(fd);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cuda_job CHECKPOINT_PATH\n");
    return 2;
  }
  const size_t batch = 64u << 20;  // 6.4 ms a copy at simgpu's 10 GB/s pageable
  const int steps = 8;
  char* host = malloc(batch);
  if (host == NULL) return 1;
  memset(host, 1, batch);
  static char fat_binary[16];
  void** module = __cudaRegisterFatBinary(fat_binary);
  __cudaRegisterFunction(module, (const char*)TrainStep, (char*)"train_step", "train_step", -1,
                         NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(module);
  void* dev = NULL;
  Check(cudaMalloc(&dev, batch), "cudaMalloc");
  for (int step = 0; step < steps; ++step) {
    Check(cudaMemcpy(dev, host, batch, cudaMemcpyHostToDevice), "cudaMemcpy");
    void* args[] = {&dev};
    Check(cudaLaunchKernel((const void*)TrainStep, dim3_of(1024), dim3_of(256), args, 0, NULL),
          "cudaLaunchKernel");
    if (step % 4 == 3) WriteCheckpoint(argv[1], host, 16u << 20);
  }
  Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  Check(cudaFree(dev), "cudaFree");
  free(host);
  printf("cuda_job: %d steps of %zu MiB and a kernel, 2 checkpoints\n", steps, batch >> 20);
  return 0;
}
