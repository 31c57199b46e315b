#include "interpose/hooks/process_env.h"

#include <cstdint>
#include <cstring>

namespace idlescope::proc {
namespace {

constexpr char kPreload[] = "LD_PRELOAD=";
constexpr size_t kPreloadLen = sizeof(kPreload) - 1;
constexpr char kPrefix[] = "IDLESCOPE_";
constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;

const char* BaseName(const char* path, size_t len) {
  for (size_t i = len; i > 0; --i) {
    if (path[i - 1] == '/') return path + i;
  }
  return path;
}

// Length of "NAME=" in entry (including '='), or 0 if there is no '='.
size_t NameLength(const char* entry) {
  const char* eq = strchr(entry, '=');
  return eq == nullptr ? 0 : static_cast<size_t>(eq - entry) + 1;
}

bool HasName(char* const* envp, const char* entry, size_t name_len) {
  if (envp == nullptr) return false;
  for (char* const* e = envp; *e != nullptr; ++e) {
    if (strncmp(*e, entry, name_len) == 0) return true;
  }
  return false;
}

// Whether the LD_PRELOAD entry [start, start + len) names the library at `library_path` (same
// path, or same file name).
bool IsOurLibrary(const char* start, size_t len, const char* library_path) {
  size_t lib_len = strlen(library_path);
  if (len == lib_len && memcmp(start, library_path, len) == 0) return true;
  const char* lib_base = BaseName(library_path, lib_len);
  size_t lib_base_len = lib_len - static_cast<size_t>(lib_base - library_path);
  const char* base = BaseName(start, len);
  size_t base_len = len - static_cast<size_t>(base - start);
  return base_len == lib_base_len && memcmp(base, lib_base, base_len) == 0;
}

// Calls fn(start, len) for each entry of an LD_PRELOAD value (separated by ':' or ' ', ld.so(8))
// until it returns true; returns whether one did.
template <typename Fn>
bool AnyPreloadEntry(const char* value, Fn&& fn) {
  const char* p = value;
  while (*p != '\0') {
    while (*p == ':' || *p == ' ') ++p;
    const char* start = p;
    while (*p != '\0' && *p != ':' && *p != ' ') ++p;
    size_t len = static_cast<size_t>(p - start);
    if (len > 0 && fn(start, len)) return true;
  }
  return false;
}

// LD_PRELOAD's entries other than our library, joined by ':' into `out` (room for strlen(value)
// + 1); returns their length.
size_t WithoutOurLibrary(const char* value, const char* library_path, char* out) {
  size_t n = 0;
  AnyPreloadEntry(value, [&](const char* start, size_t len) {
    if (IsOurLibrary(start, len, library_path)) return false;
    if (n > 0) out[n++] = ':';
    memcpy(out + n, start, len);
    n += len;
    return false;
  });
  out[n] = '\0';
  return n;
}

}  // namespace

const char* PreservedEnv::Store(const char* s, size_t n) {
  if (used_ + n + 1 > kStorage) return nullptr;
  char* dst = storage_ + used_;
  memcpy(dst, s, n);
  dst[n] = '\0';
  used_ += n + 1;
  return dst;
}

void PreservedEnv::Capture(char* const* environ, const char* library_path) {
  used_ = 0;
  count_ = 0;
  library_ = "";
  if (library_path != nullptr) {
    const char* stored = Store(library_path, strlen(library_path));
    if (stored != nullptr) library_ = stored;
  }
  policy_ = ChildrenPolicy::kAll;
  if (environ == nullptr) return;
  for (char* const* e = environ; *e != nullptr && count_ < kMaxEntries; ++e) {
    if (strncmp(*e, kPrefix, kPrefixLen) != 0 || NameLength(*e) == 0) continue;
    const char* stored = Store(*e, strlen(*e));
    if (stored != nullptr) entries_[count_++] = stored;
    constexpr char kChildren[] = "IDLESCOPE_CHILDREN=";
    if (strncmp(*e, kChildren, sizeof(kChildren) - 1) == 0) {
      ParseChildrenPolicy(*e + sizeof(kChildren) - 1, &policy_);
    }
  }
}

void PreservedEnv::AddDefault(const char* name, const char* value) {
  size_t name_len = strlen(name);
  for (size_t i = 0; i < count_; ++i) {
    if (strncmp(entries_[i], name, name_len) == 0 && entries_[i][name_len] == '=') return;
  }
  if (count_ == kMaxEntries) return;
  size_t value_len = strlen(value);
  if (used_ + name_len + 1 + value_len + 1 > kStorage) return;
  char* dst = storage_ + used_;
  memcpy(dst, name, name_len);
  dst[name_len] = '=';
  memcpy(dst + name_len + 1, value, value_len);
  dst[name_len + 1 + value_len] = '\0';
  used_ += name_len + value_len + 2;
  entries_[count_++] = dst;
}

bool PreloadHasLibrary(const char* value, const char* library_path) {
  if (value == nullptr || library_path == nullptr || *library_path == '\0') return false;
  return AnyPreloadEntry(
      value, [&](const char* start, size_t len) { return IsOurLibrary(start, len, library_path); });
}

size_t BuildTracedEnv(char* const* envp, const PreservedEnv& keep, void* arena, size_t capacity,
                      char*** out) {
  size_t n = 0;
  const char* old_preload = nullptr;
  if (envp != nullptr) {
    for (char* const* e = envp; *e != nullptr; ++e, ++n) {
      if (strncmp(*e, kPreload, kPreloadLen) == 0) old_preload = *e + kPreloadLen;
    }
  }
  const char* lib = keep.library_path();
  bool preloads_us = PreloadHasLibrary(old_preload, lib);
  ChildrenPolicy policy = keep.policy();
  if ((policy != ChildrenPolicy::kAll && !preloads_us) || *lib == '\0') {
    *out = const_cast<char**>(envp);  // env: not ours to trace; none: nothing of ours to remove
    return 0;
  }
  if (policy == ChildrenPolicy::kNone) {
    // LD_PRELOAD without our library; no entry at all when nothing else was preloaded.
    size_t preload_bytes = kPreloadLen + strlen(old_preload) + 1;
    size_t needed = (n + 1) * sizeof(char*) + preload_bytes;
    if (needed > capacity || arena == nullptr) return needed;
    char** vec = static_cast<char**>(arena);
    char* preload_entry = reinterpret_cast<char*>(vec + n + 1);
    memcpy(preload_entry, kPreload, kPreloadLen);
    bool keep_entry = WithoutOurLibrary(old_preload, lib, preload_entry + kPreloadLen) > 0;
    size_t k = 0;
    for (char* const* e = envp; *e != nullptr; ++e) {
      if (strncmp(*e, kPreload, kPreloadLen) != 0) {
        vec[k++] = *e;
      } else if (keep_entry) {
        vec[k++] = preload_entry;
      }
    }
    vec[k] = nullptr;
    *out = vec;
    return needed;
  }
  bool add_lib = !preloads_us;
  size_t preload_bytes = 0;
  if (add_lib) {
    preload_bytes = kPreloadLen + strlen(lib) + 1;
    if (old_preload != nullptr && *old_preload != '\0') preload_bytes += 1 + strlen(old_preload);
  }
  size_t missing = 0;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!HasName(envp, keep.entry(i), NameLength(keep.entry(i)))) ++missing;
  }
  // Pointers first (aligned), then the one string we compose (LD_PRELOAD).
  size_t slots = n + missing + (add_lib && old_preload == nullptr ? 1 : 0) + 1;
  size_t needed = slots * sizeof(char*) + preload_bytes;
  if (needed > capacity || arena == nullptr) return needed;

  char** vec = static_cast<char**>(arena);
  char* text = reinterpret_cast<char*>(vec + slots);
  char* preload_entry = nullptr;
  if (add_lib) {
    preload_entry = text;
    char* p = text;
    memcpy(p, kPreload, kPreloadLen);
    p += kPreloadLen;
    size_t lib_len = strlen(lib);
    memcpy(p, lib, lib_len);
    p += lib_len;
    if (old_preload != nullptr && *old_preload != '\0') {
      *p++ = ':';
      size_t old_len = strlen(old_preload);
      memcpy(p, old_preload, old_len);
      p += old_len;
    }
    *p = '\0';
  }
  size_t k = 0;
  if (envp != nullptr) {
    for (char* const* e = envp; *e != nullptr; ++e) {
      bool is_preload = strncmp(*e, kPreload, kPreloadLen) == 0;
      vec[k++] = (is_preload && preload_entry != nullptr) ? preload_entry : *e;
    }
  }
  if (preload_entry != nullptr && old_preload == nullptr) vec[k++] = preload_entry;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!HasName(envp, keep.entry(i), NameLength(keep.entry(i)))) {
      vec[k++] = const_cast<char*>(keep.entry(i));
    }
  }
  vec[k] = nullptr;
  *out = vec;
  return needed;
}

}  // namespace idlescope::proc
