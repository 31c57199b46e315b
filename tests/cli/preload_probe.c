// A preload library that only proves it was loaded: each process image that loads it writes
// $IDLESCOPE_OUT/probe-<pid>.loaded with the LD_PRELOAD and IDLESCOPE_OUT it saw. Used to test
// `idlescope run` (environment, exec propagation, exit statuses) apart from the recorder.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void ProbeLoaded(void) {
  const char* out = getenv("IDLESCOPE_OUT");
  if (out == NULL) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/probe-%d.loaded", out, (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const char* preload = getenv("LD_PRELOAD");
  dprintf(fd, "LD_PRELOAD=%s\nIDLESCOPE_OUT=%s\n", preload != NULL ? preload : "", out);
  close(fd);
}
