// interpose/glibc_floor.cc's ways for a glibc that lacks a function, against glibc's own answer on
// this machine: glibc_floor.cc is built into this test with IDLESCOPE_GLIBC_FLOOR_FALLBACKS_ONLY,
// so every __wrap_ function below does what it does on glibc 2.17 (no link-time --wrap here: the
// test calls the wrappers by name and glibc's functions as usual).
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <sys/platform/x86.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
int __wrap__dl_find_object(void* pc, struct dl_find_object* result);
const struct cpuid_feature* __wrap___x86_get_cpuid_feature_leaf(unsigned index);
int __wrap_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex, clockid_t clock,
                                  const struct timespec* abstime);
int __wrap___cxa_thread_atexit_impl(void (*destructor)(void*), void* object, void* dso_handle);
int __wrap_stat(const char* path, struct stat* buf);
int __wrap_fstat(int fd, struct stat* buf);
int __wrap_lstat(const char* path, struct stat* buf);
int __wrap_fstatat(int dirfd, const char* path, struct stat* buf, int flags);
uint32_t __wrap_arc4random();
int __wrap_getentropy(void* buf, size_t len);
}

namespace {

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The object of an address, its extent and its PT_GNU_EH_FRAME, as glibc 2.35 finds them: what
// libgcc's unwinder reads from it.
TEST(GlibcFloor, FindObjectMatchesGlibcForCodeOfEveryKindOfObject) {
  const void* pcs[] = {
      reinterpret_cast<const void*>(&NowNs),           // this executable
      reinterpret_cast<const void*>(&strlen),          // libc
      dlsym(RTLD_DEFAULT, "_dl_find_object"),          // the dynamic loader
      reinterpret_cast<const void*>(&pthread_create),  // libc again, or libpthread
  };
  for (const void* pc : pcs) {
    ASSERT_NE(pc, nullptr);
    struct dl_find_object glibc, ours;
    ASSERT_EQ(_dl_find_object(const_cast<void*>(pc), &glibc), 0);
    ASSERT_EQ(__wrap__dl_find_object(const_cast<void*>(pc), &ours), 0) << pc;
    EXPECT_EQ(ours.dlfo_map_start, glibc.dlfo_map_start) << pc;
    EXPECT_EQ(ours.dlfo_map_end, glibc.dlfo_map_end) << pc;
    EXPECT_EQ(ours.dlfo_eh_frame, glibc.dlfo_eh_frame) << pc;
    EXPECT_NE(ours.dlfo_eh_frame, nullptr) << pc;
  }
  struct dl_find_object none;
  int on_stack = 0;
  EXPECT_EQ(__wrap__dl_find_object(&on_stack, &none), -1);
}

// The CPUID leaf a feature test reads, as glibc read it at start. Compared bit by bit for the
// invariant TSC (what the library asks: interpose/hooks/io_clock.cc), and on the whole leaf 1
// ECX/EDX words glibc leaves as the CPU says (it may clear other words' bits it disables).
TEST(GlibcFloor, CpuidLeavesMatchGlibcs) {
  const unsigned leaf_80000007 = x86_cpu_index_80000007_edx / (8 * sizeof(unsigned) * 4);
  const struct cpuid_feature* glibc = __x86_get_cpuid_feature_leaf(leaf_80000007);
  const struct cpuid_feature* ours = __wrap___x86_get_cpuid_feature_leaf(leaf_80000007);
  EXPECT_EQ(ours->cpuid_array[3] & (1u << 8), glibc->cpuid_array[3] & (1u << 8));
  EXPECT_EQ(__wrap___x86_get_cpuid_feature_leaf(leaf_80000007), ours) << "read once";
  const struct cpuid_feature* leaf1 = __wrap___x86_get_cpuid_feature_leaf(0);
  EXPECT_EQ(leaf1->cpuid_array[0], __x86_get_cpuid_feature_leaf(0)->cpuid_array[0]);  // eax
  EXPECT_NE(leaf1->cpuid_array[3] & (1u << 0), 0u) << "x86_64 has an FPU (leaf 1 EDX bit 0)";
  const struct cpuid_feature* unknown = __wrap___x86_get_cpuid_feature_leaf(1000);
  for (unsigned word : unknown->cpuid_array) EXPECT_EQ(word, 0u);
}

// A CLOCK_MONOTONIC deadline through pthread_cond_timedwait: the wait ends at the deadline.
TEST(GlibcFloor, CondClockwaitEndsAtAMonotonicDeadline) {
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mutex);
  const uint64_t start = NowNs(CLOCK_MONOTONIC);
  const uint64_t deadline_ns = start + 50000000;
  timespec deadline = {static_cast<time_t>(deadline_ns / 1000000000),
                       static_cast<long>(deadline_ns % 1000000000)};
  int rc;
  do {
    rc = __wrap_pthread_cond_clockwait(&cond, &mutex, CLOCK_MONOTONIC, &deadline);
  } while (rc == 0);  // a spurious wakeup
  const uint64_t end = NowNs(CLOCK_MONOTONIC);
  pthread_mutex_unlock(&mutex);
  EXPECT_EQ(rc, ETIMEDOUT);
  EXPECT_GE(end, deadline_ns);
  EXPECT_EQ(__wrap_pthread_cond_clockwait(&cond, &mutex, CLOCK_PROCESS_CPUTIME_ID, &deadline),
            EINVAL);
}

std::vector<int>* g_destroyed = nullptr;

void RecordDestruction(void* object) { g_destroyed->push_back(*static_cast<int*>(object)); }

void* RegisterTwoThreadExitDestructors(void*) {
  static int first = 1, second = 2;
  EXPECT_EQ(__wrap___cxa_thread_atexit_impl(RecordDestruction, &first, nullptr), 0);
  EXPECT_EQ(__wrap___cxa_thread_atexit_impl(RecordDestruction, &second, nullptr), 0);
  EXPECT_TRUE(g_destroyed->empty()) << "run before the thread exits";
  return nullptr;
}

// thread_local destructors: at the thread's exit, the last registered first.
TEST(GlibcFloor, ThreadExitDestructorsRunAtThreadExitNewestFirst) {
  std::vector<int> destroyed;
  g_destroyed = &destroyed;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, nullptr, RegisterTwoThreadExitDestructors, nullptr), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  EXPECT_EQ(destroyed, (std::vector<int>{2, 1}));
  g_destroyed = nullptr;
}

TEST(GlibcFloor, StatFamilyMatchesGlibcs) {
  const char* path = "/proc/self/exe";  // a symbolic link: lstat and stat differ
  struct stat glibc, ours;
  ASSERT_EQ(stat(path, &glibc), 0);
  ASSERT_EQ(__wrap_stat(path, &ours), 0);
  EXPECT_EQ(ours.st_ino, glibc.st_ino);
  EXPECT_EQ(ours.st_size, glibc.st_size);
  ASSERT_EQ(lstat(path, &glibc), 0);
  ASSERT_EQ(__wrap_lstat(path, &ours), 0);
  EXPECT_TRUE(S_ISLNK(ours.st_mode));
  EXPECT_EQ(ours.st_ino, glibc.st_ino);
  ASSERT_EQ(fstat(STDERR_FILENO, &glibc), 0);
  ASSERT_EQ(__wrap_fstat(STDERR_FILENO, &ours), 0);
  EXPECT_EQ(ours.st_rdev, glibc.st_rdev);
  EXPECT_EQ(ours.st_ino, glibc.st_ino);
  ASSERT_EQ(fstatat(AT_FDCWD, path, &glibc, AT_SYMLINK_NOFOLLOW), 0);
  ASSERT_EQ(__wrap_fstatat(AT_FDCWD, path, &ours, AT_SYMLINK_NOFOLLOW), 0);
  EXPECT_EQ(ours.st_ino, glibc.st_ino);
  errno = 0;
  EXPECT_EQ(__wrap_stat("/nonexistent/idlescope", &ours), -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST(GlibcFloor, RandomBytesComeFromTheKernelAndKeepErrno) {
  errno = 1234;
  uint32_t a = __wrap_arc4random(), b = __wrap_arc4random(), c = __wrap_arc4random();
  EXPECT_FALSE(a == b && b == c) << "three equal 32-bit draws";
  EXPECT_EQ(errno, 1234);
  unsigned char buf[256] = {};
  EXPECT_EQ(__wrap_getentropy(buf, sizeof buf), 0);
  EXPECT_EQ(errno, 1234);
  EXPECT_NE(std::string(reinterpret_cast<char*>(buf), sizeof buf), std::string(sizeof buf, '\0'));
  EXPECT_EQ(__wrap_getentropy(buf, 257), -1);
  EXPECT_EQ(errno, EIO);
}

}  // namespace
