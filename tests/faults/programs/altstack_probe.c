// What a program reads of its alternate signal stack (fault_matrix.py, case sandboxes): the
// tracer's own, which takes the frame of its SIGTERM handler on the main thread, is never the
// program's. Runtimes read it to decide whether to set their own (Rust's std, Go for threads it
// did not create). Prints what sigaltstack says at start, after the program sets one of its own,
// and after it disables that one; traced as bare.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>

static char g_mine[64 * 1024];

static const char* What(const stack_t* s) {
  if (s->ss_flags & SS_DISABLE) return "none";
  return s->ss_sp == g_mine && s->ss_size == sizeof(g_mine) ? "mine" : "another";
}

int main(void) {
  stack_t now, old;
  if (sigaltstack(NULL, &now) != 0) return 1;
  printf("at start: %s\n", What(&now));
  stack_t mine = {.ss_sp = g_mine, .ss_flags = 0, .ss_size = sizeof(g_mine)};
  if (sigaltstack(&mine, &old) != 0) return 2;
  printf("replaced: %s\n", What(&old));
  if (sigaltstack(NULL, &now) != 0) return 3;
  printf("after setting mine: %s\n", What(&now));
  stack_t off = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
  if (sigaltstack(&off, &old) != 0) return 4;
  if (sigaltstack(NULL, &now) != 0) return 5;
  printf("after disabling it: %s (was %s)\n", What(&now), What(&old));
  return 0;
}
