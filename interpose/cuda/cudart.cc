// CUDA runtime hooks, generated from cudart.def. Each hook: resolve the real function, guard,
// timestamp, call, timestamp, classify and record outside the timed span, restore errno, return
// the real result. See docs/architecture.md, "CUDA and CUPTI".
//
// The two timestamps are TSC ticks (CallTicks, every family's call clock: interpose/call_clock.h),
// converted to trace-clock ns after the call (TicksToSpan): clock_gettime(CLOCK_MONOTONIC) through
// the vDSO measured 2-3x the cost of RDTSC on the build VMs, and two of them were most of a hooked
// copy's added cost.
#include "interpose/cuda/cudart.h"

#include <atomic>
#include <cerrno>

#include "interpose/call_clock.h"
#include "interpose/real_symbol.h"

// The hooks' side of the interface with the CUPTI layer (interpose/cuda/cuda_calls.h).
namespace idlescope::cuda {

__thread ThreadState t_cuda_thread __attribute__((tls_model("initial-exec")));

namespace {
// libcudart as RealLibrary: RTLD_NEXT misses a libcudart loaded RTLD_LOCAL by a dlopen'ed plugin.
constinit RealLibrary g_cudart{{"libcudart.so.13", "libcudart.so.12", nullptr}};
constinit RealFunction<cudaError_t (*)(int*)> g_get_device{"cudaGetDevice", nullptr, &g_cudart,
                                                           OnMiss::kKeep};
}  // namespace

void* CudartSymbol(const char* name) { return FindRealSymbol(name, nullptr, &g_cudart); }

int CurrentDeviceSlow() {
  ThreadState& t = Thread();
  auto get_device = g_get_device.Get();
  int dev = 0;
  if (get_device != nullptr && get_device(&dev) == cudaSuccess) t.device = dev;
  return t.device < 0 ? 0 : t.device;
}

void NotePinnedRange(uintptr_t begin, size_t size) {
  HostRanges().Insert(begin, size, RangeKind::kPinned);
}
void ForgetHostRange(uintptr_t begin) { HostRanges().Remove(begin); }

}  // namespace idlescope::cuda

namespace idlescope::cudart {

std::atomic<void*> g_real[kHookCount];

namespace {

std::atomic<uint32_t> g_api[kHookCount];  // InternString ids, interned at first record

// libcudart functions the hooks call themselves; a miss is kept (they are asked on hook paths).
constinit RealFunction<cudaError_t (*)(cudaPointerAttributes*, const void*)> g_pointer_attributes{
    "cudaPointerGetAttributes", nullptr, &cuda::g_cudart, OnMiss::kKeep};
constinit RealFunction<cudaError_t (*)(cudaChannelFormatDesc*, cudaExtent*, unsigned int*,
                                       cudaArray_t)>
    g_array_info{"cudaArrayGetInfo", nullptr, &cuda::g_cudart, OnMiss::kKeep};

}  // namespace

void* ResolveReal(HookId id) {
  void* f = cuda::CudartSymbol(cuda::kRuntimeCalls[id].name);
  if (f != nullptr) g_real[id].store(f, std::memory_order_release);
  return f;
}

namespace {

// Per-thread cache of cudaPointerGetAttributes answers, keyed by page and by the range map's
// generation. The generation changes at every host/device allocation or free we see, which is
// when a page can change kind through the runtime; registrations made behind our back (a
// statically linked cudart, the driver API) are caught at the next change of the map, and
// CUPTI's srcKind/dstKind stay the ground truth for those.
struct AttrCacheEntry {
  uint64_t page = ~0ull;
  uint64_t generation = 1;  // odd: never a valid seqlock generation
  ev::MemKind kind = ev::MemKind(0);
};
constexpr int kAttrCacheSize = 16;
thread_local AttrCacheEntry t_attr_cache[kAttrCacheSize];

ev::MemKind FromRange(RangeKind k) {
  switch (k) {
    case RangeKind::kPinned:
      return ev::kPinned;
    case RangeKind::kDevice:
      return ev::kDevice;
    case RangeKind::kManaged:
      return ev::kManaged;
    default:
      return ev::MemKind(0);
  }
}

ev::MemKind AskRuntime(const void* p) {
  auto get_attributes = g_pointer_attributes.Get();
  if (get_attributes == nullptr) return ev::kPageable;
  cudaPointerAttributes attr{};
  // CUDA >= 11 answers cudaMemoryTypeUnregistered (no error) for pageable memory.
  if (get_attributes(&attr, p) != cudaSuccess) return ev::kPageable;
  switch (attr.type) {
    case cudaMemoryTypeHost:
      return ev::kPinned;
    case cudaMemoryTypeDevice:
      return ev::kDevice;
    case cudaMemoryTypeManaged:
      return ev::kManaged;
    default:
      return ev::kPageable;
  }
}

}  // namespace

namespace {
// The range the calling thread's last known pointer fell in, valid while the map's generation is
// unchanged (then the map, and so that range, is exactly as it was). A training step copies from
// the same few staging buffers over and over: this skips the binary search and the seqlock
// retry loop. The generation is read before the lookup: a change in between only makes the memo
// stale-keyed, i.e. a miss next time, never a wrong answer.
struct RangeMemo {
  uint64_t generation = 1;  // odd: never a valid seqlock generation
  uintptr_t begin = 0, end = 0;
  RangeKind kind = RangeKind::kNone;
};
__thread RangeMemo t_range_memo __attribute__((tls_model("initial-exec")));
}  // namespace

ev::MemKind ClassifyPointer(const void* p) {
  if (p == kDeviceSide) return ev::kDevice;
  if (p == kArraySide) return ev::kArray;
  PinnedRanges& ranges = HostRanges();
  const uint64_t generation = ranges.Generation();
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  RangeMemo& memo = t_range_memo;
  if (memo.generation == generation && addr - memo.begin < memo.end - memo.begin) {
    return FromRange(memo.kind);
  }
  uintptr_t begin = 0, end = 0;
  if (RangeKind k = ranges.FindRange(addr, &begin, &end); k != RangeKind::kNone) {
    memo = {generation, begin, end, k};
    return FromRange(k);
  }
  const uint64_t page = reinterpret_cast<uintptr_t>(p) >> 12;
  AttrCacheEntry& e = t_attr_cache[page % kAttrCacheSize];
  if (e.page == page && e.generation == generation) return e.kind;
  ev::MemKind kind = AskRuntime(p);
  e = {page, generation, kind};
  return kind;
}

namespace {
bool HostLike(ev::MemKind k) { return k == ev::kPageable || k == ev::kPinned; }
}  // namespace

}  // namespace idlescope::cudart

namespace idlescope::cuda {
CopyClass ClassifyCopy(int memcpy_kind, const void* dst, const void* src) {
  using cudart::ClassifyPointer;
  using cudart::HostLike;
  switch (memcpy_kind) {
    case cudaMemcpyHostToDevice:
      return {ev::kH2D, ClassifyPointer(src)};
    case cudaMemcpyDeviceToHost:
      return {ev::kD2H, ClassifyPointer(dst)};
    case cudaMemcpyDeviceToDevice:
      return {ev::kD2D, ev::MemKind(0)};
    case cudaMemcpyHostToHost:
      return {ev::kH2H, ClassifyPointer(src)};
    default: {
      // cudaMemcpyDefault: the runtime infers the direction from unified addressing; so do we.
      ev::MemKind s = ClassifyPointer(src), d = ClassifyPointer(dst);
      if (HostLike(s) && HostLike(d)) return {ev::kH2H, s};
      if (HostLike(s)) return {ev::kH2D, s};
      if (HostLike(d)) return {ev::kD2H, d};
      return {ev::kD2D, s == ev::kManaged || d == ev::kManaged ? ev::kManaged : ev::MemKind(0)};
    }
  }
}
}  // namespace idlescope::cuda

namespace idlescope::cudart {

uint64_t ArrayElementBytes(cudaArray_const_t array) {
  auto get_info = g_array_info.Get();
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};
  unsigned int flags = 0;
  if (get_info == nullptr || array == nullptr ||
      get_info(&desc, &extent, &flags, const_cast<cudaArray_t>(array)) != cudaSuccess) {
    return 1;
  }
  uint64_t bits = uint64_t(desc.x) + desc.y + desc.z + desc.w;
  return bits >= 8 ? bits / 8 : 1;
}

namespace {
// cudaMemcpy3D extents count elements when an array is involved, bytes otherwise.
uint64_t Extent3DBytes(const cudaExtent& e, cudaArray_const_t a, cudaArray_const_t b) {
  uint64_t n = uint64_t(e.width) * (e.height ? e.height : 1) * (e.depth ? e.depth : 1);
  if (a != nullptr) return n * ArrayElementBytes(a);
  if (b != nullptr) return n * ArrayElementBytes(b);
  return n;
}
}  // namespace

Call Copy3D(const cudaMemcpy3DParms* p, cudaStream_t stream, bool async, bool pt) {
  if (p == nullptr) return Copy(nullptr, nullptr, 0, cudaMemcpyDefault, stream, async, pt);
  const void* dst = p->dstArray ? kArraySide : p->dstPtr.ptr;
  const void* src = p->srcArray ? kArraySide : p->srcPtr.ptr;
  return Copy(dst, src, Extent3DBytes(p->extent, p->srcArray, p->dstArray), p->kind, stream, async,
              pt);
}

Call Peer3D(const cudaMemcpy3DPeerParms* p, cudaStream_t stream, bool async, bool pt) {
  if (p == nullptr) return Peer(0, 0, 0, stream, async, pt);
  return Peer(p->dstDevice, p->srcDevice, Extent3DBytes(p->extent, p->srcArray, p->dstArray),
              stream, async, pt);
}

Call Batch(void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
           cudaStream_t stream, bool pt) {
  uint64_t bytes = 0;
  for (size_t i = 0; sizes != nullptr && i < count; ++i) bytes += sizes[i];
  // A batch is classified by its first copy (batches are built from like copies in practice).
  const void* dst = count && dsts ? dsts[0] : nullptr;
  const void* src = count && srcs ? srcs[0] : nullptr;
  return Copy(dst, src, bytes, cudaMemcpyDefault, stream, kAsync, pt);
}

Call Batch3D(size_t num_ops, const cudaMemcpy3DBatchOp* ops, cudaStream_t stream, bool pt) {
  uint64_t bytes = 0;
  auto side = [](const cudaMemcpy3DOperand& o) -> const void* {
    return o.type == cudaMemcpyOperandTypeArray ? kArraySide : o.op.ptr.ptr;
  };
  for (size_t i = 0; ops != nullptr && i < num_ops; ++i) {
    const cudaMemcpy3DBatchOp& op = ops[i];
    cudaArray_const_t a = op.src.type == cudaMemcpyOperandTypeArray   ? op.src.op.array.array
                          : op.dst.type == cudaMemcpyOperandTypeArray ? op.dst.op.array.array
                                                                      : nullptr;
    bytes += Extent3DBytes(op.extent, a, nullptr);
  }
  const void* dst = num_ops && ops ? side(ops[0].dst) : nullptr;
  const void* src = num_ops && ops ? side(ops[0].src) : nullptr;
  return Copy(dst, src, bytes, cudaMemcpyDefault, stream, kAsync, pt);
}

void RecordCall(const Call& call, HookId id, uint64_t t0, uint64_t t1, cudaError_t result,
                uint32_t correlation, uint32_t stack) {
  if (call.type == ev::Type(0)) {
    if (call.device >= 0 && result == cudaSuccess) Thread().device = call.device;
    return;
  }
  RawEvent e;
  // Tick readings become trace-clock ns here, outside the timed span.
  TicksToSpan(t0, t1, &e.ts, &e.dur);
  e.type = call.type;
  e.result = result;
  e.stack = stack;
  e.bytes = call.bytes;
  e.u.cuda.stream = StreamValue(call.stream, call.per_thread);
  e.u.cuda.correlation = correlation;
  e.u.cuda.device = static_cast<uint32_t>(CurrentDevice());
  e.u.cuda.async = call.async;
  uint32_t api = g_api[id].load(std::memory_order_relaxed);
  if (api == 0) {
    api = InternString(cuda::kRuntimeCalls[id].name);
    g_api[id].store(api, std::memory_order_relaxed);
  }
  e.api = api;
  switch (call.type) {
    case ev::kCudaMemcpy: {
      if (call.peer) {
        e.u.cuda.copy_kind = ev::kPeer;
      } else {
        CopyClass c = ClassifyCopy(call.memcpy_kind, call.dst, call.src);
        e.u.cuda.copy_kind = c.copy_kind;
        e.u.cuda.host_mem = c.host_mem;
      }
      break;
    }
    case ev::kCudaHostAlloc:
    case ev::kCudaMalloc: {
      const void* p = call.ptr;
      if (call.out != nullptr && result == cudaSuccess) p = *call.out;
      if (call.pitch != nullptr && result == cudaSuccess)
        e.bytes = uint64_t(*call.pitch) * call.bytes;
      e.u.cuda.ptr = reinterpret_cast<uint64_t>(p);
      if (result == cudaSuccess && p != nullptr) {
        HostRanges().Insert(reinterpret_cast<uintptr_t>(p), e.bytes, call.range);
      }
      break;
    }
    case ev::kCudaHostFree:
    case ev::kCudaFree:
      if (call.ptr == nullptr) return;  // cudaFree(0): the context-creation idiom, not a free
      e.u.cuda.ptr = reinterpret_cast<uint64_t>(call.ptr);
      break;
    default:
      break;
  }
  Record(e);
}

}  // namespace idlescope::cudart

// The hooks. The parameter lists come from cudart.def; `describe` sees the parameters.
#define CUDART_HOOK(name, cbid, cupti, params, args, describe)                           \
  IDLESCOPE_EXPORT cudaError_t name params {                                             \
    using namespace ::idlescope;                                                         \
    using namespace ::idlescope::cudart;                                                 \
    using Fn = cudaError_t(*) params;                                                    \
    auto real = reinterpret_cast<Fn>(Real(cuda::kCall_##name));                          \
    if (real == nullptr) return cudaErrorSharedObjectSymbolNotFound;                     \
    HookGuard guard(Family::kCuda);                                                      \
    if (!guard.active()) return real args;                                               \
    const Call call = describe;                                                          \
    Prepare(call);                                                                       \
    ThreadState& thread = Thread();                                                      \
    thread.in_hook = true;                                                               \
    thread.correlation = 0;                                                              \
    const uint64_t t0 = CallTicks();                                                     \
    const cudaError_t result = real args;                                                \
    const uint64_t t1 = CallTicks();                                                     \
    const int saved_errno = errno;                                                       \
    thread.in_hook = false;                                                              \
    /* skip 1: the hook's own frame, so the innermost frame is the caller's call site */ \
    const uint32_t stack = call.stack ? CaptureStack(1) : 0;                             \
    RecordCall(call, cuda::kCall_##name, t0, t1, result, thread.correlation, stack);     \
    errno = saved_errno;                                                                 \
    return result;                                                                       \
  }
#include "interpose/cuda/cudart.def"
#undef CUDART_HOOK
