/* An I/O burst still open when something else happens on its thread, or when the thread or the
 * process ends. Every write is 1000 bytes. Usage: open_burst_endings MODE FILE
 *   order           main: 3 writes, idlescope_mark("after-writes"), 2 writes, close
 *   exit-other      a second thread: 4 writes, then waits forever; main calls exit(0)
 *   _exit           main: 5 writes, _exit(0)
 *   _exit-other     a second thread: 4 writes, then waits forever; main calls _exit(0)
 *   thread-ends     a second thread: 3 writes, returns (fd left open); main joins, returns 0
 *   sigterm-other   a second thread: 4 writes, then waits forever; main raises SIGTERM (default
 *                   action: the process dies of it) */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* g_path;
static pthread_barrier_t g_written;
static char g_buf[1000];

static int Writes(int fd, int n) {
  for (int i = 0; i < n; ++i) {
    if (write(fd, g_buf, sizeof(g_buf)) != (ssize_t)sizeof(g_buf)) return -1;
  }
  return 0;
}

static int OpenOut(void) { return open(g_path, O_WRONLY | O_CREAT | O_TRUNC, 0644); }

/* Writes, lets main go on, and waits without any traced call (pause is not hooked). */
static void* WriteThenWait(void* arg) {
  (void)arg;
  int fd = OpenOut();
  if (fd < 0 || Writes(fd, 4) != 0) abort();
  pthread_barrier_wait(&g_written);
  for (;;) pause();
  return NULL;
}

static void* WriteThenEnd(void* arg) {
  (void)arg;
  int fd = OpenOut();
  if (fd < 0 || Writes(fd, 3) != 0) abort();
  return NULL;
}

static void StartWaitingWriter(void) {
  pthread_t t;
  pthread_barrier_init(&g_written, NULL, 2);
  if (pthread_create(&t, NULL, WriteThenWait, NULL) != 0) abort();
  pthread_barrier_wait(&g_written);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* mode = argv[1];
  g_path = argv[2];
  memset(g_buf, 'x', sizeof(g_buf));
  if (strcmp(mode, "order") == 0) {
    void (*mark)(const char*) = (void (*)(const char*))dlsym(RTLD_DEFAULT, "idlescope_mark");
    int fd = OpenOut();
    if (fd < 0 || Writes(fd, 3) != 0) return 3;
    if (mark != NULL) mark("after-writes");
    if (Writes(fd, 2) != 0) return 4;
    return close(fd) == 0 ? 0 : 5;
  }
  if (strcmp(mode, "exit-other") == 0) {
    StartWaitingWriter();
    exit(0);
  }
  if (strcmp(mode, "_exit") == 0) {
    int fd = OpenOut();
    if (fd < 0 || Writes(fd, 5) != 0) return 3;
    _exit(0);
  }
  if (strcmp(mode, "_exit-other") == 0) {
    StartWaitingWriter();
    _exit(0);
  }
  if (strcmp(mode, "thread-ends") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, WriteThenEnd, NULL) != 0) return 3;
    pthread_join(t, NULL);
    return 0;
  }
  if (strcmp(mode, "sigterm-other") == 0) {
    StartWaitingWriter();
    raise(SIGTERM);
    return 6; /* not reached: SIGTERM's default action ends the process */
  }
  return 2;
}
