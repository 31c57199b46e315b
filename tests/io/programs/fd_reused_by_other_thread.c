/* A thread's write burst on an fd whose number another thread makes name another file: the writer
 * thread writes 1000-byte blocks to fd N without pause; main opens FILE_A as N, lets 100 writes go
 * to it, then makes N name FILE_B (dup2, atomic for the writer), lets 100 more writes happen and
 * stops the writer. Nothing happens on the writer thread but writes, so only the fd's new file
 * can tell that the writes after the switch are FILE_B's, not more of the FILE_A burst.
 * Usage: fd_reused_by_other_thread FILE_A FILE_B (the files' sizes say which write went where) */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_long g_writes;
static atomic_int g_stop;
static int g_fd = -1;
static int g_null = -1;
static char g_buf[1000];

static void* Writer(void* arg) {
  (void)arg;
  /* This thread's first traced call (its ring, its first stack) is not one of the writes. */
  if (write(g_null, g_buf, 1) != 1) abort();
  while (!atomic_load(&g_stop)) {
    if (write(g_fd, g_buf, sizeof(g_buf)) != (ssize_t)sizeof(g_buf)) abort();
    atomic_fetch_add(&g_writes, 1);
  }
  return NULL;
}

static void WaitForWrites(long n) {
  while (atomic_load(&g_writes) < n) {
  }
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  memset(g_buf, 'r', sizeof(g_buf));
  g_null = open("/dev/null", O_WRONLY);
  g_fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (g_null < 0 || g_fd < 0) return 3;
  pthread_t writer;
  if (pthread_create(&writer, NULL, Writer, NULL) != 0) return 4;
  WaitForWrites(100);
  int b = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (b < 0 || dup2(b, g_fd) != g_fd || close(b) != 0) return 5;
  WaitForWrites(atomic_load(&g_writes) + 100);
  atomic_store(&g_stop, 1);
  pthread_join(writer, NULL);
  return close(g_fd) == 0 ? 0 : 6;
}
