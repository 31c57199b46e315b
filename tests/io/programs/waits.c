/* Blocking waits (interpose/hooks/wait.cc, issue 13): each call's result and errno go to OUT, one
 * line per call, so that a bare and a traced run can be compared; errno is set to a sentinel
 * before each call, so a success that leaves it alone must leave it alone traced too.
 *
 *   waits OUT
 *
 * Short waits: 1000 polls of a pipe that has data (fd SHORT_FD in OUT's first line) and 200
 * usleep(100). Long ones (>= 20 ms): poll of an empty pipe (timeout, then EINTR), select of a pty
 * that gets a line, pselect of nothing, ppoll of a socket pair, a poll of a pipe and a socket,
 * epoll_wait/epoll_pwait/epoll_pwait2, accept, nanosleep (done, then EINTR), clock_nanosleep,
 * usleep, sleep cut short, pause, sigtimedwait (EAGAIN), sigwait, sigwaitinfo. Failures that
 * return at once: poll EINVAL, select EBADF, nanosleep EINVAL, clock_nanosleep EINVAL, epoll_wait
 * EBADF, accept ENOTSOCK. Signals come from a 20 ms timer or from a helper thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SENTINEL 77

static FILE* out;

static void Line(const char* what, long r, int err) {
  fprintf(out, "%s r=%ld errno=%d\n", what, r, err);
}

static void OnAlarm(int sig) { (void)sig; }

/* SIGALRM in `ms`, once; its handler returns without SA_RESTART: the wait fails with EINTR. */
static void AlarmIn(int ms) {
  struct itimerval t;
  memset(&t, 0, sizeof(t));
  t.it_value.tv_usec = ms * 1000;
  setitimer(ITIMER_REAL, &t, NULL);
}

/* A helper thread does `what` after 20 ms. */
struct Later {
  int kind; /* 0: write a line to fd, 1: connect to port, 2: kill(getpid(), sig) */
  int fd;
  int port;
  int sig;
};
static void* RunLater(void* arg) {
  struct Later* l = arg;
  struct timespec ts = {0, 20 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  if (l->kind == 0) {
    ssize_t w = write(l->fd, "y\n", 2);
    (void)w;
  } else if (l->kind == 1) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = (in_port_t)l->port;
    if (connect(s, (struct sockaddr*)&a, sizeof(a)) != 0) _exit(90);
    /* stays open until the process ends */
  } else {
    kill(getpid(), l->sig);
  }
  return NULL;
}
static pthread_t Start(struct Later* l) {
  pthread_t t;
  pthread_create(&t, NULL, RunLater, l);
  return t;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  out = fopen(argv[1], "w");
  if (out == NULL) return 3;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnAlarm; /* no SA_RESTART */
  sigaction(SIGALRM, &sa, NULL);

  int ready[2], empty[2];
  if (pipe(ready) != 0 || pipe(empty) != 0) return 4;
  if (write(ready[1], "x", 1) != 1) return 5;
  fprintf(out, "short_fd=%d empty_fd=%d\n", ready[0], empty[0]);

  /* Short: answered at once. */
  int fails = 0;
  for (int i = 0; i < 1000; ++i) {
    struct pollfd p = {ready[0], POLLIN, 0};
    errno = SENTINEL;
    int r = poll(&p, 1, 1000);
    if (r != 1 || errno != SENTINEL) ++fails;
  }
  for (int i = 0; i < 200; ++i) {
    errno = SENTINEL;
    if (usleep(100) != 0 || errno != SENTINEL) ++fails;
  }
  fprintf(out, "short fails=%d\n", fails);

  struct pollfd pe = {empty[0], POLLIN, 0};
  errno = SENTINEL;
  int r = poll(&pe, 1, 30);
  Line("poll timeout", r, errno);
  AlarmIn(20);
  errno = SENTINEL;
  r = poll(&pe, 1, 5000);
  Line("poll eintr", r, errno);
  struct rlimit lim;
  getrlimit(RLIMIT_NOFILE, &lim);
  errno = SENTINEL;
  r = poll(&pe, (nfds_t)lim.rlim_cur + 1, 0);
  Line("poll einval", r, errno);

  /* A terminal: select() it as GNU readline does, until a line comes. */
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return 6;
  int tty = open(ptsname(master), O_RDWR | O_NOCTTY);
  if (tty < 0) return 7;
  struct Later line = {0, master, 0, 0};
  pthread_t t = Start(&line);
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(tty, &rs);
  errno = SENTINEL;
  r = select(tty + 1, &rs, NULL, NULL, NULL);
  Line("select tty", r, errno);
  fprintf(out, "select tty ready=%d\n", FD_ISSET(tty, &rs) ? 1 : 0);
  pthread_join(t, NULL);
  fd_set bad;
  FD_ZERO(&bad);
  FD_SET(empty[1] + 100, &bad);
  struct timeval zero = {0, 0};
  errno = SENTINEL;
  r = select(empty[1] + 101, &bad, NULL, NULL, &zero);
  Line("select ebadf", r, errno);
  struct timespec twenty = {0, 20 * 1000 * 1000};
  errno = SENTINEL;
  r = pselect(0, NULL, NULL, NULL, &twenty, NULL);
  Line("pselect nothing", r, errno);

  /* Sockets: a connected pair, then a pipe and a socket together. */
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 8;
  struct pollfd ps = {pair[0], POLLIN, 0};
  errno = SENTINEL;
  r = ppoll(&ps, 1, &twenty, NULL);
  Line("ppoll socket", r, errno);
  struct pollfd mix[2] = {{empty[0], POLLIN, 0}, {pair[0], POLLIN, 0}};
  errno = SENTINEL;
  r = poll(mix, 2, 20);
  Line("poll mix", r, errno);

  /* epoll: the instance is what the event names. */
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ee;
  memset(&ee, 0, sizeof(ee));
  ee.events = EPOLLIN;
  ee.data.fd = empty[0];
  epoll_ctl(ep, EPOLL_CTL_ADD, empty[0], &ee);
  struct epoll_event got[4];
  errno = SENTINEL;
  r = epoll_wait(ep, got, 4, 20);
  Line("epoll_wait", r, errno);
  errno = SENTINEL;
  r = epoll_pwait(ep, got, 4, 20, NULL);
  Line("epoll_pwait", r, errno);
  errno = SENTINEL;
  r = epoll_pwait2(ep, got, 4, &twenty, NULL);
  Line("epoll_pwait2", r, errno == ENOSYS ? 0 : errno); /* a kernel before 5.11 */
  errno = SENTINEL;
  r = epoll_wait(empty[1] + 100, got, 4, 0);
  Line("epoll_wait ebadf", r, errno);

  /* accept: a server waiting for its client. */
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, (struct sockaddr*)&addr, &len) != 0) {
    return 9;
  }
  struct Later client = {1, 0, addr.sin_port, 0};
  t = Start(&client);
  errno = SENTINEL;
  int conn = accept(listener, NULL, NULL);
  Line("accept", conn >= 0 ? 0 : conn, errno);
  pthread_join(t, NULL);
  errno = SENTINEL;
  r = accept(empty[0], NULL, NULL);
  Line("accept enotsock", r, errno);

  /* Sleeps. */
  errno = SENTINEL;
  r = nanosleep(&twenty, NULL);
  Line("nanosleep", r, errno);
  struct timespec two_s = {2, 0}, rem = {0, 0};
  AlarmIn(20);
  errno = SENTINEL;
  r = nanosleep(&two_s, &rem);
  Line("nanosleep eintr", r, errno);
  fprintf(out, "nanosleep eintr rem>1s=%d\n", rem.tv_sec >= 1 ? 1 : 0);
  struct timespec bad_ts = {0, 2000000000L};
  errno = SENTINEL;
  r = nanosleep(&bad_ts, NULL);
  Line("nanosleep einval", r, errno);
  errno = SENTINEL;
  r = clock_nanosleep(CLOCK_MONOTONIC, 0, &twenty, NULL);
  Line("clock_nanosleep", r, errno);
  errno = SENTINEL;
  r = clock_nanosleep((clockid_t)12345, 0, &twenty, NULL);
  Line("clock_nanosleep einval", r, errno);
  errno = SENTINEL;
  r = usleep(20000);
  Line("usleep", r, errno);
  AlarmIn(20);
  errno = SENTINEL;
  unsigned left = sleep(5);
  Line("sleep eintr", left > 0 ? 1 : 0, errno == EINTR || errno == SENTINEL ? 0 : errno);
  AlarmIn(20);
  errno = SENTINEL;
  r = pause();
  Line("pause", r, errno);

  /* Signal waits: SIGUSR1/SIGUSR2 blocked, sent by the helper thread. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  sigprocmask(SIG_BLOCK, &set, NULL);
  siginfo_t info;
  errno = SENTINEL;
  r = sigtimedwait(&set, &info, &twenty);
  Line("sigtimedwait eagain", r, errno);
  struct Later usr1 = {2, 0, 0, SIGUSR1};
  t = Start(&usr1);
  int sig = 0;
  errno = SENTINEL;
  r = sigwait(&set, &sig);
  Line("sigwait", r, errno);
  fprintf(out, "sigwait sig=%d\n", sig);
  pthread_join(t, NULL);
  struct Later usr2 = {2, 0, 0, SIGUSR2};
  t = Start(&usr2);
  errno = SENTINEL;
  r = sigwaitinfo(&set, &info);
  Line("sigwaitinfo", r, errno);
  pthread_join(t, NULL);
  fclose(out);
  return 0;
}
