// A program that sandboxes itself with seccomp after doing traced work, as sandboxes, browsers'
// renderers and some data loaders do (fault_matrix.py, case sandboxes).
//   sandboxed strict     prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT): read, write, _exit and
//                        sigreturn only; ends with the exit system call itself
//   sandboxed exec PROGRAM ARGS...
//                        a filter that kills the process at mkdir, mkdirat or linkat (which the
//                        program it execs never makes, and a tracer making its trace file does),
//                        then execs PROGRAM: a sandbox that starts a worker
//   sandboxed filter     syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER): an allow-list of read,
//                        write, openat, close, fstat, lseek, exit, exit_group and rt_sigreturn
//                        (anything else kills the process); opens and reads a file under it and
//                        ends in _exit
// Before the sandbox it writes and reads a file (events for the trace); it prints what it did.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void Say(const char* s) {
  ssize_t n = write(1, s, strlen(s));
  (void)n;
}

static int Work(void) {
  int fd = open("sandboxed.dat", O_CREAT | O_TRUNC | O_RDWR, 0644);
  if (fd < 0) return -1;
  char block[4096];
  memset(block, 'x', sizeof(block));
  for (int i = 0; i < 64; ++i) {
    if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) return -1;
  }
  lseek(fd, 0, SEEK_SET);
  long total = 0;
  ssize_t n;
  while ((n = read(fd, block, sizeof(block))) > 0) total += n;
  close(fd);
  return total == 64 * 4096 ? 0 : -1;
}

#define ALLOW(nr) \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int Filter(void) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      ALLOW(SYS_read),
      ALLOW(SYS_write),
      ALLOW(SYS_openat),
      ALLOW(SYS_close),
      ALLOW(SYS_fstat),
      ALLOW(SYS_lseek),
      ALLOW(SYS_exit),
      ALLOW(SYS_exit_group),
      ALLOW(SYS_rt_sigreturn),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof(code) / sizeof(code[0])), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

#define KILL(nr)                                   \
  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

static int DenyFileCreation(void) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      KILL(SYS_mkdir),
      KILL(SYS_mkdirat),
      KILL(SYS_linkat),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof(code) / sizeof(code[0])), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "exec") == 0) {
    if (Work() != 0) return 3;
    if (DenyFileCreation() != 0) return 5;
    execv(argv[2], argv + 2);
    return 6;
  }
  if (argc != 2) return 2;
  if (Work() != 0) return 3;
  Say("worked\n");
  if (strcmp(argv[1], "strict") == 0) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0) return 4;
    Say("strict\n");
    syscall(SYS_exit, 0);
  }
  if (strcmp(argv[1], "filter") == 0) {
    if (Filter() != 0) return 5;
    int fd = open("sandboxed.dat", O_RDONLY);
    char block[4096];
    long total = 0;
    ssize_t n;
    while (fd >= 0 && (n = read(fd, block, sizeof(block))) > 0) total += n;
    if (fd >= 0) close(fd);
    char line[64];
    snprintf(line, sizeof(line), "filtered read %ld\n", total);
    Say(line);
    _exit(0);
  }
  return 2;
}
