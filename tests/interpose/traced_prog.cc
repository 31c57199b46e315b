// A small program run under the real preload library by preload_test.cc. It uses the recorder
// only through the exported annotation API (idlescope_mark/idlescope_flush, found with dlsym), so
// it runs unchanged without the tracer. Each mode exercises one part of process life.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void (*g_mark)(const char*) = nullptr;
void (*g_flush)() = nullptr;

void Mark(const char* text) {
  if (g_mark != nullptr) g_mark(text);
}
void Flush() {
  if (g_flush != nullptr) g_flush();
}
void Say(const char* text) {
  // write(2), not stdio: some modes end in _exit or a signal, which would lose stdio's buffer.
  ssize_t r = write(STDOUT_FILENO, text, strlen(text));
  (void)r;
}

// A static function of a program built without -rdynamic: dladdr cannot name it, the
// recorder's .symtab lookup must.
__attribute__((noinline)) void checkpoint_writer_step(int i) {
  Mark(i % 2 ? "step-odd" : "step-even");
  asm volatile("" ::: "memory");  // keep the call a call
}

volatile sig_atomic_t g_got_signal = 0;
void OnTerm(int) {
  g_got_signal = 1;
  Say("handled\n");
}

int SleepMarking() {
  Mark("tick");
  Say("ready\n");
  for (;;) {
    Mark("tick");
    usleep(2000);
    if (g_got_signal) return 7;
  }
}

}  // namespace

int main(int argc, char** argv) {
  g_mark = reinterpret_cast<void (*)(const char*)>(dlsym(RTLD_DEFAULT, "idlescope_mark"));
  g_flush = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "idlescope_flush"));
  std::string mode = argc > 1 ? argv[1] : "";
  int n = argc > 2 ? atoi(argv[2]) : 0;

  if (mode == "steps") {  // return n from main after n marks in a static function
    for (int i = 0; i < n; ++i) checkpoint_writer_step(i);
    return n % 256;
  }
  if (mode == "threads") {  // 8 threads x n marks; threads end before main does
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([n] {
        for (int i = 0; i < n; ++i) Mark("thread-mark");
      });
    }
    for (auto& t : threads) t.join();
    Mark("main-end");
    return 0;
  }
  if (mode == "exit") {  // exit(n) with an atexit handler that still records
    Mark("before-exit");
    atexit([] { Mark("in-atexit"); });
    exit(n);
  }
  if (mode == "underscore_exit") {
    Mark("before-_exit");
    _exit(n);
  }
  if (mode == "term_during_exit") {  // Pool.terminate(): SIGTERM to a worker already in _exit
    Mark("before-_exit");
    static std::atomic<bool> go{false};
    std::thread killer([] {
      while (!go.load()) {
      }
      for (;;) kill(getpid(), SIGTERM);
    });
    killer.detach();
    go.store(true);
    _exit(3);
  }
  if (mode == "flush_and_sleep") {  // flush, then keep recording until killed
    Mark("flushed-before-kill");
    Flush();
    return SleepMarking();
  }
  if (mode == "own_handler") {  // the program installs its SIGTERM handler after we did
    if (signal(SIGTERM, OnTerm) == SIG_ERR) return 90;
    struct sigaction current;
    if (sigaction(SIGTERM, nullptr, &current) != 0 || current.sa_handler != OnTerm) return 91;
    Say("own-handler-visible\n");
    Mark("handler-installed");
    return SleepMarking();
  }
  if (mode == "ignore_sigint") {  // SIG_IGN must really ignore
    signal(SIGINT, SIG_IGN);
    raise(SIGINT);
    kill(getpid(), SIGINT);
    Mark("survived");
    Say("survived\n");
    return 0;
  }
  if (mode == "fork") {
    Mark("parent-before");
    Flush();
    pid_t pid = fork();
    if (pid == 0) {
      Mark("child");
      _exit(5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Mark("parent-after");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
  }
  if (mode == "unlink_and_close") {  // the trace file is gone and so is our fd
    Mark("before-close");
    Flush();
    const char* out = getenv("IDLESCOPE_OUT");
    if (DIR* d = out ? opendir(out) : nullptr) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
      }
      closedir(d);
    }
    closefrom(3);  // glibc's: close_range(2), or close() of each /proc/self/fd entry
    for (int i = 0; i < n; ++i) Mark("after-close");
    Flush();
    Flush();
    Say("ok\n");
    return 0;
  }
  if (mode == "close_all_fds") {  // what daemons and some launchers do: close() each fd, then
                                  // closefrom() (not a hooked call: glibc's own close_range or
                                  // close loop)
    Mark("before-close");
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int max = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
    for (int fd = 3; fd < max; ++fd) close(fd);
    closefrom(3);
    for (int i = 0; i < n; ++i) Mark("after-close");
    Flush();
    Mark("after-flush");
    Say("ok\n");
    return 0;
  }
  if (mode == "errno") {  // every recorder entry point keeps errno
    int bad = 0;
    for (int i = 0; i < n; ++i) {
      errno = 1000 + i;
      Mark(i % 3 ? "errno-a" : "errno-b");  // Record, InternString, CaptureStack
      if (errno != 1000 + i) ++bad;
      if (i % 1000 == 0) {
        errno = EDOM;
        Flush();
        if (errno != EDOM) ++bad;
      }
    }
    errno = ERANGE;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnTerm;
    if (sigaction(SIGTERM, &sa, nullptr) != 0 || errno != ERANGE) ++bad;
    printf("errno-bad=%d\n", bad);
    return bad == 0 ? 0 : 1;
  }
  if (mode == "exec_self") {  // exec keeps the pid: the new image needs another file name
    Mark("before-exec");
    Flush();  // the exec hook (interpose/hooks/process.cc) does this too; not needed here
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) return 92;
    self[len] = '\0';
    execl(self, self, "steps", "1", static_cast<char*>(nullptr));
    return 93;
  }
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
