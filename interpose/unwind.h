// The calling thread's return addresses, for CaptureStack (stacks.cc).
//
// A DWARF call-frame (CFI) walk of the thread's own stack (x86-64): each pc's frame rule (where
// the caller's frame, return address and rbp are) is computed once from the module's
// .eh_frame_hdr/.eh_frame and cached by pc, so a repeated stack costs a cache lookup and two loads
// per frame. Every stack read is checked against the bounds of the stack it walks (from the
// starting sp to the thread's stack top), so a wrong rule or a corrupt frame ends the walk instead
// of faulting; the walk opens no descriptor and makes no system call. Where glibc lacks
// _dl_find_object (< 2.35) libgcc's _Unwind_Backtrace does the walk (docs/architecture.md,
// "Stacks").
#pragma once

#include <cstddef>
#include <cstdint>

namespace idlescope::unwind {

// A thread's last walks, for Backtrace to repeat (the same call path, millions of times): where
// each began (sp, rbp and the stack's top), every stack word it read (the return-address slots,
// the saved rbp slots), and what it gave. A walk that begins where one of them did and finds every
// one of those words unchanged would read the same rules and words again: it gives the same
// return addresses, checked with one load a word instead of a rule lookup a frame. Memory of
// WalkCacheBytes(), zeroed (empty), owned by one thread (its ring: rings.h); a walk nested in a
// signal handler that interrupted one using it walks without it.
struct WalkCache;
size_t WalkCacheBytes();

// Looks up what the walk needs (_dl_find_object); idempotent. Call before the first Backtrace.
void Init();

// Return addresses of the calling thread's stack, innermost first; the first one or two may be
// inside Backtrace itself (callers find their own frame by its return address). At most `max`
// entries; returns how many. Async-signal-safe on the CFI walk (no lock, no allocation, no system
// call).
int Backtrace(uintptr_t* pcs, int max, WalkCache* cache = nullptr);

// Which walk Backtrace uses: true for the cached CFI walk, false for libgcc's.
bool UsesCfiWalk();

// Counters for tests and benchmarks: rules computed (cache misses) since start, and walks given
// from a WalkCache.
uint64_t RulesComputed();
uint64_t WalksRepeated();

}  // namespace idlescope::unwind
