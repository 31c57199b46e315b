// The environment an exec'd or spawned child gets. By default (IDLESCOPE_CHILDREN=all) it stays
// traced: programs pass their own envp (subprocess with env=..., execle, posix_spawn) or clear it
// (env -i, execve with {NULL}), which would drop LD_PRELOAD and IDLESCOPE_OUT and lose the child
// (uftrace and heaptrack re-add their variables the same way). IDLESCOPE_CHILDREN=env traces a
// child only when the program kept LD_PRELOAD in its environment, =none traces none (our library
// is taken out of the child's LD_PRELOAD).
//
// Pure and allocation-free: it runs between fork and exec, where only async-signal-safe work is
// allowed, and writes into a caller-provided arena (mmap'ed by the hooks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace idlescope::proc {

// IDLESCOPE_CHILDREN: which exec'd and spawned programs are traced.
enum class ChildrenPolicy : uint8_t {
  kAll,   // every one: LD_PRELOAD and the IDLESCOPE_* variables are put back if the env lacks them
  kEnv,   // those whose environment still preloads our library (then missing IDLESCOPE_* added)
  kNone,  // none: our library is removed from their LD_PRELOAD
};
// "all", "env" or "none"; false (and *out untouched) for anything else. Inline: the recorder's
// configuration (config.cc, linked without the hooks into tests) warns about a bad value.
inline bool ParseChildrenPolicy(const char* value, ChildrenPolicy* out) {
  if (value == nullptr) return false;
  if (strcmp(value, "all") == 0) {
    *out = ChildrenPolicy::kAll;
  } else if (strcmp(value, "env") == 0) {
    *out = ChildrenPolicy::kEnv;
  } else if (strcmp(value, "none") == 0) {
    *out = ChildrenPolicy::kNone;
  } else {
    return false;
  }
  return true;
}

// What the process started with: our library's absolute path and every IDLESCOPE_* variable.
// Captured once at load time, because the program may later change its own environ.
class PreservedEnv {
 public:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kStorage = 16384;

  // `environ` as at load; `library_path` = the absolute path of libidlescope.so (dladdr).
  // IDLESCOPE_CHILDREN is read from it (default all, also for a bad value).
  void Capture(char* const* environ, const char* library_path);
  // Adds "name=value" to what children get, unless the captured environment had `name` already.
  void AddDefault(const char* name, const char* value);

  ChildrenPolicy policy() const { return policy_; }
  const char* library_path() const { return library_; }
  size_t size() const { return count_; }
  const char* entry(size_t i) const { return entries_[i]; }  // "IDLESCOPE_X=value"

 private:
  const char* Store(const char* s, size_t n);

  char storage_[kStorage] = {};
  size_t used_ = 0;
  const char* library_ = "";
  const char* entries_[kMaxEntries] = {};
  size_t count_ = 0;
  ChildrenPolicy policy_ = ChildrenPolicy::kAll;
};

// True if the LD_PRELOAD value `value` (entries separated by ':' or ' ') already loads the
// library at `library_path` (same path, or same file name).
bool PreloadHasLibrary(const char* value, const char* library_path);

// Builds the child's environment, by keep.policy(): every entry of `envp` (may be null), with
// LD_PRELOAD extended (or added) to load our library first (all) or with our library taken out
// of it (none), and every preserved IDLESCOPE_* variable the program did not set itself added
// (all; env when envp preloads us). The pointer array and any new strings go into `arena`;
// strings of envp are reused. Returns the arena bytes needed; when that exceeds `capacity`
// nothing was built and *out is untouched. On success *out points to a NULL-terminated array
// inside the arena. Returns 0 with *out = envp when the child gets envp as it is.
size_t BuildTracedEnv(char* const* envp, const PreservedEnv& keep, void* arena, size_t capacity,
                      char*** out);

}  // namespace idlescope::proc
