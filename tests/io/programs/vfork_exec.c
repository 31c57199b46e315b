/* vfork + execve with a cleared environment, the way CPython's subprocess and many launchers
 * start children. Usage: vfork_exec PROGRAM ARGS... */
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  char* empty[] = {NULL};
  pid_t pid = vfork();
  if (pid == 0) {
    execve(argv[1], argv + 1, empty);
    _exit(127);
  }
  if (pid < 0) return 3;
  int status;
  if (waitpid(pid, &status, 0) != pid) return 4;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}
