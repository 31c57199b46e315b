// Python stacks: at a hooked event that takes a call stack, the calling thread's own CPython frame
// chain is read too (3.10-3.13), so a stack says "train.py:42 in train_step" and not only
// "_PyEval_EvalFrameDefault". Nothing is hooked in the interpreter and no Python API that needs
// the GIL is called: the thread is inside our hook, so its frames cannot change under us whether
// or not it holds the GIL, and they are read by the version's layout (interpose/python/layout.h).
// Never PyEval_SetProfile, sys.settrace or sys.monitoring: they cost every Python call and
// conflict with torch.profiler.
//
// In the trace a Python frame is a Frame of kind FRAME_PYTHON, and a stack holds the thread's
// Python frames after its native frames, as the inner part of the trie path (proto/trace.proto,
// StackNode). In the stack trie (stacks.cc) a Python frame is a node whose "pc" is a key with the
// top bit set (no user-space address has it): the code object's id in the code cache, the
// instruction offset, and whether a native evaluation loop started at this frame. A code object is
// read once, when first seen, into the cache (file, qualified name, first line, line table); the
// writer thread turns (code, offset) into a line from that copy. docs/architecture.md, "Python
// stacks".
#pragma once

#include <cstdint>

#include "interpose/trace_encoder.h"

namespace idlescope::python {

// Detects the interpreter (called once, by the recorder's Init): a process that runs no CPython
// gets nothing; an interpreter version we do not know gets one notice and no Python stacks; so
// does `wanted` false (IDLESCOPE_PYTHON_STACKS=0, or stacks off).
void Init(bool wanted);

// Turns Python stacks on where Init found an interpreter it reads, once the recorder's signal
// handlers are installed (lifecycle.cc): the signal return trampoline, which a walk must know, is
// read from them.
void Start();

// "3.11.2" when Init found an interpreter whose stacks it reads, else "".
const char* Version();

// At most this many Python frames per stack, the innermost ones.
inline constexpr int kMaxFrames = 128;

// The calling thread's Python frames, innermost first, as stack trie keys; 0 when Python stacks
// are off, the thread runs no Python, or the hook runs in a signal handler (`native_pcs`, the
// thread's native stack as just unwound, innermost first, holds the kernel's signal return
// trampoline): the interrupted interpreter may be between two stores of a frame push. Never fails
// otherwise: a frame whose code object cannot be read ends the walk there.
int CaptureFrames(const uintptr_t* native_pcs, int native_count, uint64_t* keys, int max);

inline bool IsFrameKey(uint64_t key) { return (key >> 63) != 0; }

// --- Another thread's frames, for the thread sampler (interpose/sampler.cc) --------------------

// The calling thread's PyThreadState and the thread id CPython keeps in it (its pthread_self), for
// the sampler to read the thread's frames from outside later (ReadThreadFrames); false when Python
// stacks are off, the thread has no state, or the state names another thread. Lock-free, no
// allocation: it may run in a signal handler (only the state's address and id are taken there).
struct ThreadStateRef {
  uintptr_t tstate = 0;
  unsigned long thread_id = 0;
  // A forked child's main thread: the native id of the thread that forked it, which the state
  // may still hold (CPython 3.11 does not set it again in the child); 0: none.
  uint32_t forked_from = 0;
};
bool ThisThreadState(ThreadStateRef* out);

// ReadThreadFrames' result when the state no longer belongs to the thread (freed, reused, or never
// its own): the sampler stops reading it.
inline constexpr int kStateGone = -1;

// Writer thread: the innermost Python frames (at most `max`) of thread `tid`, whose state `ref`
// was taken on it, as stack trie keys, innermost first; read while that thread runs, through
// process_vm_readv on process `pid`, ours or a worker forked from us (python/own_memory.h; a
// worker's main thread: `ref` its forking thread's), so that a frame that is popped, freed or
// unmapped under us ends the walk and never faults. The state must still name the thread
// (CPython's thread id, and from 3.11 its native id, the tid or ref.forked_from); each frame's
// code object must be one (its type), its instruction inside its bytecode; at most 4 * `max`
// frames are visited. A code object first seen here is copied into the code cache the same way.
// The frames are read one after the other, not at one instant: each is a frame the thread had
// during the read (a few microseconds), and a walk that meets something that is not a frame ends
// there.
int ReadThreadFrames(int pid, uint32_t tid, const ThreadStateRef& ref, uint64_t* keys, int max);

// Writer thread: the Frame id of Python frame key `key`, appending a new Frame (and its strings)
// to `out` when this (code, line, entry) has none yet in this file; new ids come from
// `*next_frame_id`, the file's frame id counter (shared with native frames).
uint64_t FrameFor(uint64_t key, uint64_t* next_frame_id, trace::Interned* out);
// A new file (forked child): its frames are defined again.
void ResetFrames();

// Fork handlers: no code object may be half inserted into the cache when the process is copied.
void LockForFork();
void UnlockAfterFork();

// Counters for tests and the benchmark.
struct Stats {
  uint64_t codes = 0;              // code objects in the cache
  uint64_t unreadable = 0;         // walks ended at a frame whose code object could not be read
  uint64_t foreign_tstate = 0;     // thread states that named another thread (not captured)
  uint64_t in_signal_handler = 0;  // captures in a signal handler (no Python frames taken)
  uint64_t sampled_walks = 0;      // ReadThreadFrames calls that read the thread's state
  uint64_t sampled_torn = 0;       // of those, walks ended early by a frame that did not read
  uint64_t sampled_gone = 0;       // states that no longer named their thread (kStateGone)
};
Stats GetStats();

// Benchmark/test switch: Python stacks on or off for the whole process (after Init found a
// supported interpreter).
void SetActiveForTesting(bool active);

}  // namespace idlescope::python
