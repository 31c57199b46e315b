/* The child of the exec/spawn tests: writes FILE (so its trace has a FILE_WRITE to show) and
 * exits with 7. Usage: write_marker FILE */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 3;
  const char text[] = "written by the exec'd child\n";
  if (write(fd, text, strlen(text)) < 0) return 4;
  close(fd);
  return 7;
}
