// More events than the smallest buffers hold: THREADS threads each make CALLS pairs of
// open/close (two events each, never merged) as fast as they can. With IDLESCOPE_BUFFER_KB=16 a
// ring holds ~170 events, so most are dropped: the program must still run at full speed and the
// footer must count what was dropped.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int g_calls;

static void* Flood(void* arg) {
  (void)arg;
  for (int i = 0; i < g_calls; ++i) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) close(fd);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const int nthreads = argc > 1 ? atoi(argv[1]) : 4;
  g_calls = argc > 2 ? atoi(argv[2]) : 50000;
  pthread_t threads[64];
  for (int t = 0; t < nthreads && t < 64; ++t) pthread_create(&threads[t], NULL, Flood, NULL);
  for (int t = 0; t < nthreads && t < 64; ++t) pthread_join(threads[t], NULL);
  printf("%d threads made %d open/close pairs each\n", nthreads, g_calls);
  return 0;
}
