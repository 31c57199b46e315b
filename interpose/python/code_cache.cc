#include "interpose/python/code_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "interpose/python/own_memory.h"

namespace idlescope::python {

namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kMaxArenaBytes = 64u << 20;

// Pages are made at their first write. The slot table's entries land on random pages, so a
// process's first few hundred code objects mostly pay a page fault each (pystacks_bench: a
// first-seen innermost code object 3.8 us more than a seen one, 0.4 us before it when the tables
// were made at once). Making the 2.5 MiB at once (MAP_POPULATE) cost every Python process 0.9 ms
// at its start, whether it took a stack or not: `python3 -c pass` +2.2 -> +1.3 ms preloaded, and
// even `import torch` (~600 code objects in its stacks) +30.4 -> +19.1 ms (medians of interleaved
// runs, 2-core VM).
void* MapZeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// A field of bytes copied from the interpreter's memory.
template <typename T>
T Get(const uint8_t* bytes, uint32_t offset) {
  T v;
  memcpy(&v, bytes + offset, sizeof(v));
  return v;
}

size_t PutUtf8(uint32_t c, char* out, size_t left) {
  if (c >= 0xD800 && c < 0xE000) c = 0xFFFD;  // a lone surrogate (str allows them, UTF-8 not)
  char b[4];
  size_t n;
  if (c < 0x80) {
    b[0] = static_cast<char>(c);
    n = 1;
  } else if (c < 0x800) {
    b[0] = static_cast<char>(0xC0 | (c >> 6));
    b[1] = static_cast<char>(0x80 | (c & 63));
    n = 2;
  } else if (c < 0x10000) {
    b[0] = static_cast<char>(0xE0 | (c >> 12));
    b[1] = static_cast<char>(0x80 | ((c >> 6) & 63));
    b[2] = static_cast<char>(0x80 | (c & 63));
    n = 3;
  } else {
    b[0] = static_cast<char>(0xF0 | (c >> 18));
    b[1] = static_cast<char>(0x80 | ((c >> 12) & 63));
    b[2] = static_cast<char>(0x80 | ((c >> 6) & 63));
    b[3] = static_cast<char>(0x80 | (c & 63));
    n = 4;
  }
  if (n > left) return 0;
  memcpy(out, b, n);
  return n;
}

}  // namespace

int CopyUnicode(uintptr_t obj, const Layout& layout, uintptr_t unicode_type, char* out,
                size_t max) {
  if (obj == 0 || (obj & 7) != 0) return -1;
  if (CodeCache::Load<uintptr_t>(obj + layout.ob_type) != unicode_type) return -1;
  const uint32_t state = CodeCache::Load<uint32_t>(obj + layout.unicode_state);
  const int64_t length = CodeCache::Load<int64_t>(obj + layout.unicode_length);
  const uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  // Code objects' names and files are always compact (made by PyUnicode_New); a legacy string
  // keeps its data elsewhere.
  if (compact == 0 || length < 0 || (kind != 1 && kind != 2 && kind != 4)) return -1;
  const uintptr_t data =
      obj + (ascii != 0 ? layout.unicode_ascii_size : layout.unicode_compact_size);
  size_t n = 0;
  if (ascii != 0) {
    n = static_cast<size_t>(length) < max ? static_cast<size_t>(length) : max;
    memcpy(out, reinterpret_cast<const void*>(data), n);
    return static_cast<int>(n);
  }
  for (int64_t i = 0; i < length; ++i) {
    uint32_t c = kind == 1   ? CodeCache::Load<uint8_t>(data + i)
                 : kind == 2 ? CodeCache::Load<uint16_t>(data + 2 * i)
                             : CodeCache::Load<uint32_t>(data + 4 * i);
    size_t put = PutUtf8(c, out + n, max - n);
    if (put == 0) break;
    n += put;
  }
  return static_cast<int>(n);
}

int CopyUnicodeOfPid(int pid, uintptr_t obj, const Layout& layout, uintptr_t unicode_type,
                     char* out, size_t max) {
  // The fields read lie in PyASCIIObject, the smallest str header.
  uint8_t header[128];
  if (obj == 0 || (obj & 7) != 0 || layout.unicode_ascii_size > sizeof(header) ||
      !ReadOwnMemory(pid, obj, header, layout.unicode_ascii_size) ||
      Get<uintptr_t>(header, layout.ob_type) != unicode_type) {
    return -1;
  }
  const uint32_t state = Get<uint32_t>(header, layout.unicode_state);
  const int64_t length = Get<int64_t>(header, layout.unicode_length);
  const uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (compact == 0 || length < 0 || (kind != 1 && kind != 2 && kind != 4)) return -1;
  const uintptr_t data =
      obj + (ascii != 0 ? layout.unicode_ascii_size : layout.unicode_compact_size);
  if (ascii != 0) {
    const size_t n = static_cast<size_t>(length) < max ? static_cast<size_t>(length) : max;
    return n == 0 || ReadOwnMemory(pid, data, out, n) ? static_cast<int>(n) : -1;
  }
  // At most `max` characters can fit: read them in chunks and encode.
  size_t n = 0;
  const uint64_t chars = std::min<uint64_t>(static_cast<uint64_t>(length), max);
  uint8_t chunk[1024];
  const size_t per_chunk = sizeof(chunk) / kind;
  for (uint64_t done = 0; done < chars;) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(chars - done, per_chunk));
    if (!ReadOwnMemory(pid, data + done * kind, chunk, take * kind)) return -1;
    for (size_t i = 0; i < take; ++i) {
      const uint32_t c = kind == 1   ? chunk[i]
                         : kind == 2 ? Get<uint16_t>(chunk, static_cast<uint32_t>(2 * i))
                                     : Get<uint32_t>(chunk, static_cast<uint32_t>(4 * i));
      const size_t put = PutUtf8(c, out + n, max - n);
      if (put == 0) return static_cast<int>(n);
      n += put;
    }
    done += take;
  }
  return static_cast<int>(n);
}

bool CodeCache::Init(const Layout& layout, const ObjectTypes& types) {
  layout_ = layout;
  types_ = types;
  slots_ = static_cast<Slot*>(MapZeroed(sizeof(Slot) * kSlots));
  infos_ = static_cast<std::atomic<const CodeInfo*>*>(
      MapZeroed(sizeof(std::atomic<const CodeInfo*>) * (kMaxCodes + 1)));
  return slots_ != nullptr && infos_ != nullptr;
}

uint8_t* CodeCache::Reserve(size_t bytes) {
  bytes = (bytes + 7) & ~size_t{7};
  if (bytes > chunk_left_) {
    const size_t size = bytes > kChunkBytes ? bytes : kChunkBytes;
    if (arena_bytes_ + size > kMaxArenaBytes) return nullptr;
    void* p = MapZeroed(size);
    if (p == nullptr) return nullptr;
    arena_bytes_ += size;
    chunk_ = static_cast<uint8_t*>(p);
    chunk_left_ = size;
  }
  return chunk_;
}

void CodeCache::Commit(size_t bytes) {
  bytes = (bytes + 7) & ~size_t{7};
  chunk_ += bytes;
  chunk_left_ -= bytes;
}

CodeInfo* CodeCache::Copy(uintptr_t code) {
  if (Load<uintptr_t>(code + layout_.ob_type) != types_.code) return nullptr;
  const uintptr_t filename = Load<uintptr_t>(code + layout_.code_filename),
                  name = Load<uintptr_t>(code + layout_.code_name),
                  table = Load<uintptr_t>(code + layout_.code_linetable);
  const int32_t first_line = Load<int32_t>(code + layout_.code_firstlineno);
  if (table == 0 || (table & 7) != 0 || Load<uintptr_t>(table + layout_.ob_type) != types_.bytes) {
    return nullptr;
  }
  int64_t table_size = Load<int64_t>(table + layout_.bytes_size);
  if (table_size < 0) return nullptr;
  if (table_size > kMaxTableBytes) table_size = kMaxTableBytes;
  // The strings are decoded straight into the arena (no large buffer on the hooked thread's
  // stack): reserve for the longest copies, commit what they took.
  uint8_t* p = Reserve(sizeof(CodeInfo) + kMaxFileBytes + kMaxNameBytes + table_size);
  if (p == nullptr) return nullptr;
  auto* info = new (p) CodeInfo();
  char* out = reinterpret_cast<char*>(info + 1);
  const int file_size = CopyUnicode(filename, layout_, types_.unicode, out, kMaxFileBytes);
  if (file_size < 0) return nullptr;
  const int name_size = CopyUnicode(name, layout_, types_.unicode, out + file_size, kMaxNameBytes);
  if (name_size < 0) return nullptr;
  memcpy(out + file_size + name_size, reinterpret_cast<const void*>(table + layout_.bytes_data),
         static_cast<size_t>(table_size));
  info->first_line = first_line;
  info->file_size = static_cast<uint32_t>(file_size);
  info->name_size = static_cast<uint32_t>(name_size);
  info->table_size = static_cast<uint32_t>(table_size);
  Commit(sizeof(CodeInfo) + info->file_size + info->name_size + info->table_size);
  return info;
}

uint32_t CodeCache::IdFromPrefix(uintptr_t code, const uint8_t* prefix, int pid) {
  if (slots_ == nullptr || code == 0 || (code & 7) != 0) return 0;
  if (Get<uintptr_t>(prefix, layout_.ob_type) != types_.code) return 0;
  const uint32_t check = CheckOf(Get<uintptr_t>(prefix, layout_.code_filename),
                                 Get<uintptr_t>(prefix, layout_.code_name),
                                 Get<uint32_t>(prefix, layout_.code_firstlineno));
  for (uint32_t i = Hash(code), probes = 0; probes < kSlots; i = (i + 1) & (kSlots - 1), ++probes) {
    const Slot& s = slots_[i];
    const uintptr_t at = s.code.load(std::memory_order_acquire);
    if (at == 0) break;
    if (at != code) continue;
    const uint64_t entry = s.entry.load(std::memory_order_acquire);
    if (static_cast<uint32_t>(entry >> 32) == check) return static_cast<uint32_t>(entry);
    break;
  }
  return Insert(code, check, prefix, pid);
}

CodeInfo* CodeCache::CopyFromPrefix(uintptr_t code, const uint8_t* prefix, int pid) {
  const uintptr_t filename = Get<uintptr_t>(prefix, layout_.code_filename),
                  name = Get<uintptr_t>(prefix, layout_.code_name),
                  table = Get<uintptr_t>(prefix, layout_.code_linetable);
  const int32_t first_line = Get<int32_t>(prefix, layout_.code_firstlineno);
  uint8_t header[64];
  if (table == 0 || (table & 7) != 0 || layout_.bytes_data > sizeof(header) ||
      !ReadOwnMemory(pid, table, header, layout_.bytes_data) ||
      Get<uintptr_t>(header, layout_.ob_type) != types_.bytes) {
    return nullptr;
  }
  int64_t table_size = Get<int64_t>(header, layout_.bytes_size);
  if (table_size < 0) return nullptr;
  if (table_size > kMaxTableBytes) table_size = kMaxTableBytes;
  uint8_t* p = Reserve(sizeof(CodeInfo) + kMaxFileBytes + kMaxNameBytes + table_size);
  if (p == nullptr) return nullptr;
  auto* info = new (p) CodeInfo();
  char* out = reinterpret_cast<char*>(info + 1);
  const int file_size =
      CopyUnicodeOfPid(pid, filename, layout_, types_.unicode, out, kMaxFileBytes);
  if (file_size < 0) return nullptr;
  const int name_size =
      CopyUnicodeOfPid(pid, name, layout_, types_.unicode, out + file_size, kMaxNameBytes);
  if (name_size < 0) return nullptr;
  if (table_size > 0 && !ReadOwnMemory(pid, table + layout_.bytes_data, out + file_size + name_size,
                                       static_cast<size_t>(table_size))) {
    return nullptr;
  }
  // Still the same code object (it may have been freed and its memory reused while we read).
  uint8_t again[512];
  if (layout_.code_bytes > sizeof(again) || !ReadOwnMemory(pid, code, again, layout_.code_bytes) ||
      memcmp(again, prefix, layout_.code_bytes) != 0) {
    return nullptr;
  }
  info->first_line = first_line;
  info->file_size = static_cast<uint32_t>(file_size);
  info->name_size = static_cast<uint32_t>(name_size);
  info->table_size = static_cast<uint32_t>(table_size);
  Commit(sizeof(CodeInfo) + info->file_size + info->name_size + info->table_size);
  return info;
}

uint32_t CodeCache::Insert(uintptr_t code, uint32_t check, const uint8_t* prefix, int pid) {
  if (slots_ == nullptr || code == 0 || (code & 7) != 0) return 0;
  std::lock_guard<std::mutex> lock(insert_mu_);
  uint32_t i = Hash(code);
  for (uint32_t probes = 0; probes < kSlots; i = (i + 1) & (kSlots - 1), ++probes) {
    const uintptr_t at = slots_[i].code.load(std::memory_order_relaxed);  // only inserters write
    if (at == 0 || at == code) break;
  }
  Slot& s = slots_[i];
  const bool reused = s.code.load(std::memory_order_relaxed) == code;
  if (reused) {
    const uint64_t entry = s.entry.load(std::memory_order_relaxed);
    if (static_cast<uint32_t>(entry >> 32) == check) return static_cast<uint32_t>(entry);
  } else if (s.code.load(std::memory_order_relaxed) != 0) {
    return 0;  // the table is full
  }
  const uint32_t id = next_id_.load(std::memory_order_relaxed);
  if (id > kMaxCodes) return 0;
  CodeInfo* info = prefix != nullptr ? CopyFromPrefix(code, prefix, pid) : Copy(code);
  if (info == nullptr) return 0;
  infos_[id].store(info, std::memory_order_release);
  next_id_.store(id + 1, std::memory_order_relaxed);
  // The id's copy is published before the entry that hands the id out.
  s.entry.store(uint64_t{check} << 32 | id, std::memory_order_release);
  if (!reused) s.code.store(code, std::memory_order_release);
  return id;
}

}  // namespace idlescope::python
