// A signal handler that opens, writes and closes a new file each time, landing wherever the main
// thread is: here, almost always inside malloc or free, holding the arena's lock (open, write and
// close are async-signal-safe; malloc is not). A hook that allocated there (naming the new file,
// say) would wait for that lock forever, or corrupt the heap where malloc takes no lock (glibc's
// per-thread cache). With "slow", every 16th run of the handler also sleeps 1.5 ms: a handler
// that long is recorded by the tracer as it returns, still in the signal. Prints whether the
// handler wrote files and exits 0. With "sigset", the handler is installed with sigset(3) (the
// System V call glibc implements past sigaction), and is slow as with "slow".
// Usage: signal_io_in_malloc DIR SECONDS [slow|sigset]
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char* g_dir;
static volatile sig_atomic_t g_written = 0;
static int g_slow = 0;

// The file's name built without snprintf (not async-signal-safe).
static void OnAlarm(int sig) {
  (void)sig;
  char path[4096];
  size_t n = strlen(g_dir);
  memcpy(path, g_dir, n);
  memcpy(path + n, "/f", 2);
  n += 2;
  char digits[16];
  int d = 0;
  for (unsigned v = (unsigned)g_written;; v /= 10) {
    digits[d++] = (char)('0' + v % 10);
    if (v < 10) break;
  }
  while (d > 0) path[n++] = digits[--d];
  path[n] = '\0';
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;
  if (write(fd, "x", 1) == 1) g_written = g_written + 1;
  close(fd);
  if (g_slow && g_written % 16 == 0) {
    struct timespec nap = {0, 1500000};
    nanosleep(&nap, NULL);
  }
}

int main(int argc, char** argv) {
  const int with_sigset = argc == 4 && strcmp(argv[3], "sigset") == 0;
  if (argc != 3 && !(argc == 4 && (strcmp(argv[3], "slow") == 0 || with_sigset))) {
    fprintf(stderr, "usage: %s DIR SECONDS [slow|sigset]\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];
  g_slow = argc == 4;
  if (with_sigset) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    if (sigset(SIGALRM, OnAlarm) == SIG_ERR) return 3;  // obsolete, and what this case is for
#pragma GCC diagnostic pop
  } else {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnAlarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
  }
  struct itimerval every = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &every, NULL);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  double seconds = atof(argv[2]);
  void* kept[64] = {0};
  unsigned i = 0;
  do {
    // Allocations of many sizes, freed out of order: the arena's lock is taken all the time.
    for (int k = 0; k < 1000; ++k, ++i) {
      free(kept[i % 64]);
      kept[i % 64] = malloc(16 + (i * 2654435761u) % 4096);
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  for (int k = 0; k < 64; ++k) free(kept[k]);
  printf("%s\n", g_written > 0 ? "the handler wrote files" : "the handler wrote nothing");
  return 0;
}
