// Process hooks: fork/vfork, posix_spawn(p) and the exec family.
//
// - Children stay traced: every exec/spawn gets an environment that still preloads our library
//   and carries the IDLESCOPE_* variables the process started with, even when the program passes
//   its own envp or an empty one (process_env.h).
// - PROC_FORK (parent, with the child's pid) and PROC_SPAWN (child pid, program, argv) link
//   children to parents; the child's own file comes from the recorder's atfork handler (fork) or
//   from the preload in the new image (spawn/exec). Its header carries its ppid.
// - PROC_EXEC (program, argv) is recorded and the trace flushed and closed (BeforeExec) before
//   the real exec: a successful exec discards this image's buffers. If exec returns, it failed:
//   the trace is reopened (AfterExecFailed) and a second PROC_EXEC with result = -errno says so.
// - vfork is turned into fork: a vfork child shares the parent's memory and stack until it
//   execs, so neither our hook's stack frame nor the recorder's state may be touched in it, and a
//   wrapper function cannot even return safely in the child (the parent's frame would be
//   clobbered). fork is what POSIX allows vfork to be; it costs page-table copies, not
//   correctness.
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string_view>

#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/hooks/process_env.h"
#include "interpose/recorder.h"

extern char** environ;

using idlescope::Family;
using idlescope::HookGuard;
using idlescope::InternString;
using idlescope::NowNs;
using idlescope::RawEvent;
using idlescope::io::Libc;
namespace ev = idlescope::ev;

namespace {

idlescope::proc::PreservedEnv g_env;

// Before main, before the program can edit its environment.
__attribute__((constructor)) void CaptureEnvironment() {
  Dl_info info;
  char absolute[PATH_MAX];
  const char* library = nullptr;
  if (dladdr(reinterpret_cast<void*>(&CaptureEnvironment), &info) != 0 &&
      info.dli_fname != nullptr) {
    library = info.dli_fname;
    // LD_PRELOAD may name the library relative to the cwd; a child that chdir()s needs the
    // absolute path.
    if (library[0] != '/' && realpath(library, absolute) != nullptr) library = absolute;
  }
  g_env.Capture(environ, library);
}

// The child's environment in an mmap'ed arena (async-signal-safe: exec often runs in a forked
// child of a multithreaded process). Falls back to the program's envp if mapping fails.
class TracedEnv {
 public:
  explicit TracedEnv(char* const* envp) : env_(envp) {
    int saved = errno;
    char** out = nullptr;
    size_t needed = idlescope::proc::BuildTracedEnv(envp, g_env, nullptr, 0, &out);
    void* mem = mmap(nullptr, needed, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem != MAP_FAILED) {
      arena_ = mem;
      size_ = needed;
      if (idlescope::proc::BuildTracedEnv(envp, g_env, arena_, size_, &out) <= size_) env_ = out;
    }
    errno = saved;
  }
  ~TracedEnv() {
    int saved = errno;
    if (arena_ != nullptr) munmap(arena_, size_);
    errno = saved;
  }
  TracedEnv(const TracedEnv&) = delete;
  TracedEnv& operator=(const TracedEnv&) = delete;
  char* const* get() const { return env_; }

 private:
  char* const* env_;
  void* arena_ = nullptr;
  size_t size_ = 0;
};

// argv as one string, arguments separated by NUL (InternedString is bytes). Truncated at 4 KB:
// enough to tell "pip install torch" from "python train.py".
uint32_t InternArgv(char* const* argv) {
  char buf[4096];
  size_t len = 0;
  for (size_t i = 0; argv != nullptr && argv[i] != nullptr; ++i) {
    size_t n = strlen(argv[i]);
    if (i > 0) {
      if (len + 1 > sizeof(buf)) break;
      buf[len++] = '\0';
    }
    size_t take = n < sizeof(buf) - len ? n : sizeof(buf) - len;
    memcpy(buf + len, argv[i], take);
    len += take;
    if (take < n) break;
  }
  return len == 0 ? 0 : InternString(std::string_view(buf, len));
}

void RecordProc(uint8_t type, uint32_t api, uint64_t t0, uint64_t t1, int32_t result,
                uint32_t child, const char* program, char* const* argv) {
  RawEvent e;
  e.ts = t0;
  e.dur = t1 - t0;
  e.api = api;
  e.type = type;
  e.result = result;
  e.stack = idlescope::CaptureStack(2);
  e.u.proc.child_pid = child;
  e.u.proc.path = program != nullptr ? InternString(program) : 0;
  e.u.proc.argv = InternArgv(argv);
  idlescope::Record(e);
}

#define PROC_API(name) IDLESCOPE_API(name)

// Common body of every exec: fix the environment, record, flush and close the trace, exec; on
// return (failure) reopen the trace and record the error.
template <typename Call>
int ExecHook(uint32_t (*api)(), const char* program, char* const* argv, char* const* envp,
             Call&& call) {
  TracedEnv env(envp);
  HookGuard guard(Family::kProc);
  // Flush even when the proc family is off: the image's buffered events die with it.
  bool record = guard.active();
  bool flush = record || (idlescope::RecorderActive() && !idlescope::FamilyEnabled(Family::kProc));
  uint64_t t0 = NowNs();
  if (record) {
    RecordProc(ev::kProcExec, api(), t0, t0, 0, 0, program, argv);
  }
  if (flush) idlescope::BeforeExec();
  int r = call(env.get());
  int err = errno;
  if (flush) idlescope::AfterExecFailed();
  if (record) RecordProc(ev::kProcExec, api(), t0, NowNs(), -err, 0, program, argv);
  errno = err;
  return r;
}

template <typename Real>
int SpawnHook(uint32_t (*api)(), pid_t* pid, const char* program,
              const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
              char* const* argv, char* const* envp, Real real) {
  TracedEnv env(envp);
  HookGuard guard(Family::kProc);
  if (!guard.active()) return real(pid, program, actions, attr, argv, env.get());
  pid_t child = 0;
  pid_t* out = pid != nullptr ? pid : &child;
  uint64_t t0 = NowNs();
  int r = real(out, program, actions, attr, argv, env.get());
  int err = errno;
  RecordProc(ev::kProcSpawn, api(), t0, NowNs(), -r, r == 0 ? static_cast<uint32_t>(*out) : 0,
             program, argv);
  errno = err;
  return r;
}

pid_t ForkHook(uint32_t (*api)()) {
  HookGuard guard(Family::kProc);
  if (!guard.active()) return Libc().fork();
  // The burst is complete when the process splits (the recorder drops the child's copy).
  idlescope::io::CloseBurst();
  uint64_t t0 = NowNs();
  pid_t pid = Libc().fork();
  int err = errno;
  if (pid > 0)
    RecordProc(ev::kProcFork, api(), t0, NowNs(), 0, static_cast<uint32_t>(pid), nullptr, nullptr);
  if (pid < 0) RecordProc(ev::kProcFork, api(), t0, NowNs(), -err, 0, nullptr, nullptr);
  errno = err;
  return pid;
}

// execl-style variadic lists: the arguments up to the terminating NULL, in an mmap'ed array.
class VarArgv {
 public:
  VarArgv(const char* arg0, va_list* ap) {
    va_list count_ap;
    va_copy(count_ap, *ap);
    size_t n = 1;
    if (arg0 != nullptr) {
      while (va_arg(count_ap, const char*) != nullptr) ++n;
    }
    va_end(count_ap);
    size_ = (n + 1) * sizeof(char*);
    void* mem = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    argv_ = static_cast<char**>(mem);
    argv_[0] = const_cast<char*>(arg0);
    for (size_t i = 1; arg0 != nullptr && i < n; ++i) argv_[i] = va_arg(*ap, char*);
    argv_[arg0 == nullptr ? 0 : n] = nullptr;
    // The caller reads what follows the NULL (execle's envp) from `ap`: consume the NULL.
    if (arg0 != nullptr) (void)va_arg(*ap, char*);
  }
  ~VarArgv() {
    if (argv_ != nullptr) munmap(argv_, size_);
  }
  VarArgv(const VarArgv&) = delete;
  VarArgv& operator=(const VarArgv&) = delete;
  char* const* get() const { return argv_; }

 private:
  char** argv_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

IDLESCOPE_HOOK pid_t fork(void) { return ForkHook(PROC_API("fork")); }

IDLESCOPE_HOOK pid_t vfork(void) { return ForkHook(PROC_API("vfork")); }

IDLESCOPE_HOOK int execve(const char* path, char* const argv[], char* const envp[]) {
  return ExecHook(PROC_API("execve"), path, argv, envp,
                  [&](char* const* env) { return Libc().execve(path, argv, env); });
}

IDLESCOPE_HOOK int execv(const char* path, char* const argv[]) {
  return ExecHook(PROC_API("execv"), path, argv, environ,
                  [&](char* const* env) { return Libc().execve(path, argv, env); });
}

IDLESCOPE_HOOK int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return ExecHook(PROC_API("execvpe"), file, argv, envp,
                  [&](char* const* env) { return Libc().execvpe(file, argv, env); });
}

IDLESCOPE_HOOK int execvp(const char* file, char* const argv[]) {
  return ExecHook(PROC_API("execvp"), file, argv, environ,
                  [&](char* const* env) { return Libc().execvpe(file, argv, env); });
}

IDLESCOPE_HOOK int execl(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  VarArgv argv(arg0, &ap);
  va_end(ap);
  if (argv.get() == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  return ExecHook(PROC_API("execl"), path, argv.get(), environ,
                  [&](char* const* env) { return Libc().execve(path, argv.get(), env); });
}

IDLESCOPE_HOOK int execlp(const char* file, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  VarArgv argv(arg0, &ap);
  va_end(ap);
  if (argv.get() == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  return ExecHook(PROC_API("execlp"), file, argv.get(), environ,
                  [&](char* const* env) { return Libc().execvpe(file, argv.get(), env); });
}

IDLESCOPE_HOOK int execle(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  VarArgv argv(arg0, &ap);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  if (argv.get() == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  return ExecHook(PROC_API("execle"), path, argv.get(), envp,
                  [&](char* const* env) { return Libc().execve(path, argv.get(), env); });
}

IDLESCOPE_HOOK int fexecve(int fd, char* const argv[], char* const envp[]) {
  char link[40];
  char program[PATH_MAX];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, program, sizeof(program) - 1);
  program[n > 0 ? n : 0] = '\0';
  return ExecHook(PROC_API("fexecve"), program, argv, envp,
                  [&](char* const* env) { return Libc().fexecve(fd, argv, env); });
}

IDLESCOPE_HOOK int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                            int flags) {
  if (Libc().execveat == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return ExecHook(PROC_API("execveat"), path, argv, envp,
                  [&](char* const* env) { return Libc().execveat(dirfd, path, argv, env, flags); });
}

IDLESCOPE_HOOK int posix_spawn(pid_t* pid, const char* path,
                               const posix_spawn_file_actions_t* actions,
                               const posix_spawnattr_t* attr, char* const argv[],
                               char* const envp[]) {
  return SpawnHook(PROC_API("posix_spawn"), pid, path, actions, attr, argv, envp,
                   Libc().posix_spawn);
}

IDLESCOPE_HOOK int posix_spawnp(pid_t* pid, const char* file,
                                const posix_spawn_file_actions_t* actions,
                                const posix_spawnattr_t* attr, char* const argv[],
                                char* const envp[]) {
  return SpawnHook(PROC_API("posix_spawnp"), pid, file, actions, attr, argv, envp,
                   Libc().posix_spawnp);
}
