/* Runs a program where close_range(2) is refused, as in seccomp sandboxes that predate it
 * (container runtimes' default profiles answered EPERM for years) and on Linux < 5.9 (ENOSYS):
 * the recorder's writer then shares the program's descriptor table (interpose/trace_file.cc,
 * TakeOwnFdTable), and the trace file sits in it.
 * Usage: no_close_range PRELOAD_LIB PROGRAM ARGS...  (LD_PRELOAD is set for PROGRAM only) */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("seccomp");
    return 3;
  }
  if (setenv("LD_PRELOAD", argv[1], 1) != 0) return 4;
  execv(argv[2], argv + 2);
  perror("execv");
  return 127;
}
