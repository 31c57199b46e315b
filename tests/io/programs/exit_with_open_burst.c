/* Writes FILE and calls exit() without closing it: the open write burst must still reach the
 * trace. Usage: exit_with_open_burst FILE */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 3;
  char buf[1000] = {0};
  for (int i = 0; i < 5; ++i) {
    if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) return 4;
  }
  exit(0);
}
