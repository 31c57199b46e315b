/* The overhead benchmark's workload: BLOCK-byte write(2)s or read(2)s over a FILE_MB file
 * (rewritten/re-read from the start until TOTAL_MB have moved). Prints the loop's elapsed
 * nanoseconds (process start-up excluded: it measures the per-call cost).
 * Usage: io_bench write|read PATH BLOCK FILE_MB TOTAL_MB */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 6) return 2;
  int writing = strcmp(argv[1], "write") == 0;
  size_t block = (size_t)atol(argv[3]);
  long long file_bytes = atoll(argv[4]) << 20;
  long long total = atoll(argv[5]) << 20;
  char* buf = malloc(block);
  if (buf == NULL) return 3;
  memset(buf, 'b', block);
  int fd = open(argv[2], writing ? (O_RDWR | O_CREAT | O_TRUNC) : O_RDONLY, 0644);
  if (fd < 0) return 4;
  long long start = Now();
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
  long long elapsed = Now() - start;
  close(fd);
  printf("%lld\n", elapsed);
  return 0;
}
