/* DataLoader-style workers: the parent forks N children; each reads its shard file and ends
 * with _exit (like Python multiprocessing workers, no atexit). Usage: fork_readers DIR N */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  int n = atoi(argv[2]);
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid < 0) return 3;
    if (pid == 0) {
      char path[4096];
      snprintf(path, sizeof(path), "%s/shard%d.bin", argv[1], i);
      int fd = open(path, O_RDONLY);
      if (fd < 0) _exit(4);
      char buf[4096];
      long total = 0;
      ssize_t got;
      while ((got = read(fd, buf, sizeof(buf))) > 0) total += got;
      close(fd);
      _exit(total > 0 ? 0 : 5);
    }
  }
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    int status;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed;
}
