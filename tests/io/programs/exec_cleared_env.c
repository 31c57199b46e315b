/* Replaces itself with PROGRAM in an empty environment (what `env -i` and careless launchers do):
 * the exec'd program must still be traced. Usage: exec_cleared_env PROGRAM ARGS... */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  char* empty[] = {NULL};
  execve(argv[1], argv + 1, empty);
  perror("execve");
  return 127;
}
