// A process whose main thread has used its stack up to `left` bytes of RLIMIT_STACK when SIGTERM
// comes (fault_matrix.py, case sandboxes): the kernel needs room for a signal frame only to run a
// handler; the default action needs none, and the process dies of SIGTERM.
//   stack_nearly_full LEFT   prints "ready", grows the main stack to LEFT bytes from its limit (a
//                            few ms), spins for 10 s (nothing more on the stack), exits 0
#define _GNU_SOURCE
#include <alloca.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static uintptr_t StackEnd(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return 0;
  char line[512];
  uintptr_t end = 0;
  while (fgets(line, sizeof(line), maps) != NULL) {
    if (strstr(line, "[stack]") != NULL) {
      unsigned long lo, hi;
      if (sscanf(line, "%lx-%lx", &lo, &hi) == 2) end = hi;
    }
  }
  fclose(maps);
  return end;
}

static volatile int g_sink;

__attribute__((noinline)) static void Spin(void) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    for (int i = 0; i < 1000000; ++i) g_sink += i;
    clock_gettime(CLOCK_MONOTONIC, &now);  // the vDSO: no system call, little stack
  } while (now.tv_sec - start.tv_sec < 10);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  long left = atol(argv[1]);
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 3;
  uintptr_t end = StackEnd();
  if (end == 0) return 4;
  uintptr_t bottom = end - rl.rlim_cur;
  printf("ready\n");
  fflush(stdout);
  // Bound now: a first call through the PLT runs the dynamic linker's resolver, which saves the
  // whole vector state on the stack (kilobytes).
  struct timespec bind;
  clock_gettime(CLOCK_MONOTONIC, &bind);
  char here;
  uintptr_t sp = (uintptr_t)&here;
  // Spin's frame comes off the room left.
  uintptr_t target = bottom + (uintptr_t)left + 128;
  if (sp <= target) return 5;
  size_t grow = sp - target;
  char* block = alloca(grow);
  for (size_t off = grow; off >= 4096; off -= 4096) block[off - 4096] = 1;  // downward
  block[0] = 1;
  Spin();
  return 0;
}
