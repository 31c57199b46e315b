// Per-thread rings: where Record() puts a thread's events (recorder.h) until a flush takes them.
//
// Each program thread that records gets a single-producer ring: a header in a static table (no
// allocation to find or register one) and slots mmap'ed at the thread's first event (Record may
// run in a signal handler of the program: no malloc there). The owner appends with one release
// store of `head`; the flush (one at a time, under the flush lock: flush.h) reads up to a snapshot
// of `head` and moves `tail`. A thread's pending event (recorder.h, SetPendingEvent) lives in its
// ring header under a seqlock, so the final flush can take it from a thread that is still running.
// When the thread exits (pthread key destructor) its ring is handed to the flush, drained, and its
// header reused. docs/architecture.md, "Rings".
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "interpose/recorder.h"
#include "interpose/unwind.h"

namespace idlescope::rings {

enum RingState : uint32_t { kUnused = 0, kOwned = 1, kExited = 2, kFree = 3, kClaiming = 4 };

struct Ring {
  // Producer side (the owning thread).
  alignas(64) std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> dropped{0};
  RawEvent* slots = nullptr;
  uint64_t mask = 0;
  // The owner's last stack walks (unwind.h), mapped after the slots: a ring handed to another
  // thread maps them anew, empty.
  unwind::WalkCache* walk_cache = nullptr;
  std::atomic<bool> wake_pending{false};
  // Consumer side (the flush, under the flush lock).
  alignas(64) std::atomic<uint64_t> tail{0};
  std::atomic<uint32_t> state{kUnused};
  uint32_t tid = 0;
  uint64_t dropped_reported = 0;
  uint64_t seq = 0;
  uint64_t snap_head = 0;
  uint32_t name_checks = 0;
  char name[16] = {};
  // The final flush's copy of the pending event (below), written after the ring's events.
  bool final_pending = false;
  RawEvent final_pending_event;
  // The owner's pending event (SetPendingEvent, recorder.h). A reader that sees an even, unchanged
  // `pending.seq` has a (head, pending event) pair of one instant: an open pending event is then
  // not among the slots below that head.
  alignas(64) detail::PendingSlot pending;
};

// At start (Init), before any ring is claimed: each ring holds `slots` events (a power of two).
// Creates the pthread key whose destructor hands a thread's ring over when the thread ends.
void Init(uint64_t slots);

// The calling thread's walk cache (its ring's), null before its first event.
unwind::WalkCache* ThreadWalkCache();

// The writer thread never records (its events would be its own work): no ring is ever claimed
// there, even by a call that bypasses the hook depth.
void NeverRecordOnThisThread();

// --- The flush's side: one flush at a time, under the flush lock ----------------------------

// A ring the flush takes events from, as its state was at the snapshot.
struct Snapped {
  Ring* ring;
  bool exited;  // its thread has ended: the ring is handed back once drained (Drained)
};
// Takes the head of every ring in use, in table order. `final`: the last flush of the file, which
// also takes the pending event of each thread still running (an exited thread appended its own).
void Snapshot(bool final, std::vector<Snapped>* out);
// After the flush moved the ring's tail to its snapshot: the owner may wake the writer again, and
// an exited thread's ring is unmapped and its header reused.
void Drained(const Snapped& snapped);
// Events lost because their thread could get no ring (all in use, or mmap failed): the footer's.
uint64_t EventsWithoutRing();

// fork child: only the forking thread exists. Its own ring is emptied (the parent writes those
// events), every other ring freed, and the calling thread forgets its pending event and device.
void ResetInChild();

}  // namespace idlescope::rings
