// The program start_bench starts over and over: main returns 0 (or, with "io", opens /dev/null and
// writes one byte first, so that the traced run records events). What it costs traced is what the
// tracer costs a process (make -j, shell scripts, DataLoader workers respawned every epoch).
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "io") == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd < 0 || write(fd, "x", 1) != 1) return 1;
    close(fd);
  }
  return 0;
}
