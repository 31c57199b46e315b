#include "interpose/cuda/cuda_calls.h"

// The callback id enumerators only: plain enums from the CUDA toolkit, nothing to link.
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

namespace idlescope::cuda {

const CallDescription kRuntimeCalls[kRuntimeCallCount] = {
#define CUDART_HOOK(name, cbid, cupti, params, args, describe) \
  {#name, CUPTI_RUNTIME_TRACE_CBID_##cbid, cupti},
#include "interpose/cuda/cudart.def"
#undef CUDART_HOOK
};

namespace {

constexpr RuntimeCallVersion kVersions[] = {
#define CUDART_HOOK(name, cbid, cupti, params, args, describe)
#define CUDART_CUPTI_VERSION(name, cbid) {kCall_##name, CUPTI_RUNTIME_TRACE_CBID_##cbid},
#include "interpose/cuda/cudart.def"
#undef CUDART_CUPTI_VERSION
#undef CUDART_HOOK
};

constexpr CallDescription kDriverCalls[] = {
#define CUDA_DRIVER_CALL(name, cupti) {#name, CUPTI_DRIVER_TRACE_CBID_##name, cupti},
#include "interpose/cuda/cuda_driver.def"
#undef CUDA_DRIVER_CALL
};

}  // namespace

std::span<const RuntimeCallVersion> RuntimeCallVersions() { return kVersions; }
std::span<const CallDescription> DriverCalls() { return kDriverCalls; }

}  // namespace idlescope::cuda
