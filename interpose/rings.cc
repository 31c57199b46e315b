// Per-thread rings and the producer half of the public API (Record, the pending event).
#include "interpose/rings.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>

#include "interpose/sampler.h"
#include "interpose/writer.h"

namespace idlescope {

namespace detail {
__thread bool t_pending_open __attribute__((tls_model("initial-exec"))) = false;
__thread PendingSlot* t_pending_slot __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint32_t t_launch_device __attribute__((tls_model("initial-exec"))) = 0;
// NoteDeviceWork ran on this thread (cleared in a fork()ed child, as t_launch_device).
__thread bool t_device_work_noted __attribute__((tls_model("initial-exec"))) = false;
}  // namespace detail

namespace rings {
namespace {

constexpr uint32_t kMaxRings = 8192;

// Every ring header and what goes with them. Constant-initialised (a hook may run before any
// constructor: it finds `slots` 0 and claims nothing) and never destroyed (hooks run after static
// destructors).
struct RingTable {
  Ring rings[kMaxRings];
  std::atomic<uint32_t> count{0};         // headers handed out so far: rings[0, count)
  std::atomic<uint64_t> slots{0};         // per ring, a power of two; 0 until Init
  std::atomic<uint64_t> without_ring{0};  // events lost because no ring could be had
  pthread_key_t exit_key = 0;             // its destructor hands an ending thread's ring over
};
static_assert(std::is_trivially_destructible_v<RingTable>);
constinit RingTable g_table;

__thread Ring* t_ring __attribute__((tls_model("initial-exec"))) = nullptr;
// The thread has ended (its key destructor ran), or is the writer: nothing it records is kept.
__thread bool t_thread_dead __attribute__((tls_model("initial-exec"))) = false;
// No ring could be had (all kMaxRings in use, or mmap failed): this thread's events are counted
// as dropped without searching again on every call.
__thread bool t_ring_failed __attribute__((tls_model("initial-exec"))) = false;

bool MapSlots(Ring* r) {
  const uint64_t slots = g_table.slots.load(std::memory_order_relaxed);
  void* p = mmap(nullptr, slots * sizeof(RawEvent) + unwind::WalkCacheBytes(),
                 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  r->slots = static_cast<RawEvent*>(p);
  r->mask = slots - 1;
  r->walk_cache = reinterpret_cast<unwind::WalkCache*>(r->slots + slots);
  return true;
}

void UnmapSlots(Ring* r) {
  if (r->slots != nullptr) {
    munmap(r->slots, (r->mask + 1) * sizeof(RawEvent) + unwind::WalkCacheBytes());
  }
  r->slots = nullptr;
  r->walk_cache = nullptr;
}

void ResetRing(Ring* r, uint32_t tid) {
  r->head.store(0, std::memory_order_relaxed);
  r->tail.store(0, std::memory_order_relaxed);
  r->dropped.store(0, std::memory_order_relaxed);
  r->wake_pending.store(false, std::memory_order_relaxed);
  r->dropped_reported = 0;
  r->seq = 0;
  r->name_checks = 0;
  r->name[0] = '\0';
  r->tid = tid;
  r->final_pending = false;
  r->pending.seq.store(0, std::memory_order_relaxed);
  r->pending.open.store(false, std::memory_order_relaxed);
}

uint32_t GetTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// Puts one event into the owner's ring (owner thread only); counts a drop when it is full.
inline void Push(Ring* r, const RawEvent& event) {
  uint64_t h = r->head.load(std::memory_order_relaxed);
  uint64_t used = h - r->tail.load(std::memory_order_acquire);
  if (__builtin_expect(used > r->mask, 0)) {
    r->dropped.store(r->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  r->slots[h & r->mask] = event;
  r->head.store(h + 1, std::memory_order_release);
  if (__builtin_expect(used >= (r->mask >> 1), 0) &&
      !r->wake_pending.load(std::memory_order_relaxed)) {
    r->wake_pending.store(true, std::memory_order_relaxed);
    int saved = errno;
    writer::Wake();
    errno = saved;
  }
}

// The pending event is copied word by word with relaxed atomics: the owner writes it while a
// final flush may read it (the seqlock tells the reader whether its copy is whole).
using AliasWord = uint64_t __attribute__((may_alias));
constexpr size_t kEventWords = sizeof(RawEvent) / sizeof(uint64_t);
static_assert(sizeof(RawEvent) % sizeof(uint64_t) == 0 && alignof(RawEvent) == alignof(uint64_t));

void StoreEventWords(RawEvent* dst, const RawEvent& src) {
  AliasWord* d = reinterpret_cast<AliasWord*>(dst);
  const AliasWord* s = reinterpret_cast<const AliasWord*>(&src);
  for (size_t i = 0; i < kEventWords; ++i) __atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
}

void LoadEventWords(RawEvent* dst, const RawEvent& src) {
  AliasWord* d = reinterpret_cast<AliasWord*>(dst);
  const AliasWord* s = reinterpret_cast<const AliasWord*>(&src);
  for (size_t i = 0; i < kEventWords; ++i) d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

// Seqlock writer side (Boehm, "Can seqlocks get along with programming language memory models?"):
// the odd count is ordered before the data stores by the release fence, the even one after them
// by its release store.
inline uint32_t PendingWriteBegin(Ring* r) {
  uint32_t seq = r->pending.seq.load(std::memory_order_relaxed);
  r->pending.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  return seq + 2;
}

// Owner thread: the pending event goes into the ring, in the same seqlock section as its closing.
void AppendPending(Ring* r) {
  uint32_t done = PendingWriteBegin(r);
  if (r->pending.open.load(std::memory_order_relaxed)) {
    Push(r, r->pending.event);
    r->pending.open.store(false, std::memory_order_relaxed);
  }
  r->pending.seq.store(done, std::memory_order_release);
  detail::t_pending_open = false;
}

// Final flush, any thread: the owner's (head, pending event) pair of one instant. The owner may be
// preempted inside its section (odd count), or even interrupted there by the signal whose handler
// waits for this flush: bounded retries, then the head alone (that pending event is lost).
void SnapshotWithPending(Ring* r) {
  r->final_pending = false;
  for (int attempt = 0; attempt < 2000; ++attempt) {
    uint32_t seq = r->pending.seq.load(std::memory_order_acquire);
    if (seq & 1u) {
      sched_yield();
      continue;
    }
    uint64_t head = r->head.load(std::memory_order_acquire);
    bool open = r->pending.open.load(std::memory_order_relaxed);
    if (open) LoadEventWords(&r->final_pending_event, r->pending.event);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r->pending.seq.load(std::memory_order_relaxed) != seq) continue;
    r->snap_head = head;
    r->final_pending = open;
    return;
  }
  r->snap_head = r->head.load(std::memory_order_acquire);
}

// Thread exit (pthread key destructor): the flush drains the ring, then frees its slots.
void OnThreadExit(void* arg) {
  Ring* r = static_cast<Ring*>(arg);
  // A burst still open when the thread ends is complete now: it goes in before the ring is handed
  // over (this runs on the owner thread, after its C++ thread_local destructors).
  if (detail::t_pending_open) AppendPending(r);
  if (detail::t_launch_device != 0) sampler::ThisThreadExits(r->tid);
  t_ring = nullptr;
  t_thread_dead = true;  // events recorded later in this thread's teardown are not kept
  r->state.store(kExited, std::memory_order_release);
}

__attribute__((noinline)) Ring* ClaimRing() {
  if (t_thread_dead || t_ring_failed || g_table.slots.load(std::memory_order_relaxed) == 0) {
    return nullptr;
  }
  int saved = errno;
  Ring* r = nullptr;
  uint32_t n = g_table.count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n && r == nullptr; ++i) {
    uint32_t expected = kFree;
    if (g_table.rings[i].state.compare_exchange_strong(expected, kClaiming)) r = &g_table.rings[i];
  }
  if (r == nullptr) {
    uint32_t i = g_table.count.load(std::memory_order_relaxed);
    do {
      if (i >= kMaxRings) {
        t_ring_failed = true;
        errno = saved;
        return nullptr;
      }
    } while (!g_table.count.compare_exchange_weak(i, i + 1));
    r = &g_table.rings[i];
    r->state.store(kClaiming, std::memory_order_relaxed);
  }
  ResetRing(r, GetTid());
  if (!MapSlots(r)) {
    t_ring_failed = true;
    r->state.store(kFree, std::memory_order_release);
    errno = saved;
    return nullptr;
  }
  r->state.store(kOwned, std::memory_order_release);
  t_ring = r;
  pthread_setspecific(g_table.exit_key, r);
  errno = saved;
  return r;
}

// The calling thread's ring, claimed at its first event; null when it cannot have one.
inline Ring* ThreadRing() {
  Ring* r = t_ring;
  if (__builtin_expect(r == nullptr, 0)) {
    r = ClaimRing();
    if (r == nullptr && !t_thread_dead) {
      g_table.without_ring.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return r;
}

}  // namespace

void Init(uint64_t slots) {
  pthread_key_create(&g_table.exit_key, OnThreadExit);
  g_table.slots.store(slots, std::memory_order_release);
}

void NeverRecordOnThisThread() { t_thread_dead = true; }

void Snapshot(bool final, std::vector<Snapped>* out) {
  uint32_t n = g_table.count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    Ring* r = &g_table.rings[i];
    // Free, or being claimed by a thread that is resetting its fields: none of ours to read.
    uint32_t st = r->state.load(std::memory_order_acquire);
    if (st != kOwned && st != kExited) continue;
    out->push_back({r, st == kExited});
    if (final && st == kOwned) {
      SnapshotWithPending(r);
    } else {
      r->snap_head = r->head.load(std::memory_order_acquire);
    }
  }
}

void Drained(const Snapped& snapped) {
  snapped.ring->wake_pending.store(false, std::memory_order_relaxed);
  if (snapped.exited) {
    UnmapSlots(snapped.ring);
    snapped.ring->state.store(kFree, std::memory_order_release);
  }
}

unwind::WalkCache* ThreadWalkCache() {
  Ring* r = t_ring;
  return r != nullptr ? r->walk_cache : nullptr;
}

uint64_t EventsWithoutRing() { return g_table.without_ring.load(std::memory_order_relaxed); }

void ResetInChild() {
  t_ring_failed = false;           // the parent's other threads' rings are freed below
  detail::t_pending_open = false;  // the parent writes this thread's pending event, not the child
  detail::t_launch_device = 0;     // the child has no CUDA context: it feeds no GPU
  detail::t_device_work_noted = false;
  uint32_t n = g_table.count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    Ring* r = &g_table.rings[i];
    if (r == t_ring) {
      ResetRing(r, GetTid());
    } else if (r->state.load() == kOwned || r->state.load() == kExited) {
      UnmapSlots(r);
      r->state.store(kFree);
    }
  }
  g_table.without_ring.store(0);
}

}  // namespace rings

// ---------------------------------------------------------------------------------------------
// Public API (recorder.h): the producer side.

using rings::Ring;

void NoteDeviceWork() {
  if (detail::t_device_work_noted) return;
  detail::t_device_work_noted = true;
  // Sampled first: starting a thread beside CPU hogs may cost this one its CPU for milliseconds
  // (a wait for a CPU the sampler then sees).
  const bool first_sampled = sampler::AddThisThread();
  writer::StartThread();
  if (first_sampled) writer::Wake();
}

void Record(const RawEvent& event) {
  if (event.type < 32 && (detail::kDeviceWorkTypes >> event.type & 1u) != 0) {
    if (__builtin_expect(!detail::t_device_work_noted, 0)) NoteDeviceWork();
    detail::t_launch_device = event.u.cuda.device + 1;
  }
  // Threadless: a flush is due (this thread flushes at the end of its hook).
  if (__builtin_expect(event.ts >= writer::g_next_flush_ns.load(std::memory_order_relaxed), 0)) {
    detail::t_after_hook |= detail::kAfterHookFlush;
  }
  Ring* r = rings::ThreadRing();
  if (__builtin_expect(r == nullptr, 0)) return;
  // An open pending event (an I/O burst) started before this event: it goes first, and ends.
  if (__builtin_expect(detail::t_pending_open, 0)) rings::AppendPending(r);
  rings::Push(r, event);
}

void SetPendingEvent(const RawEvent& event) {
  Ring* r = rings::ThreadRing();
  if (__builtin_expect(r == nullptr, 0)) return;
  uint32_t done = rings::PendingWriteBegin(r);
  rings::StoreEventWords(&r->pending.event, event);
  r->pending.open.store(true, std::memory_order_relaxed);
  r->pending.seq.store(done, std::memory_order_release);
  detail::t_pending_slot = &r->pending;
  detail::t_pending_open = true;
}

void RecordPendingEvent() {
  // t_pending_open implies t_ring (OnThreadExit clears both, ResetInChild the flag).
  if (detail::t_pending_open && rings::t_ring != nullptr) rings::AppendPending(rings::t_ring);
}

}  // namespace idlescope
