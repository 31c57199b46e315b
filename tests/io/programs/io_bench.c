/* The overhead benchmark's workload: BLOCK-byte write(2)s or read(2)s over a FILE_MB file
 * (rewritten in place / re-read from the start until TOTAL_MB have moved; rewriting an existing
 * file keeps tmpfs page allocation out of the measurement). Prints the loop's elapsed and CPU
 * nanoseconds (CPU: all threads of the process, so the tracer's writer thread counts) after 64
 * warm-up calls (process start-up and one-time costs, such as the tracer loading its unwinder on
 * the first stack capture, are excluded: it measures the per-call cost). Usage: io_bench write|read
 * PATH BLOCK FILE_MB TOTAL_MB */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long Clock(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 6) return 2;
  int writing = strcmp(argv[1], "write") == 0;
  size_t block = (size_t)atol(argv[3]);
  long long file_bytes = atoll(argv[4]) << 20;
  long long total = atoll(argv[5]) << 20;
  /* Page-aligned, so every mode copies from the same alignment: the kernel's copy from user memory
   * is ~40% slower on the build VMs (AMD EPYC, rep movsb) from a source that is not 32-byte
   * aligned, and where malloc puts a 4 KB block depends on what else is loaded (the preloaded
   * tracer's own allocations moved it from offset 0x2a0 to 0x9b0). */
  char* buf = NULL;
  if (posix_memalign((void**)&buf, 4096, block) != 0) return 3;
  memset(buf, 'b', block);
  int fd = open(argv[2], writing ? (O_RDWR | O_CREAT) : O_RDONLY, 0644);
  if (fd < 0) return 4;
  for (int i = 0; i < 64; ++i) {
    if ((writing ? write(fd, buf, block) : read(fd, buf, block)) <= 0) return 5;
  }
  lseek(fd, 0, SEEK_SET);
  long long start = Clock(CLOCK_MONOTONIC);
  long long cpu_start = Clock(CLOCK_PROCESS_CPUTIME_ID);
  long long done = 0, pos = 0;
  while (done < total) {
    if (pos >= file_bytes) {
      lseek(fd, 0, SEEK_SET);
      pos = 0;
    }
    ssize_t n = writing ? write(fd, buf, block) : read(fd, buf, block);
    if (n <= 0) return 5;
    done += n;
    pos += n;
  }
  long long elapsed = Clock(CLOCK_MONOTONIC) - start;
  long long cpu = Clock(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
  close(fd);
  printf("%lld %lld\n", elapsed, cpu);
  return 0;
}
