/* A checkpoint written with raw write(2) in small blocks, then fsync and close.
 * Usage: checkpoint_raw FILE BLOCK_BYTES BLOCKS */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  size_t block = (size_t)atol(argv[2]);
  long blocks = atol(argv[3]);
  char* buf = malloc(block);
  if (buf == NULL) return 3;
  memset(buf, 'r', block);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 4;
  for (long i = 0; i < blocks; ++i) {
    if (write(fd, buf, block) != (ssize_t)block) return 5;
  }
  if (fsync(fd) != 0) return 6;
  if (close(fd) != 0) return 7;
  free(buf);
  return 0;
}
