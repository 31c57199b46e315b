/* Preloaded by the overhead benchmark for its "bare, multithreaded" baseline: one idle thread.
 * A process with a second thread pays more per read/write than a single-threaded one (glibc's
 * cancellation bookkeeping around the syscall; the kernel's fdget takes file references and
 * f_pos_lock once the fd table is shared), and the tracer's writer thread makes every traced
 * process multithreaded. Real training jobs always are (PyTorch starts thread pools), so this
 * baseline separates the hooks' own cost from the cost of having any second thread. */
#include <pthread.h>
#include <unistd.h>

static void* Idle(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

__attribute__((constructor)) static void StartIdleThread(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, Idle, NULL) == 0) pthread_detach(thread);
}
