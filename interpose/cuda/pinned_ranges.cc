#include "interpose/cuda/pinned_ranges.h"

#include <pthread.h>

namespace idlescope {

namespace {
constexpr size_t kInitialCapacity = 64;
}  // namespace

PinnedRanges::PinnedRanges() : table_(new Table(kInitialCapacity)) {}

PinnedRanges::~PinnedRanges() {
  Table* t = table_.load(std::memory_order_relaxed);
  delete[] t->cells;
  delete t;
  for (Table* r : retired_) {
    delete[] r->cells;
    delete r;
  }
}

// Seqlock writer protocol: odd sequence, release fence, relaxed stores, even sequence (release).
void PinnedRanges::WriteBegin() {
  seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

void PinnedRanges::WriteEnd() {
  seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

static void CopyCell(const std::atomic<uint64_t>& b, const std::atomic<uint64_t>& e,
                     const std::atomic<uint8_t>& k, std::atomic<uint64_t>* ob,
                     std::atomic<uint64_t>* oe, std::atomic<uint8_t>* ok) {
  ob->store(b.load(std::memory_order_relaxed), std::memory_order_relaxed);
  oe->store(e.load(std::memory_order_relaxed), std::memory_order_relaxed);
  ok->store(k.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void PinnedRanges::EraseAt(Table* t, size_t i) {
  size_t n = t->size.load(std::memory_order_relaxed);
  for (size_t j = i; j + 1 < n; ++j) {
    Cell& to = t->cells[j];
    const Cell& from = t->cells[j + 1];
    CopyCell(from.begin, from.end, from.kind, &to.begin, &to.end, &to.kind);
  }
  t->size.store(n - 1, std::memory_order_relaxed);
}

void PinnedRanges::Insert(uintptr_t base, size_t size, RangeKind kind) {
  if (size == 0) size = 1;  // a zero-byte allocation still has an address worth knowing
  const uint64_t begin = base;
  const uint64_t end = begin + size < begin ? UINT64_MAX : begin + size;
  std::lock_guard<std::mutex> lock(write_mu_);
  Table* t = table_.load(std::memory_order_relaxed);
  size_t n = t->size.load(std::memory_order_relaxed);
  if (n == t->capacity) {
    // Grow: build the copy privately, then publish. Readers of the old table still see a
    // consistent (unchanged) map; the sequence bump below makes them re-read the new pointer.
    Table* bigger = new Table(t->capacity * 2);
    for (size_t i = 0; i < n; ++i) {
      const Cell& c = t->cells[i];
      CopyCell(c.begin, c.end, c.kind, &bigger->cells[i].begin, &bigger->cells[i].end,
               &bigger->cells[i].kind);
    }
    bigger->size.store(n, std::memory_order_relaxed);
    retired_.push_back(t);
    WriteBegin();
    table_.store(bigger, std::memory_order_relaxed);
    WriteEnd();
    t = bigger;
  }
  WriteBegin();
  // First cell whose end is above `begin`: every overlapping range starts there.
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->cells[mid].end.load(std::memory_order_relaxed) <= begin) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  while (lo < t->size.load(std::memory_order_relaxed) &&
         t->cells[lo].begin.load(std::memory_order_relaxed) < end) {
    EraseAt(t, lo);
  }
  n = t->size.load(std::memory_order_relaxed);
  for (size_t j = n; j > lo; --j) {
    Cell& to = t->cells[j];
    const Cell& from = t->cells[j - 1];
    CopyCell(from.begin, from.end, from.kind, &to.begin, &to.end, &to.kind);
  }
  t->cells[lo].begin.store(begin, std::memory_order_relaxed);
  t->cells[lo].end.store(end, std::memory_order_relaxed);
  t->cells[lo].kind.store(static_cast<uint8_t>(kind), std::memory_order_relaxed);
  t->size.store(n + 1, std::memory_order_relaxed);
  WriteEnd();
}

RangeKind PinnedRanges::Remove(uintptr_t base) {
  std::lock_guard<std::mutex> lock(write_mu_);
  Table* t = table_.load(std::memory_order_relaxed);
  size_t n = t->size.load(std::memory_order_relaxed);
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->cells[mid].begin.load(std::memory_order_relaxed) < base) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == n || t->cells[lo].begin.load(std::memory_order_relaxed) != base) {
    return RangeKind::kNone;
  }
  auto kind = static_cast<RangeKind>(t->cells[lo].kind.load(std::memory_order_relaxed));
  WriteBegin();
  EraseAt(t, lo);
  WriteEnd();
  return kind;
}

RangeKind PinnedRanges::Find(uintptr_t addr) const {
  uintptr_t begin, end;
  return FindRange(addr, &begin, &end);
}

RangeKind PinnedRanges::FindRange(uintptr_t addr, uintptr_t* begin, uintptr_t* end) const {
  for (;;) {
    const uint64_t s1 = seq_.load(std::memory_order_acquire);
    if (s1 & 1) continue;  // a writer is mid-edit; edits are a few hundred ns at most
    const Table* t = table_.load(std::memory_order_relaxed);
    // n never exceeds t->capacity: size is only stored below capacity for the table it
    // belongs to, and tables never shrink. So a torn read cannot index out of bounds.
    size_t n = t->size.load(std::memory_order_relaxed);
    if (n > t->capacity) n = t->capacity;
    uint8_t kind = 0;
    if (n != 0) {
      // Last cell with begin <= addr.
      size_t lo = 0, hi = n;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->cells[mid].begin.load(std::memory_order_relaxed) <= addr) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      uint64_t b = lo > 0 ? t->cells[lo - 1].begin.load(std::memory_order_relaxed) : 0;
      uint64_t e = lo > 0 ? t->cells[lo - 1].end.load(std::memory_order_relaxed) : 0;
      if (addr < e) {
        kind = t->cells[lo - 1].kind.load(std::memory_order_relaxed);
        *begin = b;
        *end = e;
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) == s1) return static_cast<RangeKind>(kind);
  }
}

size_t PinnedRanges::Size() const {
  std::lock_guard<std::mutex> lock(write_mu_);
  return table_.load(std::memory_order_relaxed)->size.load(std::memory_order_relaxed);
}

PinnedRanges& HostRanges() {
  // Never destroyed: hooks may run during exit, after static destructors.
  static PinnedRanges* ranges = new PinnedRanges();
  return *ranges;
}

namespace {
__attribute__((constructor)) void HostRangesAtLoad() {
  HostRanges();
  pthread_atfork([] { HostRanges().LockForFork(); }, [] { HostRanges().UnlockAfterFork(); },
                 [] { HostRanges().UnlockAfterFork(); });
}
}  // namespace

}  // namespace idlescope
