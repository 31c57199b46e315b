// Burst accumulation for high-frequency I/O calls (write, read, recv, send, fwrite, fread,
// fflush).
//
// A 10 GB checkpoint written in 4 KB writes is 2.6 million calls; one event per call would cost
// more than the writes themselves on tmpfs and flood the trace. Instead each thread keeps one
// open burst: consecutive calls of the same API on the same fd are merged into a single event
// (count = calls, bytes = sum, dur = sum of the time spent inside the calls, ts = start of the
// first call). A burst is closed (emitted) when
//   - the next call is of another kind (read/write/recv/send) or on another fd,
//   - the thread was outside the calls for more than max_gap_ns (so an emitted burst never hides
//     a long stretch of non-I/O work between its first and last call),
//   - the burst spans more than max_span_ns (bounds the event's time imprecision and how long an
//     event waits in the thread before it reaches the trace),
//   - or the hooks close it explicitly (fsync, close, rename, fork, exec...).
// With the defaults (1 ms, 20 ms) a thread that does nothing but I/O emits at most 50 events per
// second per fd; an isolated call is its own event. See docs/architecture.md for the overhead
// measurements that chose this design.
#pragma once

#include <cstdint>

namespace idlescope::io {

struct BurstPolicy {
  uint64_t max_gap_ns = 1'000'000;
  uint64_t max_span_ns = 20'000'000;
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
  int32_t result = 0;  // first error in the burst (-errno), 0 if none
  uint64_t start = 0;
  uint64_t last_end = 0;
  uint64_t dur = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t offset = 0;  // offset of the first call (positional I/O), else 0
};

// One call to merge: what the hook saw.
struct IoCall {
  uint8_t type = 0;
  int32_t fd = -1;
  uint32_t api = 0;
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
  if (!burst.open || burst.type != call.type || burst.fd != call.fd) return false;
  if (call.ts < burst.last_end || call.ts - burst.last_end > policy.max_gap_ns) return false;
  return call.ts + call.dur - burst.start <= policy.max_span_ns;
}

// Adds `call` to `burst` (which Extends() accepted).
inline void Merge(Burst& burst, const IoCall& call) {
  burst.dur += call.dur;
  burst.bytes += call.bytes;
  burst.count += 1;
  burst.last_end = call.ts + call.dur;
  if (burst.result == 0 && call.result < 0) burst.result = call.result;
}

// Starts a new burst from `call`; the caller has emitted the previous one.
inline void Begin(Burst& burst, const IoCall& call) {
  burst.open = true;
  burst.type = call.type;
  burst.fd = call.fd;
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
