// Fake libcudart.so.13: the runtime API on simgpu's device model.
//
// Like the real libcudart it imports no cu* symbol: on first use it dlopens libcuda.so.1, calls
// cuInit (which runs CUDA_INJECTION64_PATH) and fetches the engine through cuGetExportTable.
// Legacy entry points treat stream 0 as the legacy default stream; the _ptds/_ptsz ones (what
// `--default-stream per-thread` code calls) treat it as the per-thread default stream.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "api_frame.h"
#include "cbid.h"
#include "engine.h"

#define SIMGPU_EXPORT extern "C" __attribute__((visibility("default")))

using simgpu::Dim3;
using simgpu::Engine;
using simgpu::Extent;
using simgpu::MemKind;
using simgpu::Region;

// cudaArray is opaque in the headers; simgpu's is a dense 2-D buffer in device memory.
struct cudaArray {
  void* data;
  size_t width_bytes, height, elem_size;
  cudaChannelFormatDesc desc;
};

namespace {

// ---------------------------------------------------------------- init, errors, frames

thread_local cudaError_t tls_last_error = cudaSuccess;

Engine* Rt() {
  static Engine* engine = simgpu::GetEngine();
  if (engine == nullptr) return nullptr;
  // cuInit runs the injection library, which may call back into the runtime: let the
  // initializing thread through, make the others wait until it is done.
  static std::once_flag once;
  thread_local bool in_init = false;
  if (!in_init) {
    in_init = true;
    std::call_once(once, [] {
      void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
      auto init = h ? reinterpret_cast<CUresult (*)(unsigned)>(dlsym(h, "cuInit")) : nullptr;
      if (init) init(0);
    });
    in_init = false;
  }
  return engine;
}

cudaError_t Err(CUresult r) {
  // simgpu's engine only returns driver codes whose runtime twins share the number.
  return static_cast<cudaError_t>(r);
}

cudaError_t Fin(simgpu::ApiScope& scope, cudaError_t r) {
  if (r != cudaSuccess) tls_last_error = r;
  return scope.Ret(r);
}

// Opens a runtime-domain frame named `fn` (its CUPTI callback id from the real headers).
#define RUNTIME_API(fn)                                                  \
  Engine* e = Rt();                                                      \
  if (e == nullptr) return tls_last_error = cudaErrorInsufficientDriver; \
  static const uint32_t kCbid = simgpu::RuntimeCbid(#fn);                \
  simgpu::ApiScope scope(e, 2 /* CUPTI_CB_DOMAIN_RUNTIME_API */, kCbid, #fn)

// One exported entry point; BODY is an expression of type cudaError_t that may use `e` and
// `kPT` (true in the per-thread-default-stream variant).
#define RT_ONE(fn, PARAMS, ...)                  \
  SIMGPU_EXPORT cudaError_t fn PARAMS {          \
    [[maybe_unused]] constexpr bool kPT = false; \
    RUNTIME_API(fn);                             \
    return Fin(scope, __VA_ARGS__);              \
  }
// An entry point and its _ptds or _ptsz twin.
#define RT_PAIR(fn, suffix, PARAMS, ...)        \
  RT_ONE(fn, PARAMS, __VA_ARGS__)               \
  SIMGPU_EXPORT cudaError_t fn##suffix PARAMS { \
    [[maybe_unused]] constexpr bool kPT = true; \
    RUNTIME_API(fn##suffix);                    \
    return Fin(scope, __VA_ARGS__);             \
  }

simgpu::Stream* S(cudaStream_t s) { return reinterpret_cast<simgpu::Stream*>(s); }
simgpu::Event* Ev(cudaEvent_t ev) { return reinterpret_cast<simgpu::Event*>(ev); }

// Resolves a stream argument for the variant being called (0 = legacy or per-thread).
simgpu::Stream* St(Engine* e, cudaStream_t s, bool per_thread) {
  return e->Resolve(S(s), per_thread);
}

// ---------------------------------------------------------------- registration

struct KernelFn {
  const char* name;  // first member: simgpu's cuLaunchKernel reads it through CUfunction
  const void* host_fun;
};

struct SymbolVar {
  char* host_shadow;
  size_t size;
  void* device = nullptr;  // allocated on first use
};

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, KernelFn*> kernels;  // by host stub
  std::unordered_map<const void*, SymbolVar> vars;     // by host shadow
  std::vector<void**> modules;                         // fat binary handles, never freed
};

Registry& Reg() {
  static Registry* r = new Registry();  // leaked: static-init order independent
  return *r;
}

const KernelFn* FindKernel(const void* host_fun) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.kernels.find(host_fun);
  return it == r.kernels.end() ? nullptr : it->second;
}

cudaError_t SymbolAddress(Engine* e, const void* symbol, void** dev, size_t* size) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.vars.find(symbol);
  if (it == r.vars.end()) return cudaErrorInvalidSymbol;
  SymbolVar& v = it->second;
  if (v.device == nullptr) {
    if (e->MemAlloc(0, v.size, MemKind::kDevice, &v.device) != CUDA_SUCCESS) {
      return cudaErrorMemoryAllocation;
    }
    memcpy(v.device, v.host_shadow, v.size);  // the initializer nvcc left in the shadow
  }
  *dev = v.device;
  if (size) *size = v.size;
  return cudaSuccess;
}

struct LaunchConfig {
  dim3 grid, block;
  size_t shared_mem;
  cudaStream_t stream;
};
thread_local std::vector<LaunchConfig> tls_launch_configs;

Dim3 D(dim3 d) { return Dim3{d.x, d.y, d.z}; }

cudaError_t Launch(Engine* e, const KernelFn* k, dim3 grid, dim3 block, size_t shmem,
                   cudaStream_t s, void** args, bool pt) {
  if (k == nullptr) return cudaErrorInvalidDeviceFunction;
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr) return cudaErrorInvalidResourceHandle;
  return Err(e->LaunchKernel(st, k->name, D(grid), D(block), static_cast<uint32_t>(shmem), args));
}

// ---------------------------------------------------------------- copies

Region R(void* p, size_t pitch = 0, size_t rows = 0) { return Region{p, pitch, rows}; }
Region R(const void* p, size_t pitch = 0, size_t rows = 0) {
  return Region{const_cast<void*>(p), pitch, rows};
}
Extent X(size_t w, size_t h = 1, size_t d = 1) { return Extent{w, h, d}; }

cudaError_t Copy(Engine* e, Region dst, Region src, Extent ext, cudaStream_t s, bool pt, bool sync,
                 bool peer = false) {
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr) return cudaErrorInvalidResourceHandle;
  return Err(e->Copy(dst, src, ext, st, sync, peer));
}

cudaError_t Set(Engine* e, Region dst, Extent ext, int value, cudaStream_t s, bool pt, bool sync) {
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr) return cudaErrorInvalidResourceHandle;
  return Err(e->Memset(dst, ext, static_cast<uint32_t>(value) & 0xff, 1, st, sync));
}

char* ArrayAt(cudaArray_const_t a, size_t w_off, size_t h_off) {
  return static_cast<char*>(a->data) + h_off * a->width_bytes + w_off;
}

cudaError_t Copy3D(Engine* e, const cudaMemcpy3DParms* p, cudaStream_t s, bool pt, bool sync,
                   bool peer) {
  if (p == nullptr) return cudaErrorInvalidValue;
  auto side = [](cudaArray_t arr, cudaPitchedPtr ptr, cudaPos pos, Region* r) {
    if (arr != nullptr) {
      *r = Region{ArrayAt(arr, pos.x * arr->elem_size, pos.y), arr->width_bytes, arr->height};
      return;
    }
    size_t rows = ptr.ysize ? ptr.ysize : 1;
    *r = Region{static_cast<char*>(ptr.ptr) + (pos.z * rows + pos.y) * ptr.pitch + pos.x, ptr.pitch,
                rows};
  };
  Region dst, src;
  side(p->dstArray, p->dstPtr, p->dstPos, &dst);
  side(p->srcArray, p->srcPtr, p->srcPos, &src);
  size_t width = p->extent.width;
  if (p->srcArray)
    width *= p->srcArray->elem_size;
  else if (p->dstArray)
    width *= p->dstArray->elem_size;
  return Copy(e, dst, src, X(width, p->extent.height, p->extent.depth), s, pt, sync, peer);
}

cudaError_t Copy3DPeer(Engine* e, const cudaMemcpy3DPeerParms* p, cudaStream_t s, bool pt,
                       bool sync) {
  if (p == nullptr) return cudaErrorInvalidValue;
  cudaMemcpy3DParms q = {};
  q.srcArray = p->srcArray;
  q.srcPos = p->srcPos;
  q.srcPtr = p->srcPtr;
  q.dstArray = p->dstArray;
  q.dstPos = p->dstPos;
  q.dstPtr = p->dstPtr;
  q.extent = p->extent;
  return Copy3D(e, &q, s, pt, sync, true);
}

cudaError_t CopyBatch(Engine* e, void* const* dsts, const void* const* srcs, const size_t* sizes,
                      size_t count, cudaStream_t s, bool pt) {
  if (count > 0 && (dsts == nullptr || srcs == nullptr || sizes == nullptr)) {
    return cudaErrorInvalidValue;
  }
  for (size_t i = 0; i < count; ++i) {
    cudaError_t r = Copy(e, R(dsts[i]), R(srcs[i]), X(sizes[i]), s, pt, false);
    if (r != cudaSuccess) return r;
  }
  return cudaSuccess;
}

cudaError_t Copy3DBatch(Engine* e, size_t n, cudaMemcpy3DBatchOp* ops, cudaStream_t s, bool pt) {
  if (n > 0 && ops == nullptr) return cudaErrorInvalidValue;
  for (size_t i = 0; i < n; ++i) {
    const cudaMemcpy3DBatchOp& op = ops[i];
    auto side = [&](const cudaMemcpy3DOperand& o, Region* r) {
      if (o.type == cudaMemcpyOperandTypeArray) {
        cudaArray_t a = o.op.array.array;
        *r = Region{ArrayAt(a, o.op.array.offset.x * a->elem_size, o.op.array.offset.y),
                    a->width_bytes, a->height};
      } else {
        size_t row = o.op.ptr.rowLength ? o.op.ptr.rowLength : op.extent.width;
        size_t layer = o.op.ptr.layerHeight ? o.op.ptr.layerHeight : op.extent.height;
        *r = Region{o.op.ptr.ptr, row, layer};
      }
    };
    Region dst, src;
    side(op.dst, &dst);
    side(op.src, &src);
    cudaError_t r =
        Copy(e, dst, src, X(op.extent.width, op.extent.height, op.extent.depth), s, pt, false);
    if (r != cudaSuccess) return r;
  }
  return cudaSuccess;
}

cudaError_t ToSymbol(Engine* e, const void* symbol, const void* src, size_t n, size_t offset,
                     cudaStream_t s, bool pt, bool sync) {
  void* dev = nullptr;
  size_t size = 0;
  if (cudaError_t r = SymbolAddress(e, symbol, &dev, &size); r != cudaSuccess) return r;
  if (offset + n > size) return cudaErrorInvalidValue;
  return Copy(e, R(static_cast<char*>(dev) + offset), R(src), X(n), s, pt, sync);
}

cudaError_t FromSymbol(Engine* e, void* dst, const void* symbol, size_t n, size_t offset,
                       cudaStream_t s, bool pt, bool sync) {
  void* dev = nullptr;
  size_t size = 0;
  if (cudaError_t r = SymbolAddress(e, symbol, &dev, &size); r != cudaSuccess) return r;
  if (offset + n > size) return cudaErrorInvalidValue;
  return Copy(e, R(dst), R(static_cast<char*>(dev) + offset), X(n), s, pt, sync);
}

cudaError_t FreeAsync(Engine* e, void* p, cudaStream_t s, bool pt) {
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr) return cudaErrorInvalidResourceHandle;
  if (p == nullptr) return cudaSuccess;
  // Freed when the stream reaches this point, as with the stream-ordered allocator.
  static Engine* engine = e;
  return Err(e->LaunchHostFunc(
      st, [](void* ptr) { engine->MemFree(ptr); }, p));
}

struct StreamCallback {
  cudaStreamCallback_t fn;
  cudaStream_t stream;
  void* user;
};

cudaError_t AddCallback(Engine* e, cudaStream_t s, cudaStreamCallback_t fn, void* user, bool pt) {
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr || fn == nullptr) return cudaErrorInvalidValue;
  auto* cb = new StreamCallback{fn, s, user};
  return Err(e->LaunchHostFunc(
      st,
      [](void* arg) {
        auto* c = static_cast<StreamCallback*>(arg);
        c->fn(c->stream, cudaSuccess, c->user);
        delete c;
      },
      cb));
}

cudaError_t StreamAttr(Engine* e, cudaStream_t s, bool pt, int* dev, unsigned* flags, int* prio,
                       unsigned long long* id) {
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr) return cudaErrorInvalidResourceHandle;
  uint64_t sid = 0;
  CUresult r = e->StreamInfo(st, dev, flags, prio, &sid);
  if (id) *id = sid;
  return Err(r);
}

cudaError_t DriverEntryPoint(const char* symbol, void** fn, int version, unsigned long long flags,
                             cudaDriverEntryPointQueryResult* status) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  using GetProc =
      CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get = h ? reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2")) : nullptr;
  if (h) dlclose(h);
  if (get == nullptr) return cudaErrorInsufficientDriver;
  CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r = get(symbol, fn, version, flags, &q);
  if (status) {
    *status = q == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                                               : cudaDriverEntryPointSymbolNotFound;
  }
  return r == CUDA_SUCCESS ? cudaSuccess : cudaSuccess;  // "not found" is reported in status
}

cudaError_t Props(Engine* e, cudaDeviceProp* p, int dev) {
  const simgpu::DeviceInfo* d = e->Device(dev);
  if (d == nullptr) return cudaErrorInvalidDevice;
  if (p == nullptr) return cudaErrorInvalidValue;
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", d->name);
  p->uuid.bytes[0] = static_cast<char>(dev + 1);
  p->totalGlobalMem = d->mem_bytes;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 227 * 1024;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = d->warp_size;
  p->memPitch = SIZE_MAX;
  p->maxThreadsPerBlock = d->max_threads_per_block;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = d->cc_major;
  p->minor = d->cc_minor;
  p->multiProcessorCount = d->sm_count;
  p->maxThreadsPerMultiProcessor = d->max_threads_per_sm;
  p->maxBlocksPerMultiProcessor = 32;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->pciBusID = d->pci_bus_id;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = 6144;
  p->l2CacheSize = 60 * 1024 * 1024;
  p->streamPrioritiesSupported = 1;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->cooperativeLaunch = 1;
  p->hostRegisterSupported = 1;
  p->memoryPoolsSupported = 1;
  return cudaSuccess;
}

cudaError_t Attr(Engine* e, int* v, cudaDeviceAttr attr, int dev) {
  const simgpu::DeviceInfo* d = e->Device(dev);
  if (d == nullptr) return cudaErrorInvalidDevice;
  if (v == nullptr) return cudaErrorInvalidValue;
  cudaDeviceProp p;
  Props(e, &p, dev);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *v = p.multiProcessorCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = p.minor;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *v = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *v = p.maxThreadsPerMultiProcessor;
      break;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      *v = p.maxBlocksPerMultiProcessor;
      break;
    case cudaDevAttrWarpSize:
      *v = p.warpSize;
      break;
    case cudaDevAttrMaxBlockDimX:
      *v = p.maxThreadsDim[0];
      break;
    case cudaDevAttrMaxGridDimX:
      *v = p.maxGridSize[0];
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *v = static_cast<int>(p.sharedMemPerBlock);
      break;
    case cudaDevAttrPciBusId:
      *v = p.pciBusID;
      break;
    case cudaDevAttrConcurrentKernels:
      *v = 1;
      break;
    case cudaDevAttrAsyncEngineCount:
      *v = p.asyncEngineCount;
      break;
    case cudaDevAttrUnifiedAddressing:
      *v = 1;
      break;
    case cudaDevAttrL2CacheSize:
      *v = p.l2CacheSize;
      break;
    case cudaDevAttrGlobalMemoryBusWidth:
      *v = p.memoryBusWidth;
      break;
    case cudaDevAttrManagedMemory:
      *v = 1;
      break;
    case cudaDevAttrCooperativeLaunch:
      *v = 1;
      break;
    case cudaDevAttrMemoryPoolsSupported:
      *v = 1;
      break;
    default:
      *v = 0;
      break;
  }
  return cudaSuccess;
}

cudaError_t PointerAttrs(Engine* e, cudaPointerAttributes* a, const void* ptr) {
  if (a == nullptr) return cudaErrorInvalidValue;
  int dev = -1;
  MemKind k = e->PointerKind(ptr, &dev, nullptr, nullptr);
  memset(a, 0, sizeof *a);
  a->device = dev < 0 ? e->CurrentDevice() : dev;
  switch (k) {
    case MemKind::kPinned:
      a->type = cudaMemoryTypeHost;
      a->hostPointer = const_cast<void*>(ptr);
      a->devicePointer = const_cast<void*>(ptr);
      break;
    case MemKind::kDevice:
      a->type = cudaMemoryTypeDevice;
      a->devicePointer = const_cast<void*>(ptr);
      break;
    case MemKind::kManaged:
      a->type = cudaMemoryTypeManaged;
      a->hostPointer = const_cast<void*>(ptr);
      a->devicePointer = const_cast<void*>(ptr);
      break;
    default:
      a->type = cudaMemoryTypeUnregistered;  // pageable: success, as since CUDA 11
      a->device = -2;
      a->hostPointer = const_cast<void*>(ptr);
      break;
  }
  return cudaSuccess;
}

cudaError_t MallocArray(Engine* e, cudaArray_t* out, const cudaChannelFormatDesc* desc,
                        size_t width, size_t height) {
  if (out == nullptr || desc == nullptr) return cudaErrorInvalidValue;
  size_t elem = static_cast<size_t>(desc->x + desc->y + desc->z + desc->w) / 8;
  if (elem == 0) return cudaErrorInvalidChannelDescriptor;
  auto* a = new cudaArray{nullptr, width * elem, height ? height : 1, elem, *desc};
  CUresult r =
      e->MemAlloc(e->CurrentDevice(), a->width_bytes * a->height, MemKind::kDevice, &a->data);
  if (r != CUDA_SUCCESS) {
    delete a;
    return Err(r);
  }
  *out = a;
  return cudaSuccess;
}

cudaError_t FreeArray(Engine* e, cudaArray_t a) {
  if (a == nullptr) return cudaSuccess;
  e->MemFree(a->data);
  delete a;
  return cudaSuccess;
}

template <typename T>
cudaError_t Out(T* p, T v) {
  if (p == nullptr) return cudaErrorInvalidValue;
  *p = v;
  return cudaSuccess;
}

cudaError_t CreateStream(Engine* e, cudaStream_t* s, unsigned flags, int prio) {
  if (s == nullptr) return cudaErrorInvalidValue;
  simgpu::Stream* out = nullptr;
  CUresult r = e->StreamCreate(e->CurrentDevice(), flags, prio, &out);
  *s = reinterpret_cast<cudaStream_t>(out);
  return Err(r);
}

cudaError_t CreateEvent(Engine* e, cudaEvent_t* ev, unsigned flags) {
  if (ev == nullptr) return cudaErrorInvalidValue;
  simgpu::Event* out = nullptr;
  CUresult r = e->EventCreate(flags, &out);
  *ev = reinterpret_cast<cudaEvent_t>(out);
  return Err(r);
}

cudaError_t MallocDev(Engine* e, void** p, size_t n, MemKind kind) {
  return Err(e->MemAlloc(e->CurrentDevice(), n, kind, p));
}

cudaError_t WithStream(Engine* e, cudaStream_t s, bool pt,
                       CUresult (Engine::*fn)(simgpu::Stream*)) {
  simgpu::Stream* st = St(e, s, pt);
  if (st == nullptr) return cudaErrorInvalidResourceHandle;
  return Err((e->*fn)(st));
}

}  // namespace

// ================================================================ nvcc's hidden entry points

SIMGPU_EXPORT void** __cudaRegisterFatBinary(void* fat_cubin) {
  // The handle only has to be unique; simgpu runs no device code.
  auto** handle = new void*[1];
  handle[0] = fat_cubin;
  Registry& r = Reg();
  std::lock_guard<std::mutex> lk(r.mu);
  r.modules.push_back(handle);
  return handle;
}

SIMGPU_EXPORT void __cudaRegisterFatBinaryEnd(void** /*handle*/) {}

SIMGPU_EXPORT void __cudaUnregisterFatBinary(void** /*handle*/) {
  // Kept: kernel names stay valid for CUPTI records delivered at exit.
}

SIMGPU_EXPORT char __cudaInitModule(void** /*handle*/) { return 1; }

SIMGPU_EXPORT void __cudaRegisterFunction(void** /*handle*/, const char* host_fun,
                                          char* /*device_fun*/, const char* device_name,
                                          int /*thread_limit*/, uint3* /*tid*/, uint3* /*bid*/,
                                          dim3* /*bdim*/, dim3* /*gdim*/, int* /*wsize*/) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lk(r.mu);
  r.kernels[host_fun] = new KernelFn{strdup(device_name ? device_name : "unknown"), host_fun};
}

SIMGPU_EXPORT void __cudaRegisterVar(void** /*handle*/, char* host_var, char* /*device_addr*/,
                                     const char* /*device_name*/, int /*ext*/, size_t size,
                                     int /*constant*/, int /*global*/) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lk(r.mu);
  r.vars[host_var] = SymbolVar{host_var, size};
}

SIMGPU_EXPORT void __cudaRegisterManagedVar(void** /*handle*/, void** host_var_ptr,
                                            char* /*device_addr*/, const char* /*device_name*/,
                                            int /*ext*/, size_t /*size*/, int /*constant*/,
                                            int /*global*/) {
  (void)host_var_ptr;  // managed variables keep their host storage
}

SIMGPU_EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem,
                                                   struct CUstream_st* stream) {
  tls_launch_configs.push_back(LaunchConfig{grid, block, shmem, stream});
  return 0;
}

SIMGPU_EXPORT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem,
                                                     void* stream) {
  if (tls_launch_configs.empty()) return cudaErrorMissingConfiguration;
  LaunchConfig c = tls_launch_configs.back();
  tls_launch_configs.pop_back();
  if (grid) *grid = c.grid;
  if (block) *block = c.block;
  if (shmem) *shmem = c.shared_mem;
  if (stream) *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* fun) {
  const KernelFn* k = FindKernel(fun);
  if (kernel == nullptr) return cudaErrorInvalidValue;
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<KernelFn*>(k));
  return k ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

static const KernelFn* K(cudaKernel_t k) { return reinterpret_cast<const KernelFn*>(k); }

RT_PAIR(__cudaLaunchKernel, _ptsz,
        (cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s),
        Launch(e, K(kernel), grid, block, shmem, s, args, kPT))

// ================================================================ device management

SIMGPU_EXPORT const char* cudaGetErrorName(cudaError_t err) {
  switch (err) {
#define SIMGPU_ERR(x) \
  case x:             \
    return #x;
    SIMGPU_ERR(cudaSuccess)
    SIMGPU_ERR(cudaErrorInvalidValue)
    SIMGPU_ERR(cudaErrorMemoryAllocation)
    SIMGPU_ERR(cudaErrorInitializationError)
    SIMGPU_ERR(cudaErrorInsufficientDriver)
    SIMGPU_ERR(cudaErrorNoDevice)
    SIMGPU_ERR(cudaErrorInvalidDevice)
    SIMGPU_ERR(cudaErrorInvalidDeviceFunction)
    SIMGPU_ERR(cudaErrorInvalidConfiguration)
    SIMGPU_ERR(cudaErrorInvalidSymbol)
    SIMGPU_ERR(cudaErrorInvalidResourceHandle)
    SIMGPU_ERR(cudaErrorIllegalState)
    SIMGPU_ERR(cudaErrorNotReady)
    SIMGPU_ERR(cudaErrorMissingConfiguration)
    SIMGPU_ERR(cudaErrorHostMemoryAlreadyRegistered)
    SIMGPU_ERR(cudaErrorHostMemoryNotRegistered)
    SIMGPU_ERR(cudaErrorStreamCaptureUnsupported)
    SIMGPU_ERR(cudaErrorNotSupported)
    SIMGPU_ERR(cudaErrorInvalidChannelDescriptor)
#undef SIMGPU_ERR
    default:
      return "cudaErrorUnknown";
  }
}

SIMGPU_EXPORT const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInsufficientDriver:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidDeviceFunction:
      return "invalid device function";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    default:
      return cudaGetErrorName(err);
  }
}

SIMGPU_EXPORT cudaError_t cudaGetLastError() {
  cudaError_t r = tls_last_error;
  tls_last_error = cudaSuccess;
  return r;
}

SIMGPU_EXPORT cudaError_t cudaPeekAtLastError() { return tls_last_error; }

SIMGPU_EXPORT cudaError_t cudaRuntimeGetVersion(int* v) { return Out(v, CUDART_VERSION); }

RT_ONE(cudaDriverGetVersion, (int* v), Out(v, CUDA_VERSION))
RT_ONE(cudaGetDeviceCount, (int* n),
       e->DeviceCount() == 0 ? (n ? (*n = 0, cudaErrorNoDevice) : cudaErrorInvalidValue)
                             : Out(n, e->DeviceCount()))
RT_ONE(cudaSetDevice, (int dev), Err(e->SetCurrentDevice(dev)))
RT_ONE(cudaInitDevice, (int dev, unsigned int, unsigned int),
       e->Device(dev) ? cudaSuccess : cudaErrorInvalidDevice)
RT_ONE(cudaGetDevice, (int* dev), Out(dev, e->CurrentDevice()))
RT_ONE(cudaSetDeviceFlags, (unsigned int), cudaSuccess)
RT_ONE(cudaGetDeviceFlags, (unsigned int* f), Out(f, 0u))
RT_ONE(cudaGetDeviceProperties, (cudaDeviceProp * p, int dev), Props(e, p, dev))
RT_ONE(cudaDeviceGetAttribute, (int* v, cudaDeviceAttr attr, int dev), Attr(e, v, attr, dev))
RT_ONE(cudaDeviceGetPCIBusId, (char* id, int len, int dev),
       !e->Device(dev) ? cudaErrorInvalidDevice
       : (id == nullptr || len < 13)
           ? cudaErrorInvalidValue
           : (snprintf(id, static_cast<size_t>(len), "0000:%02x:00.0", e->Device(dev)->pci_bus_id),
              cudaSuccess))
RT_ONE(cudaDeviceGetStreamPriorityRange, (int* least, int* greatest),
       (least ? * least = 0 : 0, greatest ? * greatest = -5 : 0, cudaSuccess))
RT_ONE(cudaDeviceCanAccessPeer, (int* can, int dev, int peer),
       (e->Device(dev) && e->Device(peer)) ? Out(can, dev != peer ? 1 : 0) : cudaErrorInvalidDevice)
RT_ONE(cudaDeviceEnablePeerAccess, (int peer, unsigned int),
       e->Device(peer) ? cudaSuccess : cudaErrorInvalidDevice)
RT_ONE(cudaDeviceDisablePeerAccess, (int peer),
       e->Device(peer) ? cudaSuccess : cudaErrorInvalidDevice)
RT_ONE(cudaDeviceSynchronize, (), Err(e->DeviceSynchronize(e->CurrentDevice())))
RT_ONE(cudaDeviceReset, (), Err(e->DeviceSynchronize(e->CurrentDevice())))
RT_ONE(cudaMemGetInfo, (size_t * free_bytes, size_t* total),
       Err(e->MemInfo(e->CurrentDevice(), free_bytes, total)))
RT_PAIR(cudaGetDriverEntryPoint, _ptsz,
        (const char* symbol, void** fn, unsigned long long flags,
         cudaDriverEntryPointQueryResult* status),
        DriverEntryPoint(symbol, fn, CUDA_VERSION, flags, status))
RT_PAIR(cudaGetDriverEntryPointByVersion, _ptsz,
        (const char* symbol, void** fn, unsigned int version, unsigned long long flags,
         cudaDriverEntryPointQueryResult* status),
        DriverEntryPoint(symbol, fn, static_cast<int>(version), flags, status))

// ================================================================ memory

RT_ONE(cudaMalloc, (void** p, size_t n), MallocDev(e, p, n, MemKind::kDevice))
RT_ONE(cudaMallocManaged, (void** p, size_t n, unsigned int), MallocDev(e, p, n, MemKind::kManaged))
RT_ONE(cudaMallocPitch, (void** p, size_t* pitch, size_t width, size_t height),
       pitch == nullptr ? cudaErrorInvalidValue
                        : (*pitch = (width + 511) / 512 * 512,
                           MallocDev(e, p, *pitch* height, MemKind::kDevice)))
RT_ONE(cudaFree, (void* p), Err(e->MemFree(p)))
RT_PAIR(cudaMallocAsync, _ptsz, (void** p, size_t n, cudaStream_t s),
        St(e, s, kPT) ? MallocDev(e, p, n, MemKind::kDevice) : cudaErrorInvalidResourceHandle)
RT_PAIR(cudaFreeAsync, _ptsz, (void* p, cudaStream_t s), FreeAsync(e, p, s, kPT))
RT_ONE(cudaMallocHost, (void** p, size_t n), Err(e->MemAlloc(0, n, MemKind::kPinned, p)))
RT_ONE(cudaHostAlloc, (void** p, size_t n, unsigned int),
       Err(e->MemAlloc(0, n, MemKind::kPinned, p)))
RT_ONE(cudaFreeHost, (void* p), Err(e->MemFree(p)))
RT_ONE(cudaHostRegister, (void* p, size_t n, unsigned int), Err(e->HostRegister(p, n)))
RT_ONE(cudaHostUnregister, (void* p), Err(e->HostUnregister(p)))
RT_ONE(cudaHostGetDevicePointer, (void** dev, void* host, unsigned int),
       e->PointerKind(host, nullptr, nullptr, nullptr) == MemKind::kPageable ? cudaErrorInvalidValue
                                                                             : Out(dev, host))
RT_ONE(cudaPointerGetAttributes, (cudaPointerAttributes * a, const void* p), PointerAttrs(e, a, p))
RT_ONE(cudaMallocArray,
       (cudaArray_t * a, const cudaChannelFormatDesc* desc, size_t w, size_t h, unsigned int),
       MallocArray(e, a, desc, w, h))
RT_ONE(cudaFreeArray, (cudaArray_t a), FreeArray(e, a))
RT_ONE(cudaGetSymbolAddress, (void** dev, const void* symbol),
       SymbolAddress(e, symbol, dev, nullptr))
RT_ONE(cudaGetSymbolSize, (size_t * size, const void* symbol), [&] {
  void* dev = nullptr;
  return SymbolAddress(e, symbol, &dev, size);
}())

// ================================================================ copies

RT_PAIR(cudaMemcpy, _ptds, (void* dst, const void* src, size_t n, cudaMemcpyKind),
        Copy(e, R(dst), R(src), X(n), nullptr, kPT, true))
RT_PAIR(cudaMemcpyAsync, _ptsz,
        (void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t s),
        Copy(e, R(dst), R(src), X(n), s, kPT, false))
RT_PAIR(cudaMemcpy2D, _ptds,
        (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
         cudaMemcpyKind),
        Copy(e, R(dst, dpitch), R(src, spitch), X(w, h), nullptr, kPT, true))
RT_PAIR(cudaMemcpy2DAsync, _ptsz,
        (void* dst, size_t dpitch, const void* src, size_t spitch, size_t w, size_t h,
         cudaMemcpyKind, cudaStream_t s),
        Copy(e, R(dst, dpitch), R(src, spitch), X(w, h), s, kPT, false))
RT_PAIR(cudaMemcpy3D, _ptds, (const cudaMemcpy3DParms* p), Copy3D(e, p, nullptr, kPT, true, false))
RT_PAIR(cudaMemcpy3DAsync, _ptsz, (const cudaMemcpy3DParms* p, cudaStream_t s),
        Copy3D(e, p, s, kPT, false, false))
RT_ONE(cudaMemcpyPeer, (void* dst, int, const void* src, int, size_t n),
       Copy(e, R(dst), R(src), X(n), nullptr, false, true, true))
RT_ONE(cudaMemcpyPeerAsync, (void* dst, int, const void* src, int, size_t n, cudaStream_t s),
       Copy(e, R(dst), R(src), X(n), s, false, false, true))
RT_PAIR(cudaMemcpy3DPeer, _ptds, (const cudaMemcpy3DPeerParms* p),
        Copy3DPeer(e, p, nullptr, kPT, true))
RT_PAIR(cudaMemcpy3DPeerAsync, _ptsz, (const cudaMemcpy3DPeerParms* p, cudaStream_t s),
        Copy3DPeer(e, p, s, kPT, false))
RT_PAIR(cudaMemcpyToSymbol, _ptds,
        (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind),
        ToSymbol(e, symbol, src, n, offset, nullptr, kPT, true))
RT_PAIR(cudaMemcpyToSymbolAsync, _ptsz,
        (const void* symbol, const void* src, size_t n, size_t offset, cudaMemcpyKind,
         cudaStream_t s),
        ToSymbol(e, symbol, src, n, offset, s, kPT, false))
RT_PAIR(cudaMemcpyFromSymbol, _ptds,
        (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind),
        FromSymbol(e, dst, symbol, n, offset, nullptr, kPT, true))
RT_PAIR(cudaMemcpyFromSymbolAsync, _ptsz,
        (void* dst, const void* symbol, size_t n, size_t offset, cudaMemcpyKind, cudaStream_t s),
        FromSymbol(e, dst, symbol, n, offset, s, kPT, false))
RT_PAIR(cudaMemcpyToArray, _ptds,
        (cudaArray_t dst, size_t wo, size_t ho, const void* src, size_t n, cudaMemcpyKind),
        Copy(e, R(ArrayAt(dst, wo, ho)), R(src), X(n), nullptr, kPT, true))
RT_PAIR(cudaMemcpyToArrayAsync, _ptsz,
        (cudaArray_t dst, size_t wo, size_t ho, const void* src, size_t n, cudaMemcpyKind,
         cudaStream_t s),
        Copy(e, R(ArrayAt(dst, wo, ho)), R(src), X(n), s, kPT, false))
RT_PAIR(cudaMemcpyFromArray, _ptds,
        (void* dst, cudaArray_const_t src, size_t wo, size_t ho, size_t n, cudaMemcpyKind),
        Copy(e, R(dst), R(ArrayAt(src, wo, ho)), X(n), nullptr, kPT, true))
RT_PAIR(cudaMemcpyFromArrayAsync, _ptsz,
        (void* dst, cudaArray_const_t src, size_t wo, size_t ho, size_t n, cudaMemcpyKind,
         cudaStream_t s),
        Copy(e, R(dst), R(ArrayAt(src, wo, ho)), X(n), s, kPT, false))
RT_PAIR(cudaMemcpy2DToArray, _ptds,
        (cudaArray_t dst, size_t wo, size_t ho, const void* src, size_t spitch, size_t w, size_t h,
         cudaMemcpyKind),
        Copy(e, R(ArrayAt(dst, wo, ho), dst->width_bytes), R(src, spitch), X(w, h), nullptr, kPT,
             true))
RT_PAIR(cudaMemcpy2DToArrayAsync, _ptsz,
        (cudaArray_t dst, size_t wo, size_t ho, const void* src, size_t spitch, size_t w, size_t h,
         cudaMemcpyKind, cudaStream_t s),
        Copy(e, R(ArrayAt(dst, wo, ho), dst->width_bytes), R(src, spitch), X(w, h), s, kPT, false))
RT_PAIR(cudaMemcpy2DFromArray, _ptds,
        (void* dst, size_t dpitch, cudaArray_const_t src, size_t wo, size_t ho, size_t w, size_t h,
         cudaMemcpyKind),
        Copy(e, R(dst, dpitch), R(ArrayAt(src, wo, ho), src->width_bytes), X(w, h), nullptr, kPT,
             true))
RT_PAIR(cudaMemcpy2DFromArrayAsync, _ptsz,
        (void* dst, size_t dpitch, cudaArray_const_t src, size_t wo, size_t ho, size_t w, size_t h,
         cudaMemcpyKind, cudaStream_t s),
        Copy(e, R(dst, dpitch), R(ArrayAt(src, wo, ho), src->width_bytes), X(w, h), s, kPT, false))
RT_PAIR(cudaMemcpyArrayToArray, _ptds,
        (cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src, size_t ws, size_t hs,
         size_t n, cudaMemcpyKind),
        Copy(e, R(ArrayAt(dst, wd, hd)), R(ArrayAt(src, ws, hs)), X(n), nullptr, kPT, true))
RT_PAIR(cudaMemcpy2DArrayToArray, _ptds,
        (cudaArray_t dst, size_t wd, size_t hd, cudaArray_const_t src, size_t ws, size_t hs,
         size_t w, size_t h, cudaMemcpyKind),
        Copy(e, R(ArrayAt(dst, wd, hd), dst->width_bytes),
             R(ArrayAt(src, ws, hs), src->width_bytes), X(w, h), nullptr, kPT, true))
RT_PAIR(cudaMemcpyBatchAsync, _ptsz,
        (void* const* dsts, const void* const* srcs, const size_t* sizes, size_t count,
         cudaMemcpyAttributes*, size_t*, size_t, cudaStream_t s),
        CopyBatch(e, dsts, srcs, sizes, count, s, kPT))
RT_PAIR(cudaMemcpy3DBatchAsync, _ptsz,
        (size_t n, cudaMemcpy3DBatchOp* ops, unsigned long long, cudaStream_t s),
        Copy3DBatch(e, n, ops, s, kPT))

// ================================================================ memsets

RT_PAIR(cudaMemset, _ptds, (void* p, int v, size_t n), Set(e, R(p), X(n), v, nullptr, kPT, true))
RT_PAIR(cudaMemsetAsync, _ptsz, (void* p, int v, size_t n, cudaStream_t s),
        Set(e, R(p), X(n), v, s, kPT, false))
RT_PAIR(cudaMemset2D, _ptds, (void* p, size_t pitch, int v, size_t w, size_t h),
        Set(e, R(p, pitch), X(w, h), v, nullptr, kPT, true))
RT_PAIR(cudaMemset2DAsync, _ptsz,
        (void* p, size_t pitch, int v, size_t w, size_t h, cudaStream_t s),
        Set(e, R(p, pitch), X(w, h), v, s, kPT, false))
RT_PAIR(cudaMemset3D, _ptds, (cudaPitchedPtr p, int v, cudaExtent x),
        Set(e, R(p.ptr, p.pitch, p.ysize), X(x.width, x.height, x.depth), v, nullptr, kPT, true))
RT_PAIR(cudaMemset3DAsync, _ptsz, (cudaPitchedPtr p, int v, cudaExtent x, cudaStream_t s),
        Set(e, R(p.ptr, p.pitch, p.ysize), X(x.width, x.height, x.depth), v, s, kPT, false))

// ================================================================ streams and events

RT_ONE(cudaStreamCreate, (cudaStream_t * s), CreateStream(e, s, cudaStreamDefault, 0))
RT_ONE(cudaStreamCreateWithFlags, (cudaStream_t * s, unsigned int flags),
       CreateStream(e, s, flags, 0))
RT_ONE(cudaStreamCreateWithPriority, (cudaStream_t * s, unsigned int flags, int prio),
       CreateStream(e, s, flags, prio))
RT_ONE(cudaStreamDestroy, (cudaStream_t s), Err(e->StreamDestroy(S(s))))
RT_PAIR(cudaStreamSynchronize, _ptsz, (cudaStream_t s),
        WithStream(e, s, kPT, &Engine::StreamSynchronize))
RT_PAIR(cudaStreamQuery, _ptsz, (cudaStream_t s), WithStream(e, s, kPT, &Engine::StreamQuery))
RT_PAIR(cudaStreamWaitEvent, _ptsz, (cudaStream_t s, cudaEvent_t ev, unsigned int),
        St(e, s, kPT) ? Err(e->StreamWaitEvent(St(e, s, kPT), Ev(ev)))
                      : cudaErrorInvalidResourceHandle)
RT_PAIR(cudaStreamGetFlags, _ptsz, (cudaStream_t s, unsigned int* flags),
        flags ? StreamAttr(e, s, kPT, nullptr, flags, nullptr, nullptr) : cudaErrorInvalidValue)
RT_PAIR(cudaStreamGetPriority, _ptsz, (cudaStream_t s, int* prio),
        prio ? StreamAttr(e, s, kPT, nullptr, nullptr, prio, nullptr) : cudaErrorInvalidValue)
RT_PAIR(cudaStreamGetId, _ptsz, (cudaStream_t s, unsigned long long* id),
        id ? StreamAttr(e, s, kPT, nullptr, nullptr, nullptr, id) : cudaErrorInvalidValue)
RT_PAIR(cudaStreamGetDevice, _ptsz, (cudaStream_t s, int* dev),
        dev ? StreamAttr(e, s, kPT, dev, nullptr, nullptr, nullptr) : cudaErrorInvalidValue)
RT_PAIR(cudaStreamAddCallback, _ptsz,
        (cudaStream_t s, cudaStreamCallback_t fn, void* user, unsigned int),
        AddCallback(e, s, fn, user, kPT))
RT_PAIR(cudaLaunchHostFunc, _ptsz, (cudaStream_t s, cudaHostFn_t fn, void* user),
        St(e, s, kPT) ? Err(e->LaunchHostFunc(St(e, s, kPT), fn, user))
                      : cudaErrorInvalidResourceHandle)
RT_ONE(cudaEventCreate, (cudaEvent_t * ev), CreateEvent(e, ev, 0))
RT_ONE(cudaEventCreateWithFlags, (cudaEvent_t * ev, unsigned int flags), CreateEvent(e, ev, flags))
RT_ONE(cudaEventDestroy, (cudaEvent_t ev), Err(e->EventDestroy(Ev(ev))))
RT_PAIR(cudaEventRecord, _ptsz, (cudaEvent_t ev, cudaStream_t s),
        St(e, s, kPT) ? Err(e->EventRecord(Ev(ev), St(e, s, kPT))) : cudaErrorInvalidResourceHandle)
RT_PAIR(cudaEventRecordWithFlags, _ptsz, (cudaEvent_t ev, cudaStream_t s, unsigned int),
        St(e, s, kPT) ? Err(e->EventRecord(Ev(ev), St(e, s, kPT))) : cudaErrorInvalidResourceHandle)
RT_ONE(cudaEventSynchronize, (cudaEvent_t ev), Err(e->EventSynchronize(Ev(ev))))
RT_ONE(cudaEventQuery, (cudaEvent_t ev), Err(e->EventQuery(Ev(ev))))
RT_ONE(cudaEventElapsedTime, (float* ms, cudaEvent_t a, cudaEvent_t b),
       Err(e->EventElapsed(ms, Ev(a), Ev(b))))

// ================================================================ launches and graphs

RT_PAIR(cudaLaunchKernel, _ptsz,
        (const void* fn, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s),
        Launch(e, FindKernel(fn), grid, block, shmem, s, args, kPT))
RT_PAIR(cudaLaunchCooperativeKernel, _ptsz,
        (const void* fn, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t s),
        Launch(e, FindKernel(fn), grid, block, shmem, s, args, kPT))
RT_PAIR(cudaLaunchKernelExC, _ptsz, (const cudaLaunchConfig_t* c, const void* fn, void** args),
        c == nullptr ? cudaErrorInvalidValue
                     : Launch(e, FindKernel(fn), c->gridDim, c->blockDim, c->dynamicSmemBytes,
                              c->stream, args, kPT))
RT_ONE(cudaFuncGetAttributes, (cudaFuncAttributes * a, const void* fn),
       (a == nullptr || FindKernel(fn) == nullptr)
           ? cudaErrorInvalidDeviceFunction
           : (memset(a, 0, sizeof *a), a->maxThreadsPerBlock = 1024, a->numRegs = 32,
              a->ptxVersion = 90, a->binaryVersion = 90, cudaSuccess))
RT_ONE(cudaFuncSetAttribute, (const void* fn, cudaFuncAttribute, int),
       FindKernel(fn) ? cudaSuccess : cudaErrorInvalidDeviceFunction)
RT_ONE(cudaOccupancyMaxActiveBlocksPerMultiprocessor,
       (int* n, const void* fn, int block_size, size_t),
       (FindKernel(fn) == nullptr || block_size <= 0)
           ? cudaErrorInvalidDeviceFunction
           : Out(n, std::min(32, std::max(1, 2048 / block_size))))
RT_PAIR(cudaStreamBeginCapture, _ptsz, (cudaStream_t s, cudaStreamCaptureMode),
        St(e, s, kPT) ? Err(e->BeginCapture(St(e, s, kPT))) : cudaErrorInvalidResourceHandle)
RT_PAIR(cudaStreamEndCapture, _ptsz, (cudaStream_t s, cudaGraph_t* g),
        St(e, s, kPT) ? Err(e->EndCapture(St(e, s, kPT), reinterpret_cast<simgpu::Graph**>(g)))
                      : cudaErrorInvalidResourceHandle)
RT_PAIR(cudaStreamIsCapturing, _ptsz, (cudaStream_t s, cudaStreamCaptureStatus* st),
        Out(st, e->IsCapturing(S(s) ? S(s) : St(e, s, kPT)) ? cudaStreamCaptureStatusActive
                                                            : cudaStreamCaptureStatusNone))
// An executable graph is the captured graph itself; graphs are never freed (a test double
// need not reclaim them, and an exec may outlive its graph).
RT_ONE(cudaGraphInstantiate, (cudaGraphExec_t * x, cudaGraph_t g, unsigned long long),
       g ? Out(x, reinterpret_cast<cudaGraphExec_t>(g)) : cudaErrorInvalidValue)
RT_ONE(cudaGraphInstantiateWithFlags, (cudaGraphExec_t * x, cudaGraph_t g, unsigned long long),
       g ? Out(x, reinterpret_cast<cudaGraphExec_t>(g)) : cudaErrorInvalidValue)
RT_ONE(cudaGraphDestroy, (cudaGraph_t), cudaSuccess)
RT_ONE(cudaGraphExecDestroy, (cudaGraphExec_t), cudaSuccess)
RT_PAIR(cudaGraphLaunch, _ptsz, (cudaGraphExec_t x, cudaStream_t s),
        St(e, s, kPT) ? Err(e->GraphLaunch(reinterpret_cast<simgpu::Graph*>(x), St(e, s, kPT)))
                      : cudaErrorInvalidResourceHandle)
