// The real libc functions behind the file I/O, network and process hooks (list: io.def).
//
// Resolved with dlsym(RTLD_NEXT) on first use, all at once. dlsym may allocate (dlerror state);
// that is safe here because none of these hooks is an allocator, and a hook that runs before
// resolution finished (another preloaded library's constructor) resolves synchronously.
#pragma once

#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>

// Exported hook (the library is built with hidden visibility).
#define IDLESCOPE_HOOK extern "C" __attribute__((visibility("default")))

namespace idlescope::io {

struct LibcFunctions {
#define IDLESCOPE_LIBC(name, ret, params) ret(*name) params = nullptr;
#include "interpose/hooks/io.def"
#undef IDLESCOPE_LIBC
};

namespace detail {
extern LibcFunctions g_libc;
extern std::atomic<bool> g_libc_resolved;
void ResolveLibc();
}  // namespace detail

inline const LibcFunctions& Libc() {
  if (!detail::g_libc_resolved.load(std::memory_order_acquire)) detail::ResolveLibc();
  return detail::g_libc;
}

}  // namespace idlescope::io
