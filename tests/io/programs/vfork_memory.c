/* vfork's contract: the child borrows the parent's memory until it execs or exits, and the parent
 * waits until then, so what the child writes is what the parent reads afterwards. A tracer that
 * turns vfork into fork loses the write (x stays 0). Usage: vfork_memory [exec PROGRAM ARGS...]
 *   (no argument)  the child sets x = 42 and _exit(0)s; prints "x=42"
 *   exec PROGRAM   the child sets x = 42, then execs PROGRAM; prints "x=42 status=S" */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int x = 0;

int main(int argc, char** argv) {
  int exec_child = argc > 2 && strcmp(argv[1], "exec") == 0;
  pid_t pid = vfork();
  if (pid == 0) {
    x = 42;
    if (exec_child) execv(argv[2], argv + 2);
    _exit(exec_child ? 127 : 0);
  }
  if (pid < 0) return 3;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 4;
  if (exec_child) {
    printf("x=%d status=%d\n", x, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
  } else {
    printf("x=%d\n", x);
  }
  return 0;
}
