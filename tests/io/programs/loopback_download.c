/* A "download": a forked server sends BYTES over TCP on 127.0.0.1, the client connects and
 * recv()s until EOF. Usage: loopback_download BYTES */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  long bytes = atol(argv[1]);
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, (struct sockaddr*)&addr, sizeof(addr)) != 0) return 3;
  if (listen(listener, 1) != 0) return 4;
  if (getsockname(listener, (struct sockaddr*)&addr, &len) != 0) return 5;
  pid_t server = fork();
  if (server == 0) {
    int conn = accept(listener, NULL, NULL);
    static char buf[65536];
    memset(buf, 'd', sizeof(buf));
    for (long sent = 0; sent < bytes;) {
      long n = bytes - sent < (long)sizeof(buf) ? bytes - sent : (long)sizeof(buf);
      ssize_t w = send(conn, buf, (size_t)n, 0);
      if (w <= 0) _exit(6);
      sent += w;
    }
    close(conn);
    _exit(0);
  }
  close(listener);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, (struct sockaddr*)&addr, sizeof(addr)) != 0) return 7;
  static char buf[65536];
  long total = 0;
  ssize_t got;
  while ((got = recv(s, buf, sizeof(buf), 0)) > 0) total += got;
  close(s);
  int status;
  waitpid(server, &status, 0);
  return total == bytes ? 0 : 8;
}
