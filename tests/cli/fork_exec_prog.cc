// A small job with the process shapes idlescope must follow (issue 2, Done-when 2): 8 threads that
// write, 2 forked children, one of which execs this program again. Prints one line per process
// image ("parent|child|exec-child|exec PID PPID"; exec-child is the child that execs) so tests can
// match trace headers to processes.
//
//   fork_exec_prog [--exit N]          finish with exit status N (default 0)
//   fork_exec_prog --kill-self SIG     finish by dying of signal SIG
//   fork_exec_prog --wait-signal FILE  write our pid to FILE, then wait to be signalled
//   fork_exec_prog --after-exec        (internal) the image exec'd by the second child
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace {

// Writes `blocks` blocks of 4 KiB to an unlinked temporary file.
void WriteSome(int blocks) {
  char path[] = "/tmp/fork_exec_prog-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    perror("mkstemp");
    exit(97);
  }
  unlink(path);
  char block[4096];
  memset(block, 'x', sizeof block);
  for (int i = 0; i < blocks; ++i) {
    if (write(fd, block, sizeof block) != static_cast<ssize_t>(sizeof block)) {
      perror("write");
      exit(97);
    }
  }
  close(fd);
}

void Announce(const char* role) { dprintf(1, "%s %d %d\n", role, getpid(), getppid()); }

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  int kill_signal = 0;
  const char* pid_file = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--after-exec") {
      Announce("exec");
      WriteSome(8);
      return 0;
    } else if (arg == "--exit" && i + 1 < argc) {
      exit_code = atoi(argv[++i]);
    } else if (arg == "--kill-self" && i + 1 < argc) {
      kill_signal = atoi(argv[++i]);
    } else if (arg == "--wait-signal" && i + 1 < argc) {
      pid_file = argv[++i];
    } else {
      fprintf(stderr, "fork_exec_prog: bad argument '%s'\n", argv[i]);
      return 2;
    }
  }

  if (pid_file != nullptr) {
    // Default dispositions even if the test runner was started with signals ignored (a
    // background job gets SIGINT ignored): the test is about delivery, not about the shell.
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    std::string tmp = std::string(pid_file) + ".tmp";
    FILE* f = fopen(tmp.c_str(), "w");
    if (f == nullptr) return 96;
    fprintf(f, "%d\n", getpid());
    fclose(f);
    rename(tmp.c_str(), pid_file);  // atomically visible to the waiting test
    for (int i = 0; i < 600; ++i) usleep(100000);
    return 95;  // nobody signalled us within a minute
  }

  Announce("parent");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back([] { WriteSome(16); });
  for (std::thread& t : threads) t.join();

  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = fork();
    if (children[c] < 0) {
      perror("fork");
      return 98;
    }
    if (children[c] == 0) {
      Announce(c == 1 ? "exec-child" : "child");
      WriteSome(4);
      if (c == 1) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) _exit(94);
        self[n] = '\0';
        char after[] = "--after-exec";
        char* args[] = {argv[0], after, nullptr};
        execv(self, args);
        perror("execv");
        _exit(93);
      }
      exit(0);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "fork_exec_prog: child %d failed (status 0x%x)\n", child, status);
      return 99;
    }
  }

  if (kill_signal != 0) {
    struct rlimit no_core = {0, 0};  // SIGSEGV/SIGABRT: no core file from a test
    setrlimit(RLIMIT_CORE, &no_core);
    signal(kill_signal, SIG_DFL);
    kill(getpid(), kill_signal);
    return 92;
  }
  return exit_code;
}
