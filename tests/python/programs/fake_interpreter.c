// Exports what the recorder looks for in a CPython process (PyGILState_GetThisThreadState, the
// type objects, _PyRuntime, Py_Version) with a version idlescope does not read, 3.14, and then
// behaves like a small job: prints a line, writes the file named by argv[1] and exits with status
// 3. unknown_interpreter_test.cc runs it with and without the tracer: one notice, the same output
// and exit status.
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

// Linked with -rdynamic (ENABLE_EXPORTS), so that dlsym(RTLD_DEFAULT, ...) finds them as it finds
// an interpreter binary's own.
const unsigned long Py_Version = 0x030E00F0;  // PY_VERSION_HEX of 3.14.0 final
char _PyRuntime[8192];
char PyCode_Type[512], PyUnicode_Type[512], PyBytes_Type[512];
void* PyGILState_GetThisThreadState(void) { return NULL; }

int main(int argc, char** argv) {
  printf("fake interpreter: job output\n");
  fflush(stdout);
  if (argc > 1) {
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "data", 4) != 4) return 1;
    close(fd);
  }
  return 3;
}
