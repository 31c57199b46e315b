// The definitions behind -Wl,--wrap=<symbol> of the glibc floor (cmake/glibc_floor.cmake lists
// the wrapped symbols; interpose/glibc_floor.h binds the rest). Every undefined reference to a
// wrapped symbol in the target's objects, the statically linked libstdc++ and libgcc included,
// resolves to __wrap_<symbol> here instead of to glibc's newest version. Each one either calls
// the version of glibc 2.17, or, for a function glibc added later, calls glibc's own where the
// running glibc has it (looked up at load) and does the same work another way where it does not.
//
// References this file makes itself carry a version (.symver, glibc_floor.h), so --wrap leaves
// them alone: __wrap_pthread_once calls pthread_once@GLIBC_2.2.5, not itself.
#include "interpose/glibc_floor.h"

#if defined(__x86_64__) && defined(__linux__)

#include <cpuid.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#define IDLESCOPE_HAS_CPUID_FEATURE_LEAF 1
#else
#define IDLESCOPE_HAS_CPUID_FEATURE_LEAF 0
#endif

#define IDLESCOPE_WRAP extern "C" __attribute__((visibility("hidden")))

// glibc's stat family before 2.33: the exported functions took the structure's version
// (_STAT_VER_LINUX, 1 on x86_64) and <sys/stat.h> made stat() an inline call of them. glibc 2.33+
// still exports them, as default versions.
extern "C" int __xstat(int version, const char* path, struct stat* buf);
extern "C" int __lxstat(int version, const char* path, struct stat* buf);
extern "C" int __fxstat(int version, int fd, struct stat* buf);
extern "C" int __fxstatat(int version, int dirfd, const char* path, struct stat* buf, int flags);
extern "C" int __xstat64(int version, const char* path, struct stat64* buf);
extern "C" int __lxstat64(int version, const char* path, struct stat64* buf);
extern "C" int __fxstat64(int version, int fd, struct stat64* buf);
extern "C" int __fxstatat64(int version, int dirfd, const char* path, struct stat64* buf,
                            int flags);
__asm__(".symver __xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver __lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver __fxstat,__fxstat@GLIBC_2.2.5");
__asm__(".symver __fxstatat,__fxstatat@GLIBC_2.4");
__asm__(".symver __xstat64,__xstat64@GLIBC_2.2.5");
__asm__(".symver __lxstat64,__lxstat64@GLIBC_2.2.5");
__asm__(".symver __fxstat64,__fxstat64@GLIBC_2.2.5");
__asm__(".symver __fxstatat64,__fxstatat64@GLIBC_2.4");

// libpthread's own name of pthread_key_create (no header declares it).
extern "C" int __pthread_key_create(pthread_key_t* key, void (*destructor)(void*));

namespace {

constexpr int kStatVersion = 1;  // _STAT_VER_LINUX on x86_64

using CondClockwaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t,
                                const struct timespec*);
using FindObjectFn = int (*)(void*, struct dl_find_object*);
using ThreadAtexitFn = int (*)(void (*)(void*), void*, void*);

// glibc's own functions where the running glibc has them (2.30, 2.35, 2.33): found once at load,
// before anything of the library can call the wrappers (constructor priority 101 runs before the
// library's other constructors), so that no wrapper calls dlsym, which takes the loader's lock,
// later (the unwinder may run in a signal handler).
CondClockwaitFn g_cond_clockwait = nullptr;
FindObjectFn g_find_object = nullptr;
ThreadAtexitFn g_thread_atexit = nullptr;
#if IDLESCOPE_HAS_CPUID_FEATURE_LEAF
using CpuidFeatureLeafFn = const struct cpuid_feature* (*)(unsigned int);
CpuidFeatureLeafFn g_cpuid_feature_leaf = nullptr;
#endif

// IDLESCOPE_GLIBC_FLOOR_FALLBACKS_ONLY: looks nothing up, so every wrapper takes the way of a
// glibc without the function (tests/portability/glibc_floor_test.cc compares them with glibc's).
__attribute__((constructor(101))) void FindNewerGlibcFunctions() {
#if !defined(IDLESCOPE_GLIBC_FLOOR_FALLBACKS_ONLY)
  g_cond_clockwait =
      reinterpret_cast<CondClockwaitFn>(dlsym(RTLD_DEFAULT, "pthread_cond_clockwait"));
  g_find_object = reinterpret_cast<FindObjectFn>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  g_thread_atexit =
      reinterpret_cast<ThreadAtexitFn>(dlsym(RTLD_DEFAULT, "__cxa_thread_atexit_impl"));
#if IDLESCOPE_HAS_CPUID_FEATURE_LEAF
  g_cpuid_feature_leaf =
      reinterpret_cast<CpuidFeatureLeafFn>(dlsym(RTLD_DEFAULT, "__x86_get_cpuid_feature_leaf"));
#endif
#endif  // IDLESCOPE_GLIBC_FLOOR_FALLBACKS_ONLY
}

// Fills `buf` with random bytes from the kernel: getrandom (Linux 3.17), else /dev/urandom (as
// glibc's arc4random does). System calls only: open and read would be the preload library's own
// hooks. False if neither works; errno may change.
bool KernelRandom(void* buf, size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  size_t done = 0;
  while (done < len) {
    long n = syscall(SYS_getrandom, p + done, len - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (done == len) return true;
  long fd = syscall(SYS_openat, AT_FDCWD, "/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  while (done < len) {
    long n = syscall(SYS_read, fd, p + done, len - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  syscall(SYS_close, fd);
  return done == len;
}

struct FindObjectSearch {
  uintptr_t pc;
  struct dl_find_object* result;
  bool found;
};

// One loaded object for dl_iterate_phdr: the one with a PT_LOAD segment that holds the pc. Its
// extent as glibc's link map has it: from the first segment's page to the end of the last.
constexpr uintptr_t kPageSize = 4096;  // x86_64
int FindObjectOf(struct dl_phdr_info* info, size_t, void* arg) {
  auto* search = static_cast<FindObjectSearch*>(arg);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool holds_pc = false;
  const void* eh_frame = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (start < lo) lo = start;
      if (start + ph.p_memsz > hi) hi = start + ph.p_memsz;
      if (search->pc >= start && search->pc < start + ph.p_memsz) holds_pc = true;
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<const void*>(start);
    }
  }
  if (!holds_pc) return 0;
  memset(search->result, 0, sizeof(*search->result));
  search->result->dlfo_map_start = reinterpret_cast<void*>(lo & ~(kPageSize - 1));
  search->result->dlfo_map_end = reinterpret_cast<void*>(hi);
  search->result->dlfo_eh_frame = const_cast<void*>(eh_frame);
  search->found = true;
  return 1;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// References from the static libstdc++ and libgcc (std::call_once, std::condition_variable,
// the unwinder's thread detection), which glibc_floor.h cannot reach: the same code under its
// GLIBC_2.2.5 version.

IDLESCOPE_WRAP int __wrap_pthread_once(pthread_once_t* once, void (*init)()) {
  return pthread_once(once, init);
}

IDLESCOPE_WRAP int __wrap_pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  return pthread_key_create(key, destructor);
}

// libgcc tests whether threads are in use by whether this (weak) symbol resolves.
IDLESCOPE_WRAP int __wrap___pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  return __pthread_key_create(key, destructor);
}

IDLESCOPE_WRAP int __wrap_pthread_key_delete(pthread_key_t key) { return pthread_key_delete(key); }

IDLESCOPE_WRAP void* __wrap_pthread_getspecific(pthread_key_t key) {
  return pthread_getspecific(key);
}

IDLESCOPE_WRAP int __wrap_pthread_setspecific(pthread_key_t key, const void* value) {
  return pthread_setspecific(key, value);
}

IDLESCOPE_WRAP int __wrap_pthread_join(pthread_t thread, void** result) {
  return pthread_join(thread, result);
}

IDLESCOPE_WRAP int __wrap_pthread_detach(pthread_t thread) { return pthread_detach(thread); }

#ifndef IDLESCOPE_GLIBC_FLOOR_HOOKS_PTHREAD_CREATE
IDLESCOPE_WRAP int __wrap_pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                         void* (*start)(void*), void* arg) {
  return pthread_create(thread, attr, start, arg);
}
#endif

// glibc 2.32's flag "the process has one thread", read by libstdc++ to skip atomic operations
// (reference counts, static initialization guards). Zero means "maybe more than one": the
// atomic path, always correct.
extern "C" {
__attribute__((visibility("hidden"))) char __wrap___libc_single_threaded = 0;
}

// glibc 2.36 (arc4random) and 2.25 (getentropy), reached from std::random_device, which the
// static libstdc++ links in with its string instantiations.
IDLESCOPE_WRAP uint32_t __wrap_arc4random() {
  const int saved_errno = errno;
  uint32_t value;
  // glibc's arc4random cannot fail either: it ends the process when the kernel gives no entropy.
  if (!KernelRandom(&value, sizeof(value))) abort();
  errno = saved_errno;
  return value;
}

IDLESCOPE_WRAP int __wrap_getentropy(void* buf, size_t len) {
  if (len > 256) {  // getentropy(3)
    errno = EIO;
    return -1;
  }
  const int saved_errno = errno;
  if (!KernelRandom(buf, len)) {
    errno = ENOSYS;
    return -1;
  }
  errno = saved_errno;
  return 0;
}

// glibc 2.35. libgcc's unwinder (unwind-dw2-fde-dip.c, built where glibc has it) finds a pc's
// object through it and has no other way then: on an older glibc the same search is made with
// dl_iterate_phdr, as that unwinder does itself when built there. dlfo_link_map stays null (its
// one reader here, libgcc, reads dlfo_eh_frame); interpose/stacks.cc, which needs the link map
// and may not take the loader's lock, looks glibc's own function up instead.
IDLESCOPE_WRAP int __wrap__dl_find_object(void* pc, struct dl_find_object* result) {
  if (g_find_object != nullptr) return g_find_object(pc, result);
  FindObjectSearch search{reinterpret_cast<uintptr_t>(pc), result, false};
  dl_iterate_phdr(FindObjectOf, &search);
  return search.found ? 0 : -1;
}

// glibc 2.18: runs a thread_local object's destructor when its thread exits (libstdc++'s
// __cxa_thread_atexit). Before 2.18, what libstdc++ does where glibc lacks it (atexit_thread.cc):
// a per-thread list run, newest first, by a pthread key's destructor at thread exit, and for the
// thread that calls exit(), by an atexit handler.
namespace {

struct ThreadExitDestructor {
  void (*destructor)(void*);
  void* object;
  ThreadExitDestructor* next;
};
pthread_key_t g_thread_exit_key;
pthread_once_t g_thread_exit_once = PTHREAD_ONCE_INIT;

void RunThreadExitDestructors(void* list) {
  // A destructor may register more (a thread_local first used in another's destructor).
  for (auto* d = static_cast<ThreadExitDestructor*>(list); d != nullptr;) {
    pthread_setspecific(g_thread_exit_key, d->next);
    d->destructor(d->object);
    free(d);
    d = static_cast<ThreadExitDestructor*>(pthread_getspecific(g_thread_exit_key));
  }
}

void RunThisThreadsDestructors() {
  void* list = pthread_getspecific(g_thread_exit_key);
  if (list != nullptr) RunThreadExitDestructors(list);
}

void CreateThreadExitKey() {
  pthread_key_create(&g_thread_exit_key, RunThreadExitDestructors);
  atexit(RunThisThreadsDestructors);
}

}  // namespace

IDLESCOPE_WRAP int __wrap___cxa_thread_atexit_impl(void (*destructor)(void*), void* object,
                                                   void* dso_handle) {
  if (g_thread_atexit != nullptr) return g_thread_atexit(destructor, object, dso_handle);
  pthread_once(&g_thread_exit_once, CreateThreadExitKey);
  auto* d = static_cast<ThreadExitDestructor*>(malloc(sizeof(ThreadExitDestructor)));
  if (d == nullptr) return -1;
  d->destructor = destructor;
  d->object = object;
  d->next = static_cast<ThreadExitDestructor*>(pthread_getspecific(g_thread_exit_key));
  pthread_setspecific(g_thread_exit_key, d);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// References from our own sources to functions without a version up to 2.17.

// glibc 2.33 exported stat, fstat, lstat and fstatat (and their *64 twins, the same on x86_64)
// as functions; before, they were inline calls of __xstat and its siblings, which every later
// glibc still exports.
IDLESCOPE_WRAP int __wrap_stat(const char* path, struct stat* buf) {
  return __xstat(kStatVersion, path, buf);
}

IDLESCOPE_WRAP int __wrap_lstat(const char* path, struct stat* buf) {
  return __lxstat(kStatVersion, path, buf);
}

IDLESCOPE_WRAP int __wrap_fstat(int fd, struct stat* buf) {
  return __fxstat(kStatVersion, fd, buf);
}

IDLESCOPE_WRAP int __wrap_fstatat(int dirfd, const char* path, struct stat* buf, int flags) {
  return __fxstatat(kStatVersion, dirfd, path, buf, flags);
}

IDLESCOPE_WRAP int __wrap_stat64(const char* path, struct stat64* buf) {
  return __xstat64(kStatVersion, path, buf);
}

IDLESCOPE_WRAP int __wrap_lstat64(const char* path, struct stat64* buf) {
  return __lxstat64(kStatVersion, path, buf);
}

IDLESCOPE_WRAP int __wrap_fstat64(int fd, struct stat64* buf) {
  return __fxstat64(kStatVersion, fd, buf);
}

IDLESCOPE_WRAP int __wrap_fstatat64(int dirfd, const char* path, struct stat64* buf, int flags) {
  return __fxstatat64(kStatVersion, dirfd, path, buf, flags);
}

// glibc 2.30; what std::condition_variable::wait_for and wait_until(steady_clock) call. Before
// 2.30: pthread_cond_timedwait, whose deadline is on the condition variable's clock
// (CLOCK_REALTIME for std::condition_variable), with the CLOCK_MONOTONIC deadline converted to
// it now; a step of the wall clock during the wait moves that deadline by the step, as it did
// with libstdc++ built there.
IDLESCOPE_WRAP int __wrap_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                                 clockid_t clock, const struct timespec* abstime) {
  if (g_cond_clockwait != nullptr) return g_cond_clockwait(cond, mutex, clock, abstime);
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, abstime);
  if (clock != CLOCK_MONOTONIC) return EINVAL;
  struct timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t left_ns =
      (int64_t{abstime->tv_sec} - mono.tv_sec) * 1000000000 + (abstime->tv_nsec - mono.tv_nsec);
  if (left_ns < 0) left_ns = 0;
  int64_t deadline_ns = int64_t{real.tv_sec} * 1000000000 + real.tv_nsec + left_ns;
  struct timespec deadline = {static_cast<time_t>(deadline_ns / 1000000000),
                              static_cast<long>(deadline_ns % 1000000000)};
  return pthread_cond_timedwait(cond, mutex, &deadline);
}

#if IDLESCOPE_HAS_CPUID_FEATURE_LEAF
namespace {

// glibc's CPUID_INDEX_* (bits/platform/x86.h, an ABI: indexes are only appended): the leaf and
// subleaf each index reads.
struct CpuidLeaf {
  unsigned leaf, subleaf;
};
constexpr CpuidLeaf kCpuidLeaves[] = {
    {0x1, 0},         // CPUID_INDEX_1
    {0x7, 0},         // CPUID_INDEX_7
    {0x80000001, 0},  // CPUID_INDEX_80000001
    {0xd, 1},         // CPUID_INDEX_D_ECX_1
    {0x80000007, 0},  // CPUID_INDEX_80000007
    {0x80000008, 0},  // CPUID_INDEX_80000008
    {0x7, 1},         // CPUID_INDEX_7_ECX_1
    {0x19, 0},        // CPUID_INDEX_19
    {0x14, 0},        // CPUID_INDEX_14_ECX_0
};
constexpr unsigned kCpuidIndexes = sizeof(kCpuidLeaves) / sizeof(kCpuidLeaves[0]);

// One leaf's registers, read once (CPUID traps to the hypervisor in a VM).
struct cpuid_feature ReadCpuidLeaf(unsigned index) {
  struct cpuid_feature f;
  memset(&f, 0, sizeof(f));
  const CpuidLeaf& l = kCpuidLeaves[index];
  unsigned max = __get_cpuid_max(l.leaf & 0x80000000u, nullptr);
  if (max >= l.leaf) {
    __cpuid_count(l.leaf, l.subleaf, f.cpuid_array[0], f.cpuid_array[1], f.cpuid_array[2],
                  f.cpuid_array[3]);
  }
  return f;
}

template <unsigned kIndex>
const struct cpuid_feature* CpuidLeafOnce() {
  static const struct cpuid_feature feature = ReadCpuidLeaf(kIndex);
  return &feature;
}

template <unsigned... kIndex>
const struct cpuid_feature* CpuidLeafAt(unsigned index,
                                        std::integer_sequence<unsigned, kIndex...>) {
  using Reader = const struct cpuid_feature* (*)();
  static constexpr Reader kReaders[] = {&CpuidLeafOnce<kIndex>...};
  return kReaders[index]();
}

}  // namespace

// glibc 2.33: the CPUID leaves glibc read at start (CPU_FEATURE_PRESENT). Before 2.33 the leaf
// is read here, once, with the CPUID instruction. The "active" words stay zero: whether the
// system lets a feature be used is glibc's judgement (CPU_FEATURE_ACTIVE then answers no). An
// unknown index reads as no feature, as in glibc.
IDLESCOPE_WRAP const struct cpuid_feature* __wrap___x86_get_cpuid_feature_leaf(unsigned index) {
  if (g_cpuid_feature_leaf != nullptr) return g_cpuid_feature_leaf(index);
  static const struct cpuid_feature kNone = {};
  if (index >= kCpuidIndexes) return &kNone;
  return CpuidLeafAt(index, std::make_integer_sequence<unsigned, kCpuidIndexes>());
}
#endif  // IDLESCOPE_HAS_CPUID_FEATURE_LEAF

#endif  // __x86_64__ && __linux__
