// Interned strings and the string half of the public API (InternString, InternPath, InternArgv,
// ApiName::Intern).
#include "interpose/interned_strings.h"

#include <atomic>
#include <cerrno>
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

// The program's strings. The mutex is a constant-initialised std::mutex, usable before any
// constructor ran (another preloaded library's constructor may call a hook first); the map is
// created under it at the first use. Never destroyed (hooks may run after static destructors).
struct ProgramStrings {
  std::mutex mu;
  StringIds* ids = nullptr;                               // under mu
  std::atomic<StringRef*> chunks[kMaxStringChunks] = {};  // written under mu, read by flushes
  std::atomic<uint32_t> published{0};                     // ids 1..published have their StringRef
  uint64_t refused = 0;                                   // table full (under mu)
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

// Under the program strings' mutex.
uint32_t InternProgramStringLocked(std::string_view s) {
  ProgramStrings& p = g_strings.program;
  if (p.ids == nullptr) p.ids = new StringIds();
  auto it = p.ids->find(s);
  if (it != p.ids->end()) return it->second;
  uint32_t index = p.published.load(std::memory_order_relaxed);
  uint32_t chunk = index >> kStringChunkBits;
  if (chunk >= kMaxStringChunks) {
    ++p.refused;
    return 0;
  }
  StringRef* refs = p.chunks[chunk].load(std::memory_order_relaxed);
  if (refs == nullptr) {
    refs = new StringRef[kStringChunk];
    p.chunks[chunk].store(refs, std::memory_order_relaxed);
  }
  uint32_t id = index + 1;
  auto inserted = p.ids->emplace(std::string(s), id).first;
  refs[index & (kStringChunk - 1)] = {inserted->first.data(),
                                      static_cast<uint32_t>(inserted->first.size())};
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
  if (!redact::Paths() && !redact::Cmdline()) return InternString(nul_separated);
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
