// The CUPTI layer: loads libcupti with dlopen (never a link dependency), turns CUPTI activity into
// RawGpuActivity on the trace clock, and uses CUPTI's callback API for correlation ids and for
// CUDA calls that never pass through our cudart hooks. See docs/architecture.md, "CUDA and CUPTI".
#pragma once

#include <atomic>

namespace idlescope::cupti {

// Starting CUPTI: cuda::EnsureCuptiStarted (interpose/cuda/cuda_calls.h), which the hooks call.

// Whether activity tracing is on (CUPTI loaded and kinds enabled).
bool ActivityEnabled();

// Delivers every completed and pending CUPTI buffer to the recorder (cuptiActivityFlushAll,
// FORCED). Never called with a lock held: CUPTI calls our completion handler from inside it.
void Flush();

}  // namespace idlescope::cupti

// For the recorder's shutdown (exit, _exit, signals): flush CUPTI before the footer is written.
// Safe to call when CUPTI was never started, and more than once.
extern "C" void idlescope_cupti_flush();
// The same, run on the CUPTI layer's flush thread and waited for (at most 2 s): for the recorder's
// writer, whose descriptor table lacks the CUDA driver's descriptors. No-op when that thread does
// not run in this process.
extern "C" void idlescope_cupti_flush_on_cupti_thread();

// Stops the flush thread for good (the program's last thread is ending: recorder.cc, "Program
// threads"); the last buffers are delivered by the exit's idlescope_cupti_flush.
extern "C" void idlescope_cupti_stop_flush_thread();

// fork handlers for the CUPTI layer's locks, called by the recorder's (interpose/recorder.cc)
// before it takes its own.
extern "C" void idlescope_cupti_fork_prepare();
extern "C" void idlescope_cupti_fork_parent();
extern "C" void idlescope_cupti_fork_child();

// CUDA_INJECTION64_PATH entry point, called by libcuda at cuInit.
extern "C" int InitializeInjection(void);
