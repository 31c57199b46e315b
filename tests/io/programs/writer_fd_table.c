/* The recorder's writer thread has a descriptor table of its own (interpose/trace_file.cc,
 * TakeOwnFdTable). Usage: writer_fd_table MODE
 *   close-stdout   writes "closing\n" to stdout, closes it, sleeps 3 s, exits 0: whoever reads
 *                  the other end of stdout must see EOF at the close, not at exit (the writer
 *                  keeps no copy of the program's descriptors)
 *   fsize-limit    sets RLIMIT_FSIZE to 8 KB, then records 20 x 2000 marks 20 ms apart (about
 *                  30 KB of trace in format v4, 0.8 bytes a mark): the writer thread's writes
 *                  to the trace file fail (EFBIG) and it says so on the program's stderr, which
 *                  is not in its own table */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static void SleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (strcmp(argv[1], "close-stdout") == 0) {
    if (write(1, "closing\n", 8) != 8) return 3;
    if (close(1) != 0) return 4;
    SleepMs(3000);
    return 0;
  }
  if (strcmp(argv[1], "fsize-limit") == 0) {
    void (*mark)(const char*) = (void (*)(const char*))dlsym(RTLD_DEFAULT, "idlescope_mark");
    if (mark == NULL) return 3;
    struct rlimit limit = {8 << 10, 8 << 10};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 4;
    for (int round = 0; round < 20; ++round) {
      for (int i = 0; i < 2000; ++i) mark("fsize-limit");
      SleepMs(20);
    }
    return 0;
  }
  return 2;
}
