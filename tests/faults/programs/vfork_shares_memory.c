// vfork's contract: the child borrows the parent's memory until it execs or _exits, so what it
// stores before that is what the parent reads afterwards (programs rely on it to report an
// exec failure without a pipe: posix_spawn implementations did, shells do). A tracer that turns
// vfork into fork loses the store: the parent prints x=0 instead of x=42.
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  volatile int x = 0;
  volatile int exec_errno = 0;
  pid_t pid = vfork();
  if (pid == 0) {
    x = 42;
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("x=%d status=%d\n", x, WEXITSTATUS(status));

  // The classic use: tell the parent why exec failed.
  pid = vfork();
  if (pid == 0) {
    char* argv[] = {"/nonexistent/program", NULL};
    execv(argv[0], argv);
    exec_errno = 2;  // ENOENT is what failed; store a marker the parent checks
    _exit(127);
  }
  waitpid(pid, &status, 0);
  printf("exec failure seen by the parent: %s, status=%d\n", exec_errno ? "yes" : "no",
         WEXITSTATUS(status));
  return 0;
}
