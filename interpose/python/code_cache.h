// The code objects seen on Python stacks, each read once: a lock-free table from the code object's
// address to a small id, and per id a copy of what the writer needs to make a frame of it (file,
// qualified name, first line, line table). The copy is taken on the capturing thread, while the
// code object is alive for certain (a frame of that thread holds it): the writer resolves frames
// later, when the code object may have been freed.
//
// An address can be reused by another code object after the first one is freed (code compiled at
// run time: exec, torch.fx, dataclasses); an entry therefore matches only when the code object
// still has the same file and name objects and first line (a 32-bit hash of them, read on every
// lookup), and a new code object at a known address takes over that address's entry, so that
// functions made again and again (and freed) do not pile up entries that every lookup would probe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "interpose/python/layout.h"

namespace idlescope::python {

// A code object's copy, immutable once published. The strings are UTF-8, not NUL-terminated.
struct CodeInfo {
  int32_t first_line = 0;
  uint32_t file_size = 0, name_size = 0, table_size = 0;
  const char* file() const { return reinterpret_cast<const char*>(this + 1); }
  const char* name() const { return file() + file_size; }
  const uint8_t* table() const { return reinterpret_cast<const uint8_t*>(name() + name_size); }
};

// Addresses of the interpreter's type objects: what a code, str or bytes object points to.
struct ObjectTypes {
  uintptr_t code = 0, unicode = 0, bytes = 0;
};

class CodeCache {
 public:
  static constexpr uint32_t kMaxCodes = 1u << 16;
  // Longest copies kept (longer ones are cut: a line beyond a cut table is unknown).
  static constexpr uint32_t kMaxFileBytes = 4096, kMaxNameBytes = 1024, kMaxTableBytes = 256 * 1024;

  // Maps the tables (address space only: pages are touched as entries arrive). False when mmap
  // fails.
  bool Init(const Layout& layout, const ObjectTypes& types);

  // The id (>= 1) of the code object at `code`, read and copied when first seen; 0 when it cannot
  // be read (not a code object: its type, and that of its strings and line table, are checked) or
  // the cache is full. Lock-free when the code object is known; a new one takes the insertion
  // mutex.
  uint32_t Id(uintptr_t code) {
    for (uint32_t i = Hash(code), probes = 0; probes < kSlots;
         i = (i + 1) & (kSlots - 1), ++probes) {
      const Slot& s = slots_[i];
      const uintptr_t at = s.code.load(std::memory_order_acquire);
      if (at == 0) break;
      if (at != code) continue;
      // One load: the check and the id it belongs to come together, even while an insertion
      // replaces them.
      const uint64_t entry = s.entry.load(std::memory_order_acquire);
      if (static_cast<uint32_t>(entry >> 32) == Check(code)) return static_cast<uint32_t>(entry);
      break;  // a new code object at this address
    }
    return code == 0 || (code & 7) != 0 ? 0 : Insert(code, Check(code), nullptr, 0);
  }

  // Id() for a code object that is not the calling thread's (the sampler's reads of another
  // thread's frames, pystacks.h): `prefix` holds the first layout.code_bytes bytes of `code`,
  // read without faulting (own_memory.h, process `pid`, ours), and what a new code object needs
  // is read so too. 0 when it cannot be read or is not a code object. The object may be freed
  // while we read it: the prefix is read again after the copy, and a copy whose file, name, first
  // line or line table changed meanwhile is not kept.
  uint32_t IdFromPrefix(uintptr_t code, const uint8_t* prefix, int pid);

  // The copy of code `id`; nullptr for an id never handed out. Any thread.
  const CodeInfo* Info(uint32_t id) const {
    return id == 0 || id > kMaxCodes ? nullptr : infos_[id].load(std::memory_order_acquire);
  }
  uint32_t size() const { return next_id_.load(std::memory_order_relaxed) - 1; }

  void LockForFork() { insert_mu_.lock(); }
  void UnlockAfterFork() { insert_mu_.unlock(); }

  // Reads of the interpreter's memory. The objects are those of the calling thread's live frames,
  // alive and mapped (pystacks.cc: why, and the one case where a frame could be half made).
  template <typename T>
  static T Load(uintptr_t addr) {
    T v;
    __builtin_memcpy(&v, reinterpret_cast<const void*>(addr), sizeof(v));
    return v;
  }

 private:
  static constexpr uint32_t kSlotBits = 17;
  static constexpr uint32_t kSlots = 1u << kSlotBits;  // kMaxCodes at most half full: 2 MiB
  struct Slot {
    std::atomic<uintptr_t> code;  // the address; 0 = empty (set once, after `entry`)
    std::atomic<uint64_t> entry;  // Check() << 32 | id
  };

  static uint32_t Hash(uintptr_t code) {
    return static_cast<uint32_t>(((code >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
  }
  // What tells code objects at one address apart: their file and name objects and first line.
  static uint32_t CheckOf(uintptr_t filename, uintptr_t name, uint32_t first_line) {
    const uint64_t h = filename * 0x9E3779B97F4A7C15ull ^ name * 0xC2B2AE3D27D4EB4Full ^
                       static_cast<uint64_t>(first_line) * 0x165667B19E3779F9ull;
    return static_cast<uint32_t>(h >> 32);
  }
  uint32_t Check(uintptr_t code) const {
    return CheckOf(Load<uintptr_t>(code + layout_.code_filename),
                   Load<uintptr_t>(code + layout_.code_name),
                   Load<uint32_t>(code + layout_.code_firstlineno));
  }
  // `prefix`: null for the calling thread's own code object (plain loads), else as IdFromPrefix.
  uint32_t Insert(uintptr_t code, uint32_t check, const uint8_t* prefix, int pid);
  // Copies the code object at `code` into a new CodeInfo; nullptr when it is not a code object or
  // the arena is full.
  CodeInfo* Copy(uintptr_t code);
  // Copy() by reads that cannot fault (IdFromPrefix).
  CodeInfo* CopyFromPrefix(uintptr_t code, const uint8_t* prefix, int pid);
  // Arena: room for `bytes` (8-aligned), then Commit() what was used of it.
  uint8_t* Reserve(size_t bytes);
  void Commit(size_t bytes);

  Layout layout_;
  ObjectTypes types_;
  Slot* slots_ = nullptr;
  std::atomic<const CodeInfo*>* infos_ = nullptr;  // [kMaxCodes + 1], by id
  std::atomic<uint32_t> next_id_{1};
  std::mutex insert_mu_;
  // Arena of CodeInfos (insertion mutex held): mmap'ed chunks, never freed.
  uint8_t* chunk_ = nullptr;
  size_t chunk_left_ = 0, arena_bytes_ = 0;
};

// UTF-8 of a compact str object at `obj` (`layout`'s offsets), at most `max` bytes (cut at a
// character boundary) into `out`; returns the bytes written, or -1 when `obj` is not a compact
// str object (type `unicode_type`).
int CopyUnicode(uintptr_t obj, const Layout& layout, uintptr_t unicode_type, char* out, size_t max);
// CopyUnicode by reads that cannot fault (own_memory.h) of process `pid` (ours).
int CopyUnicodeOfPid(int pid, uintptr_t obj, const Layout& layout, uintptr_t unicode_type,
                     char* out, size_t max);

}  // namespace idlescope::python
