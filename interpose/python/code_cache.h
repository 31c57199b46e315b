// The code objects seen on Python stacks, each read once: a lock-free table from the code object's
// address to a small id, and per id a copy of what the writer needs to make a frame of it (file,
// qualified name, first line, line table). The copy is taken on the capturing thread, while the
// code object is alive for certain (a frame of that thread holds it): the writer resolves frames
// later, when the code object may have been freed.
//
// An address can be reused by another code object after the first one is freed (code compiled at
// run time: exec, torch.fx, dataclasses); an entry therefore matches only when the code object
// still has the same file and name objects and first line, read on every lookup.
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
  // be read (not a code object, unreadable memory) or the cache is full. Lock-free when the code
  // object is known; a new one takes the insertion mutex.
  uint32_t Id(uintptr_t code) {
    for (uint32_t i = Hash(code), probes = 0; probes < kSlots;
         i = (i + 1) & (kSlots - 1), ++probes) {
      const Slot& s = slots_[i];
      const uintptr_t at = s.code.load(std::memory_order_acquire);
      if (at == 0) break;
      if (at == code && Matches(s, code)) return s.id;
    }
    return Insert(code);
  }

  // The copy of code `id`; nullptr for an id never handed out. Any thread.
  const CodeInfo* Info(uint32_t id) const {
    return id == 0 || id > kMaxCodes ? nullptr : infos_[id].load(std::memory_order_acquire);
  }
  uint32_t size() const { return next_id_.load(std::memory_order_relaxed) - 1; }

  void LockForFork() { insert_mu_.lock(); }
  void UnlockAfterFork() { insert_mu_.unlock(); }

  // Reads of the interpreter's memory on the hot path. The objects are those of the calling
  // thread's live frames: alive and mapped (see pystacks.cc for the one case that is validated).
  template <typename T>
  static T Load(uintptr_t addr) {
    T v;
    __builtin_memcpy(&v, reinterpret_cast<const void*>(addr), sizeof(v));
    return v;
  }

 private:
  static constexpr uint32_t kSlotBits = 17;
  static constexpr uint32_t kSlots = 1u << kSlotBits;  // kMaxCodes at most half full
  struct Slot {
    std::atomic<uintptr_t> code;  // published last (release), 0 = empty
    uintptr_t filename, name;
    int32_t first_line;
    uint32_t id;
  };

  static uint32_t Hash(uintptr_t code) {
    return static_cast<uint32_t>(((code >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
  }
  // The entry's code object is still the one it copied (same file and name objects, first line).
  bool Matches(const Slot& s, uintptr_t code) const {
    return Load<uintptr_t>(code + layout_.code_filename) == s.filename &&
           Load<uintptr_t>(code + layout_.code_name) == s.name &&
           Load<int32_t>(code + layout_.code_firstlineno) == s.first_line;
  }
  uint32_t Insert(uintptr_t code);
  // Copies the code object at `code` (its first layout_.code_bytes bytes already in `head`) into
  // a new CodeInfo; nullptr when it is not a code object or the arena is full.
  CodeInfo* Copy(const uint8_t* head);
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
  bool safe_reads_ = true;  // process_vm_readv works here (seccomp may forbid it)
};

// UTF-8 of a compact str object at `obj` (`layout`'s offsets), at most `max` bytes (cut at a
// character boundary) into `out`; returns the bytes written, or -1 when `obj` is not a compact
// str object (type `unicode_type`).
int CopyUnicode(uintptr_t obj, const Layout& layout, uintptr_t unicode_type, char* out, size_t max);

}  // namespace idlescope::python
