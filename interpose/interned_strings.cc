// Interned strings and the string half of the public API (InternString, InternPath, InternArgv,
// ApiName::Intern).
#include "interpose/interned_strings.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "interpose/recorder.h"

namespace idlescope {
namespace strings {

namespace detail {
// Set by FlushScope: the calling thread is flushing (hooks do not record meanwhile: t_hook_depth),
// so InternString uses the flush's table.
__thread bool t_flushing __attribute__((tls_model("initial-exec"))) = false;
}  // namespace detail

namespace {

struct StringRef {
  const char* data;
  uint32_t size;
};
constexpr uint32_t kStringChunkBits = 12;
constexpr uint32_t kStringChunk = 1u << kStringChunkBits;
constexpr uint32_t kMaxStringChunks = 4096;  // 16M strings; beyond that InternString gives 0

// std::string keys (nodes do not move), found by string_view without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
using StringIds = std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>;

// The program strings live in pages of their own, never in malloc's. A hook may intern from a
// signal handler that interrupted the program inside malloc, holding its arena's lock: CPython's C
// handler writes the signal number to the wakeup fd (asyncio's, signal.set_wakeup_fd), and the
// write hook's first call on that fd names the socket. A malloc there waits for that lock forever:
// the process hung (tests/python/python_stacks_test.cc, HooksInSignalHandlersTakeNoPythonFrames,
// 1 run in 25). The fd table (hooks/io_fd_table.h) and the stack trie (stacks.cc) are made the
// same way. The mutex cannot be the interrupted thread's own: InternString runs as a hook
// (t_hook_depth), and hooks never record when nested.
void* Pages(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// The index: open addressing over (hash, id), half full at most, doubled by rehashing.
struct StringSlot {
  uint32_t id;  // 0: empty
  uint32_t hash;
};
constexpr size_t kFirstIndexSlots = 4096;
// The strings' bytes: bump allocation in blocks, never freed (ids are stable for the process).
constexpr size_t kByteBlock = size_t{1} << 20;

// The program's strings. The mutex is a constant-initialised std::mutex, usable before any
// constructor ran (another preloaded library's constructor may call a hook first); the pages are
// mapped under it at the first use. Never unmapped but the index a rehash replaced (hooks may run
// after static destructors).
struct ProgramStrings {
  std::mutex mu;
  StringSlot* index = nullptr;  // under mu
  size_t index_slots = 0;       // a power of two
  char* bytes = nullptr;        // the current block's free part (under mu)
  size_t bytes_left = 0;
  std::atomic<StringRef*> chunks[kMaxStringChunks] = {};  // written under mu, read by flushes
  std::atomic<uint32_t> published{0};                     // ids 1..published have their StringRef
  uint64_t refused = 0;                                   // table full or no memory (under mu)
  uint32_t written = 0;  // written to the current file (under the flush lock)
};

// Strings interned by a flush (function, module and Python file names of new frames): a table of
// the flush's own, under the flush lock, never the program strings' mutex, with ids from
// kFlushStringIds up. The thread that holds that mutex may be the one a signal stopped in a hook
// (every open interns its path), and the final flush of that signal runs after the flush under
// way, on the same writer: a periodic flush waiting for that mutex kept the final one from
// starting for the handler's 3 s, and the process died with neither its last events nor its
// footer. Only frames and modules use these ids, and a new file (a forked child's) resolves those
// again (Symbolizer::Reset): the table is emptied with them.
constexpr uint32_t kFlushStringIds = 0x7f000000u;
constexpr uint32_t kMaxFlushStrings = 1u << 24;
struct FlushStrings {
  StringIds* ids = nullptr;
  std::vector<const std::string*>* by_id = nullptr;  // by id - kFlushStringIds (the map's keys)
  uint32_t written = 0;                              // written to the current file
};

struct InternedStrings {
  ProgramStrings program;
  FlushStrings flush;
};
static_assert(std::is_trivially_destructible_v<InternedStrings>);
constinit InternedStrings g_strings;

uint32_t InternFlushString(std::string_view s) {
  FlushStrings& f = g_strings.flush;
  auto it = f.ids->find(s);
  if (it != f.ids->end()) return it->second;
  if (f.by_id->size() >= kMaxFlushStrings) return 0;
  uint32_t id = kFlushStringIds + static_cast<uint32_t>(f.by_id->size());
  f.by_id->push_back(&f.ids->emplace(std::string(s), id).first->first);
  return id;
}

// The string of a published id (1..published).
const StringRef& PublishedString(uint32_t id);

uint32_t HashOf(std::string_view s) { return static_cast<uint32_t>(StringHash()(s)); }

// Under the program strings' mutex: `index_slots` slots, the published ids in them.
bool RebuildIndex(ProgramStrings& p, size_t slots) {
  auto* index = static_cast<StringSlot*>(Pages(slots * sizeof(StringSlot)));
  if (index == nullptr) return false;
  for (size_t i = 0; i < p.index_slots; ++i) {
    StringSlot slot = p.index[i];
    if (slot.id == 0) continue;
    size_t at = slot.hash & (slots - 1);
    while (index[at].id != 0) at = (at + 1) & (slots - 1);
    index[at] = slot;
  }
  if (p.index != nullptr) munmap(p.index, p.index_slots * sizeof(StringSlot));
  p.index = index;
  p.index_slots = slots;
  return true;
}

// Under the program strings' mutex: a copy of `s` in the strings' pages, nullptr without memory.
const char* KeepBytes(ProgramStrings& p, std::string_view s) {
  if (s.size() > p.bytes_left) {
    size_t block = std::max(kByteBlock, (s.size() + 4095) & ~size_t{4095});
    char* pages = static_cast<char*>(Pages(block));
    if (pages == nullptr) return nullptr;
    p.bytes = pages;
    p.bytes_left = block;
  }
  char* kept = p.bytes;
  if (!s.empty()) memcpy(kept, s.data(), s.size());
  p.bytes += s.size();
  p.bytes_left -= s.size();
  return kept;
}

// Under the program strings' mutex.
uint32_t InternProgramStringLocked(std::string_view s) {
  ProgramStrings& p = g_strings.program;
  uint32_t index = p.published.load(std::memory_order_relaxed);
  // At most half full after this insert.
  if ((index + 1) * size_t{2} > p.index_slots &&
      !RebuildIndex(p, p.index_slots == 0 ? kFirstIndexSlots : p.index_slots * 2)) {
    ++p.refused;
    return 0;
  }
  uint32_t hash = HashOf(s);
  size_t at = hash & (p.index_slots - 1);
  for (; p.index[at].id != 0; at = (at + 1) & (p.index_slots - 1)) {
    if (p.index[at].hash != hash) continue;
    const StringRef& ref = PublishedString(p.index[at].id);
    if (std::string_view(ref.data, ref.size) == s) return p.index[at].id;
  }
  uint32_t chunk = index >> kStringChunkBits;
  if (chunk >= kMaxStringChunks || s.size() > UINT32_MAX) {
    ++p.refused;
    return 0;
  }
  StringRef* refs = p.chunks[chunk].load(std::memory_order_relaxed);
  if (refs == nullptr) {
    refs = static_cast<StringRef*>(Pages(kStringChunk * sizeof(StringRef)));
    if (refs == nullptr) {
      ++p.refused;
      return 0;
    }
    p.chunks[chunk].store(refs, std::memory_order_relaxed);
  }
  const char* kept = KeepBytes(p, s);
  if (kept == nullptr) {
    ++p.refused;
    return 0;
  }
  uint32_t id = index + 1;
  refs[index & (kStringChunk - 1)] = {kept, static_cast<uint32_t>(s.size())};
  p.index[at] = {id, hash};
  // Publishes the StringRef (and its chunk) to flushes, which read without the mutex.
  p.published.store(id, std::memory_order_release);
  return id;
}

// The string of a published id (1..published).
const StringRef& PublishedString(uint32_t id) {
  uint32_t index = id - 1;
  return g_strings.program.chunks[index >> kStringChunkBits].load(
      std::memory_order_relaxed)[index & (kStringChunk - 1)];
}

}  // namespace

void Init() {
  g_strings.flush.ids = new StringIds();
  g_strings.flush.by_id = new std::vector<const std::string*>();
}

void TakeUnwritten(trace::Interned* out) {
  // Every id an event or frame of this flush uses was published before it was recorded (no lock:
  // see the header).
  ProgramStrings& p = g_strings.program;
  uint32_t published = p.published.load(std::memory_order_acquire);
  for (; p.written < published; ++p.written) {
    const StringRef& ref = PublishedString(p.written + 1);
    out->strings.push_back({p.written + 1, std::string(ref.data, ref.size)});
  }
  FlushStrings& f = g_strings.flush;
  for (; f.written < f.by_id->size(); ++f.written) {
    out->strings.push_back({kFlushStringIds + f.written, *(*f.by_id)[f.written]});
  }
}

void LockForFork() { g_strings.program.mu.lock(); }
void UnlockInParent() { g_strings.program.mu.unlock(); }

void ResetInChild() {
  g_strings.program.mu.unlock();
  g_strings.program.written = 0;
  g_strings.flush.ids->clear();
  g_strings.flush.by_id->clear();
  g_strings.flush.written = 0;
}

}  // namespace strings

// ---------------------------------------------------------------------------------------------
// Public API (recorder.h).

uint32_t InternString(std::string_view s) {
  int saved = errno;
  ++detail::t_hook_depth;
  uint32_t id;
  if (strings::InFlush()) {
    id = strings::InternFlushString(s);
  } else {
    std::lock_guard<std::mutex> lock(strings::g_strings.program.mu);
    id = strings::InternProgramStringLocked(s);
  }
  --detail::t_hook_depth;
  errno = saved;
  return id;
}

uint32_t InternPath(std::string_view path, redact::PathKind kind) {
  if (!redact::Paths()) return InternString(path);
  int saved = errno;
  std::string kept = redact::Path(path, kind);
  errno = saved;
  return InternString(kept);
}

uint32_t InternArgv(std::string_view nul_separated) {
  if (!redact::Paths() && !redact::Cmdline() && !redact::Secrets()) {
    return InternString(nul_separated);
  }
  int saved = errno;
  std::string kept = redact::Argv(nul_separated);
  errno = saved;
  return InternString(kept);
}

uint32_t ApiName::Intern() {
  uint32_t id = InternString(name_);
  if (id != 0) id_.store(id, std::memory_order_relaxed);
  return id;
}

}  // namespace idlescope
