// The fd table of the I/O and network hooks: what each open file descriptor is (path, filesystem
// type, network scope), so that a write(2) on fd 7 becomes "4 MB to /ckpt/model.pt on NFS".
//
// Reads are one or two relaxed atomic loads and never lock: write/read hooks consult the table on
// every call. Entries are filled at open/connect time, or lazily on the first I/O on an fd we did
// not see being created (inherited fds, socket(), pipe(), accept()).
#pragma once

#include <atomic>
#include <cstdint>

namespace idlescope::io {

// Mirrors idlescope.FsType in proto/trace.proto.
enum FsType : uint8_t {
  kFsUnspecified = 0,
  kFsLocal = 1,
  kFsTmpfs = 2,
  kFsNfs = 3,
  kFsFuse = 4,
  kFsCifs = 5,
  kFsLustre = 6,
  kFsOverlay = 7,
  kFsPipe = 8,
  kFsSocket = 9,
  kFsDevice = 10,
  kFsOtherRemote = 11,
  kFsOther = 12,
};

// Mirrors idlescope.NetScope.
enum NetScope : uint8_t {
  kNetUnspecified = 0,
  kNetLoopback = 1,
  kNetPrivate = 2,
  kNetPublic = 3,
};

// Maps statfs(2)'s f_type magic (linux/magic.h) to the filesystem classes the analyzer reasons
// about: a checkpoint to NFS or a dataset on blobfuse behaves nothing like ext4.
FsType FsTypeFromStatfsMagic(uint64_t f_type);

// Maps an st_mode to a class when the mode alone decides it (sockets, FIFOs, devices); returns
// kFsUnspecified for regular files and directories, whose class comes from statfs.
FsType FsTypeFromMode(uint32_t st_mode);

enum class FdState : uint8_t {
  kUnknown = 0,  // never seen, or closed: resolve lazily
  kTracked = 1,  // path/fs known
  kIgnored = 2,  // the recorder's own trace file, or an fd we must not report
};

struct FdInfo {
  uint32_t path = 0;  // InternString id (0 = unknown)
  FsType fs = kFsUnspecified;
  NetScope scope = kNetUnspecified;
  FdState state = FdState::kUnknown;

  static constexpr int kFsShift = 32;
  static constexpr int kStateShift = 48;
  static FsType FsOf(uint64_t packed) { return static_cast<FsType>((packed >> kFsShift) & 0xff); }
  static FdState StateOf(uint64_t packed) {
    return static_cast<FdState>((packed >> kStateShift) & 0xff);
  }

  uint64_t Pack() const {
    return uint64_t{path} | uint64_t{fs} << kFsShift | uint64_t{scope} << 40 |
           uint64_t{static_cast<uint8_t>(state)} << kStateShift;
  }
  static FdInfo Unpack(uint64_t v) {
    FdInfo info;
    info.path = static_cast<uint32_t>(v);
    info.fs = FsOf(v);
    info.scope = static_cast<NetScope>((v >> 40) & 0xff);
    info.state = StateOf(v);
    return info;
  }
};

// Indexed by fd: a fixed top-level array of chunk pointers, chunks mmap'ed on first use (no
// malloc: the table is written from hooks that may run in a forked child or inside malloc-free
// contexts). Covers fds below kMaxFds (RLIMIT_NOFILE's usual hard limit is 1M); larger fds are
// simply untracked. Concurrent Set/Clear on the same fd race as the fds themselves do; the last
// writer wins, readers see either value, never a torn one.
class FdTable {
 public:
  static constexpr int kChunkBits = 12;
  static constexpr int kChunkSize = 1 << kChunkBits;
  static constexpr int kChunks = 256;
  static constexpr int kMaxFds = kChunkSize * kChunks;

  constexpr FdTable() = default;
  // No destructor: the process-wide table must outlive every hook, including those that run
  // after static destructors (atexit handlers, other libraries' destructors). Release() unmaps
  // the chunks (tests).
  void Release();
  FdTable(const FdTable&) = delete;
  FdTable& operator=(const FdTable&) = delete;

  FdInfo Get(int fd) const { return FdInfo::Unpack(GetPacked(fd)); }
  // The entry as FdInfo::Pack() wrote it (0: unknown): what the write/read hooks compare.
  uint64_t GetPacked(int fd) const {
    if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxFds)) return 0;
    const std::atomic<uint64_t>* chunk = chunks_[fd >> kChunkBits].load(std::memory_order_acquire);
    if (chunk == nullptr) return 0;
    return chunk[fd & (kChunkSize - 1)].load(std::memory_order_relaxed);
  }
  void Set(int fd, const FdInfo& info);
  void Clear(int fd);
  // Clears [first, last], as close_range(2) closes them.
  void ClearRange(unsigned first, unsigned last);
  // Changes with every Set/Clear/ClearRange/Copy (after the entries changed): a reader that saw
  // an entry when the count was g and sees g again knows the entry is unchanged without reading
  // it (the write/read hooks' fast path: each page touched costs a TLB miss there).
  uint32_t Generation() const { return generation_.load(std::memory_order_acquire); }
  // dup/dup2/dup3: the new fd refers to the same open file.
  void Copy(int from, int to) { Set(to, Get(from)); }

 private:
  std::atomic<uint64_t>* ChunkFor(int fd);
  std::atomic<std::atomic<uint64_t>*> chunks_[kChunks] = {};
  // Its own cache line: written at every open/close of the program, read by every merged call.
  alignas(64) std::atomic<uint32_t> generation_{0};
};

}  // namespace idlescope::io
