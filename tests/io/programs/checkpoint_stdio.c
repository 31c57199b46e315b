/* A checkpoint written the way C and many frameworks do it: stdio into a temporary file, then
 * fflush + fsync to make it durable, then an atomic rename. Usage: checkpoint_stdio DIR MB */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  char tmp[4096], final_path[4096];
  snprintf(tmp, sizeof(tmp), "%s/model.pt.tmp", argv[1]);
  snprintf(final_path, sizeof(final_path), "%s/model.pt", argv[1]);
  long mb = atol(argv[2]);
  static char chunk[64 * 1024];
  memset(chunk, 'w', sizeof(chunk));
  FILE* f = fopen(tmp, "wb");
  if (f == NULL) return 3;
  for (long i = 0; i < mb * 16; ++i) {
    if (fwrite(chunk, 1, sizeof(chunk), f) != sizeof(chunk)) return 4;
  }
  fprintf(f, "end of checkpoint %ld\n", mb);
  if (fflush(f) != 0) return 5;
  if (fsync(fileno(f)) != 0) return 6;
  if (fclose(f) != 0) return 7;
  if (rename(tmp, final_path) != 0) return 8;
  return 0;
}
