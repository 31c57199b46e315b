// CUPTI callback API: (1) the correlation id of each call our cudart hooks intercept (read at the
// runtime API exit, on the calling thread, while the hook waits for the real call to return);
// (2) host-blocked time of CUDA calls that never pass through libcudart's exports (static cudart
// in cuBLAS/NCCL, XLA's driver calls, and everything under CUDA_INJECTION64_PATH).
//
// No double counting: a hook marks the thread (ThreadState::in_hook) around its real call, and
// the callbacks then only lend the correlation id. Outside hooks, only the outermost observed call
// is recorded (ThreadState::cb_depth): the driver calls a runtime call makes are nested in it.
#include <cupti.h>

#include <cstring>
#include <string>

#include "interpose/cuda/cuda_calls.h"
#include "interpose/cuda/cupti_api.h"
#include "interpose/recorder.h"

namespace idlescope::cupti {

namespace {

using cuda::CallDescription;
using cuda::Shape;

// One enabled callback id: the call's description (interpose/cuda/cudart.def, cuda_driver.def) and
// its API name's string id, interned when the call is first recorded from here.
struct CbInfo {
  const CallDescription* call = nullptr;  // nullptr: not a call we enabled
  std::atomic<uint32_t> api{0};
};

CbInfo g_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
CbInfo g_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
CUpti_SubscriberHandle g_subscriber = nullptr;

CbInfo* Info(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? &g_runtime[cbid] : nullptr;
  }
  return cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? &g_driver[cbid] : nullptr;
}

uint32_t ApiId(CbInfo& info) {
  uint32_t api = info.api.load(std::memory_order_relaxed);
  if (api == 0) {
    // Benign race: two threads intern the same string.
    api = InternString(info.call->name);
    info.api.store(api, std::memory_order_relaxed);
  }
  return api;
}

struct CopyParams {
  uint64_t dst, src;
  size_t count;
};
struct CopyParamsRuntime {
  void* dst;
  const void* src;
  size_t count;
  int kind;
};
struct MemsetParams {
  uint64_t dst;
  unsigned value;
  size_t n;
};
struct OutAllocParams {
  void** out;
  size_t size;
};
struct RegisterParams {
  void* p;
  size_t size;
};

// The stream of an Async call: the last parameter, after a shape we know.
template <typename P>
uint64_t StreamAfter(const void* params) {
  struct WithStream {
    P p;
    void* stream;
  };
  return reinterpret_cast<uint64_t>(static_cast<const WithStream*>(params)->stream);
}

void UpdateRanges(Shape shape, const CUpti_CallbackData* cb) {
  const void* params = cb->functionParams;
  if (params == nullptr) return;
  if (shape == Shape::kHostFree && cb->callbackSite == CUPTI_API_ENTER) {
    cuda::ForgetHostRange(reinterpret_cast<uintptr_t>(*static_cast<void* const*>(params)));
    return;
  }
  if (cb->callbackSite != CUPTI_API_EXIT || cb->functionReturnValue == nullptr ||
      *static_cast<const int*>(cb->functionReturnValue) != 0) {
    return;
  }
  if (shape == Shape::kHostAllocOut) {
    const auto* p = static_cast<const OutAllocParams*>(params);
    if (p->out && *p->out) {
      cuda::NotePinnedRange(reinterpret_cast<uintptr_t>(*p->out), p->size);
    }
  } else if (shape == Shape::kHostRegister) {
    const auto* p = static_cast<const RegisterParams*>(params);
    cuda::NotePinnedRange(reinterpret_cast<uintptr_t>(p->p), p->size);
  }
}

void RecordCall(CbInfo& cb_info, Shape shape, const CUpti_CallbackData* cb, uint64_t t0,
                uint64_t t1, uint32_t stack) {
  const cuda::CuptiReading& info = cb_info.call->cupti;
  RawEvent e;
  e.ts = t0;
  e.dur = t1 - t0;
  e.api = ApiId(cb_info);
  e.stack = stack;
  e.result = cb->functionReturnValue ? *static_cast<const int*>(cb->functionReturnValue) : 0;
  e.u.cuda.correlation = cb->correlationId;
  e.u.cuda.device = static_cast<uint32_t>(cuda::CurrentDevice());
  e.u.cuda.async = info.async;
  e.u.cuda.copy_kind = info.copy_kind;
  const void* params = cb->functionParams;
  if (params == nullptr) {
    // Without parameters only the kind of call is known.
    if (shape == Shape::kCopyRuntime || shape == Shape::kCopyDriver) shape = Shape::kCopyUnsized;
    if (shape == Shape::kMemsetRuntime || shape == Shape::kMemsetDriver)
      shape = Shape::kMemsetUnsized;
    if (shape == Shape::kSyncStream) shape = Shape::kSyncOther;
  }
  switch (shape) {
    case Shape::kCopyRuntime: {
      const auto* p = static_cast<const CopyParamsRuntime*>(params);
      e.type = ev::kCudaMemcpy;
      e.bytes = p->count;
      cuda::CopyClass c = cuda::ClassifyCopy(p->kind, p->dst, p->src);
      e.u.cuda.copy_kind = c.copy_kind;
      e.u.cuda.host_mem = c.host_mem;
      e.u.cuda.stream = info.has_stream ? StreamAfter<CopyParamsRuntime>(params) : 0;
      break;
    }
    case Shape::kCopyDriver: {
      const auto* p = static_cast<const CopyParams*>(params);
      e.type = ev::kCudaMemcpy;
      e.bytes = p->count;
      int kind = info.copy_kind == ev::kH2D   ? cudaMemcpyHostToDevice
                 : info.copy_kind == ev::kD2H ? cudaMemcpyDeviceToHost
                 : info.copy_kind == ev::kD2D ? cudaMemcpyDeviceToDevice
                                              : cudaMemcpyDefault;
      cuda::CopyClass c = cuda::ClassifyCopy(kind, reinterpret_cast<const void*>(p->dst),
                                             reinterpret_cast<const void*>(p->src));
      e.u.cuda.copy_kind = c.copy_kind;
      e.u.cuda.host_mem = c.host_mem;
      e.u.cuda.stream = info.has_stream ? StreamAfter<CopyParams>(params) : 0;
      break;
    }
    case Shape::kCopyUnsized:
      e.type = ev::kCudaMemcpy;
      break;
    case Shape::kMemsetRuntime: {
      const auto* p = static_cast<const CopyParamsRuntime*>(params);  // {devPtr, value, count}
      e.type = ev::kCudaMemset;
      e.bytes = p->count;
      break;
    }
    case Shape::kMemsetUnsized:
      e.type = ev::kCudaMemset;
      break;
    case Shape::kMemsetDriver: {
      const auto* p = static_cast<const MemsetParams*>(params);
      e.type = ev::kCudaMemset;
      e.bytes = uint64_t(p->n) * info.elem_bytes;
      e.u.cuda.stream = info.has_stream ? StreamAfter<MemsetParams>(params) : 0;
      break;
    }
    case Shape::kSyncStream:
      e.type = ev::kCudaSync;
      e.u.cuda.stream = reinterpret_cast<uint64_t>(*static_cast<void* const*>(params));
      if (e.u.cuda.stream == 0) e.u.cuda.stream = 1;  // NULL: the legacy default stream
      break;
    case Shape::kSyncOther:
      e.type = ev::kCudaSync;
      break;
    case Shape::kLaunch:
      e.type = ev::kCudaLaunch;
      break;
    case Shape::kGraphLaunch:
      e.type = ev::kCudaGraphLaunch;
      break;
    default:
      return;
  }
  Record(e);
}

// A call no hook of ours is waiting for (static cudart, driver API, injection mode).
__attribute__((noinline)) void OnUnhookedApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                             const CUpti_CallbackData* cb, cuda::ThreadState& t) {
  CbInfo* info = Info(domain, cbid);
  if (info == nullptr || info->call == nullptr) return;
  const Shape shape = info->call->cupti.shape;
  if (shape == Shape::kIdOnly) return;
  if (shape == Shape::kHostAllocOut || shape == Shape::kHostRegister || shape == Shape::kHostFree) {
    UpdateRanges(shape, cb);
    return;
  }
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (t.cb_depth++ == 0) t.cb_start = NowNs();
    return;
  }
  if (t.cb_depth == 0) return;  // callbacks were enabled in the middle of this call
  if (--t.cb_depth != 0) return;
  const uint64_t t1 = NowNs();
  HookGuard guard(Family::kCuda);
  if (!guard.active()) return;
  const bool wants_stack = shape != Shape::kLaunch && shape != Shape::kGraphLaunch &&
                           shape != Shape::kMemsetDriver && shape != Shape::kMemsetRuntime &&
                           shape != Shape::kMemsetUnsized;
  RecordCall(*info, shape, cb, t.cb_start, t1, wants_stack ? CaptureStack(1) : 0);
}

// Every enabled callback of every hooked call comes here twice (enter, exit): the in-hook path is
// kept to a few instructions, the rest is out of line.
void CUPTIAPI OnApi(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  cuda::ThreadState& t = cuda::Thread();
  if (__builtin_expect(t.in_hook, 1)) {
    // One of our hooks is waiting for this call: lend it the correlation id. The runtime exit
    // comes after the nested driver exits, so the runtime call's id wins.
    if (cb->callbackSite == CUPTI_API_EXIT &&
        (domain == CUPTI_CB_DOMAIN_RUNTIME_API || t.correlation == 0)) {
      t.correlation = cb->correlationId;
    }
    return;
  }
  OnUnhookedApi(domain, cbid, cb, t);
}

// The callbacks of one domain's calls: described in `table` (by callback id), enabled in CUPTI.
// Returns how many CUPTI accepted (an id this CUPTI does not know is refused).
int EnableCalls(const Api& api, CUpti_CallbackDomain domain, CbInfo* table, size_t size,
                const CallDescription& call, uint32_t cbid) {
  if (cbid == 0 || cbid >= size) return 0;
  table[cbid].call = &call;
  return api.cuptiEnableCallback(1, g_subscriber, domain, cbid) == CUPTI_SUCCESS ? 1 : 0;
}

}  // namespace

const char* StartCallbacks(const Api& api) {
  static std::string why;
  CUptiResult r = api.cuptiSubscribe(&g_subscriber, OnApi, nullptr);
  if (r != CUPTI_SUCCESS) {
    why = std::string("cuptiSubscribe: ") + ResultText(r);  // e.g. another profiler subscribed
    return why.c_str();
  }
  // Only the callbacks of the calls we describe: every enabled callback costs on every call of
  // that API.
  int enabled = 0;
  for (uint32_t i = 0; i < cuda::kRuntimeCallCount; ++i) {
    const CallDescription& call = cuda::kRuntimeCalls[i];
    enabled += EnableCalls(api, CUPTI_CB_DOMAIN_RUNTIME_API, g_runtime, std::size(g_runtime), call,
                           call.cbid);
  }
  for (const cuda::RuntimeCallVersion& v : cuda::RuntimeCallVersions()) {
    enabled += EnableCalls(api, CUPTI_CB_DOMAIN_RUNTIME_API, g_runtime, std::size(g_runtime),
                           cuda::kRuntimeCalls[v.call], v.cbid);
  }
  for (const CallDescription& call : cuda::DriverCalls()) {
    enabled += EnableCalls(api, CUPTI_CB_DOMAIN_DRIVER_API, g_driver, std::size(g_driver), call,
                           call.cbid);
  }
  if (enabled == 0) {
    why = "cuptiEnableCallback: no callback of the CUDA calls we record could be enabled";
    return why.c_str();
  }
  return nullptr;
}

}  // namespace idlescope::cupti
