// CUDA runtime interposition: what the hooks generated from interpose/cuda/cudart.def record. What
// they share with the CUPTI layer (cupti_*) is in interpose/cuda/cuda_calls.h. See
// docs/architecture.md, "CUDA and CUPTI".
//
// Must be compiled WITHOUT CUDA_API_PER_THREAD_DEFAULT_STREAM: with it, cuda_runtime_api.h would
// #define cudaMemcpy to cudaMemcpy_ptds and the legacy hooks would vanish.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "interpose/cuda/cuda_calls.h"
#include "interpose/cuda/pinned_ranges.h"
#include "interpose/recorder.h"

#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error \
    "the CUDA hooks must see the legacy API names: do not define CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

namespace idlescope::cudart {

// Shared with the CUPTI layer (interpose/cuda/cuda_calls.h).
using cuda::ClassifyCopy;
using cuda::CopyClass;
using cuda::CurrentDevice;
using cuda::kAsync;
using cuda::kSync;
using cuda::Thread;
using cuda::ThreadState;

// Host-side memory kind of `p` at call time: PinnedRanges first, then the real
// cudaPointerGetAttributes (cached per thread, per page, until the range map changes).
ev::MemKind ClassifyPointer(const void* p);

// Pseudo-pointers for copy sides that are not plain addresses.
inline const void* const kDeviceSide = reinterpret_cast<const void*>(uintptr_t{1});  // symbol
inline const void* const kArraySide = reinterpret_cast<const void*>(uintptr_t{2});   // cudaArray

constexpr bool kLegacy = false, kPerThread = true;
inline const cudaStream_t kNoStream = reinterpret_cast<cudaStream_t>(~uintptr_t{0});

// What one intercepted call is, built by the `describe` column of cudart.def before the call.
struct Call {
  ev::Type type = ev::Type(0);  // 0: record nothing (cudaSetDevice)
  bool async = false;
  bool stack = false;
  bool per_thread = false;
  bool peer = false;
  int memcpy_kind = -1;
  const void* dst = nullptr;
  const void* src = nullptr;
  uint64_t bytes = 0;
  cudaStream_t stream = kNoStream;
  void** out = nullptr;       // allocation result
  size_t* pitch = nullptr;    // cudaMallocPitch: bytes = *pitch * height
  const void* ptr = nullptr;  // free / register address
  RangeKind range = RangeKind::kNone;
  int device = -1;  // cudaSetDevice

  Call& On(cudaStream_t s, bool pt) {
    stream = s;
    per_thread = pt;
    return *this;
  }
};

inline Call Copy(const void* dst, const void* src, uint64_t bytes, cudaMemcpyKind kind,
                 cudaStream_t stream, bool async, bool pt) {
  Call c;
  c.type = ev::kCudaMemcpy;
  c.dst = dst;
  c.src = src;
  c.bytes = bytes;
  c.memcpy_kind = kind;
  c.async = async;
  c.stack = true;
  return c.On(stream, pt);  // a synchronous copy runs on the default stream
}
inline Call Peer(int dst_device, int src_device, uint64_t bytes, cudaStream_t stream, bool async,
                 bool pt) {
  Call c = Copy(nullptr, nullptr, bytes, cudaMemcpyDeviceToDevice, stream, async, pt);
  c.peer = dst_device != src_device;
  return c;
}
uint64_t ArrayElementBytes(cudaArray_const_t array);
Call Copy3D(const cudaMemcpy3DParms* p, cudaStream_t stream, bool async, bool pt);
Call Peer3D(const cudaMemcpy3DPeerParms* p, cudaStream_t stream, bool async, bool pt);
Call Batch(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
           cudaStream_t stream, bool pt);
Call Batch3D(size_t num_ops, const cudaMemcpy3DBatchOp* ops, cudaStream_t stream, bool pt);

inline Call Memset(uint64_t bytes, cudaStream_t stream, bool async, bool pt) {
  Call c;
  c.type = ev::kCudaMemset;
  c.bytes = bytes;
  c.async = async;
  return c.On(stream, pt);
}
inline Call Sync(cudaStream_t stream, bool pt) {
  Call c;
  c.type = ev::kCudaSync;
  c.stack = true;
  return c.On(stream, pt);
}
inline Call WaitEvent(cudaStream_t stream, bool pt) {
  Call c = Sync(stream, pt);
  c.async = true;  // the host does not wait; the stream does
  return c;
}
inline Call Launch(cudaStream_t stream, bool pt) {
  Call c;
  c.type = ev::kCudaLaunch;
  c.async = true;
  return c.On(stream, pt);
}
inline Call GraphLaunch(cudaStream_t stream, bool pt) {
  Call c = Launch(stream, pt);
  c.type = ev::kCudaGraphLaunch;
  return c;
}
inline Call HostAlloc(void** out, size_t size, RangeKind kind) {
  Call c;
  c.type = ev::kCudaHostAlloc;
  c.out = out;
  c.bytes = size;
  c.range = kind;
  c.stack = true;
  return c;
}
inline Call HostRegister(void* ptr, size_t size) {
  Call c;
  c.type = ev::kCudaHostAlloc;
  c.ptr = ptr;
  c.bytes = size;
  c.range = RangeKind::kPinned;
  c.stack = true;
  return c;
}
inline Call HostFree(void* ptr) {
  Call c;
  c.type = ev::kCudaHostFree;
  c.ptr = ptr;
  c.stack = true;
  return c;
}
inline Call DeviceAlloc(void** out, size_t size, RangeKind kind) {
  Call c;
  c.type = ev::kCudaMalloc;
  c.out = out;
  c.bytes = size;
  c.range = kind;
  c.stack = true;
  return c;
}
inline Call PitchAlloc(void** out, size_t* pitch, size_t height) {
  Call c = DeviceAlloc(out, height, RangeKind::kDevice);
  c.pitch = pitch;
  return c;
}
inline Call DeviceFree(void* ptr) {
  Call c;
  c.type = ev::kCudaFree;
  c.ptr = ptr;
  return c;
}
inline Call SetDevice(int device) {
  Call c;
  c.device = device;
  return c;
}

// Raw stream value recorded in Event.stream: NULL is resolved to what it means for the entry
// point (cudaStreamLegacy for legacy names, cudaStreamPerThread for _ptds/_ptsz), so the trace
// tells the two default streams apart; 0 = the call has no stream (device/event sync).
inline uint64_t StreamValue(cudaStream_t s, bool per_thread) {
  if (s == kNoStream) return 0;
  if (s == nullptr) return per_thread ? 2 : 1;
  return reinterpret_cast<uint64_t>(s);
}

// Hook ids, one per cudart.def line (names: cuda::kRuntimeCalls).
using HookId = cuda::RuntimeCallId;
constexpr uint32_t kHookCount = cuda::kRuntimeCallCount;

// The real function behind a hook (cuda::CudartSymbol: RTLD_NEXT, else the libcudart a plugin
// loaded RTLD_LOCAL, interpose/real_symbol.h). Resolved at first use and kept in one array
// indexed by hook id (a miss is asked again), thread-safe; nullptr if there is none.
extern std::atomic<void*> g_real[kHookCount];
void* ResolveReal(HookId id);
inline void* Real(HookId id) {
  void* f = g_real[id].load(std::memory_order_acquire);
  return __builtin_expect(f != nullptr, 1) ? f : ResolveReal(id);
}

// Called by every hook before the real call (range-map removals, starting CUPTI); RecordCall
// comes after it, with errno saved and restored around it by the hook. Inline: a hooked copy's
// added cost is a budget of ~100 ns (docs/architecture.md, "CUDA and CUPTI").
inline void Prepare(const Call& call) {
  cuda::EnsureCuptiStarted();
  if (__builtin_expect(detail::t_launch_device == 0, 0) && call.type < 32 &&
      (detail::kDeviceWorkTypes >> call.type & 1u) != 0) {
    NoteDeviceWork();
  }
  // Frees drop their range before the real call: once the memory is freed another thread may
  // get the same address from a new allocation, and a late Remove would erase that one.
  if ((call.type == ev::kCudaHostFree || call.type == ev::kCudaFree) && call.ptr != nullptr) {
    HostRanges().Remove(reinterpret_cast<uintptr_t>(call.ptr));
  }
}
// Records the call (classification, correlation, stack: one RawEvent). `t0`/`t1` are CallTicks()
// readings taken around the real call (see cudart.cc).
void RecordCall(const Call& call, HookId id, uint64_t t0, uint64_t t1, cudaError_t result,
                uint32_t correlation, uint32_t stack);

}  // namespace idlescope::cudart
