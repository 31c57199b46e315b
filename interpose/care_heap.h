// Memory for a final flush that runs where libc's malloc may not be called: on a program thread,
// in the handler of the signal that ends the process (or in _exit, which handlers call), while no
// writer thread exists (writer.h, "Threadless processes"). The signal may have stopped this very
// thread inside malloc, holding its arena's lock; a flush that allocated from libc there would wait
// for itself forever. So from Enter on, the thread's allocations (the library's operator new,
// alloc.cc, and the encoder's buffers, wire.h) come from pages mapped for the purpose, and nothing
// is freed: the process ends right after that flush.
#pragma once

#include <cstddef>

namespace idlescope::care_heap {

// The calling thread allocates from the care heap from now on (never left).
void Enter();
// Whether the calling thread does.
bool Active();
// `n` bytes, 16-aligned, from pages mapped with mmap(2) (a system call, safe in a signal handler);
// null when no page can be mapped.
void* Allocate(size_t n);
// Whether `p` was given out by Allocate (then it is never freed).
bool Owns(const void* p);

// The buffer functions wire::Buffer uses: libc's realloc/free, or the care heap's on a thread that
// entered it (a buffer grown there keeps its old block, `old_size` bytes of which are copied).
void* Reallocate(void* p, size_t old_size, size_t n);
void Free(void* p);

}  // namespace idlescope::care_heap
