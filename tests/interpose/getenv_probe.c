// Preloaded ahead of libidlescope.so: a getenv that counts the calls made on idlescope's own
// threads (named "idlescope-..."), printed on stderr at exit as "getenv on idlescope threads: N".
// idlescope reads the environment when it starts and when a process forks (StartEnv): a getenv on
// its threads later races with the program's setenv/putenv, which free the array getenv walks.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static atomic_int g_on_our_threads;

char* getenv(const char* name) {
  static char* (*real)(const char*);
  if (real == NULL) real = (char* (*)(const char*))dlsym(RTLD_NEXT, "getenv");
  char thread[16] = "";
  prctl(PR_GET_NAME, thread);
  if (strncmp(thread, "idlescope", 9) == 0) atomic_fetch_add(&g_on_our_threads, 1);
  return real(name);
}

__attribute__((destructor)) static void Report(void) {
  dprintf(STDERR_FILENO, "getenv on idlescope threads: %d\n", atomic_load(&g_on_our_threads));
}
