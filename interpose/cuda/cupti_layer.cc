// Loading CUPTI, activity buffers, record conversion, flushing, CUDA_INJECTION64_PATH.
#include "interpose/cuda/cupti_layer.h"

#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "interpose/cuda/cuda_calls.h"
#include "interpose/cuda/cupti_api.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder.h"

namespace idlescope::cuda::detail {
std::atomic<bool> g_cupti_start_attempted{false};
}  // namespace idlescope::cuda::detail

namespace idlescope::cupti {

using cuda::detail::g_cupti_start_attempted;

namespace {

// Kineto's sizes: 4 MB buffers, total capped; CUPTI counts what it could not store.
constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kAlign = 8;

Api g_api;
std::atomic<const Api*> g_loaded{nullptr};
std::atomic<bool> g_activity{false};
std::atomic<size_t> g_outstanding{0};
size_t g_cap_bytes = 64u << 20;
std::atomic<uint64_t> g_refused{0};
pid_t g_start_pid = 0;
std::mutex g_start_mu;

void Unavailable(const std::string& why) {
  RecordNotice(NoticeSeverity::kWarning, "cupti_unavailable",
               "no GPU timeline: " + why + "; host-side CUDA tracing goes on", true);
}

uint64_t EnvU64(StartVar var, uint64_t fallback) {
  const char* v = StartEnv(var);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  unsigned long long x = strtoull(v, &end, 10);
  return end != v ? x : fallback;
}

// --- finding libcupti -------------------------------------------------------------------------

void* TryOpen(const std::string& path, std::string* tried) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (tried->size()) *tried += ", ";
  *tried += path;
  return h;
}

// Directory of the libcudart this process loaded (dladdr on one of its functions).
std::string CudartDir() {
  void* f = cuda::CudartSymbol("cudaGetDevice");
  Dl_info info{};
  if (f == nullptr || dladdr(f, &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

void* OpenCupti(std::string* tried) {
  if (const char* env = StartEnv(StartVar::kCuptiLib)) {
    if (void* h = TryOpen(env, tried)) return h;
  }
  for (const char* soname : {"libcupti.so.13", "libcupti.so.12"}) {
    if (void* h = TryOpen(soname, tried)) return h;
  }
  std::string dir = CudartDir();
  if (!dir.empty()) {
    // Beside libcudart (CUDA 13 wheels: nvidia/cu13/lib holds both), the CUDA toolkit layout
    // (lib64/../extras/CUPTI/lib64) and CUDA 12 wheels
    // (nvidia/cuda_runtime/lib/../../cuda_cupti/lib).
    for (const char* rel : {"/", "/../extras/CUPTI/lib64/", "/../../cuda_cupti/lib/"}) {
      for (const char* soname : {"libcupti.so.13", "libcupti.so.12"}) {
        if (void* h = TryOpen(dir + rel + soname, tried)) return h;
      }
    }
  }
  return nullptr;
}

// --- activity buffers -------------------------------------------------------------------------

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  if (g_outstanding.fetch_add(kBufferBytes) + kBufferBytes > g_cap_bytes) {
    // Over the cap: CUPTI drops the records and counts them (GetNumDroppedRecords).
    g_outstanding.fetch_sub(kBufferBytes);
    g_refused.fetch_add(1, std::memory_order_relaxed);
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = static_cast<uint8_t*>(aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  if (*buffer == nullptr) g_outstanding.fetch_sub(kBufferBytes);
}

// Names are interned once per distinct mangled name, demangled on the way (completion thread,
// never the hot path).
std::mutex g_names_mu;
std::unordered_map<std::string, uint32_t>* g_names = nullptr;

bool IsNcclKernel(std::string_view demangled) {
  return demangled.starts_with("ncclDevKernel") || demangled.starts_with("ncclKernel");
}

uint32_t KernelName(const char* mangled, bool* nccl) {
  if (mangled == nullptr) return 0;
  std::lock_guard<std::mutex> lock(g_names_mu);
  if (g_names == nullptr) g_names = new std::unordered_map<std::string, uint32_t>();
  auto it = g_names->find(mangled);
  uint32_t id;
  if (it != g_names->end()) {
    id = it->second;
  } else {
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
    std::string name = status == 0 && demangled ? demangled : mangled;
    free(demangled);
    // High bit remembers the NCCL flag next to the id (ids stay far below 2^31).
    id = InternString(name) | (IsNcclKernel(name) ? 0x80000000u : 0);
    g_names->emplace(mangled, id);
  }
  *nccl = (id & 0x80000000u) != 0;
  return id & 0x7fffffffu;
}

uint32_t Interned(const char* s) {
  std::lock_guard<std::mutex> lock(g_names_mu);
  if (g_names == nullptr) g_names = new std::unordered_map<std::string, uint32_t>();
  std::string key = std::string("\x01") + s;  // not a mangled name
  auto it = g_names->find(key);
  if (it != g_names->end()) return it->second;
  uint32_t id = InternString(s);
  g_names->emplace(key, id);
  return id;
}

uint8_t CopyKindOf(uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return ev::kH2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return ev::kD2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return ev::kH2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return ev::kPeer;
    case CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN:
      return 0;
    default:
      return ev::kD2D;
  }
}

uint8_t MemKindOf(uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return ev::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return ev::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return ev::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return ev::kArray;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return ev::kManaged;
    default:
      return 0;
  }
}

const char* SyncTypeName(uint32_t t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "context_synchronize";
    default:
      return "synchronize";
  }
}

const char* OverheadName(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "cupti_resource";
    default:
      return "overhead";
  }
}

// DeviceInfo once per device seen in the activity, from the driver API (works the same under
// LD_PRELOAD and CUDA_INJECTION64_PATH, and needs no context).
std::mutex g_devices_mu;
uint64_t g_devices_described = 0;  // bit per ordinal < 64
// Synchronization records carry a context, not a device: learnt from kernel/copy records.
std::unordered_map<uint32_t, uint32_t>* g_context_device = nullptr;

// The driver CUPTI runs on; only ever looked up, never loaded by us (interpose/real_symbol.h).
constinit RealLibrary g_libcuda{{"libcuda.so.1", nullptr, nullptr}};

void DescribeDevice(uint32_t ordinal) {
  if (ordinal >= 64) return;
  {
    std::lock_guard<std::mutex> lock(g_devices_mu);
    if (g_devices_described & (1ull << ordinal)) return;
    g_devices_described |= 1ull << ordinal;
  }
  void* cuda = g_libcuda.Handle();
  if (cuda == nullptr) return;
  auto get = reinterpret_cast<CUresult (*)(CUdevice*, int)>(dlsym(cuda, "cuDeviceGet"));
  auto count = reinterpret_cast<CUresult (*)(int*)>(dlsym(cuda, "cuDeviceGetCount"));
  auto name = reinterpret_cast<CUresult (*)(char*, int, CUdevice)>(dlsym(cuda, "cuDeviceGetName"));
  auto attr = reinterpret_cast<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(
      dlsym(cuda, "cuDeviceGetAttribute"));
  auto mem = reinterpret_cast<CUresult (*)(size_t*, CUdevice)>(dlsym(cuda, "cuDeviceTotalMem_v2"));
  auto uuid = reinterpret_cast<CUresult (*)(CUuuid*, CUdevice)>(dlsym(cuda, "cuDeviceGetUuid_v2"));
  RawDeviceInfo info;
  info.device = ordinal;
  CUdevice dev = 0;
  if (get == nullptr || get(&dev, static_cast<int>(ordinal)) != CUDA_SUCCESS) return;
  int n = 0;
  if (count && count(&n) == CUDA_SUCCESS) info.visible_devices = static_cast<uint32_t>(n);
  if (name) name(info.name, sizeof(info.name) - 1, dev);
  int v = 0;
  if (attr && attr(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS) {
    info.sm_count = static_cast<uint32_t>(v);
  }
  if (attr && attr(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) == CUDA_SUCCESS) {
    info.pci_bus = static_cast<uint32_t>(v);
  }
  size_t total = 0;
  if (mem && mem(&total, dev) == CUDA_SUCCESS) info.total_memory = total;
  CUuuid u{};
  if (uuid && uuid(&u, dev) == CUDA_SUCCESS) {
    // xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (nvidia-smi adds a "GPU-" prefix).
    const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
    snprintf(info.uuid, sizeof(info.uuid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
  }
  RecordDeviceInfo(info);
}

void NoteContext(uint32_t context, uint32_t device) {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  if (g_context_device == nullptr) g_context_device = new std::unordered_map<uint32_t, uint32_t>();
  (*g_context_device)[context] = device;
}

uint32_t DeviceOfContext(uint32_t context) {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  if (g_context_device == nullptr) return 0;
  auto it = g_context_device->find(context);
  return it == g_context_device->end() ? 0 : it->second;
}

uint64_t Dur(uint64_t start, uint64_t end) { return end > start ? end - start : 0; }

bool Convert(const CUpti_Activity* rec, RawGpuActivity* out) {
  RawGpuActivity& a = *out;
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      a.kind = 1;  // GPU_KERNEL
      a.start = k->start;
      a.dur = Dur(k->start, k->end);
      a.device = k->deviceId;
      a.stream = k->streamId;
      a.correlation = k->correlationId;
      a.grid = uint64_t(k->gridX) * uint64_t(k->gridY) * uint64_t(k->gridZ);
      a.block = uint32_t(k->blockX) * uint32_t(k->blockY) * uint32_t(k->blockZ);
      a.shared_mem = uint32_t(k->staticSharedMemory) + uint32_t(k->dynamicSharedMemory);
      a.registers = k->registersPerThread;
      a.graph = k->graphId;
      bool nccl = false;
      a.name = KernelName(k->name, &nccl);
      a.nccl = nccl;
      NoteContext(k->contextId, k->deviceId);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      a.kind = 2;  // GPU_MEMCPY
      a.start = m->start;
      a.dur = Dur(m->start, m->end);
      a.device = m->deviceId;
      a.stream = m->streamId;
      // The id our runtime hooks get from the CUPTI runtime callback: CUPTI documents
      // runtimeCorrelationId as the runtime API call's id; calls made through the driver API
      // only (no runtime call) leave it 0, and then correlationId is the driver call's.
      a.correlation = m->runtimeCorrelationId ? m->runtimeCorrelationId : m->correlationId;
      a.bytes = m->bytes;
      a.copy_kind = CopyKindOf(m->copyKind);
      a.src_kind = MemKindOf(m->srcKind);
      a.dst_kind = MemKindOf(m->dstKind);
      a.graph = m->graphId;
      NoteContext(m->contextId, m->deviceId);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* p = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec);
      a.kind = 6;  // GPU_PEER_COPY
      a.start = p->start;
      a.dur = Dur(p->start, p->end);
      a.device = p->srcDeviceId;
      a.dst_device = p->dstDeviceId;
      a.stream = p->streamId;
      a.correlation = p->correlationId;
      a.bytes = p->bytes;
      a.copy_kind = ev::kPeer;
      a.src_kind = MemKindOf(p->srcKind);
      a.dst_kind = MemKindOf(p->dstKind);
      a.graph = p->graphId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      a.kind = 3;  // GPU_MEMSET
      a.start = m->start;
      a.dur = Dur(m->start, m->end);
      a.device = m->deviceId;
      a.stream = m->streamId;
      a.correlation = m->correlationId;
      a.bytes = m->bytes;
      a.dst_kind = MemKindOf(static_cast<uint8_t>(m->memoryKind));
      a.graph = m->graphId;
      NoteContext(m->contextId, m->deviceId);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
      a.kind = 4;  // GPU_SYNC
      a.start = s->start;
      a.dur = Dur(s->start, s->end);
      a.device = DeviceOfContext(s->contextId);
      a.stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->streamId;
      a.correlation = s->correlationId;
      a.name = Interned(SyncTypeName(s->type));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(rec);
      a.kind = 5;  // GPU_OVERHEAD
      a.start = o->start;
      a.dur = Dur(o->start, o->end);
      a.correlation = o->correlationId;
      a.name = Interned(OverheadName(o->overheadKind));
      return true;
    }
    default:
      return false;
  }
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size,
                              size_t valid) {
  // May run on CUPTI's own thread, or inside cuptiActivityFlushAll on ours: recorder calls only.
  const Api* api = g_loaded.load(std::memory_order_acquire);
  if (api != nullptr && buffer != nullptr && valid > 0) {
    CUpti_Activity* rec = nullptr;
    while (api->cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      RawGpuActivity a;
      if (Convert(rec, &a)) {
        if (a.kind != 5 && a.kind != 4) DescribeDevice(a.device);
        RecordGpu(a);
      }
    }
  }
  if (api != nullptr) {
    size_t dropped = 0;
    if (api->cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS &&
        dropped > 0) {
      RecordGpuDropped(dropped);
    }
  }
  free(buffer);
  if (buffer != nullptr) g_outstanding.fetch_sub(size ? size : kBufferBytes);
}

uint64_t CUPTIAPI TraceClock() { return NowNs(); }

// --- periodic flush ---------------------------------------------------------------------------

// Held over every cuptiActivityFlushAll of this layer: the buffers a periodic flush has taken are
// handed over and recorded before another flush returns. CUPTI may deliver them on the periodic
// flush's thread after a forced flush elsewhere has returned; at exit their records then came
// after the footer and were lost, uncounted (a run's kernels and copies all gone beside two CPU
// hogs). A flush waits for it at most kFlushWaitMs, then goes on without it: the job wins (a
// polled try_lock: std::timed_mutex waits in pthread_mutex_clocklock, glibc 2.34, above the floor:
// docs/architecture.md, "The glibc floor").
// Never destroyed, like the flush thread's own state below.
std::mutex& g_flush_all_mu = *new std::mutex;
constexpr uint64_t kFlushWaitMs = 2000;

bool LockFlushAll() {
  const uint64_t deadline = NowNs() + kFlushWaitMs * 1'000'000;
  while (!g_flush_all_mu.try_lock()) {
    if (NowNs() >= deadline) return false;
    timespec pause{0, 1'000'000};  // the system call: libc's nanosleep is our hook (hooks/wait.cc)
    syscall(SYS_nanosleep, &pause, nullptr);
  }
  return true;
}

// Never destroyed: the flush thread runs until the process exits (it is joined only when the
// program's last thread ends first) and may be inside a timed wait then, and glibc's
// pthread_cond_destroy (run by a static destructor) blocks until every waiter has left the
// condition variable, which delayed every traced process's exit by up to IDLESCOPE_CUPTI_FLUSH_MS
// (seen as a "tail" in jobs whose launcher waits for its ranks).
std::mutex& g_flush_mu = *new std::mutex;
std::condition_variable& g_flush_cv = *new std::condition_variable;
bool g_flush_stop = false;
// A forced flush asked of this thread by the recorder's writer (FlushOnFlushThread) and its
// completion; under g_flush_mu.
bool g_forced_requested = false;
bool g_forced_done = false;
// The process whose flush thread runs (0: none; a forked child has none).
std::atomic<pid_t> g_flush_thread_pid{0};
pthread_t g_flush_thread;

void* FlushLoop(void*) {
  const uint64_t interval_ms = EnvU64(StartVar::kCuptiFlushMs, 500);
  for (;;) {
    bool forced;
    {
      std::unique_lock<std::mutex> lock(g_flush_mu);
      g_flush_cv.wait_for(lock, std::chrono::milliseconds(interval_ms),
                          [] { return g_flush_stop || g_forced_requested; });
      if (g_flush_stop) return nullptr;
      forced = g_forced_requested;
    }
    if (forced) {
      Flush();
      {
        std::lock_guard<std::mutex> lock(g_flush_mu);
        g_forced_requested = false;
        g_forced_done = true;
      }
      g_flush_cv.notify_all();
      continue;
    }
    // Not FORCED: only completed buffers, so an idle GPU costs nothing. No lock held here.
    const Api* api = g_loaded.load(std::memory_order_acquire);
    if (api != nullptr) {
      HookGuard guard(Family::kCupti);  // nothing CUPTI does on this thread is traced
      std::lock_guard<std::mutex> flushing(g_flush_all_mu);
      api->cuptiActivityFlushAll(0);
    }
  }
}

void StartFlushThread() {
  // A helper thread must not take the job's signals (docs/cuda-interposition.md, "Helper threads").
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Joinable, joined only when the program's last thread ends (StopFlushThread): glibc counts it
  // as a thread, and the process exits when the count reaches zero.
  if (pthread_create(&thread, &attr, FlushLoop, nullptr) == 0) {
    pthread_setname_np(thread, "idlescope-cupti");
    g_flush_thread = thread;
    g_flush_thread_pid.store(getpid(), std::memory_order_release);
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void FlushAtExit() { Flush(); }

// --- start --------------------------------------------------------------------------------------

bool LoadApi(void* lib, std::string* missing) {
#define IDLESCOPE_CUPTI_RESOLVE(name)                                     \
  g_api.name = reinterpret_cast<decltype(g_api.name)>(dlsym(lib, #name)); \
  if (g_api.name == nullptr) {                                            \
    *missing = #name;                                                     \
    return false;                                                         \
  }
  IDLESCOPE_CUPTI_FUNCTIONS(IDLESCOPE_CUPTI_RESOLVE)
#undef IDLESCOPE_CUPTI_RESOLVE
  return true;
}

void StartLocked() {
  std::string tried;
  void* lib = OpenCupti(&tried);
  if (lib == nullptr) {
    Unavailable("libcupti not found (tried " + tried + "; set IDLESCOPE_CUPTI_LIB)");
    return;
  }
  std::string missing;
  if (!LoadApi(lib, &missing)) {
    Unavailable("libcupti lacks " + missing);
    return;
  }
  uint32_t version = 0;
  if (g_api.cuptiGetVersion(&version) != CUPTI_SUCCESS || version < 18) {
    // 18 = CUDA 12.0's CUPTI: the record layouts we read (Kernel10's leading fields, Memcpy6,
    // Memset4, Synchronization2, Overhead3) only grew at their ends since then.
    Unavailable("CUPTI API version " + std::to_string(version) + " too old (need >= 18)");
    return;
  }
  g_loaded.store(&g_api, std::memory_order_release);
  CUptiResult r = g_api.cuptiActivityRegisterTimestampCallback(TraceClock);
  if (r != CUPTI_SUCCESS) {
    // Without it GPU times are on CUPTI's own clock, not the trace's: useless for gaps.
    g_loaded.store(nullptr);
    Unavailable(std::string("cuptiActivityRegisterTimestampCallback: ") + ResultText(r));
    return;
  }
  r = g_api.cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
  if (r != CUPTI_SUCCESS) {
    g_loaded.store(nullptr);
    Unavailable(std::string("cuptiActivityRegisterCallbacks: ") + ResultText(r));
    return;
  }
  struct Kind {
    CUpti_ActivityKind kind;
    const char* name;
    bool required;
  };
  const Kind kinds[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false},
      {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", false},
      {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
      {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
  };
  std::string partial;
  for (const Kind& k : kinds) {
    r = g_api.cuptiActivityEnable(k.kind);
    if (r == CUPTI_SUCCESS) continue;
    if (k.required) {
      // CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED / _UNKNOWN (no GPU) / ... land here.
      Unavailable(std::string("cuptiActivityEnable(") + k.name + "): " + ResultText(r));
      g_loaded.store(nullptr);
      return;
    }
    partial += std::string(partial.empty() ? "" : ", ") + k.name + ": " + ResultText(r);
  }
  if (!partial.empty()) {
    RecordNotice(NoticeSeverity::kInfo, "cupti_partial",
                 "CUPTI activity kinds not enabled: " + partial, false);
  }
  g_activity.store(true, std::memory_order_release);
  if (const char* why = StartCallbacks(g_api)) {
    RecordNotice(NoticeSeverity::kInfo, "cupti_callbacks_unavailable",
                 std::string("CUPTI callback API unavailable (") + why +
                     "): no correlation ids on host events, calls outside libcudart's exports "
                     "not seen",
                 false);
  }
  g_cap_bytes = EnvU64(StartVar::kCuptiBufferMb, 64) << 20;
  if (g_cap_bytes < kBufferBytes) g_cap_bytes = kBufferBytes;
  g_start_pid = getpid();
  StartFlushThread();
  atexit(FlushAtExit);
}

}  // namespace

const Api* Loaded() { return g_loaded.load(std::memory_order_acquire); }

const char* ResultText(CUptiResult r) {
  const char* s = nullptr;
  const Api* api = &g_api;
  if (api->cuptiGetResultString != nullptr && api->cuptiGetResultString(r, &s) == CUPTI_SUCCESS &&
      s != nullptr) {
    return s;
  }
  static thread_local char buf[32];
  snprintf(buf, sizeof(buf), "CUPTI error %d", static_cast<int>(r));
  return buf;
}

void Start() {
  if (!RecorderActive()) return;  // retried at the next hooked call
  std::lock_guard<std::mutex> lock(g_start_mu);
  if (g_cupti_start_attempted.load(std::memory_order_relaxed)) return;
  if (FamilyEnabled(Family::kCupti)) {
    HookGuard guard(Family::kCupti);  // CUPTI's own loading (dlopen, files) is not the job's
    StartLocked();
  }
  g_cupti_start_attempted.store(true, std::memory_order_release);
}

bool ActivityEnabled() { return g_activity.load(std::memory_order_acquire); }

void Flush() {
  const Api* api = g_loaded.load(std::memory_order_acquire);
  if (api == nullptr || !g_activity.load(std::memory_order_acquire)) return;
  if (getpid() != g_start_pid) return;  // a forked child: CUPTI's state is the parent's
  {
    HookGuard guard(Family::kCupti);
    const bool serialized = LockFlushAll();
    api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (serialized) g_flush_all_mu.unlock();
    if (!serialized) {
      RecordNotice(NoticeSeverity::kWarning, "cupti_flush_unfinished",
                   "a periodic CUPTI flush still ran after " + std::to_string(kFlushWaitMs) +
                       " ms: its GPU records may be missing",
                   false);
    }
  }
  uint64_t refused = g_refused.exchange(0);
  if (refused > 0) {
    RecordNotice(NoticeSeverity::kWarning, "cupti_buffers_full",
                 std::to_string(refused) +
                     " CUPTI buffer requests refused at the IDLESCOPE_CUPTI_BUFFER_MB cap",
                 false);
  }
}

}  // namespace idlescope::cupti

void idlescope::cuda::detail::StartCupti() { idlescope::cupti::Start(); }

namespace idlescope::cupti {
namespace {

// --- the recorder's flush participant (recorder.h) ------------------------------------------

// The recorder's writer, at a final flush on a signal: its descriptor table is its own, without
// the CUDA driver's descriptors, so CUPTI is flushed by the flush thread, which shares the
// program's. Bounded: the signal handler waits for the whole final flush for 3 s. Nothing when
// that thread does not run in this process.
void FlushOnFlushThread() {
  if (g_flush_thread_pid.load(std::memory_order_acquire) != getpid()) return;
  std::unique_lock<std::mutex> lock(g_flush_mu);
  g_forced_done = false;
  g_forced_requested = true;
  g_flush_cv.notify_all();
  g_flush_cv.wait_for(lock, std::chrono::seconds(2), [] { return g_forced_done; });
}

// The program's last thread is ending (recorder.cc, "Program threads"): the flush thread stops for
// good; the last buffers were delivered by the exit's Flush.
void StopFlushThread() {
  if (g_flush_thread_pid.load(std::memory_order_acquire) != getpid()) return;
  {
    std::lock_guard<std::mutex> lock(g_flush_mu);
    g_flush_stop = true;
  }
  g_flush_cv.notify_all();
  pthread_join(g_flush_thread, nullptr);
  g_flush_thread_pid.store(0, std::memory_order_release);
}

// fork (run by the recorder's fork handlers, before it takes its own locks: code here interns
// names under g_names_mu, so these are taken first). A child must find none of them held by a
// thread that does not exist there. A CUPTI start under way on another thread (libcupti loading:
// hundreds of ms) is waited for, at most 2 s; if it is still under way the child gets a fresh
// mutex and never starts CUPTI (the copied half-done state is not its to finish; CUDA does not
// survive fork anyway).
bool g_start_locked_for_fork = false;

void ForkPrepare() {
  uint64_t deadline = NowNs() + 2'000'000'000ull;
  g_start_locked_for_fork = false;
  while (!(g_start_locked_for_fork = g_start_mu.try_lock()) && NowNs() < deadline) {
    sched_yield();
  }
  g_names_mu.lock();
  g_devices_mu.lock();
}

void ForkParent() {
  g_devices_mu.unlock();
  g_names_mu.unlock();
  if (g_start_locked_for_fork) g_start_mu.unlock();
}

void ForkChild() {
  g_devices_mu.unlock();
  g_names_mu.unlock();
  if (g_start_locked_for_fork) {
    g_start_mu.unlock();
  } else {
    new (&g_start_mu) std::mutex();
    g_cupti_start_attempted.store(true, std::memory_order_release);
  }
}

constexpr FlushParticipant kParticipant = {
    .flush = Flush,
    .flush_on_own_thread = FlushOnFlushThread,
    .stop = StopFlushThread,
    .fork_prepare = ForkPrepare,
    .fork_parent = ForkParent,
    .fork_child = ForkChild,
};

// At load, not at the first CUDA call (Start): the fork handlers must take g_start_mu whenever a
// start may be under way, and a fork whose prepare handler ran before a registration made by
// Start would leave that start's mutex taken in the child, whose first CUDA call would then wait
// for it forever. Before any thread of the program can call us: the preload's constructors run
// before main, and in injection mode libcuda calls InitializeInjection after dlopen ran them.
__attribute__((constructor)) void RegisterWithTheRecorder() {
  RegisterFlushParticipant(&kParticipant);
}

}  // namespace
}  // namespace idlescope::cupti

IDLESCOPE_EXPORT int InitializeInjection(void) {
  // libcuda calls this at cuInit when CUDA_INJECTION64_PATH names us. Our library constructor has
  // already started the recorder (Origin INJECTION: LD_PRELOAD does not name us). No hook sees the
  // runtime's exports in this mode: the CUPTI callbacks record the host side.
  idlescope::cuda::EnsureCuptiStarted();
  return 1;
}
