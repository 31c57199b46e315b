// The engine's state; see engine.h for the interface and engine.cc for the rules.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine.h"

namespace simgpu {

struct Done {
  bool complete = false;
  uint64_t end_ns = 0;
};
using DoneRef = std::shared_ptr<Done>;

struct Op {
  enum class Type { kKernel, kCustom, kCopy, kMemset, kHostFn, kEventRecord, kWait } type;
  // kernels
  const char* name = nullptr;
  Dim3 grid, block;
  uint32_t shared_mem = 0;
  uint64_t duration_ns = 0;
  uint64_t (*body)(void*, uint64_t) = nullptr;
  void* arg = nullptr;
  void (*fn)(void*) = nullptr;
  // copies and memsets
  Region dst, src;
  Extent ext;
  uint8_t copy_kind = 0;
  MemKind src_kind = MemKind::kUnknown, dst_kind = MemKind::kUnknown;
  bool async = false;
  double gbps = 1;
  int engine = 0;  // 0 HtoD, 1 DtoH, 2 on-device, 3 host
  uint32_t value = 0;
  int elem_size = 1;
  // events
  Event* event = nullptr;
  std::vector<DoneRef> deps;
  DoneRef done;
  uint32_t correlation = 0, graph_id = 0;
  uint64_t submit_ns = 0;  // when the host enqueued it: the earliest it can start
};

struct Stream {
  int dev = 0;
  unsigned flags = 0;
  int priority = 0;
  uint64_t id = 0;
  bool legacy = false, per_thread = false, destroyed = false, worker_started = false;
  std::deque<Op> queue;
  DoneRef tail;
  uint64_t model_end_ns = 0;  // when the stream's last op ended on the device's timeline
  std::condition_variable cv;
  Graph* capture = nullptr;
};

struct Event {
  unsigned flags = 0;
  uint32_t id = 0;
  int dev = 0;
  bool destroyed = false;
  DoneRef done;
};

struct Graph {
  uint32_t id = 0;
  std::vector<Op> ops;
};

class EngineImpl final : public Engine {
 public:
  static EngineImpl& Get();

  int DeviceCount() override;
  const DeviceInfo* Device(int dev) override;
  int CurrentDevice() override;
  CUresult SetCurrentDevice(int dev) override;
  CUresult MemInfo(int dev, size_t* free_bytes, size_t* total) override;
  CUresult MemAlloc(int dev, size_t bytes, MemKind kind, void** out) override;
  CUresult MemFree(void* ptr) override;
  CUresult HostRegister(void* ptr, size_t bytes) override;
  CUresult HostUnregister(void* ptr) override;
  MemKind PointerKind(const void* ptr, int* dev, void** base, size_t* size) override;
  Stream* Resolve(Stream* handle, bool per_thread) override;
  CUresult StreamCreate(int dev, unsigned flags, int priority, Stream** out) override;
  CUresult StreamDestroy(Stream* s) override;
  CUresult StreamSynchronize(Stream* s) override;
  CUresult StreamQuery(Stream* s) override;
  CUresult StreamInfo(Stream* s, int* dev, unsigned* flags, int* priority, uint64_t* id) override;
  CUresult StreamWaitEvent(Stream* s, Event* e) override;
  CUresult DeviceSynchronize(int dev) override;
  CUresult EventCreate(unsigned flags, Event** out) override;
  CUresult EventDestroy(Event* e) override;
  CUresult EventRecord(Event* e, Stream* s) override;
  CUresult EventSynchronize(Event* e) override;
  CUresult EventQuery(Event* e) override;
  CUresult EventElapsed(float* ms, Event* start, Event* end) override;
  CUresult Copy(Region dst, Region src, Extent ext, Stream* s, bool sync_call, bool peer) override;
  CUresult Memset(Region dst, Extent ext, uint32_t value, int elem_size, Stream* s,
                  bool sync_call) override;
  CUresult LaunchKernel(Stream* s, const char* name, Dim3 grid, Dim3 block, uint32_t shared_mem,
                        void** args) override;
  CUresult LaunchCustomKernel(Stream* s, const char* name, Dim3 grid, Dim3 block,
                              uint64_t (*body)(void*, uint64_t), void* arg) override;
  CUresult LaunchHostFunc(Stream* s, void (*fn)(void*), void* arg) override;
  CUresult BeginCapture(Stream* s) override;
  CUresult EndCapture(Stream* s, Graph** out) override;
  bool IsCapturing(Stream* s) override;
  CUresult GraphLaunch(Graph* g, Stream* s) override;
  CUresult GraphDestroy(Graph* g) override;
  void ApiEnter(ApiFrame* f, uint32_t domain, uint32_t cbid, const char* name,
                const void* params) override;
  void ApiExit(ApiFrame* f, int32_t ret) override;
  void SetCuptiHooks(const CuptiHooks* hooks) override;
  uint64_t NowNs() override;
  CUresult Init() override;

 private:
  struct Range {
    size_t size = 0;
    MemKind kind = MemKind::kUnknown;
    int dev = -1;
    bool owned = false;  // allocated by simgpu (vs. cudaHostRegister'ed)
  };
  struct DeviceState {
    DeviceInfo info;
    uint64_t used = 0;
    Stream* legacy = nullptr;
    std::vector<Stream*> streams;  // live streams, legacy first
    uint64_t engine_free_at[4] = {};
  };

  EngineImpl();
  CUresult Submit(Stream* s, Op op, bool wait = false);
  void Worker(Stream* s);
  // Runs `op`, which the device could start at `ready`; returns its end on the device's timeline.
  uint64_t Execute(Stream& s, Op& op, uint64_t ready);
  void WaitDone(std::unique_lock<std::mutex>& lk, const DoneRef& d);
  static void DoCopy(Region dst, Region src, Extent ext);
  static void DoMemset(Region dst, Extent ext, uint32_t value, int elem);
  uint64_t KernelNs(const char* name, Dim3 grid, Dim3 block, void** args);
  const char* Intern(const char* s);
  std::map<uintptr_t, Range>::iterator FindLocked(uintptr_t a);
  void Emit(const Record& rec);
  void EmitSync(uint32_t type, int dev, uint64_t stream, uint32_t event, uint64_t t0, uint64_t t1);

  std::mutex mu_;
  std::condition_variable cv_;  // notified on every completion
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::map<uintptr_t, Range> ranges_;
  std::set<std::string> names_;
  // Streams, events and graphs are never freed (late waiters, replays); kept reachable here.
  std::vector<Stream*> all_streams_;
  std::vector<Event*> all_events_;
  std::vector<Graph*> all_graphs_;
  uint64_t next_stream_id_ = 13;
  uint32_t next_event_id_ = 1, next_graph_id_ = 1;
  std::atomic<uint32_t> next_correlation_{1};
  std::atomic<const CuptiHooks*> hooks_{nullptr};
  std::atomic<int> injection_state_{0};
};

}  // namespace simgpu
