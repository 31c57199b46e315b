// What a program sees of its own descriptor table. Each line is one observation; a traced run
// must print exactly what a bare run prints.
//
//   fd_probe numbers     the numbers open(), pipe(), dup(), socketpair() hand out, and the
//                        descriptors listed in /proc/self/fd
//   fd_probe nofile N    with RLIMIT_NOFILE = N: how many files open() gives before EMFILE
//   fd_probe every       raises the soft limit to 4096 (or the hard limit), fills every number
//                        with open(), checks each still names what it opened, writes a line to a
//                        file through the highest number, then closes them all
//   fd_probe stdin       reads its stdin to EOF (the harness runs it with stdin closed, or from
//                        a file) and opens a file: which number it gets, what it reads back
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void ListFds(const char* when) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return;
  const int own = dirfd(d);
  printf("%s: fds", when);
  int fds[1024], n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL && n < 1024) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd != own) fds[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; ++i) {  // readdir order is the kernel's; sort for a stable line
    for (int j = i + 1; j < n; ++j) {
      if (fds[j] < fds[i]) {
        int t = fds[i];
        fds[i] = fds[j];
        fds[j] = t;
      }
    }
  }
  for (int i = 0; i < n; ++i) printf(" %d", fds[i]);
  printf("\n");
}

static int Numbers(void) {
  ListFds("at start");
  int fd = open("/dev/null", O_RDONLY);
  printf("open: %d\n", fd);
  int p[2];
  if (pipe(p) == 0) printf("pipe: %d %d\n", p[0], p[1]);
  printf("dup: %d\n", dup(1));
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) printf("socketpair: %d %d\n", sv[0], sv[1]);
  FILE* f = fopen("data.txt", "w");
  if (f != NULL) {
    printf("fopen: %d\n", fileno(f));
    fputs("written through fopen\n", f);
    fclose(f);
  }
  ListFds("after");
  return 0;
}

static int CountOpens(void) {
  int n = 0;
  while (open("/dev/null", O_RDONLY) >= 0) ++n;
  return errno == EMFILE ? n : -errno;
}

static int Nofile(int limit) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = (rlim_t)limit;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    perror("setrlimit");
    return 1;
  }
  printf("RLIMIT_NOFILE=%d: %d files opened\n", limit, CountOpens());
  return 0;
}

static int Every(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
  setrlimit(RLIMIT_NOFILE, &rl);
  const int limit = (int)rl.rlim_cur;
  struct stat null_st;
  stat("/dev/null", &null_st);
  int opened = CountOpens();
  printf("filled the table: %d opened under a limit of %d\n", opened, limit);
  int wrong = 0;
  for (int fd = 3; fd < limit; ++fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_rdev != null_st.st_rdev) ++wrong;
  }
  printf("descriptors 3..%d that are not what we opened: %d\n", limit - 1, wrong);
  // The highest number becomes a data file.
  close(limit - 1);
  int fd = open("highest.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  printf("data file got fd %s\n", fd == limit - 1 ? "limit-1" : "another number");
  if (fd >= 0) {
    const char line[] = "written through the highest descriptor\n";
    (void)!write(fd, line, sizeof line - 1);
  }
  for (int i = 3; i < limit; ++i) close(i);
  printf("after closing: open gives %d\n", open("/dev/null", O_RDONLY));
  return 0;
}

static int Stdin(void) {
  char buf[256];
  ssize_t got = read(0, buf, sizeof buf);
  if (got < 0) {
    printf("read(0): %s\n", strerror(errno));
  } else {
    printf("read(0): %zd bytes:", got);
    for (ssize_t i = 0; i < got && i < 16; ++i) printf(" %02x", (unsigned char)buf[i]);
    printf("\n");
  }
  int fd = open("input.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
  printf("open: %d\n", fd);
  const char text[] = "line one\nline two\n";
  (void)!write(fd, text, sizeof text - 1);
  lseek(fd, 0, SEEK_SET);
  got = read(fd, buf, sizeof buf);
  printf("read back %zd bytes\n", got);
  ListFds("at end");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "numbers") == 0) return Numbers();
  if (argc >= 3 && strcmp(argv[1], "nofile") == 0) return Nofile(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "every") == 0) return Every();
  if (argc >= 2 && strcmp(argv[1], "stdin") == 0) return Stdin();
  fprintf(stderr, "usage: fd_probe numbers|nofile N|every|stdin\n");
  return 2;
}
