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
// Safe to call when CUPTI was never started, and more than once. Also the recorder's flush at the
// end of the process: the layer registers itself at load as the recorder's flush participant
// (recorder.h), which also stops its flush thread with the writer and runs its fork handlers.
void Flush();

}  // namespace idlescope::cupti

// CUDA_INJECTION64_PATH entry point, called by libcuda at cuInit.
extern "C" int InitializeInjection(void);
