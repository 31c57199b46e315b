/* The identity hooks of issue 24 under the preload library (tests/io/identity_hooks_test.cc): a
 * checkpoint written through a file mapping (mmap, memcpy, msync, munmap), copies inside the kernel
 * (sendfile, copy_file_range, splice), a rename by relative names, a TCP connection on loopback, a
 * child waited for, and signal handlers: one raised outside any call, one that lands in a
 * nanosleep, one SA_RESETHAND, one SA_SIGINFO. It writes what it saw (results, errno values, the
 * dispositions sigaction and signal report) to RESULTS: the test compares a bare and a traced run.
 * Usage: identity_io DIR RESULTS */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1 << 20)

static volatile sig_atomic_t usr1_runs, alarm_runs, usr2_runs, info_signo;

static void BusyFor(long ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

/* Exported (the executable is linked with -rdynamic): the trace names handlers by symbol. */
void busy_usr1(int sig) {
  (void)sig;
  BusyFor(5);
  ++usr1_runs;
}
void busy_alarm(int sig) {
  (void)sig;
  BusyFor(5);
  ++alarm_runs;
}
void once_usr2(int sig) {
  (void)sig;
  ++usr2_runs;
}
void info_handler(int sig, siginfo_t* info, void* context) {
  (void)sig;
  (void)context;
  info_signo = info->si_signo;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* out = fopen(argv[2], "w");
  if (out == NULL || chdir(argv[1]) != 0) return 3;

  /* A checkpoint through a mapping, and an anonymous mapping (malloc's kind: no event). */
  int fd = open("mapped.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, MIB) != 0) return 4;
  char* map = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 5;
  memset(map, 7, MIB);
  int r = msync(map, MIB, MS_SYNC);
  fprintf(out, "msync r=%d\n", r);
  fprintf(out, "munmap r=%d\n", munmap(map, MIB));
  close(fd);
  char* anon = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  fprintf(out, "anonymous ok=%d munmap r=%d\n", anon != MAP_FAILED, munmap(anon, 4 * MIB));
  /* msync of no mapping: the call's error, unchanged. */
  errno = 0;
  r = msync((void*)4096, 4096, MS_SYNC);
  fprintf(out, "msync unmapped r=%d errno=%d\n", r, errno);

  /* Copies inside the kernel. */
  int src = open("mapped.bin", O_RDONLY);
  int dst = open("copy1.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  fprintf(out, "sendfile r=%zd\n", sendfile(dst, src, NULL, MIB));
  close(dst);
  off64_t in_off = 0;
  dst = open("copy2.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ssize_t copied = copy_file_range(src, &in_off, dst, NULL, MIB, 0);
  /* Some filesystems refuse (EXDEV, EINVAL): what the call said, traced or not. */
  fprintf(out, "copy_file_range r=%zd errno=%d\n", copied, copied < 0 ? errno : 0);
  close(dst);
  int p[2];
  if (pipe(p) != 0) return 6;
  off64_t splice_off = 0;
  dst = open("copy3.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ssize_t in = splice(src, &splice_off, p[1], NULL, 65536, 0);
  ssize_t to = splice(p[0], NULL, dst, NULL, 65536, 0);
  fprintf(out, "splice r=%zd,%zd\n", in, to);
  close(dst);
  close(p[0]);
  close(p[1]);
  close(src);

  /* A temporary file renamed to a model file's name, by names relative to a directory fd. */
  fd = open("tmpXYZ", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  fprintf(out, "write r=%zd\n", write(fd, "weights", 7));
  close(fd);
  int dir = open(".", O_RDONLY | O_DIRECTORY);
  fprintf(out, "renameat r=%d\n", renameat(dir, "tmpXYZ", dir, "weights.safetensors"));
  close(dir);

  /* A TCP connection on loopback: both ends' identities name each other. */
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
    return 7;
  }
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, (struct sockaddr*)&addr, sizeof(addr)) != 0) return 8;
  int server = accept(listener, NULL, NULL);
  char byte = 0;
  fprintf(out, "tcp sent=%zd ", write(client, "x", 1));
  fprintf(out, "received=%zd byte=%c\n", read(server, &byte, 1), byte);
  close(client);
  close(server);
  close(listener);

  /* A child waited for (it sleeps 30 ms, exits 3). */
  pid_t child = fork();
  if (child == 0) {
    usleep(30000);
    _exit(3);
  }
  int status = 0;
  pid_t reaped = waitpid(child, &status, 0);
  fprintf(out, "waitpid same=%d status=%d\n", reaped == child, WEXITSTATUS(status));
  printf("child=%d\n", (int)child);

  /* Signal handlers. */
  struct sigaction act, old;
  memset(&act, 0, sizeof(act));
  act.sa_handler = busy_usr1;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  fprintf(out, "sigaction usr1 r=%d\n", sigaction(SIGUSR1, &act, NULL));
  sigaction(SIGUSR1, NULL, &old);
  fprintf(out, "usr1 reported: ours=%d restart=%d siginfo=%d\n", old.sa_handler == busy_usr1,
          (old.sa_flags & SA_RESTART) != 0, (old.sa_flags & SA_SIGINFO) != 0);
  raise(SIGUSR1); /* outside any call of the tracer's */
  fprintf(out, "usr1 runs=%d\n", (int)usr1_runs);

  fprintf(out, "signal alarm previous=%d\n", signal(SIGALRM, busy_alarm) == SIG_DFL);
  struct itimerval timer;
  memset(&timer, 0, sizeof(timer));
  timer.it_value.tv_usec = 10000;
  setitimer(ITIMER_REAL, &timer, NULL);
  struct timespec nap = {0, 80 * 1000 * 1000};
  errno = 0;
  r = nanosleep(&nap, NULL); /* the handler lands inside it */
  fprintf(out, "nanosleep r=%d errno=%d alarm runs=%d\n", r, errno, (int)alarm_runs);
  printf("nanosleep_interrupted=%d\n", r == -1 && errno == EINTR);

  memset(&act, 0, sizeof(act));
  act.sa_handler = once_usr2;
  act.sa_flags = SA_RESETHAND;
  sigaction(SIGUSR2, &act, NULL);
  raise(SIGUSR2);
  sigaction(SIGUSR2, NULL, &old);
  fprintf(out, "usr2 runs=%d reset to default=%d resethand=%d\n", (int)usr2_runs,
          old.sa_handler == SIG_DFL, (old.sa_flags & SA_RESETHAND) != 0);

  memset(&act, 0, sizeof(act));
  act.sa_sigaction = info_handler;
  act.sa_flags = SA_SIGINFO;
  sigaction(SIGHUP, &act, NULL);
  raise(SIGHUP);
  sigaction(SIGHUP, NULL, &old);
  fprintf(out, "siginfo signo=%d reported ours=%d\n", (int)info_signo,
          (old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == info_handler);

  fprintf(out, "signal usr1 previous ours=%d\n", signal(SIGUSR1, SIG_IGN) == busy_usr1);
  raise(SIGUSR1); /* ignored now */
  fprintf(out, "usr1 runs after ignore=%d\n", (int)usr1_runs);
  fclose(out);
  return 0;
}
