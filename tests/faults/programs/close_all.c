// Programs that close every descriptor, as daemons, sandboxes and subprocess(close_fds=True)
// children do, and then use the numbers for their own data.
//
//   close_all METHOD above2   closes 3..max, opens data files (they get 3, 4, ...), writes them,
//                             forks a child that appends to one, and lists its fds
//   close_all METHOD all      closes 0..max, then opens out.txt, err.txt and data.txt: they get
//                             0, 1 and 2, so whatever is written to stdout/stderr from then on
//                             lands in those files (a tracer's message would corrupt them)
//   METHOD: close_range (glibc's wrapper), close_range_syscall (the raw system call: no hook can
//   see it), closefrom (glibc), loop (close() up to the limit)
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void CloseFrom(const char* method, int first) {
  if (strcmp(method, "close_range") == 0) {
    close_range((unsigned)first, ~0u, 0);
  } else if (strcmp(method, "close_range_syscall") == 0) {
    syscall(SYS_close_range, (unsigned)first, ~0u, 0u);
  } else if (strcmp(method, "closefrom") == 0) {
    closefrom(first);
  } else {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    for (int fd = first; fd < (int)rl.rlim_cur; ++fd) close(fd);
  }
}

static int CountFds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the directory's own fd
}

static void WriteLines(int fd, const char* what, int n) {
  char line[96];
  for (int i = 0; i < n; ++i) {
    int len = snprintf(line, sizeof line, "%s line %d\n", what, i);
    (void)!write(fd, line, (size_t)len);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: close_all close_range|close_range_syscall|closefrom|loop above2|all\n");
    return 2;
  }
  const char* method = argv[1];
  if (strcmp(argv[2], "above2") == 0) {
    CloseFrom(method, 3);
    int a = open("a.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int b = open("b.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    printf("after closing 3..: data files got %d and %d, %d fds open\n", a, b, CountFds());
    fflush(stdout);
    WriteLines(a, "a", 50);
    WriteLines(b, "b", 50);
    pid_t pid = fork();
    if (pid == 0) {
      WriteLines(a, "child a", 10);
      _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    close(a);
    close(b);
    printf("child status %d, %d fds open at the end\n", WEXITSTATUS(status), CountFds());
    return 0;
  }
  fflush(stdout);
  CloseFrom(method, 0);
  int out = open("out.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  int err = open("err.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  int data = open("data.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  WriteLines(data, "data", 100);
  // stdio's stdout is fd 1 again, now err.txt; fd 2 (stderr) is data.txt.
  printf("out=%d err=%d data=%d\n", out, err, data);
  fflush(stdout);
  int extra = open("extra.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  WriteLines(extra, "extra", 20);
  fsync(extra);
  close(extra);
  WriteLines(out, "out", 10);
  return 0;
}
