// What the NCCL hooks know about each communicator: its id (the same on every rank, so one
// collective can be matched across the per-rank trace files), this process's rank, the size, and
// the per-communicator sequence number of collectives.
//
// Lookups happen on every collective and must be cheap and thread-safe: a fixed open-addressing
// table keyed by the ncclComm_t handle, read without locks; inserts and erases (communicator
// creation/destruction, rare) take a mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace idlescope::nccl {

// Mirrors idlescope.NcclOp in proto/trace.proto.
enum Op : uint8_t {
  kOpUnspecified = 0,
  kAllReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kBroadcast = 4,
  kReduce = 5,
  kAllToAll = 6,
  kGather = 7,
  kScatter = 8,
  kSend = 9,
  kRecv = 10,
};

// Bytes of one element of ncclDataType_t `dtype` (NCCL 2.28: Int8..Float8e5m2 = 0..11); 0 if
// unknown.
size_t DtypeSize(int dtype);

// Bytes this rank sends for a call with `count` elements (the count argument as passed): an
// AllGather sends `count` (and receives nranks*count), a ReduceScatter sends nranks*count, an
// AlltoAll nranks*count, a Scatter root nranks*count (non-roots send nothing).
uint64_t BytesPerRank(Op op, uint64_t count, int dtype, int nranks, int rank, int root);

// Communicator ids. ncclUniqueId is 128 opaque bytes broadcast to all ranks by the application:
// its hash is the same everywhere. A split child is identified by the parent id, the color and
// how many splits of that parent came before (ncclCommSplit is collective over the parent, so
// every member counts the same). Never returns 0 (0 = unknown).
uint64_t CommIdFromUniqueId(const void* unique_id, size_t size);
uint64_t CommIdFromSplit(uint64_t parent_id, int color, uint64_t split_seq);
// ncclCommInitAll creates ndev communicators in one process with no unique id.
uint64_t CommIdFromInitAll(uint32_t pid, uint64_t init_all_seq);

struct CommInfo {
  uint64_t id = 0;
  uint64_t parent = 0;
  int32_t rank = -1;
  int32_t nranks = 0;
};

class CommTable {
 public:
  static constexpr size_t kSlots = 4096;  // power of two; far above any job's communicators

  struct Entry {
    std::atomic<uintptr_t> key{0};  // handle; 0 empty, 1 erased
    CommInfo info;
    std::atomic<uint64_t> seq{0};     // collectives issued so far
    std::atomic<uint64_t> splits{0};  // ncclCommSplit calls on this comm so far
  };

  // Registers (or replaces) `comm`. Returns false when the table is full.
  bool Insert(const void* comm, const CommInfo& info);
  // Lock-free; nullptr if unknown.
  Entry* Find(const void* comm);
  void Erase(const void* comm);
  // fork handlers: no Insert/Erase may be half done (nor the mutex held) in the child.
  void LockForFork() { mutex_.lock(); }
  void UnlockAfterFork() { mutex_.unlock(); }

 private:
  static size_t Hash(uintptr_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 52; }
  Entry slots_[kSlots];
  std::mutex mutex_;
};

}  // namespace idlescope::nccl
