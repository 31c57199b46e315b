// The library's own operator delete. libstdc++ is linked statically and nothing of it is exported,
// so this replaces only the library's delete, never the program's (<new> declares these with
// default visibility; exports.map keeps them local, and linkage_test checks that nothing of the
// kind is exported).
//
// Why: the final flush of a signal runs on the writer thread while the thread that the signal
// stopped may be inside malloc, holding its arena's lock (Python allocates all the time), and
// freeing a block that thread's arena gave out (a queue vector grown on the CUPTI thread, a notice
// recorded by a program thread) would wait for that lock forever: the process then lost its last
// events and footer, 3 s later. So in that flush, and in the rest of a flush under way when it
// was asked for, the writer frees nothing (`LeakFrees`): the process ends right after it. Its own
// allocations come from the arena glibc gave it at its start (WriterMain allocates once first
// thing), which the stopped thread does not hold.
#include <cstdlib>
#include <new>

#include "interpose/recorder_internal.h"

// Not under AddressSanitizer: it replaces operator new and delete itself, and checks that they
// pair up.
#if !defined(__SANITIZE_ADDRESS__)

void operator delete(void* p) noexcept {
  if (!idlescope::internal::LeakFrees()) free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }

#endif  // !defined(__SANITIZE_ADDRESS__)
