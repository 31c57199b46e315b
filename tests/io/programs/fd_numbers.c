/* What a program sees of its own descriptor table, after doing traced file I/O (each write burst
 * captures a stack, which is when an unwinder would open its own descriptors). A traced run must
 * print exactly what a bare run prints. Usage: fd_numbers MODE [ARG]
 *   list        prints every open fd >= 3 (none: "fds:"), read from /proc/self/fd
 *   pipe        prints the two numbers pipe() returns ("pipe 3 4" in a bare run)
 *   nofile N    sets RLIMIT_NOFILE to N, opens /dev/null until it fails, prints how many opened
 *   stdin       (run with fd 0 closed) reads one byte from fd 0 and prints what came back
 *   stderr-data closes every fd, makes a data file (argument) its fd 0 and 2, writes records to
 *               fd 2 while doing traced I/O, exits: the file must hold the records alone */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Traced I/O from a few call sites: opens, write bursts, closes (each one a stack capture). */
static void TracedIo(void) {
  char path[] = "/tmp/fd_numbers-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) exit(10);
  for (int i = 0; i < 50; ++i) {
    if (write(fd, "0123456789abcdef", 16) != 16) exit(11);
    if (i % 10 == 0) fsync(fd);
  }
  close(fd);
  unlink(path);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  TracedIo();
  if (strcmp(argv[1], "list") == 0) {
    DIR* d = opendir("/proc/self/fd");
    if (d == NULL) return 3;
    char line[4096] = "fds:";
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
      int fd = atoi(e->d_name);
      if (e->d_name[0] == '.' || fd < 3 || fd == dirfd(d)) continue;
      char target[256] = "";
      char link[64];
      snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
      ssize_t n = readlink(link, target, sizeof(target) - 1);
      if (n > 0) target[n] = '\0';
      size_t len = strlen(line);
      snprintf(line + len, sizeof(line) - len, " %d=%s", fd, target);
    }
    closedir(d);
    printf("%s\n", line);
    return 0;
  }
  if (strcmp(argv[1], "pipe") == 0) {
    int p[2];
    if (pipe(p) != 0) return 3;
    TracedIo();
    printf("pipe %d %d\n", p[0], p[1]);
    return 0;
  }
  if (strcmp(argv[1], "nofile") == 0 && argc > 2) {
    struct rlimit rl = {(rlim_t)atoi(argv[2]), (rlim_t)atoi(argv[2])};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 3;
    int opened = 0;
    while (open("/dev/null", O_RDONLY) >= 0) ++opened; /* each open is a traced event */
    printf("opened %d (%s)\n", opened, strerror(errno));
    return 0;
  }
  if (strcmp(argv[1], "stdin") == 0) {
    TracedIo();
    unsigned char c = 0xff;
    ssize_t n = read(0, &c, 1);
    if (n < 0) {
      printf("read: %s\n", strerror(errno));
    } else {
      printf("read %zd byte(s): 0x%02x\n", n, n > 0 ? c : 0);
    }
    return 0;
  }
  if (strcmp(argv[1], "stderr-data") == 0 && argc > 2) {
    for (int fd = 0; fd < 1024; ++fd) close(fd);
    int data = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644); /* fd 0 */
    if (data != 0 || dup2(data, 2) != 2) return 3;
    for (int i = 0; i < 20; ++i) {
      char record[32];
      int n = snprintf(record, sizeof(record), "record %d\n", i);
      if (write(2, record, (size_t)n) != n) return 4;
      TracedIo();
      usleep(20000); /* lets the writer flush in between: it must not say anything here */
    }
    return 0;
  }
  return 2;
}
