// The real libc functions behind the file I/O, network, wait and process hooks (list: io.def).
//
// Resolved with FindRealSymbol (interpose/real_symbol.h) on first use, all at once. dlsym may
// allocate (dlerror state); that is safe here because none of these hooks is an allocator, and a
// hook that runs before resolution finished (another preloaded library's constructor) resolves
// synchronously.
#pragma once

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "interpose/hooks/io_fd_table.h"

namespace idlescope::io {

struct LibcFunctions {
#define IDLESCOPE_LIBC(name, ret, params) ret(*name) params = nullptr;
#include "interpose/hooks/io.def"
#undef IDLESCOPE_LIBC
};

namespace detail {
// What the burst hooks (read/write/send/recv, stdio) read on every call, in one page: each distinct
// page a hook touches after its syscall costs a TLB miss there (~20 ns on the build VMs, as much
// as all of the hook's instructions; docs/architecture.md, "Measured overhead"), and where the
// linker put three modules' globals was a matter of luck.
struct alignas(4096) HotPage {
  LibcFunctions libc;                        // Libc()
  std::atomic<bool> libc_resolved{false};    // Libc()
  std::atomic<uint8_t> clock{0};             // call_clock.h (ClockSource)
  std::atomic<uint64_t> ns_per_tick_q32{0};  // call_clock.h
  FdTable fds;                               // io_record.h (Fds())
};
static_assert(sizeof(HotPage) == 4096, "the hooks' hot data must fit one page");
extern HotPage g_hot;
void ResolveLibc();
}  // namespace detail

inline const LibcFunctions& Libc() {
  if (!detail::g_hot.libc_resolved.load(std::memory_order_acquire)) detail::ResolveLibc();
  return detail::g_hot.libc;
}

}  // namespace idlescope::io
