// PinnedRanges: the host address ranges CUDA knows about (page-locked host memory from
// cudaMallocHost/cudaHostAlloc/cudaHostRegister, managed memory, device allocations), so a copy
// hook can tell pinned from pageable at call time without a driver call.
//
// Lookups happen on every intercepted copy (the hot path, any thread); inserts and removes only
// in the allocation hooks, which are themselves slow driver calls. So the map is a sorted array of
// disjoint ranges read under a seqlock (Boehm, "Can seqlocks get along with programming language
// memory models?", MSPC'12): a reader never writes shared memory and never blocks; a writer takes
// a mutex, bumps the sequence to odd, edits, bumps it to even. Every cell is an atomic read and
// written with relaxed order, so a reader that overlaps a writer sees torn but defined data and
// retries. Growth publishes a bigger array through an atomic pointer; old arrays are retired but
// never freed (a reader may still be scanning one), which bounds the waste to the final capacity
// since capacities double.
//
// The sequence number doubles as a generation: any change of the map changes it, which is what
// the per-thread cache of cudaPointerGetAttributes answers (see cudart.cc) keys on.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace idlescope {

// What a known range is. Values match ev::MemKind (proto MemKind).
enum class RangeKind : uint8_t { kNone = 0, kPinned = 2, kDevice = 3, kManaged = 4 };

class PinnedRanges {
 public:
  PinnedRanges();
  ~PinnedRanges();
  PinnedRanges(const PinnedRanges&) = delete;
  PinnedRanges& operator=(const PinnedRanges&) = delete;

  // Adds [base, base + size). Ranges it overlaps are dropped first: CUDA never hands out
  // overlapping live allocations, so an overlap means we missed a free (e.g. one made by a
  // statically linked cudart), and the newest allocation is the truth.
  void Insert(uintptr_t base, size_t size, RangeKind kind);
  // Removes the range that starts at `base` (what cudaFreeHost/cudaHostUnregister/cudaFree
  // take). Returns its kind, or kNone when no range starts there.
  RangeKind Remove(uintptr_t base);
  // The kind of the range containing `addr`, or kNone. Lock-free, wait-free unless a writer is
  // mid-edit.
  RangeKind Find(uintptr_t addr) const;
  // Find, also giving the range's bounds (set only when the result is not kNone).
  RangeKind FindRange(uintptr_t addr, uintptr_t* begin, uintptr_t* end) const;
  // Changes whenever the map changes; even when stable.
  uint64_t Generation() const { return seq_.load(std::memory_order_acquire); }
  size_t Size() const;
  // fork handlers: no edit may be half done (odd sequence: readers would retry forever), nor the
  // mutex held, in the child.
  void LockForFork() { write_mu_.lock(); }
  void UnlockAfterFork() { write_mu_.unlock(); }

 private:
  struct Cell {
    std::atomic<uint64_t> begin{0};
    std::atomic<uint64_t> end{0};  // exclusive
    std::atomic<uint8_t> kind{0};
  };
  struct Table {
    explicit Table(size_t cap) : capacity(cap), cells(new Cell[cap]) {}
    const size_t capacity;
    std::atomic<size_t> size{0};
    Cell* const cells;
  };

  void WriteBegin();
  void WriteEnd();
  void EraseAt(Table* t, size_t i);

  std::atomic<uint64_t> seq_{0};
  std::atomic<Table*> table_;
  mutable std::mutex write_mu_;
  std::vector<Table*> retired_;  // under write_mu_; freed only by the destructor
};

// The process-wide map the CUDA hooks and the CUPTI callbacks share. Created at load (with its
// fork handlers), so no thread is inside its initialiser when the program forks.
PinnedRanges& HostRanges();

}  // namespace idlescope
