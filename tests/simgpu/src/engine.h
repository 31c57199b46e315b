// simgpu's device model, shared by the four fake libraries.
//
// The model lives in the fake libcuda.so.1. Like the real stack, the other fakes never import a
// cu* symbol: libcudart, libcupti and libnccl dlopen("libcuda.so.1") and fetch this interface
// with cuGetExportTable(kEngineTableId) -- the same private-export-table mechanism the real
// libcudart and libcupti use. All of them are built from this header by the same compiler, so an
// abstract class is a stable enough ABI for a test double. No method throws.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace simgpu {

// cuGetExportTable id of the engine table: "simgpu-engine-v1".
inline constexpr CUuuid kEngineTableId = {
    {'s', 'i', 'm', 'g', 'p', 'u', '-', 'e', 'n', 'g', 'i', 'n', 'e', '-', 'v', '1'}};

// Where a byte lives; values match CUpti_ActivityMemoryKind (PAGEABLE 1, PINNED 2, DEVICE 3,
// MANAGED 5) so the CUPTI fake copies them straight into records.
enum class MemKind : uint8_t {
  kUnknown = 0,
  kPageable = 1,
  kPinned = 2,
  kDevice = 3,
  kManaged = 5
};

// A strided 3-D byte region (covers 1-D, 2-D, 3-D copies and memsets): `height * depth` rows of
// `width` bytes, row y of slice z at base + z * pitch * slice_rows + y * pitch.
struct Region {
  void* base = nullptr;
  size_t pitch = 0;
  size_t slice_rows = 0;
};

struct Extent {
  size_t width = 0, height = 1, depth = 1;
  size_t bytes() const { return width * height * depth; }
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct DeviceInfo {
  char name[64];
  int sm_count;
  uint64_t mem_bytes;
  int cc_major, cc_minor;
  int max_threads_per_block, max_threads_per_sm, warp_size;
  int pci_bus_id;
};

// One finished piece of device work or host API call, in CLOCK_MONOTONIC ns. The CUPTI fake
// converts it to the CUpti_Activity* record of the enabled kind.
struct Record {
  enum class Kind : uint8_t { kKernel, kMemcpy, kMemset, kSync, kApi } kind;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  // kKernel
  const char* name = nullptr;  // interned: valid for the life of the process
  Dim3 grid, block;
  uint32_t shared_mem = 0;
  // kMemcpy / kMemset
  uint64_t bytes = 0;
  uint8_t copy_kind = 0;  // CUpti_ActivityMemcpyKind
  MemKind src_kind = MemKind::kUnknown, dst_kind = MemKind::kUnknown;
  bool async = false;
  uint32_t value = 0;
  // kSync: CUpti_ActivitySynchronizationType; event id for event syncs
  uint32_t sync_type = 0, event_id = 0;
  // kApi: CUpti_CallbackDomain (DRIVER 1, RUNTIME 2) and id
  uint32_t domain = 0, cbid = 0, pid = 0, tid = 0;
  int32_t ret = 0;
  uint32_t graph_id = 0;
};

// A host API call crossing its enter or exit site (for CUPTI's callback API).
struct ApiCall {
  uint32_t domain = 0, cbid = 0;
  int site = 0;  // CUPTI_API_ENTER 0, CUPTI_API_EXIT 1
  const char* name = nullptr;
  const char* symbol = nullptr;
  const void* params = nullptr;
  void* ret_value = nullptr;
  uint32_t correlation = 0;
  uint32_t context = 0;
  uint64_t* correlation_data = nullptr;
  uint64_t start_ns = 0;  // set on exit too
  int32_t ret = 0;        // valid on exit
};

// Installed by the CUPTI fake. Called outside every engine lock, from any thread.
struct CuptiHooks {
  void (*on_record)(const Record& rec);
  void (*on_api)(const ApiCall& call);
};

struct Stream;  // opaque to clients: cudaStream_t / CUstream are Stream*
struct Event;   // cudaEvent_t / CUevent
struct Graph;   // cudaGraph_t and cudaGraphExec_t

// Special stream handles, as in driver_types.h.
inline Stream* const kLegacyStream = reinterpret_cast<Stream*>(0x1);
inline Stream* const kPerThreadStream = reinterpret_cast<Stream*>(0x2);

// Stays open across one API call: assigns the correlation id and fires the enter/exit
// callbacks. Nested calls (a runtime call's driver work) share the outer call's id.
struct ApiFrame {
  uint32_t correlation = 0;
  bool top = false;
  uint64_t start_ns = 0;
  uint64_t correlation_data = 0;
  uint32_t domain = 0, cbid = 0;
  const char* name = nullptr;
  const void* params = nullptr;
};

class Engine {
 public:
  // --- devices ---
  virtual int DeviceCount() = 0;
  virtual const DeviceInfo* Device(int dev) = 0;  // nullptr if out of range
  virtual int CurrentDevice() = 0;                // of the calling thread
  virtual CUresult SetCurrentDevice(int dev) = 0;
  virtual CUresult MemInfo(int dev, size_t* free_bytes, size_t* total) = 0;

  // --- memory ---
  virtual CUresult MemAlloc(int dev, size_t bytes, MemKind kind, void** out) = 0;
  virtual CUresult MemFree(void* ptr) = 0;  // device, managed or simgpu-allocated pinned memory
  virtual CUresult HostRegister(void* ptr, size_t bytes) = 0;
  virtual CUresult HostUnregister(void* ptr) = 0;
  // Classifies any address; dev/base/size may be null.
  virtual MemKind PointerKind(const void* ptr, int* dev, void** base, size_t* size) = 0;

  // --- streams and events ---
  // Resolves 0 / kLegacyStream / kPerThreadStream / a created stream for the calling thread.
  // `per_thread` is true for the _ptds/_ptsz entry points (0 means the per-thread stream).
  virtual Stream* Resolve(Stream* handle, bool per_thread) = 0;
  virtual CUresult StreamCreate(int dev, unsigned flags, int priority, Stream** out) = 0;
  virtual CUresult StreamDestroy(Stream* s) = 0;
  virtual CUresult StreamSynchronize(Stream* s) = 0;  // blocks; emits a sync record
  virtual CUresult StreamQuery(Stream* s) = 0;
  virtual CUresult StreamInfo(Stream* s, int* dev, unsigned* flags, int* priority,
                              uint64_t* id) = 0;
  virtual CUresult StreamWaitEvent(Stream* s, Event* e) = 0;
  virtual CUresult DeviceSynchronize(int dev) = 0;  // blocks; emits a sync record
  virtual CUresult EventCreate(unsigned flags, Event** out) = 0;
  virtual CUresult EventDestroy(Event* e) = 0;
  virtual CUresult EventRecord(Event* e, Stream* s) = 0;
  virtual CUresult EventSynchronize(Event* e) = 0;
  virtual CUresult EventQuery(Event* e) = 0;
  virtual CUresult EventElapsed(float* ms, Event* start, Event* end) = 0;

  // --- work ---
  // A copy between any two regions. `sync_call` is true for the synchronous API forms
  // (cudaMemcpy, cuMemcpyHtoD): they return once the copy completed, except device-to-device.
  // Async forms block the host when a side is pageable, as real CUDA does.
  virtual CUresult Copy(Region dst, Region src, Extent ext, Stream* s, bool sync_call,
                        bool peer) = 0;
  virtual CUresult Memset(Region dst, Extent ext, uint32_t value, int elem_size, Stream* s,
                          bool sync_call) = 0;
  // A kernel by its (mangled) device name; duration from the kernel model.
  virtual CUresult LaunchKernel(Stream* s, const char* name, Dim3 grid, Dim3 block,
                                uint32_t shared_mem, void** args) = 0;
  // A kernel whose body runs on the device worker thread (NCCL). `body` gets the kernel's start
  // on the device's timeline (CLOCK_MONOTONIC ns; in the past when the host woke the worker
  // late) and returns its end on that timeline; the worker sleeps until then.
  virtual CUresult LaunchCustomKernel(Stream* s, const char* name, Dim3 grid, Dim3 block,
                                      uint64_t (*body)(void*, uint64_t start_ns), void* arg) = 0;
  virtual CUresult LaunchHostFunc(Stream* s, void (*fn)(void*), void* arg) = 0;

  // --- stream capture and graphs ---
  virtual CUresult BeginCapture(Stream* s) = 0;
  virtual CUresult EndCapture(Stream* s, Graph** out) = 0;
  virtual bool IsCapturing(Stream* s) = 0;
  virtual CUresult GraphLaunch(Graph* g, Stream* s) = 0;
  virtual CUresult GraphDestroy(Graph* g) = 0;

  // --- API frames, correlation, CUPTI ---
  virtual void ApiEnter(ApiFrame* f, uint32_t domain, uint32_t cbid, const char* name,
                        const void* params) = 0;
  virtual void ApiExit(ApiFrame* f, int32_t ret) = 0;
  virtual void SetCuptiHooks(const CuptiHooks* hooks) = 0;
  virtual uint64_t NowNs() = 0;  // CLOCK_MONOTONIC

  // Runs CUDA_INJECTION64_PATH's InitializeInjection once (the driver's cuInit does this).
  virtual CUresult Init() = 0;

 protected:
  ~Engine() = default;
};

// Layout of the export table returned by cuGetExportTable(kEngineTableId).
struct EngineTable {
  size_t size;
  Engine* engine;
};

// Fetches the engine from libcuda.so.1 (dlopen + cuGetExportTable), once; nullptr when the
// driver cannot be loaded. Implemented in engine_client.cc, linked into each client library.
Engine* GetEngine();

}  // namespace simgpu
