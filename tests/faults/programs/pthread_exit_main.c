// A process whose last thread ends with pthread_exit lives until then and exits with status 0
// (POSIX). A tracer whose own thread counts as "the last thread" keeps the process alive forever.
//
//   pthread_exit_main          main() ends with pthread_exit(); the worker writes its result
//                              after main has gone
//   pthread_exit_main forked   a thread forks; in the child that thread is the only one, and it
//                              returns from its start routine (CPython's test_threading forks
//                              from threads so); the parent thread waits for the child
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void WriteResult(const char* path, const char* line) {
  FILE* f = fopen(path, "w");
  if (f != NULL) {
    fputs(line, f);
    fclose(f);
  }
}

static void* Worker(void* arg) {
  (void)arg;
  usleep(50000);  // main is gone by now
  WriteResult("worker.txt", "worker finished after main\n");
  printf("worker done\n");
  fflush(stdout);
  return NULL;
}

static void* Forker(void* arg) {
  (void)arg;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    WriteResult("child.txt", "the forked thread returned\n");
    return NULL;  // the child's only thread ends: the child exits 0
  }
  int status = 0;
  waitpid(pid, &status, 0);
  printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return NULL;
}

int main(int argc, char** argv) {
  pthread_t t;
  if (argc > 1 && strcmp(argv[1], "forked") == 0) {
    pthread_create(&t, NULL, Forker, NULL);
    pthread_join(t, NULL);
    return 0;
  }
  pthread_create(&t, NULL, Worker, NULL);
  printf("main leaves with pthread_exit\n");
  fflush(stdout);
  pthread_exit(NULL);
}
