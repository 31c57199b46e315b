// A target for SIGTERM / SIGINT / SIGKILL at random points: THREADS threads (and main) create,
// write, close and unlink new paths as fast as they can, so a signal most likely lands while a
// thread is inside a hook, interning a path or holding a burst.
//
//   signal_target default THREADS   no handler: the signal's default action ends the process
//   signal_target handler THREADS   SIGTERM/SIGINT handlers set a flag; main stops the threads,
//                                   prints "stopped by signal N" and exits 3 (what a training
//                                   script that saves and exits on SIGTERM does)
//   signal_target lookups THREADS   no handler; every thread (main too) opens long paths that do
//                                   not exist: the system call fails at once, so most of the
//                                   time goes to recording the call and interning its new path
//
// "ready" is printed (and flushed) once every thread has written; the harness signals after it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int g_stop;
static atomic_int g_started;
static volatile sig_atomic_t g_signal;

static void OnSignal(int sig) {
  g_signal = sig;
  atomic_store(&g_stop, 1);
}

static int g_lookups;

static void* Churn(void* arg) {
  const int id = (int)(long)arg;
  char path[256];
  for (unsigned i = 0; g_lookups && !atomic_load(&g_stop); ++i) {
    snprintf(path, sizeof path,
             "missing/datasets/imagenet/train/shard-%05d/class-%05u/image-%08u-%d.jpeg", id,
             i % 1000, i, id);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) close(fd);
    if (i == 16) atomic_fetch_add(&g_started, 1);
  }
  for (unsigned i = 0; !atomic_load(&g_stop); ++i) {
    snprintf(path, sizeof path, "p-%d-%u", id, i);  // a new path every time: interned
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, path, strlen(path));
      close(fd);
    }
    unlink(path);
    if (i == 16) atomic_fetch_add(&g_started, 1);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: signal_target default|handler|lookups THREADS\n");
    return 2;
  }
  const int handler = strcmp(argv[1], "handler") == 0;
  g_lookups = strcmp(argv[1], "lookups") == 0;
  const int nthreads = atoi(argv[2]);
  if (handler) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = OnSignal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
  }
  pthread_t threads[64];
  for (int t = 0; t < nthreads && t < 64; ++t) {
    pthread_create(&threads[t], NULL, Churn, (void*)(long)(t + 1));
  }
  while (atomic_load(&g_started) < nthreads) usleep(1000);
  printf("ready\n");
  fflush(stdout);
  Churn((void*)0L);  // main churns too, until a handler stops it (or the signal ends us)
  for (int t = 0; t < nthreads && t < 64; ++t) pthread_join(threads[t], NULL);
  printf("stopped by signal %d\n", (int)g_signal);
  return 3;
}
