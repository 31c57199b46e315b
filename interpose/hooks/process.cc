// Process hooks: fork/vfork, posix_spawn(p), popen/system, the exec family and the waits for
// children (waitpid, wait, wait3, wait4, waitid).
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
// - vfork stays vfork (programs rely on it: the child's writes reach the parent, and the parent
//   waits until the child execs or exits). The child shares the parent's memory and stack, so it
//   runs nothing of ours but what glibc's own vfork runs (an assembly stub: the return address is
//   kept in a register, not on the stack the child reuses), and until the parent resumes the
//   calling thread's hooks are inert: they record nothing and change no state the parent would
//   see (hook depth raised, fd-table updates off). The parent records PROC_FORK when it resumes
//   (dur = until the child exec'd or exited). An exec in the child builds the child's
//   environment on its stack: an mmap there would stay mapped in the parent.
#include <alloca.h>
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

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/hooks/process_env.h"
#include "interpose/hooks/wait.h"
#include "interpose/recorder.h"
#include "interpose/sampler.h"

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
  // The job's first process (no IDLESCOPE_STDERR: not started by `idlescope run`, nor by a traced
  // parent) tells the programs it starts that they are not: only it may print at start
  // (interpose/config.cc, "who may write idlescope's own lines to stderr").
  char first[32];
  snprintf(first, sizeof(first), "%d:0:0", static_cast<int>(getpid()));
  g_env.AddDefault("IDLESCOPE_STDERR", first);
  // One redaction key for the whole job (interpose/redact.h).
  idlescope::redact::Init();
  if (*idlescope::redact::KeyHex() != '\0') {
    g_env.AddDefault("IDLESCOPE_REDACT_KEY", idlescope::redact::KeyHex());
  }
}

// What a vfork'ing thread's hooks are while its child borrows the thread (and its TLS): set by
// VforkBefore, undone by VforkAfter in the parent. initial-exec TLS: the child sees the parent's.
struct VforkState {
  bool child_window;  // between the two: only the child runs this thread's code
  bool record;
  bool own_fd_table;
  uint32_t hook_depth;
  uint64_t t0;
};
__thread VforkState t_vfork __attribute__((tls_model("initial-exec")));

inline bool InVforkChild() { return t_vfork.child_window; }

// The child's environment, built on the hook's stack up to this size (32 KiB: a few hundred
// variables), mmap'ed beyond (then, in a vfork child, left mapped in the parent: rare enough).
constexpr size_t kStackEnvBytes = 32 << 10;

// Builds the traced environment for `envp` into `arena` (alloca'ed by the caller with the size
// TracedEnvBytes returned) or into an mmap'ed one (*mapped, for the caller to unmap).
size_t TracedEnvBytes(char* const* envp) {
  char** unused = nullptr;
  return idlescope::proc::BuildTracedEnv(envp, g_env, nullptr, 0, &unused);
}
char* const* TracedEnv(char* const* envp, size_t needed, void* stack_arena, void** mapped,
                       size_t* mapped_size) {
  int saved = errno;
  char** out = nullptr;
  *mapped = nullptr;
  void* arena = stack_arena;
  if (needed == 0) {
    idlescope::proc::BuildTracedEnv(envp, g_env, nullptr, 0, &out);  // envp as it is
    errno = saved;
    return out;
  }
  if (arena == nullptr) {
    arena = mmap(nullptr, needed, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena == MAP_FAILED) {
      errno = saved;
      return envp;
    }
    *mapped = arena;
    *mapped_size = needed;
  }
  char* const* env = envp;
  if (idlescope::proc::BuildTracedEnv(envp, g_env, arena, needed, &out) <= needed) env = out;
  errno = saved;
  return env;
}

void UnmapEnv(void* mapped, size_t size) {
  if (mapped == nullptr) return;
  int saved = errno;
  munmap(mapped, size);
  errno = saved;
}

// alloca must run in the hook's own frame: a macro, not a function.
#define IDLESCOPE_TRACED_ENV(envp, out)                                                 \
  size_t out##_bytes = TracedEnvBytes(envp);                                            \
  void* out##_stack =                                                                   \
      out##_bytes > 0 && out##_bytes <= kStackEnvBytes ? alloca(out##_bytes) : nullptr; \
  void* out##_mapped = nullptr;                                                         \
  size_t out##_mapped_size = 0;                                                         \
  char* const* out = TracedEnv(envp, out##_bytes, out##_stack, &out##_mapped, &out##_mapped_size)

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
  return len == 0 ? 0 : idlescope::InternArgv(std::string_view(buf, len));
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
  e.u.proc.path = program != nullptr
                      ? idlescope::InternPath(program, idlescope::redact::PathKind::kProgram)
                      : 0;
  e.u.proc.argv = InternArgv(argv);
  idlescope::Record(e);
}

// Common body of every exec: fix the environment, record, flush and close the trace, exec; on
// return (failure) reopen the trace and record the error. In a vfork child: only the
// environment, on the stack.
template <typename Call>
int ExecHook(uint32_t (*api)(), const char* program, char* const* argv, char* const* envp,
             Call&& call) {
  IDLESCOPE_TRACED_ENV(envp, env);
  if (InVforkChild()) {
    int r = call(env);
    UnmapEnv(env_mapped, env_mapped_size);
    return r;
  }
  HookGuard guard(Family::kProc);
  // Flush even when the proc family is off: the image's buffered events die with it.
  bool record = guard.active();
  bool flush = record || (idlescope::RecorderActive() && !idlescope::FamilyEnabled(Family::kProc));
  uint64_t t0 = NowNs();
  if (record) {
    RecordProc(ev::kProcExec, api(), t0, t0, 0, 0, program, argv);
  }
  if (flush) idlescope::BeforeExec();
  int r = call(env);
  int err = errno;
  if (flush) idlescope::AfterExecFailed();
  if (record) RecordProc(ev::kProcExec, api(), t0, NowNs(), -err, 0, program, argv);
  UnmapEnv(env_mapped, env_mapped_size);
  errno = err;
  return r;
}

template <typename Real>
int SpawnHook(uint32_t (*api)(), pid_t* pid, const char* program,
              const posix_spawn_file_actions_t* actions, const posix_spawnattr_t* attr,
              char* const* argv, char* const* envp, Real real) {
  IDLESCOPE_TRACED_ENV(envp, env);
  HookGuard guard(Family::kProc);
  pid_t child = 0;
  pid_t* out = pid != nullptr ? pid : &child;
  uint64_t t0 = NowNs();
  int r = real(out, program, actions, attr, argv, env);
  int err = errno;
  if (guard.active() && !InVforkChild()) {
    RecordProc(ev::kProcSpawn, api(), t0, NowNs(), -r, r == 0 ? static_cast<uint32_t>(*out) : 0,
               program, argv);
  }
  UnmapEnv(env_mapped, env_mapped_size);
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
  if (pid > 0) {
    RecordProc(ev::kProcFork, api(), t0, NowNs(), 0, static_cast<uint32_t>(pid), nullptr, nullptr);
    // A worker of the family, perhaps: the writer looks at it while it is one (sampler.h).
    idlescope::sampler::NoteChild(static_cast<uint32_t>(pid));
  }
  if (pid < 0) RecordProc(ev::kProcFork, api(), t0, NowNs(), -err, 0, nullptr, nullptr);
  errno = err;
  return pid;
}

}  // namespace

#if defined(__x86_64__)
// vfork (the stub below): before the syscall, in the parent.
extern "C" __attribute__((visibility("hidden"), used)) void idlescope_vfork_before() {
  VforkState& v = t_vfork;
  v.hook_depth = idlescope::detail::t_hook_depth;
  v.own_fd_table = idlescope::detail::t_own_fd_table;
  v.record =
      v.hook_depth == 0 && idlescope::RecorderActive() && idlescope::FamilyEnabled(Family::kProc);
  if (v.record) idlescope::io::CloseBurst();  // the burst is complete when the process splits
  v.t0 = NowNs();
  // The child runs on this thread's TLS: nothing it calls records (depth), and no fd-table entry
  // of the parent follows its closes and dups (its table is a copy).
  idlescope::detail::t_hook_depth = v.hook_depth + 1;
  idlescope::detail::t_own_fd_table = true;
  v.child_window = true;
}

// After it, in the parent, once the child exec'd or exited: `r` is the syscall's result.
extern "C" __attribute__((visibility("hidden"), used)) pid_t idlescope_vfork_after(long r) {
  VforkState& v = t_vfork;
  v.child_window = false;
  idlescope::detail::t_hook_depth = v.hook_depth;  // whatever the child left there
  idlescope::detail::t_own_fd_table = v.own_fd_table;
  pid_t pid = r < 0 && r > -4096 ? -1 : static_cast<pid_t>(r);
  int err = pid < 0 ? static_cast<int>(-r) : errno;
  if (v.record) {
    HookGuard guard(Family::kProc);
    if (guard.active()) {
      RecordProc(ev::kProcFork, IDLESCOPE_API("vfork")(), v.t0, NowNs(), pid < 0 ? -err : 0,
                 pid > 0 ? static_cast<uint32_t>(pid) : 0, nullptr, nullptr);
    }
  }
  errno = err;
  return pid;
}

// vfork as glibc's own (sysdeps/unix/sysv/linux/x86_64/vfork.S), with a call before and after
// in the parent. The child shares the stack below our caller's frame and reuses it (calls push
// return addresses there) before the parent resumes, so our return address is kept in %rdi,
// which the kernel restores for each process separately, and pushed back after the syscall by
// each of the two. The child executes nothing else of ours: syscall return, push, ret.
asm(R"(
    .text
    .globl vfork
    .type vfork, @function
    .p2align 4
vfork:
    .cfi_startproc
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call idlescope_vfork_before
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    .cfi_register %rip, %rdi
    movl $58, %eax
    syscall
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset %rip, 0
    testl %eax, %eax
    jnz 1f
    ret
1:
    movq %rax, %rdi
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call idlescope_vfork_after
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size vfork, .-vfork
)");
#endif

namespace {

// execl-style variadic lists: the arguments up to the terminating NULL, as an argv array on
// the hook's stack (alloca, hence the macro below; mmap'ed beyond 4096 arguments).
constexpr size_t kStackArgs = 4096;

size_t CountVarArgs(const char* arg0, va_list* ap) {
  if (arg0 == nullptr) return 0;
  va_list count_ap;
  va_copy(count_ap, *ap);
  size_t n = 1;
  while (va_arg(count_ap, const char*) != nullptr) ++n;
  va_end(count_ap);
  return n;
}

// Fills argv[0..n] (the NULL included) and consumes the NULL from `ap`, so that the caller reads
// what follows it (execle's envp).
char** FillVarArgs(char** argv, size_t n, const char* arg0, va_list* ap) {
  if (argv == nullptr) return nullptr;
  if (n > 0) argv[0] = const_cast<char*>(arg0);
  for (size_t i = 1; i < n; ++i) argv[i] = va_arg(*ap, char*);
  argv[n] = nullptr;
  if (n > 0) (void)va_arg(*ap, char*);
  return argv;
}

char** MapArgv(size_t n) {
  void* mem = mmap(nullptr, (n + 1) * sizeof(char*), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return mem == MAP_FAILED ? nullptr : static_cast<char**>(mem);
}

#define IDLESCOPE_VAR_ARGV(arg0, ap, out)                                               \
  size_t out##_n = CountVarArgs(arg0, &ap);                                             \
  char** out##_array = out##_n < kStackArgs                                             \
                           ? static_cast<char**>(alloca((out##_n + 1) * sizeof(char*))) \
                           : MapArgv(out##_n);                                          \
  char** out = FillVarArgs(out##_array, out##_n, arg0, &ap)

void UnmapArgv(char** argv, size_t n) {
  if (n >= kStackArgs && argv != nullptr) UnmapEnv(argv, (n + 1) * sizeof(char*));
}

}  // namespace

IDLESCOPE_EXPORT pid_t fork(void) { return ForkHook(IDLESCOPE_API("fork")); }

#if !defined(__x86_64__)
// Elsewhere vfork is fork, which POSIX allows it to be (the child's writes do not reach the
// parent there).
IDLESCOPE_EXPORT pid_t vfork(void) { return ForkHook(IDLESCOPE_API("vfork")); }
#endif

IDLESCOPE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  return ExecHook(IDLESCOPE_API("execve"), path, argv, envp,
                  [&](char* const* env) { return Libc().execve(path, argv, env); });
}

IDLESCOPE_EXPORT int execv(const char* path, char* const argv[]) {
  return ExecHook(IDLESCOPE_API("execv"), path, argv, environ,
                  [&](char* const* env) { return Libc().execve(path, argv, env); });
}

IDLESCOPE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return ExecHook(IDLESCOPE_API("execvpe"), file, argv, envp,
                  [&](char* const* env) { return Libc().execvpe(file, argv, env); });
}

IDLESCOPE_EXPORT int execvp(const char* file, char* const argv[]) {
  return ExecHook(IDLESCOPE_API("execvp"), file, argv, environ,
                  [&](char* const* env) { return Libc().execvpe(file, argv, env); });
}

IDLESCOPE_EXPORT int execl(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  IDLESCOPE_VAR_ARGV(arg0, ap, argv);
  va_end(ap);
  if (argv == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  int r = ExecHook(IDLESCOPE_API("execl"), path, argv, environ,
                   [&](char* const* env) { return Libc().execve(path, argv, env); });
  UnmapArgv(argv, argv_n);
  return r;
}

IDLESCOPE_EXPORT int execlp(const char* file, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  IDLESCOPE_VAR_ARGV(arg0, ap, argv);
  va_end(ap);
  if (argv == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  int r = ExecHook(IDLESCOPE_API("execlp"), file, argv, environ,
                   [&](char* const* env) { return Libc().execvpe(file, argv, env); });
  UnmapArgv(argv, argv_n);
  return r;
}

IDLESCOPE_EXPORT int execle(const char* path, const char* arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  IDLESCOPE_VAR_ARGV(arg0, ap, argv);
  char* const* envp = argv != nullptr ? va_arg(ap, char* const*) : nullptr;
  va_end(ap);
  if (argv == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  int r = ExecHook(IDLESCOPE_API("execle"), path, argv, envp,
                   [&](char* const* env) { return Libc().execve(path, argv, env); });
  UnmapArgv(argv, argv_n);
  return r;
}

IDLESCOPE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  char link[40];
  char program[PATH_MAX];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, program, sizeof(program) - 1);
  program[n > 0 ? n : 0] = '\0';
  return ExecHook(IDLESCOPE_API("fexecve"), program, argv, envp,
                  [&](char* const* env) { return Libc().fexecve(fd, argv, env); });
}

IDLESCOPE_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                              int flags) {
  if (Libc().execveat == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return ExecHook(IDLESCOPE_API("execveat"), path, argv, envp,
                  [&](char* const* env) { return Libc().execveat(dirfd, path, argv, env, flags); });
}

IDLESCOPE_EXPORT int posix_spawn(pid_t* pid, const char* path,
                                 const posix_spawn_file_actions_t* actions,
                                 const posix_spawnattr_t* attr, char* const argv[],
                                 char* const envp[]) {
  return SpawnHook(IDLESCOPE_API("posix_spawn"), pid, path, actions, attr, argv, envp,
                   Libc().posix_spawn);
}

// popen and system start `/bin/sh -c command` through glibc's internal posix_spawn, which no hook
// sees: each is a PROC_SPAWN of its own, with the caller's stack and no child pid (glibc keeps it
// inside the FILE; system has reaped it by its return). The reader links it to the child by
// parent pid and start time (docs/architecture.md, "Processes"). The child inherits `environ`
// and stays traced as long as the program left LD_PRELOAD in it.
void RecordShell(uint32_t api, uint64_t t0, int32_t result, const char* command) {
  char sh[] = "sh", dash_c[] = "-c";
  char* const argv[] = {sh, dash_c, const_cast<char*>(command), nullptr};
  RecordProc(ev::kProcSpawn, api, t0, NowNs(), result, 0, "/bin/sh", argv);
}

IDLESCOPE_EXPORT FILE* popen(const char* command, const char* mode) {
  HookGuard guard(Family::kProc);
  uint64_t t0 = NowNs();
  FILE* f = Libc().popen(command, mode);
  int err = errno;
  if (guard.active() && !InVforkChild() && command != nullptr) {
    RecordShell(IDLESCOPE_API("popen")(), t0, f == nullptr ? -err : 0, command);
  }
  errno = err;
  return f;
}

IDLESCOPE_EXPORT int system(const char* command) {
  HookGuard guard(Family::kProc);
  uint64_t t0 = NowNs();
  int r = Libc().system(command);
  int err = errno;
  // system(NULL) only asks whether a shell exists.
  if (guard.active() && !InVforkChild() && command != nullptr) {
    RecordShell(IDLESCOPE_API("system")(), t0, r, command);
  }
  errno = err;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Waiting for children. A process blocked in waitpid is waiting for its child's work (a
// preprocessing ffmpeg, a compiler Triton or torch.compile started, pip): issue 24 found that time
// unknown. A wait that blocked at least 1 ms is a PROC_WAIT event naming the child it reaped (or
// asked for); the analysis names the wait by the child's own trace (its command, what it did). A
// wait that returns at once (WNOHANG's polls, a child already gone) costs two clock readings.
// system() and pclose() wait inside glibc, on no hook: system's PROC_SPAWN lasts as long.

namespace {

template <typename Call>
pid_t WaitChildHook(uint32_t (*api)(), pid_t asked, Call&& call) {
  HookGuard guard(Family::kProc);
  if (!guard.active() || InVforkChild()) return call();
  const uint64_t t0 = idlescope::CallTicks();
  const pid_t r = call();
  const uint64_t t1 = idlescope::CallTicks();
  if (__builtin_expect(!idlescope::io::LongWait(t0, t1), 1)) return r;
  const int err = errno;
  RawEvent e;
  idlescope::TicksToSpan(t0, t1, &e.ts, &e.dur);
  e.count = 1;
  e.api = api();
  e.type = ev::kProcWait;
  e.result = r < 0 ? -err : 0;
  e.stack = idlescope::io::MaybeCaptureStack(e.ts, e.dur);
  e.u.proc.child_pid = static_cast<uint32_t>(r > 0 ? r : (asked > 0 ? asked : 0));
  idlescope::Record(e);
  errno = err;
  return r;
}

}  // namespace

IDLESCOPE_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  return WaitChildHook(IDLESCOPE_API("waitpid"), pid,
                       [&] { return Libc().waitpid(pid, status, options); });
}

IDLESCOPE_EXPORT pid_t wait(int* status) {
  return WaitChildHook(IDLESCOPE_API("wait"), -1, [&] { return Libc().wait(status); });
}

IDLESCOPE_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) {
  return WaitChildHook(IDLESCOPE_API("wait3"), -1,
                       [&] { return Libc().wait3(status, options, usage); });
}

IDLESCOPE_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  return WaitChildHook(IDLESCOPE_API("wait4"), pid,
                       [&] { return Libc().wait4(pid, status, options, usage); });
}

// waitid returns 0 and the child in its siginfo_t (si_pid 0: WNOHANG found none).
IDLESCOPE_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  int result = 0;
  WaitChildHook(IDLESCOPE_API("waitid"), type == P_PID ? static_cast<pid_t>(id) : -1, [&] {
    result = Libc().waitid(type, id, info, options);
    return result == 0 && info != nullptr ? info->si_pid : static_cast<pid_t>(result);
  });
  return result;
}

IDLESCOPE_EXPORT int posix_spawnp(pid_t* pid, const char* file,
                                  const posix_spawn_file_actions_t* actions,
                                  const posix_spawnattr_t* attr, char* const argv[],
                                  char* const envp[]) {
  return SpawnHook(IDLESCOPE_API("posix_spawnp"), pid, file, actions, attr, argv, envp,
                   Libc().posix_spawnp);
}
