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
#include <string_view>

#include "cupti/cupti_api.h"
#include "interpose/hooks/cudart.h"
#include "interpose/recorder.h"

namespace idlescope::cupti {

namespace {

enum class Shape : uint8_t {
  kUnclassified = 0,
  kIgnore,
  kCopyRuntime,    // {void* dst; const void* src; size_t count; cudaMemcpyKind kind[; stream]}
  kCopyDriver,     // {CUdeviceptr dst; CUdeviceptr src; size_t ByteCount[; CUstream]}
  kCopyOther,      // direction from the name only
  kMemsetRuntime,  // {void* devPtr; int value; size_t count[; stream]}
  kMemsetDriver,   // {CUdeviceptr dst; unsigned value; size_t N[; CUstream]}, N elements
  kMemsetOther,    // 2D/3D memsets: no byte count taken
  kSyncStream,     // {stream}
  kSyncOther,      // device/context/event sync, stream waits
  kLaunch,
  kGraphLaunch,
  kHostAllocOut,  // {void** out; size_t size; ...}: pinned range from the result
  kHostRegister,  // {void* p; size_t size; ...}
  kHostFree,      // {void* p}
};

struct CbInfo {
  std::atomic<uint8_t> shape{0};
  uint8_t copy_kind = 0;   // ev::CopyKind known from the name (driver HtoD/DtoH/...)
  uint8_t elem_bytes = 1;  // driver memset element size
  bool async = false;
  bool has_stream = false;
  uint32_t api = 0;  // InternString id of the name without the _vNNNN suffix
};

CbInfo g_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
CbInfo g_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
CUpti_SubscriberHandle g_subscriber = nullptr;

// "cudaMemcpy_v3020" -> "cudaMemcpy" (runtime callback names carry the API version).
std::string_view BaseName(std::string_view name) {
  size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  // Driver "_v2" is part of the versioned driver symbol; strip it too: "cuMemcpyHtoD".
  return name.substr(0, v);
}

std::string_view StripPerThread(std::string_view s) {
  if (s.ends_with("_ptds") || s.ends_with("_ptsz")) s.remove_suffix(5);
  if (s.ends_with("_v2")) s.remove_suffix(3);
  return s;
}

bool HookedRuntimeName(std::string_view base) {
  for (uint32_t i = 0; i < cudart::kHookCount; ++i) {
    if (base == cudart::kHookNames[i]) return true;
  }
  return false;
}

Shape Classify(CUpti_CallbackDomain domain, std::string_view name, CbInfo* info) {
  // Per-thread forms keep their name in the trace, as in the hooks.
  std::string_view api = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? BaseName(name) : name;
  std::string_view core = StripPerThread(api);
  info->async = core.ends_with("Async") || core.find("Launch") != std::string_view::npos ||
                core.find("WaitEvent") != std::string_view::npos;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (!HookedRuntimeName(api)) return Shape::kIgnore;
    info->api = InternString(api);
    if (core == "cudaMemcpy" || core == "cudaMemcpyAsync") {
      info->has_stream = core == "cudaMemcpyAsync";
      return Shape::kCopyRuntime;
    }
    if (core == "cudaMemset" || core == "cudaMemsetAsync") {
      info->has_stream = core == "cudaMemsetAsync";
      return Shape::kMemsetRuntime;
    }
    if (core == "cudaStreamSynchronize") return Shape::kSyncStream;
    if (core == "cudaMallocHost" || core == "cudaHostAlloc") return Shape::kHostAllocOut;
    if (core == "cudaHostRegister") return Shape::kHostRegister;
    if (core == "cudaFreeHost" || core == "cudaHostUnregister") return Shape::kHostFree;
    if (core.starts_with("cudaMemcpy")) {
      if (core.find("Peer") != std::string_view::npos) info->copy_kind = ev::kPeer;
      return Shape::kCopyOther;
    }
    if (core.starts_with("cudaMemset")) return Shape::kMemsetOther;
    if (core.find("Synchronize") != std::string_view::npos ||
        core.find("WaitEvent") != std::string_view::npos) {
      return Shape::kSyncOther;
    }
    if (core == "cudaGraphLaunch") return Shape::kGraphLaunch;
    if (core.find("Launch") != std::string_view::npos) return Shape::kLaunch;
    return Shape::kIgnore;
  }
  // Driver API.
  if (core == "cuMemcpy" || core == "cuMemcpyAsync" || core == "cuMemcpyHtoD" ||
      core == "cuMemcpyHtoDAsync" || core == "cuMemcpyDtoH" || core == "cuMemcpyDtoHAsync" ||
      core == "cuMemcpyDtoD" || core == "cuMemcpyDtoDAsync") {
    info->api = InternString(api);
    info->has_stream = core.ends_with("Async");
    if (core.starts_with("cuMemcpyHtoD")) info->copy_kind = ev::kH2D;
    if (core.starts_with("cuMemcpyDtoH")) info->copy_kind = ev::kD2H;
    if (core.starts_with("cuMemcpyDtoD")) info->copy_kind = ev::kD2D;
    return Shape::kCopyDriver;
  }
  if (core.starts_with("cuMemcpy")) {
    info->api = InternString(api);
    if (core.find("Peer") != std::string_view::npos) info->copy_kind = ev::kPeer;
    if (core.find("HtoA") != std::string_view::npos) info->copy_kind = ev::kH2D;
    if (core.find("AtoH") != std::string_view::npos) info->copy_kind = ev::kD2H;
    return Shape::kCopyOther;
  }
  if (core.starts_with("cuMemsetD8") || core.starts_with("cuMemsetD16") ||
      core.starts_with("cuMemsetD32")) {
    info->api = InternString(api);
    if (core.starts_with("cuMemsetD2D")) return Shape::kMemsetOther;
    info->elem_bytes = core.starts_with("cuMemsetD8") ? 1 : core.starts_with("cuMemsetD16") ? 2 : 4;
    info->has_stream = core.ends_with("Async");
    return Shape::kMemsetDriver;
  }
  if (core == "cuStreamSynchronize") {
    info->api = InternString(api);
    return Shape::kSyncStream;
  }
  if (core == "cuCtxSynchronize" || core == "cuEventSynchronize" || core == "cuStreamWaitEvent") {
    info->api = InternString(api);
    return Shape::kSyncOther;
  }
  if (core == "cuGraphLaunch") {
    info->api = InternString(api);
    return Shape::kGraphLaunch;
  }
  if (core == "cuLaunchKernel" || core == "cuLaunchKernelEx" ||
      core == "cuLaunchCooperativeKernel") {
    info->api = InternString(api);
    return Shape::kLaunch;
  }
  if (core == "cuMemHostAlloc" || core == "cuMemAllocHost") return Shape::kHostAllocOut;
  if (core == "cuMemHostRegister") return Shape::kHostRegister;
  if (core == "cuMemFreeHost" || core == "cuMemHostUnregister") return Shape::kHostFree;
  return Shape::kIgnore;
}

CbInfo* Info(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name) {
  CbInfo* table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_runtime : g_driver;
  size_t size = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                    ? static_cast<size_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                    : static_cast<size_t>(CUPTI_DRIVER_TRACE_CBID_SIZE);
  if (cbid >= size) return nullptr;
  CbInfo* info = &table[cbid];
  if (info->shape.load(std::memory_order_acquire) == 0) {
    // Benign race: two threads compute the same answer.
    Shape s = name ? Classify(domain, name, info) : Shape::kIgnore;
    info->shape.store(static_cast<uint8_t>(s), std::memory_order_release);
  }
  return info;
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
    HostRanges().Remove(reinterpret_cast<uintptr_t>(*static_cast<void* const*>(params)));
    return;
  }
  if (cb->callbackSite != CUPTI_API_EXIT || cb->functionReturnValue == nullptr ||
      *static_cast<const int*>(cb->functionReturnValue) != 0) {
    return;
  }
  if (shape == Shape::kHostAllocOut) {
    const auto* p = static_cast<const OutAllocParams*>(params);
    if (p->out && *p->out) {
      HostRanges().Insert(reinterpret_cast<uintptr_t>(*p->out), p->size, RangeKind::kPinned);
    }
  } else if (shape == Shape::kHostRegister) {
    const auto* p = static_cast<const RegisterParams*>(params);
    HostRanges().Insert(reinterpret_cast<uintptr_t>(p->p), p->size, RangeKind::kPinned);
  }
}

void RecordCall(const CbInfo& info, Shape shape, const CUpti_CallbackData* cb, uint64_t t0,
                uint64_t t1, uint32_t stack) {
  RawEvent e;
  e.ts = t0;
  e.dur = t1 - t0;
  e.api = info.api;
  e.stack = stack;
  e.result = cb->functionReturnValue ? *static_cast<const int*>(cb->functionReturnValue) : 0;
  e.u.cuda.correlation = cb->correlationId;
  e.u.cuda.device = static_cast<uint32_t>(cudart::CurrentDevice());
  e.u.cuda.async = info.async;
  e.u.cuda.copy_kind = info.copy_kind;
  const void* params = cb->functionParams;
  if (params == nullptr) {
    // Without parameters only the kind of call is known.
    if (shape == Shape::kCopyRuntime || shape == Shape::kCopyDriver) shape = Shape::kCopyOther;
    if (shape == Shape::kMemsetRuntime || shape == Shape::kMemsetDriver)
      shape = Shape::kMemsetOther;
    if (shape == Shape::kSyncStream) shape = Shape::kSyncOther;
  }
  switch (shape) {
    case Shape::kCopyRuntime: {
      const auto* p = static_cast<const CopyParamsRuntime*>(params);
      e.type = ev::kCudaMemcpy;
      e.bytes = p->count;
      cudart::CopyClass c = cudart::ClassifyCopy(p->kind, p->dst, p->src);
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
      cudart::CopyClass c = cudart::ClassifyCopy(kind, reinterpret_cast<const void*>(p->dst),
                                                 reinterpret_cast<const void*>(p->src));
      e.u.cuda.copy_kind = c.copy_kind;
      e.u.cuda.host_mem = c.host_mem;
      e.u.cuda.stream = info.has_stream ? StreamAfter<CopyParams>(params) : 0;
      break;
    }
    case Shape::kCopyOther:
      e.type = ev::kCudaMemcpy;
      break;
    case Shape::kMemsetRuntime: {
      const auto* p = static_cast<const CopyParamsRuntime*>(params);  // {devPtr, value, count}
      e.type = ev::kCudaMemset;
      e.bytes = p->count;
      break;
    }
    case Shape::kMemsetOther:
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
                                             const CUpti_CallbackData* cb, cudart::ThreadState& t) {
  CbInfo* info = Info(domain, cbid, cb->functionName);
  if (info == nullptr) return;
  const auto shape = static_cast<Shape>(info->shape.load(std::memory_order_relaxed));
  if (shape == Shape::kIgnore) return;
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
                           shape != Shape::kMemsetOther;
  RecordCall(*info, shape, cb, t.cb_start, t1, wants_stack ? CaptureStack(1) : 0);
}

// Every enabled callback of every hooked call comes here twice (enter, exit): the in-hook path is
// kept to a few instructions, the rest is out of line.
void CUPTIAPI OnApi(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  cudart::ThreadState& t = cudart::Thread();
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

bool WantedDriverName(std::string_view n) {
  for (const char* prefix :
       {"cuMemcpy", "cuMemset", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
        "cuStreamWaitEvent", "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch",
        "cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister", "cuMemFreeHost",
        "cuMemHostUnregister"}) {
    if (n.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace

const char* StartCallbacks(const Api& api) {
  static std::string why;
  CUptiResult r = api.cuptiSubscribe(&g_subscriber, OnApi, nullptr);
  if (r != CUPTI_SUCCESS) {
    why = std::string("cuptiSubscribe: ") + ResultText(r);  // e.g. another profiler subscribed
    return why.c_str();
  }
  if (api.cuptiGetCallbackName != nullptr) {
    // Only the callbacks we use: every enabled callback costs on every call of that API.
    for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
      const char* name = nullptr;
      if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS ||
          name == nullptr || !HookedRuntimeName(BaseName(name))) {
        continue;
      }
      api.cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
    }
    for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
      const char* name = nullptr;
      if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS ||
          name == nullptr || !WantedDriverName(name)) {
        continue;
      }
      api.cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    }
    return nullptr;
  }
  // No name lookup: enable both API domains and filter by name in OnApi (classified once per id).
  r = api.cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  if (r == CUPTI_SUCCESS) r = api.cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  if (r != CUPTI_SUCCESS) {
    why = std::string("cuptiEnableDomain: ") + ResultText(r);
    return why.c_str();
  }
  return nullptr;
}

}  // namespace idlescope::cupti
