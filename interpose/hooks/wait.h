// Recording of blocking waits (wait.cc: poll, select, epoll, the sleeps, signal waits), shared
// with accept (net.cc). A wait is timed with two call-clock readings; only a long one becomes an
// event (WAIT in proto/trace.proto), described after it returned.
#pragma once

#include <cstdint>

#include "interpose/call_clock.h"

namespace idlescope::io {

// A wait shorter than this records nothing: it costs its two clock readings and a compare, and no
// event. 1 ms is the analyzer's default --min-gap: the idle gaps it attributes one by one are at
// least that long, and a shorter wait cannot hold one up on its own (docs/attribution.md, "Waits").
inline constexpr uint64_t kWaitRecordNs = 1'000'000;

// Whether a wait timed from `t0` to `t1` (CallTicks) is long enough to record.
inline bool LongWait(uint64_t t0, uint64_t t1) { return TickSpanNs(t1 - t0) >= kWaitRecordNs; }

// Records a long wait on descriptor `fd` alone (accept's listening socket): a WAIT event with
// `result` (0 or -errno). Call from inside an active HookGuard, errno saved by the caller.
void RecordFdWait(uint32_t (*api)(), int fd, uint64_t t0, uint64_t t1, int32_t result);

}  // namespace idlescope::io
