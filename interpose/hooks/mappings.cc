// File mapping hooks (glibc): mmap, mmap64, munmap and msync. A job that writes a checkpoint
// through a mapping (mmap, memcpy, msync) or reads its dataset from one (np.memmap, nanoGPT's
// token files) makes no read or write call: the bytes move by page faults and memory copies.
// Issue 24: the msync had no path (it became an upload of nothing), the rest was unknown. So:
//   - mmap of a file (not anonymous memory, not a device such as /dev/nvidia*) is a FILE_MMAP
//     event with the file, the range and whether writes through it reach the file;
//   - the mapping is remembered (MappingTable below), so that msync names its file (FILE_SYNC
//     with the path) and munmap of a range that holds one is a FILE_MUNMAP of it;
//   - what happens through a mapping between those calls is left to a sampler of thread state:
//     the events say which file an address range is.
// Anonymous mappings (malloc's arenas and large blocks, thread stacks) cost the hook one flag
// test: mmap's; munmap's one relaxed load while no file mapping is held.
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "interpose/call_clock.h"
#include "interpose/hooks/io_libc.h"
#include "interpose/hooks/io_record.h"
#include "interpose/raw_syscall.h"
#include "interpose/recorder.h"

namespace idlescope::io {
namespace {

// The file mappings the process holds, by address range: a fixed array (hooks may run where
// malloc must not: inside malloc's own munmap of a large block), under a spin lock taken only for
// files (rare) and for an munmap while some file mapping is held. A mapping beyond kMax is not
// remembered: its msync then has no path, as before. The lock is never waited for without bound:
// an munmap in a signal handler that interrupted this thread inside the table would otherwise
// spin forever; after kSpins the call goes on without the table (a mapping is forgotten or not
// named, the program's call is made all the same).
class MappingTable {
 public:
  static constexpr int kMax = 512;
  struct Mapping {
    uintptr_t start = 0;
    uintptr_t end = 0;  // exclusive; 0: a free entry
    uint32_t path = 0;
    FsType fs = kFsUnspecified;
  };

  // Read by munmap's first test, which ThreadSanitizer's runtime reaches while it initialises
  // (raw_syscall.h): nothing instrumented, not even std::atomic's load (a call of its own in an
  // instrumented build that does not inline it), hence the builtin on the atomic's storage.
  __attribute__((always_inline, no_sanitize("thread"))) bool empty() const {
    static_assert(sizeof(used_) == sizeof(int));
    return __atomic_load_n(reinterpret_cast<const int*>(&used_), __ATOMIC_RELAXED) == 0;
  }

  // A new mapping replaces whatever it overlaps (MAP_FIXED over an old one).
  void Add(uintptr_t start, uintptr_t end, uint32_t path, FsType fs) {
    if (!Lock()) return;
    RemoveLocked(start, end, nullptr);
    for (Mapping& m : entries_) {
      if (m.end != 0) continue;
      m = {start, end, path, fs};
      used_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    Unlock();
  }

  // The mapping `addr` is in; false when none is remembered.
  bool Find(uintptr_t addr, Mapping* out) {
    if (!Lock()) return false;
    bool found = false;
    for (const Mapping& m : entries_) {
      if (m.end != 0 && addr >= m.start && addr < m.end) {
        *out = m;
        found = true;
        break;
      }
    }
    Unlock();
    return found;
  }

  // Forgets [start, end) (munmap); calls unmapped(mapping, bytes) for the file mappings it cut
  // (the first kMaxCut of them: one munmap of many mappings is rare), after the lock is released
  // (it records).
  template <typename Fn>
  void Remove(uintptr_t start, uintptr_t end, Fn&& unmapped) {
    static constexpr int kMaxCut = 8;
    Mapping cut[kMaxCut];
    uint64_t bytes[kMaxCut];
    int n = 0;
    if (!Lock()) return;
    RemoveLocked(start, end, [&](const Mapping& m, uint64_t b) {
      if (n < kMaxCut) {
        cut[n] = m;
        bytes[n++] = b;
      }
    });
    Unlock();
    for (int i = 0; i < n; ++i) unmapped(cut[i], bytes[i]);
  }

  // In a fork()ed child: another thread of the parent may have held the lock.
  void ResetLockInChild() { lock_.clear(std::memory_order_relaxed); }

 private:
  static constexpr int kSpins = 1 << 20;
  bool Lock() {
    for (int i = 0; i < kSpins; ++i) {
      if (!lock_.test_and_set(std::memory_order_acquire)) return true;
    }
    return false;
  }
  void Unlock() { lock_.clear(std::memory_order_release); }

  // Cuts [start, end) out of every entry; `cut(entry, bytes)` (may be null) for each one touched.
  // An entry split in two by a hole keeps its head and takes a free entry for its tail.
  template <typename Cut>
  void RemoveLocked(uintptr_t start, uintptr_t end, Cut&& cut) {
    for (Mapping& m : entries_) {
      if (m.end == 0 || m.end <= start || m.start >= end) continue;
      const uintptr_t lo = m.start > start ? m.start : start;
      const uintptr_t hi = m.end < end ? m.end : end;
      if constexpr (!std::is_same_v<std::decay_t<Cut>, std::nullptr_t>) cut(m, hi - lo);
      if (m.start >= start && m.end <= end) {
        m.end = 0;
        used_.fetch_sub(1, std::memory_order_relaxed);
      } else if (m.start < start && m.end > end) {
        Mapping tail = m;
        tail.start = end;
        m.end = start;
        for (Mapping& free : entries_) {
          if (free.end != 0) continue;
          free = tail;
          used_.fetch_add(1, std::memory_order_relaxed);
          break;
        }
      } else if (m.start < start) {
        m.end = start;
      } else {
        m.start = end;
      }
    }
  }

  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  std::atomic<int> used_{0};
  Mapping entries_[kMax];
};

constinit MappingTable g_mappings;

void ResetInChild() { g_mappings.ResetLockInChild(); }
__attribute__((constructor)) void RegisterForkReset() {
  pthread_atfork(nullptr, nullptr, ResetInChild);
}

uintptr_t PageEnd(uintptr_t addr, size_t n) {
  const uintptr_t page = 4096;
  return (addr + n + page - 1) & ~(page - 1);
}

template <typename Call>
void* MapHook(uint32_t (*api)(), size_t n, int prot, int flags, int fd, off64_t offset,
              Call&& call) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return call();
  const uint64_t t0 = NowNs();
  void* r = call();
  const int err = errno;
  const uint64_t t1 = NowNs();
  if (r != MAP_FAILED) {
    FdInfo info = ResolveFd(fd);
    // Devices (the CUDA driver maps /dev/nvidia* over and over) and our own file are not files of
    // the job's.
    if (info.state == FdState::kTracked && info.fs != kFsDevice && info.fs != kFsSocket &&
        info.fs != kFsPipe) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(r);
      g_mappings.Add(start, PageEnd(start, n), info.path, info.fs);
      RawEvent e;
      e.ts = t0;
      e.dur = t1 - t0;
      e.bytes = n;
      e.count = 1;
      e.api = api();
      e.stack = MaybeCaptureStack(t0, t1 - t0);
      e.type = ev::kFileMmap;
      e.u.io.path = info.path;
      e.u.io.fd = fd;
      e.u.io.fs_type = info.fs;
      e.u.io.offset = static_cast<uint64_t>(offset);
      e.u.io.addr = start;
      e.u.io.writable = (prot & PROT_WRITE) != 0 && (flags & MAP_SHARED) != 0;
      Record(e);
    }
  }
  errno = err;
  return r;
}

// The calls that map anonymous memory (or fail to name a descriptor) are not files: no event, no
// guard, the fewest instructions (malloc maps its large blocks so): straight to the next mmap.
// ThreadSanitizer's runtime maps its memory so while it initialises, before any instrumented
// function may run (raw_syscall.h), and before the next functions are looked up (io_libc.cc, at
// our load): this path is not instrumented, and until then makes the kernel's call itself, as
// glibc's mmap does (an offset that is not a multiple of the page is EINVAL without a call).
// Only until then: whatever interposes mmap after us (ThreadSanitizer's interceptors, which reset
// the shadow of a range mapped again; a memory profiler) must see the program's mappings.
__attribute__((always_inline, no_sanitize("thread"))) inline bool MapsFile(int flags, int fd) {
  return (flags & MAP_ANONYMOUS) == 0 && fd >= 0;
}
__attribute__((always_inline, no_sanitize("thread"))) inline bool NextResolved() {
  // The builtin on the atomic's storage, as MappingTable::empty() reads its count.
  static_assert(sizeof(detail::g_hot.libc_resolved) == sizeof(bool));
  return __atomic_load_n(reinterpret_cast<const bool*>(&detail::g_hot.libc_resolved),
                         __ATOMIC_ACQUIRE);
}
__attribute__((always_inline, no_sanitize("thread"))) inline void* NextMmap(void* addr, size_t n,
                                                                            int prot, int flags,
                                                                            int fd, off_t offset) {
  if (NextResolved()) return detail::g_hot.libc.mmap(addr, n, prot, flags, fd, offset);
  if ((offset & 4095) != 0) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  const long r = RawSyscall(SYS_mmap, reinterpret_cast<long>(addr), static_cast<long>(n), prot,
                            flags, fd, static_cast<long>(offset));
  if (r < 0 && r > -4096) {
    errno = static_cast<int>(-r);
    return MAP_FAILED;
  }
  return reinterpret_cast<void*>(r);
}
__attribute__((always_inline, no_sanitize("thread"))) inline int NextMunmap(void* addr, size_t n) {
  if (NextResolved()) return detail::g_hot.libc.munmap(addr, n);
  const long r = RawSyscall(SYS_munmap, reinterpret_cast<long>(addr), static_cast<long>(n));
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return 0;
}

}  // namespace
}  // namespace idlescope::io

using idlescope::Family;
using idlescope::HookGuard;
using idlescope::NowNs;
using idlescope::io::g_mappings;
using idlescope::io::Libc;
using idlescope::io::MapHook;
using idlescope::io::MappingTable;
using idlescope::io::MapsFile;
using idlescope::io::NextMmap;
using idlescope::io::NextMunmap;
namespace ev = idlescope::ev;

// Not instrumented by ThreadSanitizer on the anonymous path (MapsFile says why).
IDLESCOPE_EXPORT __attribute__((no_sanitize("thread"))) void* mmap(void* addr, size_t n, int prot,
                                                                   int flags, int fd,
                                                                   off_t offset) {
  if (!MapsFile(flags, fd)) return NextMmap(addr, n, prot, flags, fd, offset);
  return MapHook(IDLESCOPE_API("mmap"), n, prot, flags, fd, offset,
                 [&] { return Libc().mmap(addr, n, prot, flags, fd, offset); });
}

IDLESCOPE_EXPORT __attribute__((no_sanitize("thread"))) void* mmap64(void* addr, size_t n, int prot,
                                                                     int flags, int fd,
                                                                     off64_t offset) {
  if (!MapsFile(flags, fd)) return NextMmap(addr, n, prot, flags, fd, offset);
  return MapHook(IDLESCOPE_API("mmap64"), n, prot, flags, fd, offset,
                 [&] { return Libc().mmap64(addr, n, prot, flags, fd, offset); });
}

IDLESCOPE_EXPORT __attribute__((no_sanitize("thread"))) int munmap(void* addr, size_t n) {
  if (g_mappings.empty()) return NextMunmap(addr, n);
  HookGuard guard(Family::kIo);
  const uint64_t t0 = NowNs();
  const int r = Libc().munmap(addr, n);
  const int err = errno;
  const uint64_t t1 = NowNs();
  if (r == 0) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(addr);
    // Forgotten even when not recording: the range may be mapped again, to another file.
    g_mappings.Remove(start, idlescope::io::PageEnd(start, n),
                      [&](const MappingTable::Mapping& m, uint64_t bytes) {
                        if (!guard.active()) return;
                        idlescope::RawEvent e;
                        e.ts = t0;
                        e.dur = t1 - t0;
                        e.bytes = bytes;
                        e.count = 1;
                        e.api = IDLESCOPE_API("munmap")();
                        e.type = ev::kFileMunmap;
                        e.u.io.path = m.path;
                        e.u.io.fd = -1;
                        e.u.io.fs_type = m.fs;
                        e.u.io.addr = m.start > start ? m.start : start;
                        idlescope::Record(e);
                      });
  }
  errno = err;
  return r;
}

// msync makes what was written through a mapping durable: a FILE_SYNC of the mapping's file
// (fd -1: the mapping outlives its descriptor), bytes the length synced.
IDLESCOPE_EXPORT int msync(void* addr, size_t n, int flags) {
  HookGuard guard(Family::kIo);
  if (!guard.active()) return Libc().msync(addr, n, flags);
  idlescope::io::CloseBurst();  // the writes this sync makes durable come first
  const uint64_t t0 = NowNs();
  const int r = Libc().msync(addr, n, flags);
  const int err = errno;
  const uint64_t t1 = NowNs();
  idlescope::io::FdInfo info;
  MappingTable::Mapping m;
  if (g_mappings.Find(reinterpret_cast<uintptr_t>(addr), &m)) {
    info.path = m.path;
    info.fs = m.fs;
  }
  idlescope::io::RecordFdEvent(ev::kFileSync, IDLESCOPE_API("msync")(), -1, info, t0, t1, n,
                               r < 0 ? -err : 0);
  errno = err;
  return r;
}
