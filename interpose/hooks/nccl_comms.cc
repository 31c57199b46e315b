#include "interpose/hooks/nccl_comms.h"

#include <cstring>

namespace idlescope::nccl {
namespace {

constexpr uintptr_t kEmpty = 0;
constexpr uintptr_t kErased = 1;

// 64-bit FNV-1a, then a final avalanche (splitmix64) so similar inputs spread.
uint64_t Fnv1a(const void* data, size_t size, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z == 0 ? 1 : z;
}

}  // namespace

size_t DtypeSize(int dtype) {
  switch (dtype) {
    case 0:   // ncclInt8
    case 1:   // ncclUint8
    case 10:  // ncclFloat8e4m3
    case 11:  // ncclFloat8e5m2
      return 1;
    case 6:  // ncclFloat16
    case 9:  // ncclBfloat16
      return 2;
    case 2:  // ncclInt32
    case 3:  // ncclUint32
    case 7:  // ncclFloat32
      return 4;
    case 4:  // ncclInt64
    case 5:  // ncclUint64
    case 8:  // ncclFloat64
      return 8;
    default:
      return 0;
  }
}

uint64_t BytesPerRank(Op op, uint64_t count, int dtype, int nranks, int rank, int root) {
  uint64_t elem = DtypeSize(dtype);
  uint64_t n = nranks > 0 ? static_cast<uint64_t>(nranks) : 1;
  switch (op) {
    case kReduceScatter:
    case kAllToAll:
      return n * count * elem;
    case kScatter:
      return rank == root ? n * count * elem : 0;
    default:
      return count * elem;
  }
}

uint64_t CommIdFromUniqueId(const void* unique_id, size_t size) {
  return Mix(Fnv1a(unique_id, size));
}

uint64_t CommIdFromSplit(uint64_t parent_id, int color, uint64_t split_seq) {
  uint64_t h = Fnv1a(&parent_id, sizeof(parent_id));
  h = Fnv1a(&color, sizeof(color), h);
  h = Fnv1a(&split_seq, sizeof(split_seq), h);
  return Mix(h);
}

uint64_t CommIdFromInitAll(uint32_t pid, uint64_t init_all_seq) {
  static constexpr char kTag[] = "ncclCommInitAll";
  uint64_t h = Fnv1a(kTag, sizeof(kTag));
  h = Fnv1a(&pid, sizeof(pid), h);
  h = Fnv1a(&init_all_seq, sizeof(init_all_seq), h);
  return Mix(h);
}

bool CommTable::Insert(const void* comm, const CommInfo& info) {
  auto key = reinterpret_cast<uintptr_t>(comm);
  if (key <= kErased) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* reuse = nullptr;
  for (size_t i = 0, h = Hash(key); i < kSlots; ++i, h = (h + 1) & (kSlots - 1)) {
    uintptr_t k = slots_[h].key.load(std::memory_order_relaxed);
    if (k == key) {
      reuse = &slots_[h];
      break;
    }
    if (k == kErased && reuse == nullptr) reuse = &slots_[h];
    if (k == kEmpty) {
      if (reuse == nullptr) reuse = &slots_[h];
      break;
    }
  }
  if (reuse == nullptr) return false;
  // Fill the entry before publishing the key: readers that find the key see the info.
  reuse->key.store(kErased, std::memory_order_relaxed);
  reuse->info = info;
  reuse->seq.store(0, std::memory_order_relaxed);
  reuse->splits.store(0, std::memory_order_relaxed);
  reuse->key.store(key, std::memory_order_release);
  return true;
}

CommTable::Entry* CommTable::Find(const void* comm) {
  auto key = reinterpret_cast<uintptr_t>(comm);
  if (key <= kErased) return nullptr;
  for (size_t i = 0, h = Hash(key); i < kSlots; ++i, h = (h + 1) & (kSlots - 1)) {
    uintptr_t k = slots_[h].key.load(std::memory_order_acquire);
    if (k == key) return &slots_[h];
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

void CommTable::Erase(const void* comm) {
  auto key = reinterpret_cast<uintptr_t>(comm);
  if (key <= kErased) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0, h = Hash(key); i < kSlots; ++i, h = (h + 1) & (kSlots - 1)) {
    uintptr_t k = slots_[h].key.load(std::memory_order_relaxed);
    if (k == key) {
      slots_[h].key.store(kErased, std::memory_order_release);
      return;
    }
    if (k == kEmpty) return;
  }
}

}  // namespace idlescope::nccl
