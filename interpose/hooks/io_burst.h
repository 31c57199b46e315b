// Burst accumulation for high-frequency I/O calls (write, read, recv, send, fwrite, fread,
// fflush).
//
// A 10 GB checkpoint written in 4 KB writes is 2.6 million calls; one event per call would cost
// more than the writes themselves on tmpfs and flood the trace. Instead each thread keeps one
// open burst: consecutive calls of the same API on the same fd are merged into a single event
// (count = calls, bytes = sum, dur = sum of the time spent inside the calls, ts = start of the
// first call). A burst is closed (emitted) when
//   - the next call is of another kind (read/write/recv/send), on another fd, or on the same fd
//     number that now names another file (its fd table entry changed),
//   - the thread was outside the calls for more than max_gap (so an emitted burst never hides
//     a long stretch of non-I/O work between its first and last call),
//   - the burst spans more than max_span (bounds the event's time imprecision and how long an
//     event waits in the thread before it reaches the trace),
//   - or the hooks close it explicitly (fsync, close, rename, fork, exec...).
// With the defaults (1 ms, 20 ms) a thread that does nothing but I/O emits at most 50 events per
// second per fd; an isolated call is its own event. See docs/architecture.md for the overhead
// measurements that chose this design.
//
// Times here (IoCall::ts/dur, Burst::start/last_end/dur, BurstPolicy) are in the units of the
// call clock (interpose/call_clock.h: TSC ticks, or ns without a TSC): the hooks merge calls
// without converting every reading to ns; a policy in ns is converted once (BurstPolicy::InTicks).
#pragma once

#include <cstdint>

namespace idlescope::io {

struct BurstPolicy {
  uint64_t max_gap = 1'000'000;    // ns, or ticks after InTicks
  uint64_t max_span = 20'000'000;  // ns, or ticks after InTicks
  // The same limits in call-clock ticks; `ns_to_ticks` is NsToTicks.
  BurstPolicy InTicks(uint64_t (*ns_to_ticks)(uint64_t)) const {
    return {ns_to_ticks(max_gap), ns_to_ticks(max_span)};
  }
};

struct Burst {
  bool open = false;
  uint8_t type = 0;  // ev::Type
  uint8_t fs = 0;
  uint8_t scope = 0;
  int32_t fd = -1;
  uint32_t api = 0;  // API of the first call
  uint32_t path = 0;
  uint32_t stack = 0;
  int32_t result = 0;    // first error in the burst (-errno), 0 if none
  uint64_t fd_info = 0;  // the fd table entry (FdInfo::Pack) of the first call
  uint64_t start = 0;
  uint64_t last_end = 0;
  uint64_t dur = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t offset = 0;  // offset of the first call (positional I/O), else 0
  uint64_t ts_ns = 0;   // trace-clock ns of `start` (set by the hooks, not by Begin)
  uint32_t fd_gen = 0;  // FdTable::Generation() when fd_info was last read (set by the hooks)
};

// One call to merge: what the hook saw.
struct IoCall {
  uint8_t type = 0;
  int32_t fd = -1;
  uint32_t api = 0;
  uint64_t fd_info = 0;  // the fd table entry at the call (FdInfo::Pack)
  uint64_t ts = 0;
  uint64_t dur = 0;
  uint64_t bytes = 0;
  int32_t result = 0;
  uint64_t offset = 0;
};

// True if `call` extends `burst` under `policy`.
inline bool Extends(const Burst& burst, const IoCall& call, const BurstPolicy& policy) {
  // The API is not part of the key: fwrite and the fflush that pushes its buffer out, or write
  // and writev, are one stream of bytes to one file. The event keeps the first call's API.
  // A changed fd table entry (another thread closed the fd and opened another file under the
  // same number) is another file.
  if (!burst.open || burst.type != call.type || burst.fd != call.fd ||
      burst.fd_info != call.fd_info) {
    return false;
  }
  if (call.ts < burst.last_end || call.ts - burst.last_end > policy.max_gap) return false;
  return call.ts + call.dur - burst.start <= policy.max_span;
}

// Adds `call` to `burst` (which Extends() accepted). Returns true when the call's error became
// the burst's result (the first error).
inline bool Merge(Burst& burst, const IoCall& call) {
  burst.dur += call.dur;
  burst.bytes += call.bytes;
  burst.count += 1;
  burst.last_end = call.ts + call.dur;
  if (__builtin_expect(burst.result == 0 && call.result < 0, 0)) {
    burst.result = call.result;
    return true;
  }
  return false;
}

// Starts a new burst from `call`; the caller has emitted the previous one.
inline void Begin(Burst& burst, const IoCall& call) {
  burst.open = true;
  burst.type = call.type;
  burst.fd = call.fd;
  burst.fd_info = call.fd_info;
  burst.api = call.api;
  burst.start = call.ts;
  burst.last_end = call.ts + call.dur;
  burst.dur = call.dur;
  burst.bytes = call.bytes;
  burst.count = 1;
  burst.result = call.result < 0 ? call.result : 0;
  burst.offset = call.offset;
  burst.path = 0;
  burst.fs = 0;
  burst.scope = 0;
  burst.stack = 0;
}

}  // namespace idlescope::io
