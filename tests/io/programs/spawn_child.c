/* Starts PROGRAM with posix_spawn and an environment of its own (no LD_PRELOAD, no IDLESCOPE_*),
 * waits, and exits with its status. Usage: spawn_child PROGRAM ARGS... */
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  char* env[] = {"SPAWNED_BY=spawn_child", NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, env);
  if (rc != 0) {
    fprintf(stderr, "posix_spawn: %d\n", rc);
    return 127;
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return 126;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}
