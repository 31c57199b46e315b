// A small multi-process job, for output directories that do not work: a parent forks WORKERS
// children (a DataLoader's shape), each writes its own file and a few lines, and one execs
// /bin/sh to write one more. The job's output, exit status and files must not depend on whether
// the tracer could write its traces.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const int workers = argc > 1 ? atoi(argv[1]) : 8;
  for (int w = 0; w < workers; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      char path[64];
      snprintf(path, sizeof path, "worker-%d.txt", w);
      FILE* f = fopen(path, "w");
      if (f == NULL) _exit(3);
      for (int i = 0; i < 20; ++i) fprintf(f, "worker %d record %d\n", w, i);
      fclose(f);
      if (w == 0) execl("/bin/sh", "sh", "-c", "echo from sh > sh.txt", (char*)NULL);
      _exit(0);
    }
  }
  int ok = 0, status;
  while (wait(&status) > 0) ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
  printf("%d of %d workers ok\n", ok, workers);
  return ok == workers ? 0 : 1;
}
