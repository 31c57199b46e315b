// A small program run under the real preload library by preload_test.cc. It uses the recorder
// only through the exported annotation API (idlescope_mark/idlescope_flush, found with dlsym), so
// it runs unchanged without the tracer. Each mode exercises one part of process life.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
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

uint64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

// Calls each of many hooked functions once, on a new path or string, starting with step `first`
// (threads start at different steps). The first call of a hook in a process interns its API name,
// and every new path is a new string. In the fork storm, the hammer threads do this while the
// main thread forks, and each child does it once more: anything of the tracer left locked or half
// initialised by a thread that does not exist in the child hangs the child there. The descriptors
// come from raw system calls, so each step's hooked call is the only one.
constexpr int kHookSteps = 18;
void CallHooks(const char* tag, int i, int first) {
  char path[128];
  snprintf(path, sizeof(path), "/nonexistent-idlescope/%s-%d-%d", tag, getpid(), i);
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR | O_CLOEXEC));
  int sv[2] = {-1, -1};
  if (syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv) != 0) Say("socketpair failed\n");
  char buf[16] = "x";
  iovec iov{buf, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  bool ok = true;
  for (int k = 0; k < kHookSteps; ++k) {
    switch ((first + k) % kHookSteps) {
      case 0:
        Mark(path);
        break;
      case 1:
        ok &= open(path, O_RDONLY) < 0;
        break;
      case 2:
        ok &= openat(AT_FDCWD, path, O_RDONLY) < 0;
        break;
      case 3:
        ok &= creat(path, 0600) < 0;
        break;
      case 4:
        ok &= rename(path, "/nonexistent-idlescope/renamed") < 0;
        break;
      case 5:
        ok &= write(fd, buf, 1) == 1;
        break;
      case 6:
        ok &= pwrite(fd, buf, 1, 0) == 1;
        break;
      case 7:
        ok &= writev(fd, &iov, 1) == 1;
        break;
      case 8:
        ok &= read(fd, buf, 1) == 0;
        break;
      case 9:
        ok &= pread(fd, buf, 1, 0) == 0;
        break;
      case 10:
        ok &= readv(fd, &iov, 1) == 0;
        break;
      case 11:
        fsync(fd);
        break;
      case 12:
        fdatasync(fd);
        break;
      case 13:
        ok &= send(sv[0], buf, 1, 0) == 1 && recv(sv[1], buf, 1, 0) == 1;
        break;
      case 14:
        ok &= sendto(sv[0], buf, 1, 0, nullptr, 0) == 1 &&
              recvfrom(sv[1], buf, 1, 0, nullptr, nullptr) == 1;
        break;
      case 15:
        ok &= sendmsg(sv[0], &msg, 0) == 1 && recvmsg(sv[1], &msg, 0) == 1;
        break;
      case 16:
        if (FILE* f = fopen("/dev/null", "w")) {
          fputs("x", f);
          fprintf(f, "%d", i);
          fwrite(buf, 1, 1, f);
          fflush(f);
          fclose(f);
        }
        break;
      case 17:
        ok &= close(static_cast<int>(syscall(SYS_dup, fd))) == 0;
        break;
    }
  }
  if (!ok) Say("a hooked call failed\n");
  syscall(SYS_close, fd);
  syscall(SYS_close, sv[0]);
  syscall(SYS_close, sv[1]);
}

// `threads` threads start calling the hooks at once while the main thread forks `forks` children,
// each of which calls the hooks once and exits: the forks meet the threads' first calls of each
// hook (API names interned, strings, stacks). A child that has not ended 5 s after the forks is
// counted as hung and killed. Prints "forks=F hung=H".
int ForkStorm(int threads, int forks) {
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> hammer;
  for (int t = 0; t < threads; ++t) {
    hammer.emplace_back([t, &go, &stop] {
      char tag[32];
      snprintf(tag, sizeof(tag), "thread%d", t);
      while (!go.load(std::memory_order_acquire)) {
      }
      for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) CallHooks(tag, i, t);
    });
  }
  go.store(true, std::memory_order_release);
  std::vector<pid_t> children;
  for (int f = 0; f < forks; ++f) {
    pid_t pid = fork();
    if (pid < 0) return 95;
    if (pid == 0) {
      CallHooks("child", f, 0);
      _exit(0);
    }
    children.push_back(pid);
  }
  int hung = 0, done = 0;
  uint64_t deadline = MonotonicMs() + 5000;
  for (pid_t pid : children) {
    int status = 0;
    pid_t r;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && MonotonicMs() < deadline) usleep(1000);
    if (r == 0) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    } else if (r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      ++done;
    }
  }
  stop.store(true);
  for (auto& t : hammer) t.join();
  printf("forks=%d hung=%d\n", done, hung);
  return 0;
}

}  // namespace

__attribute__((noinline)) int CrashHere(const int* p) {
  const int* volatile at = p;
  return *at;
}

void OnSegv(int) { _exit(33); }

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
  if (mode == "crash") {  // SIGSEGV (argv n = 1) or abort() (n = 2) with the default action
    struct sigaction current;
    if (sigaction(SIGSEGV, nullptr, &current) != 0) return 92;
    const bool dfl = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
    const sighandler_t old = signal(SIGABRT, SIG_DFL);
    Say(dfl && old == SIG_DFL ? "default-seen\n" : "ours-seen\n");
    Mark("before-crash");
    if (n == 2) abort();
    return CrashHere(nullptr);
  }
  if (mode == "own_segv_handler") {  // the program's handler runs, not ours
    signal(SIGSEGV, OnSegv);
    return CrashHere(nullptr);
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
  if (mode == "cancel_in_read") {  // a thread blocked in read() (a cancellation point) cancelled
    int fds[2];
    if (pipe(fds) != 0) return 97;
    static int read_fd = fds[0];
    pthread_t reader;
    pthread_create(
        &reader, nullptr,
        [](void*) -> void* {
          char c;
          Mark("reader-blocks");
          ssize_t r = read(read_fd, &c, 1);
          (void)r;
          return nullptr;
        },
        nullptr);
    usleep(100000);
    pthread_cancel(reader);
    void* result = nullptr;
    pthread_join(reader, &result);
    Mark("after-join");
    Say(result == PTHREAD_CANCELED ? "cancelled\n" : "not cancelled\n");
    return 0;
  }
  if (mode == "burst") {  // n marks as fast as possible: far more than a small ring holds
    uint64_t t0 = MonotonicMs();
    for (int i = 0; i < n; ++i) Mark("burst");
    printf("burst-ms=%llu\n", static_cast<unsigned long long>(MonotonicMs() - t0));
    return 0;
  }
  if (mode == "main_pthread_exit") {  // main ends with pthread_exit; n threads go on a while
    Mark("main-before-exit");
    for (int t = 0; t < n; ++t) {
      std::thread([t] {
        usleep(50000 * (t + 1));
        Mark("worker-end");
        Say("worker-done\n");
      }).detach();
    }
    pthread_exit(nullptr);
  }
  if (mode == "tsc_disabled") {  // RDTSC faults from here on, in this thread and its children
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) return 96;
    // (No libc function that reads the time: clock_gettime's vDSO reads the TSC too.)
    auto io = [](const char* name) {
      char path[64];
      snprintf(path, sizeof(path), "/tmp/idlescope-tsc-%d-%s", getpid(), name);
      int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) return false;
      unlink(path);
      char buf[4096] = {};
      bool ok = true;
      for (int i = 0; i < 200; ++i) ok &= write(fd, buf, sizeof(buf)) == sizeof(buf);
      usleep(2000);  // a gap: the next writes start another burst
      for (int i = 0; i < 200; ++i) ok &= pwrite(fd, buf, sizeof(buf), 0) == sizeof(buf);
      ok &= fsync(fd) == 0 && close(fd) == 0;
      Mark(name);
      return ok;
    };
    bool ok = io("main-io");
    std::thread t([&] { ok &= io("thread-io"); });
    t.join();
    Say(ok ? "ok\n" : "io failed\n");
    return ok ? 0 : 1;
  }
  if (mode == "many_paths") {  // every open interns a new path: the strings mutex is busy
    Mark("before-ready");
    Flush();
    // Long names: interning one (hash, copy) takes longer than the failing open itself, so the
    // thread holds the strings mutex most of the time.
    char path[1100];
    int prefix = snprintf(path, sizeof(path), "/nonexistent-idlescope/");
    memset(path + prefix, 'x', 1000);
    for (uint64_t i = 0;; ++i) {
      snprintf(path + prefix + 1000, sizeof(path) - prefix - 1000, "%llu",
               static_cast<unsigned long long>(i));
      close(open(path, O_RDONLY));
      if (i == 99) Say("ready\n");  // 100 opens in the ring, none flushed yet
    }
  }
  if (mode == "dlopen_loop") {  // the loader's lock is taken most of the time (Python imports)
    Mark("before-ready");
    for (int i = 0;; ++i) {
      void* lib = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
      Mark("loaded");
      if (lib != nullptr) dlclose(lib);
      if (i == 99) Say("ready\n");
    }
  }
  if (mode == "setenv_churn") {  // what a gcc driver does (putenv before each subprocess), in
                                 // `n` forked children at once, each with RANK set for it
    for (int c = 0; c < n; ++c) {
      setenv("RANK", std::to_string(c).c_str(), 1);
      pid_t pid = fork();
      if (pid < 0) return 96;
      if (pid == 0) {
        for (int i = 0; i < 2000; ++i) {
          // New names grow environ (setenv reallocates the array and frees the old one).
          setenv(("CHURN_" + std::to_string(i)).c_str(), "x", 1);
          if (i % 100 == 0) Mark("churn");
        }
        exit(0);
      }
    }
    int failed = 0;
    for (int c = 0; c < n; ++c) {
      int status = 0;
      if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    Say(failed == 0 ? "ok\n" : "a child failed\n");
    return failed;
  }
  if (mode == "fork_storm") {  // fork while threads are inside hooks (DataLoader workers)
    return ForkStorm(8, n);
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
    Flush();  // the writer has the file open (it creates it when it first runs, not at load)
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
  if (mode == "lines") {  // a text file read line by line: fgets, then getline
    char path[] = "/tmp/traced_prog_lines-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 97;
    const char text[] = "alpha\nbeta\ngamma\ndelta\n";
    if (write(fd, text, sizeof text - 1) != static_cast<ssize_t>(sizeof text - 1)) return 98;
    close(fd);
    FILE* f = fopen(path, "r");
    if (f == nullptr) return 99;
    char line[32];
    size_t got = 0;
    for (int i = 0; i < 2 && fgets(line, sizeof line, f) != nullptr; ++i) got += strlen(line);
    char* dyn = nullptr;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&dyn, &cap, f)) > 0) got += static_cast<size_t>(n);
    free(dyn);
    fclose(f);
    unlink(path);
    printf("%zu\n", got);
    return 0;
  }
  if (mode == "shell") {  // popen and system: the program's output and status as bare
    FILE* f = popen("echo from-popen", "r");
    if (f == nullptr) return 94;
    char line[64] = {};
    if (fgets(line, sizeof line, f) == nullptr) return 95;
    if (pclose(f) != 0) return 96;
    int status = system("exit 3");
    printf("%s%d\n", line, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
