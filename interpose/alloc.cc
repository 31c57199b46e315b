// The library's own operator new and delete. libstdc++ is linked statically and nothing of it is
// exported, so this replaces only the library's, never the program's (<new> declares these with
// default visibility; exports.map keeps them local, and linkage_test checks that nothing of the
// kind is exported).
//
// Why: the final flush of a signal runs while the thread that the signal stopped may be inside
// malloc, holding its arena's lock (Python allocates all the time).
// - On the writer thread, freeing a block that thread's arena gave out (a queue vector grown on
//   the CUPTI thread, a notice recorded by a program thread) would wait for that lock forever: the
//   process then lost its last events and footer, 3 s later. So in that flush, and in the rest of
//   a flush under way when it was asked for, the writer frees nothing (`LeakFrees`): the process
//   ends right after it. Its own allocations come from the arena glibc gave it at its start
//   (WriterMain allocates once first thing), which the stopped thread does not hold.
// - In a process without a writer thread the stopped thread runs the flush itself, in the
//   handler: it allocates from the care heap (care_heap.h) and frees nothing.
#include <cstdlib>
#include <new>

#include "interpose/care_heap.h"
#include "interpose/recorder_internal.h"

// Not under AddressSanitizer: it replaces operator new and delete itself, and checks that they
// pair up.
#if !defined(__SANITIZE_ADDRESS__)

namespace {

// A final flush on a program thread allocates from the care heap (care_heap.h: the signal may
// have stopped this thread inside malloc). Built without exceptions: out of memory aborts, as an
// uncaught std::bad_alloc would.
void* Allocate(std::size_t n) noexcept {
  return idlescope::care_heap::Active() ? idlescope::care_heap::Allocate(n) : std::malloc(n);
}

void* AllocateOrAbort(std::size_t n) noexcept {
  void* p = Allocate(n);
  if (p == nullptr) std::abort();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return AllocateOrAbort(n); }
void* operator new[](std::size_t n) { return AllocateOrAbort(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }

void operator delete(void* p) noexcept {
  if (!idlescope::internal::LeakFrees()) idlescope::care_heap::Free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { operator delete(p); }

#endif  // !defined(__SANITIZE_ADDRESS__)
