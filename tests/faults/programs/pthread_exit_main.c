// main() ends with pthread_exit(): the process lives on until its last thread returns, then
// exits with status 0 (POSIX). The worker writes its result after main has gone. A tracer whose
// own thread counts as "the last thread" keeps the process alive forever.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void* Worker(void* arg) {
  (void)arg;
  usleep(50000);  // main is gone by now
  FILE* f = fopen("worker.txt", "w");
  if (f != NULL) {
    fputs("worker finished after main\n", f);
    fclose(f);
  }
  printf("worker done\n");
  fflush(stdout);
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, Worker, NULL);
  printf("main leaves with pthread_exit\n");
  fflush(stdout);
  pthread_exit(NULL);
}
