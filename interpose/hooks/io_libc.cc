#include "interpose/hooks/io_libc.h"

#include <mutex>

#include "interpose/real_symbol.h"

namespace idlescope::io::detail {

constinit HotPage g_hot;

void ResolveLibc() {
  // All at once into the hot page (io_libc.h), not as RealFunctions: one check for all of them.
  // A recursive mutex: should dlsym ever re-enter a hook on this thread, the nested call resolves
  // again (idempotent) instead of deadlocking.
  static std::recursive_mutex mutex;
  std::lock_guard<std::recursive_mutex> lock(mutex);
  if (g_hot.libc_resolved.load(std::memory_order_relaxed)) return;
#define IDLESCOPE_LIBC(name, ret, params) \
  g_hot.libc.name = reinterpret_cast<ret(*) params>(FindRealSymbol(#name));
#include "interpose/hooks/io.def"
#undef IDLESCOPE_LIBC
  g_hot.libc_resolved.store(true, std::memory_order_release);
}

// Resolve before main: most hooks then never take the slow path.
__attribute__((constructor)) void ResolveAtLoad() { ResolveLibc(); }

}  // namespace idlescope::io::detail
