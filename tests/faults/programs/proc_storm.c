// fork / vfork / posix_spawn / exec storms while 64 threads are inside hooked calls.
//
//   proc_storm MODE COUNT THREADS
//     MODE   fork   children do file I/O on new paths, then half _exit() and half exit()
//            first  forks without pause from the moment the threads start, while each thread
//                   makes its first call of ~25 hooked functions (a tracer that initialises
//                   per-function state on first use, under a lock its fork handler holds, leaves
//                   the child waiting for a thread that does not exist in it); each child calls
//                   every one of them and exits. The parent gives the children 10 s, then
//                   counts those still running.
//            vfork  children execve("/bin/true") straight away (the only thing vfork allows)
//            spawn  posix_spawn of this program as a leaf that writes one file
//            exec   fork, then the child execs this program as that leaf
//   proc_storm leaf N   (what spawn/exec run) writes leaf-N.txt and exits 0
//
// The threads loop on open/write/read/close/stat of 16 paths each and fopen/fprintf/fclose, so
// at any fork some of them hold whatever the hooks lock (interning a new path, a burst, a ring).
// Every child must finish: the parent waits for each and prints how many ended with status 0.
// A child that hangs in the tracer's state copied from the parent hangs the whole run (the
// harness's timeout). Output and files are the same on every run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static atomic_int g_stop;

static void* Churn(void* arg) {
  const int id = (int)(long)arg;
  char path[64], buf[64];
  memset(buf, 'a' + id % 26, sizeof buf);
  for (unsigned i = 0; !atomic_load(&g_stop); ++i) {
    snprintf(path, sizeof path, "churn-%d-%u.tmp", id, i % 16);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, buf, sizeof buf);
      (void)!pread(fd, buf, sizeof buf, 0);
      close(fd);
    }
    struct stat st;
    (void)stat(path, &st);
    if (i % 8 == 0) {
      FILE* f = fopen(path, "a");
      if (f != NULL) {
        fprintf(f, "%u\n", i);
        fclose(f);
      }
    }
  }
  for (unsigned i = 0; i < 16; ++i) {
    snprintf(path, sizeof path, "churn-%d-%u.tmp", id, i);
    unlink(path);
  }
  return NULL;
}

// One call of each of many hooked functions, starting at `first` (threads start at different
// ones, so several first calls are in flight at once), `pause_us` between calls.
static void CallEach(int first, const char* path, int pause_us) {
  enum { kCalls = 24 };
  char buf[32] = "0123456789abcdef0123456789abcde";
  struct iovec iov = {buf, 8};
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  int sv[2] = {-1, -1};
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  for (int k = 0; k < kCalls; ++k) {
    if (pause_us) usleep((useconds_t)pause_us);
    switch ((first + k) % kCalls) {
      case 0:
        (void)!write(fd, buf, 8);
        break;
      case 1:
        (void)!pwrite(fd, buf, 8, 8);
        break;
      case 2:
        (void)!writev(fd, &iov, 1);
        break;
      case 3:
        (void)!pwritev(fd, &iov, 1, 16);
        break;
      case 4:
        (void)!pread(fd, buf, 8, 0);
        break;
      case 5:
        (void)!readv(fd, &iov, 1);
        break;
      case 6:
        (void)!preadv(fd, &iov, 1, 0);
        break;
      case 7:
        fsync(fd);
        break;
      case 8:
        fdatasync(fd);
        break;
      case 9:
        sync_file_range(fd, 0, 0, 0);
        break;
      case 10: {
        int d = dup(fd);
        if (d >= 0) close(d);
        break;
      }
      case 11: {
        // Onto a number far above the ~200 the 64 threads and a child hold: a lower one could be
        // another thread's (or, in a child, its own) socket, which the close below would close
        // under it (a send then died of SIGPIPE, bare or traced, depending on the fd layout).
        int d = dup2(fd, 900 + first % 50);
        if (d >= 0) close(d);
        break;
      }
      case 12: {
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 300);
        if (d >= 0) close(d);
        break;
      }
      case 13: {
        struct stat st;
        fstat(fd, &st);
        break;
      }
      case 14:
        (void)!send(sv[0], buf, 4, 0);
        break;
      case 15:
        (void)!recv(sv[1], buf, 4, MSG_DONTWAIT);
        break;
      case 16:
        (void)!sendto(sv[0], buf, 4, 0, NULL, 0);
        break;
      case 17:
        (void)!recvfrom(sv[1], buf, 4, MSG_DONTWAIT, NULL, NULL);
        break;
      case 18: {
        FILE* f = fopen(path, "a");
        if (f) {
          fputs("x\n", f);
          fflush(f);
          fclose(f);
        }
        break;
      }
      case 19: {
        FILE* f = fopen(path, "r");
        if (f) {
          (void)!fread(buf, 1, 4, f);
          fclose(f);
        }
        break;
      }
      case 20: {
        FILE* f = fdopen(dup(fd), "a");
        if (f) {
          fprintf(f, "%d\n", k);
          fclose(f);
        }
        break;
      }
      case 21: {
        char to[96];
        snprintf(to, sizeof to, "%s.r", path);
        rename(path, to);
        rename(to, path);
        break;
      }
      case 22: {
        int d = openat(AT_FDCWD, path, O_RDONLY);
        if (d >= 0) close(d);
        break;
      }
      case 23: {
        int d = creat("/dev/null", 0644);
        if (d >= 0) close(d);
        break;
      }
    }
  }
  close(sv[0]);
  close(sv[1]);
  close(fd);
  unlink(path);
}

static atomic_int g_first_started;

static void* FirstCalls(void* arg) {
  const int id = (int)(long)arg;
  char path[64];
  snprintf(path, sizeof path, "first-%d.tmp", id);
  atomic_fetch_add(&g_first_started, 1);
  // The first calls of the 24 functions spread over ~10 ms, while the forks go on.
  usleep((useconds_t)(id % 16) * 300);
  CallEach(id, path, 200);
  while (!atomic_load(&g_stop)) usleep(1000);
  return NULL;
}

// Forks `count` children as fast as it can while the threads make their first calls; waits
// up to 10 s for them, then counts (and kills) the ones that did not finish.
static int FirstCallsStorm(int count, int nthreads) {
  pthread_t threads[256];
  pid_t pids[1024];
  int forked = 0;
  for (int t = 0; t < nthreads && t < 256; ++t) {
    pthread_create(&threads[t], NULL, FirstCalls, (void*)(long)t);
  }
  for (int i = 0; i < count && i < 1024; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      char path[64];
      snprintf(path, sizeof path, "forked-%d.tmp", i);
      CallEach(i, path, 0);
      _exit(0);
    }
    if (pid > 0) pids[forked++] = pid;
  }
  int finished = 0, failed = 0;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      ++finished;
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      continue;
    }
    if (pid < 0 || finished == forked) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 10) break;
    usleep(2000);
  }
  const int hung = forked - finished;
  for (int i = 0; i < forked && hung > 0; ++i) kill(pids[i], SIGKILL);
  while (wait(NULL) > 0) {
  }
  atomic_store(&g_stop, 1);
  for (int t = 0; t < nthreads && t < 256; ++t) pthread_join(threads[t], NULL);
  printf("first: %d children forked, %d did not finish within 10 s, %d failed\n", forked, hung,
         failed);
  return hung == 0 && failed == 0 ? 0 : 1;
}

static int Leaf(const char* n) {
  char path[64];
  snprintf(path, sizeof path, "leaf-%s.txt", n);
  FILE* f = fopen(path, "w");
  if (f == NULL) return 3;
  fprintf(f, "leaf %s\n", n);
  return fclose(f) == 0 ? 0 : 4;
}

// A forked child: new paths (interned for the first time in this process), stdio, an fsync.
static void ForkChild(int i) {
  char path[64];
  snprintf(path, sizeof path, "child-%d.txt", i);
  int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) _exit(5);
  char line[64];
  int n = snprintf(line, sizeof line, "child %d\n", i);
  if (write(fd, line, (size_t)n) != n) _exit(6);
  fsync(fd);
  close(fd);
  FILE* f = fopen(path, "a");
  if (f == NULL) _exit(7);
  fprintf(f, "again %d\n", i);
  fclose(f);
  if (i % 2) exit(0);
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "leaf") == 0) return Leaf(argv[2]);
  if (argc != 4) {
    fprintf(stderr, "usage: proc_storm fork|first|vfork|spawn|exec COUNT THREADS\n");
    return 2;
  }
  const char* mode = argv[1];
  const int count = atoi(argv[2]);
  const int nthreads = atoi(argv[3]);
  if (strcmp(mode, "first") == 0) return FirstCallsStorm(count, nthreads);
  pthread_t threads[256];
  for (int t = 0; t < nthreads && t < 256; ++t) {
    pthread_create(&threads[t], NULL, Churn, (void*)(long)t);
  }
  usleep(20000);  // let every thread get into its loop
  int ok = 0;
  for (int i = 0; i < count; ++i) {
    pid_t pid = -1;
    char n[16];
    snprintf(n, sizeof n, "%d", i);
    if (strcmp(mode, "fork") == 0) {
      pid = fork();
      if (pid == 0) ForkChild(i);
    } else if (strcmp(mode, "vfork") == 0) {
      pid = vfork();
      if (pid == 0) {
        char* child_argv[] = {"/bin/true", NULL};
        execve("/bin/true", child_argv, environ);
        _exit(127);
      }
    } else if (strcmp(mode, "spawn") == 0) {
      char* child_argv[] = {argv[0], "leaf", n, NULL};
      int err = posix_spawn(&pid, argv[0], NULL, NULL, child_argv, environ);
      if (err != 0) pid = -1;
    } else if (strcmp(mode, "exec") == 0) {
      pid = fork();
      if (pid == 0) {
        char* child_argv[] = {argv[0], "leaf", n, NULL};
        execv(argv[0], child_argv);
        _exit(127);
      }
    } else {
      fprintf(stderr, "proc_storm: unknown mode %s\n", mode);
      return 2;
    }
    if (pid < 0) {
      printf("child %d: %s failed: %s\n", i, mode, strerror(errno));
      continue;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      ++ok;
    } else {
      printf("child %d: status 0x%x\n", i, status);
    }
  }
  atomic_store(&g_stop, 1);
  for (int t = 0; t < nthreads && t < 256; ++t) pthread_join(threads[t], NULL);
  printf("%s: %d of %d children ended with status 0\n", mode, ok, count);
  return ok == count ? 0 : 1;
}
