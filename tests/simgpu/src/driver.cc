// Fake libcuda.so.1: the device model (engine.cc) plus the driver API subset that cudart-less
// code uses. cuGetProcAddress and cuGetExportTable are how the other fakes reach it.
#include <cuda.h>
#include <dlfcn.h>

#include <cstring>

#include "api_frame.h"
#include "cbid.h"
#include "engine_impl.h"

#define SIMGPU_EXPORT extern "C" __attribute__((visibility("default")))
#define SIMGPU_XSTR(x) SIMGPU_STR(x)
#define SIMGPU_STR(x) #x
// Opens a driver-domain API frame named after the real (versioned) symbol.
#define DRIVER_API(fn)                                               \
  static const uint32_t kCbid = simgpu::DriverCbid(SIMGPU_XSTR(fn)); \
  simgpu::ApiScope scope(&E(), 1 /* CUPTI_CB_DOMAIN_DRIVER_API */, kCbid, SIMGPU_XSTR(fn))

struct CUctx_st {
  int dev;
};

namespace {

using simgpu::EngineImpl;
using simgpu::Extent;
using simgpu::MemKind;
using simgpu::Region;

EngineImpl& E() { return EngineImpl::Get(); }
simgpu::Stream* S(CUstream s) { return reinterpret_cast<simgpu::Stream*>(s); }
simgpu::Event* Ev(CUevent e) { return reinterpret_cast<simgpu::Event*>(e); }

CUctx_st g_contexts[64];
thread_local CUcontext tls_ctx = nullptr;

CUcontext Ctx(int dev) {
  g_contexts[dev].dev = dev;
  return &g_contexts[dev];
}

const simgpu::EngineTable g_table = {sizeof(simgpu::EngineTable), &EngineImpl::Get()};

bool g_initialized = false;

CUresult Copy1D(void* dst, const void* src, size_t n, CUstream s, bool sync) {
  Extent ext;
  ext.width = n;
  return E().Copy(Region{dst, 0, 0}, Region{const_cast<void*>(src), 0, 0}, ext, S(s), sync, false);
}

CUresult Set(void* dst, uint32_t v, size_t n, int elem, CUstream s, bool sync) {
  Extent ext;
  ext.width = n * static_cast<size_t>(elem);
  return E().Memset(Region{dst, 0, 0}, ext, v, elem, S(s), sync);
}

void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

}  // namespace

SIMGPU_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  g_initialized = true;
  return E().Init();
}

SIMGPU_EXPORT CUresult cuDriverGetVersion(int* v) {
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (memcmp(id, &simgpu::kEngineTableId, sizeof(CUuuid)) == 0) {
    *table = &g_table;
    return CUDA_SUCCESS;
  }
  *table = nullptr;
  return CUDA_ERROR_NOT_FOUND;
}

SIMGPU_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int /*cudaVersion*/,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  Dl_info info;
  void* self = nullptr;
  if (dladdr(reinterpret_cast<void*>(&cuGetExportTable), &info) != 0) {
    self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }
  if (self != nullptr) {
    static const char* const kPerThread[] = {"_v2_ptsz", "_v2_ptds", "_ptsz", "_ptds"};
    static const char* const kPlain[] = {"_v3", "_v2", ""};
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
      for (const char* suffix : kPerThread) {
        std::string name = std::string(symbol) + suffix;
        if ((*pfn = dlsym(self, name.c_str())) != nullptr) break;
      }
    }
    for (const char* suffix : kPlain) {
      if (*pfn != nullptr) break;
      std::string name = std::string(symbol) + suffix;
      *pfn = dlsym(self, name.c_str());
    }
    dlclose(self);
  }
  if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIMGPU_EXPORT CUresult cuGetErrorName(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
    case CUDA_SUCCESS:
      *str = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *str = "CUDA_ERROR_INVALID_VALUE";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *str = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      *str = "CUDA_ERROR_NOT_INITIALIZED";
      break;
    case CUDA_ERROR_INVALID_DEVICE:
      *str = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case CUDA_ERROR_INVALID_HANDLE:
      *str = "CUDA_ERROR_INVALID_HANDLE";
      break;
    case CUDA_ERROR_NOT_FOUND:
      *str = "CUDA_ERROR_NOT_FOUND";
      break;
    case CUDA_ERROR_NOT_READY:
      *str = "CUDA_ERROR_NOT_READY";
      break;
    default:
      *str = "CUDA_ERROR_UNKNOWN";
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuGetErrorString(CUresult error, const char** str) {
  return cuGetErrorName(error, str);
}

SIMGPU_EXPORT CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = E().DeviceCount();
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (E().Device(ordinal) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  const simgpu::DeviceInfo* d = E().Device(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, static_cast<size_t>(len), "%s", d->name);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  const simgpu::DeviceInfo* d = E().Device(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = d->mem_bytes;
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute attr, CUdevice dev) {
  const simgpu::DeviceInfo* d = E().Device(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (v == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *v = d->sm_count;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *v = d->cc_major;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *v = d->cc_minor;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = d->max_threads_per_block;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *v = d->max_threads_per_sm;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *v = d->warp_size;
      break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      *v = d->pci_bus_id;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *v = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      *v = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      *v = 2;
      break;
    default:
      *v = 0;
      break;
  }
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (E().Device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = Ctx(dev);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return E().Device(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SIMGPU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  tls_ctx = ctx;
  return ctx ? E().SetCurrentDevice(ctx->dev) : CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ctx = tls_ctx ? tls_ctx : (g_initialized ? Ctx(E().CurrentDevice()) : nullptr);
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxGetDevice(CUdevice* dev) {
  if (dev == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *dev = E().CurrentDevice();
  return CUDA_SUCCESS;
}

SIMGPU_EXPORT CUresult cuCtxSynchronize() {
  DRIVER_API(cuCtxSynchronize);
  return scope.Ret(E().DeviceSynchronize(E().CurrentDevice()));
}

SIMGPU_EXPORT CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  return E().MemInfo(E().CurrentDevice(), free_bytes, total);
}

SIMGPU_EXPORT CUresult cuMemAlloc(CUdeviceptr* p, size_t bytes) {
  DRIVER_API(cuMemAlloc);
  if (p == nullptr) return scope.Ret(CUDA_ERROR_INVALID_VALUE);
  void* out = nullptr;
  CUresult r = E().MemAlloc(E().CurrentDevice(), bytes, MemKind::kDevice, &out);
  *p = reinterpret_cast<CUdeviceptr>(out);
  return scope.Ret(r);
}

SIMGPU_EXPORT CUresult cuMemFree(CUdeviceptr p) {
  DRIVER_API(cuMemFree);
  return scope.Ret(E().MemFree(Ptr(p)));
}

SIMGPU_EXPORT CUresult cuMemAllocHost(void** p, size_t bytes) {
  DRIVER_API(cuMemAllocHost);
  return scope.Ret(E().MemAlloc(0, bytes, MemKind::kPinned, p));
}

SIMGPU_EXPORT CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned int /*flags*/) {
  DRIVER_API(cuMemHostAlloc);
  return scope.Ret(E().MemAlloc(0, bytes, MemKind::kPinned, p));
}

SIMGPU_EXPORT CUresult cuMemFreeHost(void* p) {
  DRIVER_API(cuMemFreeHost);
  return scope.Ret(E().MemFree(p));
}

SIMGPU_EXPORT CUresult cuMemHostRegister(void* p, size_t bytes, unsigned int /*flags*/) {
  DRIVER_API(cuMemHostRegister);
  return scope.Ret(E().HostRegister(p, bytes));
}

SIMGPU_EXPORT CUresult cuMemHostUnregister(void* p) {
  DRIVER_API(cuMemHostUnregister);
  return scope.Ret(E().HostUnregister(p));
}

SIMGPU_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  DRIVER_API(cuMemcpy);
  return scope.Ret(Copy1D(Ptr(dst), Ptr(src), n, nullptr, true));
}

SIMGPU_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  DRIVER_API(cuMemcpyAsync);
  return scope.Ret(Copy1D(Ptr(dst), Ptr(src), n, s, false));
}

SIMGPU_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  DRIVER_API(cuMemcpyHtoD);
  return scope.Ret(Copy1D(Ptr(dst), src, n, nullptr, true));
}

SIMGPU_EXPORT CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  DRIVER_API(cuMemcpyDtoH);
  return scope.Ret(Copy1D(dst, Ptr(src), n, nullptr, true));
}

SIMGPU_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  DRIVER_API(cuMemcpyDtoD);
  return scope.Ret(Copy1D(Ptr(dst), Ptr(src), n, nullptr, true));
}

SIMGPU_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  DRIVER_API(cuMemcpyHtoDAsync);
  return scope.Ret(Copy1D(Ptr(dst), src, n, s, false));
}

SIMGPU_EXPORT CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  DRIVER_API(cuMemcpyDtoHAsync);
  return scope.Ret(Copy1D(dst, Ptr(src), n, s, false));
}

SIMGPU_EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
  DRIVER_API(cuMemsetD8);
  return scope.Ret(Set(Ptr(dst), v, n, 1, nullptr, true));
}

SIMGPU_EXPORT CUresult cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n) {
  DRIVER_API(cuMemsetD32);
  return scope.Ret(Set(Ptr(dst), v, n, 4, nullptr, true));
}

SIMGPU_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  DRIVER_API(cuMemsetD8Async);
  return scope.Ret(Set(Ptr(dst), v, n, 1, s, false));
}

SIMGPU_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
  DRIVER_API(cuMemsetD32Async);
  return scope.Ret(Set(Ptr(dst), v, n, 4, s, false));
}

SIMGPU_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attr, CUdeviceptr p) {
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int dev = -1;
  MemKind k = E().PointerKind(Ptr(p), &dev, nullptr, nullptr);
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      if (k == MemKind::kPageable) return CUDA_ERROR_INVALID_VALUE;  // as the real driver
      *static_cast<unsigned*>(data) = k == MemKind::kPinned    ? CU_MEMORYTYPE_HOST
                                      : k == MemKind::kManaged ? CU_MEMORYTYPE_UNIFIED
                                                               : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = dev < 0 ? 0 : dev;
      return k == MemKind::kPageable ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

SIMGPU_EXPORT CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  DRIVER_API(cuStreamCreate);
  simgpu::Stream* out = nullptr;
  CUresult r = E().StreamCreate(E().CurrentDevice(), flags, 0, &out);
  if (s) *s = reinterpret_cast<CUstream>(out);
  return scope.Ret(r);
}

SIMGPU_EXPORT CUresult cuStreamDestroy(CUstream s) {
  DRIVER_API(cuStreamDestroy);
  return scope.Ret(E().StreamDestroy(S(s)));
}

SIMGPU_EXPORT CUresult cuStreamSynchronize(CUstream s) {
  DRIVER_API(cuStreamSynchronize);
  return scope.Ret(E().StreamSynchronize(S(s)));
}

SIMGPU_EXPORT CUresult cuStreamQuery(CUstream s) { return E().StreamQuery(S(s)); }

SIMGPU_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int /*flags*/) {
  DRIVER_API(cuStreamWaitEvent);
  return scope.Ret(E().StreamWaitEvent(S(s), Ev(e)));
}

SIMGPU_EXPORT CUresult cuEventCreate(CUevent* e, unsigned int flags) {
  DRIVER_API(cuEventCreate);
  simgpu::Event* out = nullptr;
  CUresult r = E().EventCreate(flags, &out);
  if (e) *e = reinterpret_cast<CUevent>(out);
  return scope.Ret(r);
}

SIMGPU_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  DRIVER_API(cuEventRecord);
  return scope.Ret(E().EventRecord(Ev(e), S(s)));
}

SIMGPU_EXPORT CUresult cuEventSynchronize(CUevent e) {
  DRIVER_API(cuEventSynchronize);
  return scope.Ret(E().EventSynchronize(Ev(e)));
}

SIMGPU_EXPORT CUresult cuEventQuery(CUevent e) { return E().EventQuery(Ev(e)); }

SIMGPU_EXPORT CUresult cuEventDestroy(CUevent e) { return E().EventDestroy(Ev(e)); }

SIMGPU_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  return E().EventElapsed(ms, Ev(a), Ev(b));
}

SIMGPU_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                      unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                      CUstream s, void** params, void** /*extra*/) {
  DRIVER_API(cuLaunchKernel);
  if (f == nullptr) return scope.Ret(CUDA_ERROR_INVALID_HANDLE);
  // simgpu's CUfunction is cudart's registered kernel record, whose first member is the name.
  const char* name = *reinterpret_cast<const char* const*>(f);
  return scope.Ret(E().LaunchKernel(S(s), name, simgpu::Dim3{gx, gy, gz}, simgpu::Dim3{bx, by, bz},
                                    shmem, params));
}
