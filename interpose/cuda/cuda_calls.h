// What the CUDA runtime hooks (interpose/cuda/cudart.*) and the CUPTI layer (cupti_*) share, and
// the only header either includes of the other's side:
//   - the description of every CUDA call either of them records: the runtime calls of
//     interpose/cuda/cudart.def (hooked, and seen by CUPTI when they do not cross our exports: a
//     static libcudart, injection mode) and the driver calls of interpose/cuda/cuda_driver.def
//     (seen by CUPTI only). One line per call says what the hook records and how CUPTI's callback
//     parameters of the same call are read, by CUPTI callback id (cupti_runtime_cbid.h,
//     cupti_driver_cbid.h);
//   - the per-thread state both sides keep, and the few functions one side calls on the other.
// See docs/cuda-interposition.md, "One description of a CUDA call".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "interpose/recorder.h"

namespace idlescope::cuda {

constexpr bool kSync = false, kAsync = true;
constexpr bool kWithStream = true, kWithoutStream = false;

// How a call's CUPTI callback parameters are read (interpose/cuda/cupti_callbacks.cc) when no hook
// of ours is waiting for it. The layouts are those of CUPTI's generated parameter structs
// (cuda_runtime_api_params.h / cuda_params.h in the CUPTI include directory).
enum class Shape : uint8_t {
  kIdOnly = 0,     // hooked: CUPTI lends the correlation id; never recorded from CUPTI
  kCopyRuntime,    // {void* dst; const void* src; size_t count; cudaMemcpyKind kind[; stream]}
  kCopyDriver,     // {CUdeviceptr dst; CUdeviceptr src; size_t ByteCount[; CUstream]}
  kCopyUnsized,    // a copy, direction from the description only
  kMemsetRuntime,  // {void* devPtr; int value; size_t count[; stream]}
  kMemsetDriver,   // {CUdeviceptr dst; unsigned value; size_t N[; CUstream]}, N elements
  kMemsetUnsized,  // 2D/3D memsets: no byte count taken
  kSyncStream,     // {stream}
  kSyncOther,      // device/context/event sync, stream waits
  kLaunch,
  kGraphLaunch,
  kHostAllocOut,  // {void** out; size_t size; ...}: pinned range from the result
  kHostRegister,  // {void* p; size_t size; ...}
  kHostFree,      // {void* p}
};

// What CUPTI reads of one call: the `cupti` column of cudart.def and cuda_driver.def.
struct CuptiReading {
  Shape shape = Shape::kIdOnly;
  bool async = false;
  bool has_stream = false;  // the stream is the last parameter, after the shape's fields
  uint8_t copy_kind = 0;    // ev::CopyKind known without the parameters (driver HtoD, peer)
  uint8_t elem_bytes = 1;   // driver memset element size
};

constexpr CuptiReading IdOnly() { return {}; }
constexpr CuptiReading RuntimeCopy(bool async, bool stream) {
  return {Shape::kCopyRuntime, async, stream, 0, 1};
}
constexpr CuptiReading DriverCopy(bool async, bool stream, uint8_t copy_kind) {
  return {Shape::kCopyDriver, async, stream, copy_kind, 1};
}
constexpr CuptiReading UnsizedCopy(bool async, uint8_t copy_kind = 0) {
  return {Shape::kCopyUnsized, async, false, copy_kind, 1};
}
constexpr CuptiReading RuntimeMemset(bool async, bool stream) {
  return {Shape::kMemsetRuntime, async, stream, 0, 1};
}
constexpr CuptiReading DriverMemset(bool async, bool stream, uint8_t elem_bytes) {
  return {Shape::kMemsetDriver, async, stream, 0, elem_bytes};
}
constexpr CuptiReading UnsizedMemset(bool async) {
  return {Shape::kMemsetUnsized, async, false, 0, 1};
}
constexpr CuptiReading StreamSync() { return {Shape::kSyncStream, false, false, 0, 1}; }
constexpr CuptiReading OtherSync(bool async) { return {Shape::kSyncOther, async, false, 0, 1}; }
constexpr CuptiReading KernelLaunch() { return {Shape::kLaunch, true, false, 0, 1}; }
constexpr CuptiReading GraphLaunchCall() { return {Shape::kGraphLaunch, true, false, 0, 1}; }
constexpr CuptiReading PinnedAlloc() { return {Shape::kHostAllocOut, false, false, 0, 1}; }
constexpr CuptiReading PinnedRegister() { return {Shape::kHostRegister, false, false, 0, 1}; }
constexpr CuptiReading PinnedFree() { return {Shape::kHostFree, false, false, 0, 1}; }

struct CallDescription {
  const char* name;  // as recorded (Event.api): the exported symbol, or CUPTI's driver name
  uint32_t cbid;     // CUPTI callback id in the call's domain
  CuptiReading cupti;
};

// Runtime calls, in cudart.def order: the hooks' ids.
enum RuntimeCallId : uint32_t {
#define CUDART_HOOK(name, cbid, cupti, params, args, describe) kCall_##name,
#include "interpose/cuda/cudart.def"
#undef CUDART_HOOK
  kRuntimeCallCount
};
extern const CallDescription kRuntimeCalls[kRuntimeCallCount];

// Other CUPTI callback ids of the same runtime calls (an older parameter layout, e.g.
// cudaMemcpyBatchAsync_v12080 next to _v13000): read like the call they name.
struct RuntimeCallVersion {
  RuntimeCallId call;
  uint32_t cbid;
};
std::span<const RuntimeCallVersion> RuntimeCallVersions();

// Driver calls CUPTI records when no runtime hook covers them (cuda_driver.def).
std::span<const CallDescription> DriverCalls();

// --- the interface between the two sides -------------------------------------------------------

// Per-thread state of the CUDA hooks, read and written by the CUPTI callbacks (which run on the
// calling thread).
struct ThreadState {
  int device = -1;           // current device (cudaSetDevice), -1 = not asked yet
  bool in_hook = false;      // inside the real call of one of our cudart hooks
  uint32_t correlation = 0;  // CUPTI correlation id of that call (runtime API exit callback)
  // CUPTI callback path (calls that never crossed our hooks): nesting depth of observed API
  // calls, and the start of the outermost one.
  uint32_t cb_depth = 0;
  uint64_t cb_start = 0;
};
// initial-exec: every hook and every CUPTI callback touches it; the default (global-dynamic)
// model costs a __tls_get_addr call per access in a shared library. Like the recorder's own
// TLS, it comes from the static TLS surplus when the library is dlopen'ed (injection mode).
// Defined by the hooks (cudart.cc).
extern __thread ThreadState t_cuda_thread __attribute__((tls_model("initial-exec")));
inline ThreadState& Thread() { return t_cuda_thread; }

// The current device of the calling thread (cached; asks the real cudaGetDevice once).
int CurrentDeviceSlow();
inline int CurrentDevice() {
  const int device = t_cuda_thread.device;
  return __builtin_expect(device >= 0, 1) ? device : CurrentDeviceSlow();
}

// Direction and host memory kind of a copy from its cudaMemcpyKind and pointers (the hooks'
// pinned range map, then the real cudaPointerGetAttributes).
struct CopyClass {
  ev::CopyKind copy_kind;
  ev::MemKind host_mem;
};
CopyClass ClassifyCopy(int memcpy_kind, const void* dst, const void* src);

// The hooks' map of page-locked host ranges, fed by CUPTI for pinned memory the hooks never saw.
void NotePinnedRange(uintptr_t begin, size_t size);
void ForgetHostRange(uintptr_t begin);

// Symbol lookup in the process's libcudart, loaded RTLD_LOCAL or not (interpose/real_symbol.h).
void* CudartSymbol(const char* name);

// Starts CUPTI once, on the first CUDA call the process makes through a hook (a process that never
// calls CUDA never loads libcupti). Cheap after the first call. If CUPTI cannot be used, records
// a "cupti_unavailable" notice once and host-side tracing goes on. Defined by the CUPTI layer
// (cupti_layer.cc).
namespace detail {
extern std::atomic<bool> g_cupti_start_attempted;
void StartCupti();
}  // namespace detail
inline void EnsureCuptiStarted() {
  if (__builtin_expect(!detail::g_cupti_start_attempted.load(std::memory_order_acquire), 0)) {
    detail::StartCupti();
  }
}

}  // namespace idlescope::cuda
