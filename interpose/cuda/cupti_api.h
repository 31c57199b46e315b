// The CUPTI functions we use, resolved with dlsym from the libcupti we dlopen'ed (never linked:
// a process with no CUDA must not load it, and its absence must not stop the job).
#pragma once

#include <cupti.h>

namespace idlescope::cupti {

#define IDLESCOPE_CUPTI_FUNCTIONS(X)        \
  X(cuptiGetVersion)                        \
  X(cuptiGetResultString)                   \
  X(cuptiActivityRegisterTimestampCallback) \
  X(cuptiActivityRegisterCallbacks)         \
  X(cuptiActivityEnable)                    \
  X(cuptiActivityFlushAll)                  \
  X(cuptiActivityGetNextRecord)             \
  X(cuptiActivityGetNumDroppedRecords)      \
  X(cuptiSubscribe)                         \
  X(cuptiEnableCallback)

struct Api {
#define IDLESCOPE_CUPTI_FIELD(name) decltype(&::name) name = nullptr;
  IDLESCOPE_CUPTI_FUNCTIONS(IDLESCOPE_CUPTI_FIELD)
#undef IDLESCOPE_CUPTI_FIELD
};

// Valid once Start() loaded CUPTI; null before and when CUPTI is unavailable.
const Api* Loaded();

// Text of a CUPTI result for notices.
const char* ResultText(CUptiResult r);

// Callback API (callbacks.cc): subscribes and enables the callbacks; returns why not, or null.
const char* StartCallbacks(const Api& api);

}  // namespace idlescope::cupti
