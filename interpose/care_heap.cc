// The care heap (care_heap.h): bump allocation from chunks mapped on demand.
#include "interpose/care_heap.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace idlescope::care_heap {
namespace {

constexpr size_t kChunkBytes = size_t{4} << 20;  // more than a final flush of 1 MB rings needs
constexpr size_t kMaxChunks = 64;

// One final flush at a time uses the heap (the flush lock), but Owns may be asked by any thread
// (operator delete): the chunk table is published with release stores.
struct Heap {
  std::atomic<uintptr_t> begin[kMaxChunks];
  std::atomic<uintptr_t> end[kMaxChunks];
  std::atomic<size_t> chunks{0};
  uintptr_t next = 0;  // the current chunk's free space (the flushing thread's)
  uintptr_t limit = 0;
};
constinit Heap g_heap;
__thread bool t_active __attribute__((tls_model("initial-exec"))) = false;

}  // namespace

void Enter() { t_active = true; }
bool Active() { return t_active; }

void* Allocate(size_t n) {
  n = (n + 15) & ~size_t{15};
  if (n == 0) n = 16;
  if (g_heap.limit - g_heap.next < n || g_heap.next == 0) {
    size_t count = g_heap.chunks.load(std::memory_order_relaxed);
    if (count == kMaxChunks) return nullptr;
    size_t bytes = n > kChunkBytes ? (n + 4095) & ~size_t{4095} : kChunkBytes;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    g_heap.next = reinterpret_cast<uintptr_t>(p);
    g_heap.limit = g_heap.next + bytes;
    g_heap.begin[count].store(g_heap.next, std::memory_order_relaxed);
    g_heap.end[count].store(g_heap.limit, std::memory_order_relaxed);
    g_heap.chunks.store(count + 1, std::memory_order_release);
  }
  void* p = reinterpret_cast<void*>(g_heap.next);
  g_heap.next += n;
  return p;
}

bool Owns(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const size_t count = g_heap.chunks.load(std::memory_order_acquire);
  for (size_t i = 0; i < count; ++i) {
    if (a >= g_heap.begin[i].load(std::memory_order_relaxed) &&
        a < g_heap.end[i].load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void* Reallocate(void* p, size_t old_size, size_t n) {
  if (!t_active) return std::realloc(p, n);
  void* q = Allocate(n);
  if (q != nullptr && p != nullptr) std::memcpy(q, p, old_size < n ? old_size : n);
  return q;
}

void Free(void* p) {
  if (p == nullptr || t_active || Owns(p)) return;
  std::free(p);
}

}  // namespace idlescope::care_heap
