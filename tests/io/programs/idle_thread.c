/* Preloaded by the overhead benchmark for its "bare, multithreaded" baseline: one idle thread,
 * set up as the tracer's writer thread is (interpose/writer.cc, trace_file.cc): all signals
 * blocked, and a file descriptor table of its own holding nothing. Any second thread makes glibc
 * wrap every read/write in cancellation bookkeeping (two atomic updates of the thread's
 * cancelhandling word), which a traced process pays because of the writer thread and a real
 * training job pays anyway (PyTorch starts thread pools). A second thread that shared the
 * program's descriptor table would also make the kernel take a file reference and f_pos_lock on
 * every call (fdget_pos), which the writer avoids; so this baseline separates the hooks' own cost
 * from the cost of having the writer at all. The constructor returns once the thread has its table,
 * as the tracer's does. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

static atomic_uint ready;

static void* Idle(void* arg) {
  (void)arg;
  syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE);
  atomic_store(&ready, 1);
  syscall(SYS_futex, &ready, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  for (;;) pause();
  return NULL;
}

__attribute__((constructor)) static void StartIdleThread(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  int rc = pthread_create(&thread, NULL, Idle, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return;
  pthread_detach(thread);
  for (int i = 0; i < 10 && atomic_load(&ready) == 0; ++i) {
    struct timespec timeout = {0, 100000000};
    syscall(SYS_futex, &ready, FUTEX_WAIT_PRIVATE, 0, &timeout, NULL, 0);
  }
}
