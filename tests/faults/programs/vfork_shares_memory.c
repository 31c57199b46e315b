// vfork's contract: the child borrows the parent's memory until it execs or _exits, so what it
// stores before that is what the parent reads afterwards (programs rely on it to report an
// exec failure without a pipe: posix_spawn implementations did, shells do). A tracer that turns
// vfork into fork loses the store: the parent prints x=0 instead of x=42.
//
//   vfork_shares_memory handlers   the other side of the contract: what the child does to its
//       signal dispositions before exec is its own (the kernel keeps them per process). CPython's
//       _posixsubprocess resets every handled signal to SIG_DFL in its vfork child; the parent's
//       SIGINT and SIGTERM handlers must still run afterwards. A tracer that keeps the program's
//       dispositions in its own memory, and updates them from the child's sigaction calls,
//       loses the parent's handlers.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t g_handled;

static void OnSignal(int sig) { g_handled = sig; }

static int Handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  volatile int child_saw_handler = 0;  // the child's store reaches the parent (vfork)
  pid_t pid = vfork();
  if (pid == 0) {
    struct sigaction dfl, old;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    // The child sees the handler it inherited, as sigaction's old value.
    if (sigaction(SIGINT, &dfl, &old) == 0 && old.sa_handler == OnSignal) child_saw_handler = 1;
    signal(SIGTERM, SIG_DFL);  // what _posixsubprocess's reset_signal_handlers() does
    char* argv[] = {"/bin/true", NULL};
    execv(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("the vfork child saw the inherited SIGINT handler: %s\n",
         child_saw_handler ? "yes" : "no");
  for (int sig = SIGINT; sig != 0; sig = sig == SIGINT ? SIGTERM : 0) {
    g_handled = 0;
    raise(sig);
    printf("%s after a vfork child reset it: %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
           g_handled == sig ? "the handler ran" : "no handler");
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "handlers") == 0) return Handlers();
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
