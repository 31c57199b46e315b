// The device model: streams as FIFO queues, one worker thread per stream, in real time.
//
// One engine-wide mutex guards all queues and state; one condition variable is notified on
// every completion. Worker threads sleep (never spin) for the modelled duration with no lock
// held, and every client callback (CUPTI hooks) runs with no lock held.
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "config.h"
#include "engine_impl.h"

namespace simgpu {
namespace {

uint64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void SleepUntil(uint64_t t_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(t_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(t_ns % 1000000000ull);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

void SpinFor(uint64_t ns) {
  uint64_t end = MonoNs() + ns;
  while (MonoNs() < end) {
  }
}

uint64_t TransferNs(uint64_t bytes, double gbps, double latency_us) {
  return static_cast<uint64_t>(latency_us * 1e3 + static_cast<double>(bytes) / gbps);
}

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// CUpti_ActivityMemcpyKind
constexpr uint8_t kCopyHtoD = 1, kCopyDtoH = 2, kCopyDtoD = 8, kCopyHtoH = 9, kCopyPtoP = 10;
// CUpti_ActivitySynchronizationType
constexpr uint32_t kSyncEvent = 1, kSyncStreamWait = 2, kSyncStream = 3, kSyncContext = 4;

bool IsHost(MemKind k) { return k == MemKind::kPageable || k == MemKind::kPinned; }

// A device thread (a stream's worker) gets a CPU before the host's threads and whatever else the
// machine runs, as far as the process may: a GPU does not wait for a host CPU. Its records are on
// the model's clock (start = enqueued, stream free, dependencies done; end = start + duration),
// but the host sees an op complete, and enqueues what follows a synchronization, only once the
// thread has had a CPU to run it. Beside two CPU hogs on two cores, workers at the hogs' priority
// fell 60-270 ms behind the model between the allreduce example's read-backs (its bucketed twin
// passes each step between its streams and ranks 16 times), and the host, waiting that long in
// cudaStreamSynchronize, turned the lag into idle device time: the fix saved 0.23-0.26 s of a
// predicted 0.41 s (e2e_loaded_predictions_all). So: SCHED_FIFO at the lowest real-time priority
// (a worker sleeps, never spins; SCHED_RESET_ON_FORK: what a client callback starts runs as
// usual), else nice -20, else the process's own priority (no privilege: see ../README.md).
void RunAsDeviceThread() {
  if (GetConfig().device_rt == 0) return;
  sched_param sp{};
  sp.sched_priority = sched_get_priority_min(SCHED_FIFO);
  if (pthread_setschedparam(pthread_self(), SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0) return;
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), -20);
}

// A host function (cudaLaunchHostFunc) is the application's code: it runs at the priority of the
// process's threads (the real runtime calls it from a thread of its own, not the GPU's).
class AsHostThread {
 public:
  AsHostThread() : nice_(getpriority(PRIO_PROCESS, static_cast<id_t>(Tid()))) {
    pthread_getschedparam(pthread_self(), &policy_, &param_);
    sched_param normal{};
    if (policy_ != SCHED_OTHER) pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
    setpriority(PRIO_PROCESS, static_cast<id_t>(Tid()), getpriority(PRIO_PROCESS, getpid()));
  }
  ~AsHostThread() {
    if (policy_ != SCHED_OTHER) pthread_setschedparam(pthread_self(), policy_, &param_);
    setpriority(PRIO_PROCESS, static_cast<id_t>(Tid()), nice_);
  }
  AsHostThread(const AsHostThread&) = delete;
  AsHostThread& operator=(const AsHostThread&) = delete;

 private:
  int nice_ = 0, policy_ = SCHED_OTHER;
  sched_param param_{};
};

thread_local int tls_device = 0;
thread_local int tls_depth = 0;
thread_local uint32_t tls_correlation = 0;
thread_local Stream* tls_ptds[64] = {};

}  // namespace

EngineImpl& EngineImpl::Get() {
  static EngineImpl* engine = new EngineImpl();  // leaked on purpose: workers outlive exit
  return *engine;
}

EngineImpl::EngineImpl() {
  const Config& c = GetConfig();
  for (size_t i = 0; i < c.visible.size(); ++i) {
    auto d = std::make_unique<DeviceState>();
    DeviceInfo& info = d->info;
    memset(&info, 0, sizeof info);
    snprintf(info.name, sizeof info.name, "simgpu H200 (sim %d)", c.visible[i]);
    info.sm_count = c.sms;
    info.mem_bytes = c.mem_bytes;
    info.cc_major = 9;
    info.cc_minor = 0;
    info.max_threads_per_block = 1024;
    info.max_threads_per_sm = 2048;
    info.warp_size = 32;
    info.pci_bus_id = 0x10 + c.visible[i];
    d->legacy = new Stream();
    d->legacy->dev = static_cast<int>(i);
    d->legacy->legacy = true;
    d->legacy->id = 7;  // real CUPTI reports the legacy default stream as 7
    d->streams.push_back(d->legacy);
    devices_.push_back(std::move(d));
  }
}

int EngineImpl::DeviceCount() { return static_cast<int>(devices_.size()); }

const DeviceInfo* EngineImpl::Device(int dev) {
  if (dev < 0 || dev >= DeviceCount()) return nullptr;
  return &devices_[dev]->info;
}

int EngineImpl::CurrentDevice() { return tls_device; }

CUresult EngineImpl::SetCurrentDevice(int dev) {
  if (dev < 0 || dev >= DeviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  tls_device = dev;
  return CUDA_SUCCESS;
}

CUresult EngineImpl::MemInfo(int dev, size_t* free_bytes, size_t* total) {
  if (Device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lk(mu_);
  uint64_t cap = devices_[dev]->info.mem_bytes;
  if (free_bytes) *free_bytes = cap - std::min(cap, devices_[dev]->used);
  if (total) *total = cap;
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- memory

CUresult EngineImpl::MemAlloc(int dev, size_t bytes, MemKind kind, void** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = nullptr;
  bool on_device = kind == MemKind::kDevice || kind == MemKind::kManaged;
  if (on_device && Device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == 0) return on_device ? CUDA_SUCCESS : CUDA_SUCCESS;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (on_device) {
      DeviceState& d = *devices_[dev];
      if (bytes > d.info.mem_bytes || d.used > d.info.mem_bytes - bytes) {
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      d.used += bytes;
    }
  }
  // Device memory is ordinary host memory here, reserved lazily, so data round-trips exactly.
  // Pinned host memory is resident from the start, as page-locked memory is (a first copy into
  // it would otherwise pay the page faults: 50 ms for 64 MiB on a small VM).
  const int populate = kind == MemKind::kPinned ? MAP_POPULATE : 0;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | populate, -1, 0);
  std::lock_guard<std::mutex> lk(mu_);
  if (p == MAP_FAILED) {
    if (on_device) devices_[dev]->used -= bytes;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ranges_[reinterpret_cast<uintptr_t>(p)] = Range{bytes, kind, on_device ? dev : -1, true};
  *out = p;
  return CUDA_SUCCESS;
}

CUresult EngineImpl::MemFree(void* ptr) {
  if (ptr == nullptr) return CUDA_SUCCESS;
  Range r;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = ranges_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == ranges_.end() || !it->second.owned) return CUDA_ERROR_INVALID_VALUE;
    r = it->second;
    ranges_.erase(it);
    if (r.dev >= 0) devices_[r.dev]->used -= r.size;
  }
  munmap(ptr, r.size);
  return CUDA_SUCCESS;
}

CUresult EngineImpl::HostRegister(void* ptr, size_t bytes) {
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(mu_);
  uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
  if (FindLocked(a) != ranges_.end() || FindLocked(a + bytes - 1) != ranges_.end()) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  ranges_[a] = Range{bytes, MemKind::kPinned, -1, false};
  return CUDA_SUCCESS;
}

CUresult EngineImpl::HostUnregister(void* ptr) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = ranges_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == ranges_.end() || it->second.owned) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  ranges_.erase(it);
  return CUDA_SUCCESS;
}

std::map<uintptr_t, EngineImpl::Range>::iterator EngineImpl::FindLocked(uintptr_t a) {
  auto it = ranges_.upper_bound(a);
  if (it == ranges_.begin()) return ranges_.end();
  --it;
  if (a - it->first < it->second.size) return it;
  return ranges_.end();
}

MemKind EngineImpl::PointerKind(const void* ptr, int* dev, void** base, size_t* size) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = FindLocked(reinterpret_cast<uintptr_t>(ptr));
  if (it == ranges_.end()) {
    if (dev) *dev = -1;
    if (base) *base = nullptr;
    if (size) *size = 0;
    return MemKind::kPageable;
  }
  if (dev) *dev = it->second.dev;
  if (base) *base = reinterpret_cast<void*>(it->first);
  if (size) *size = it->second.size;
  return it->second.kind;
}

// ---------------------------------------------------------------- streams

Stream* EngineImpl::Resolve(Stream* handle, bool per_thread) {
  if (handle == kPerThreadStream || (handle == nullptr && per_thread)) {
    int dev = tls_device;
    if (dev < 0 || dev >= 64 || dev >= DeviceCount()) return nullptr;
    if (tls_ptds[dev] == nullptr) {
      Stream* s = nullptr;
      if (StreamCreate(dev, 0, 0, &s) != CUDA_SUCCESS) return nullptr;
      s->per_thread = true;
      tls_ptds[dev] = s;  // leaked when the thread exits, like the real per-thread stream
    }
    return tls_ptds[dev];
  }
  if (handle == nullptr || handle == kLegacyStream) {
    if (tls_device >= DeviceCount()) return nullptr;
    return devices_[tls_device]->legacy;
  }
  return handle;
}

CUresult EngineImpl::StreamCreate(int dev, unsigned flags, int priority, Stream** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (Device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  auto* s = new Stream();
  s->dev = dev;
  s->flags = flags;
  s->priority = priority;
  std::lock_guard<std::mutex> lk(mu_);
  s->id = next_stream_id_++;
  devices_[dev]->streams.push_back(s);
  all_streams_.push_back(s);
  *out = s;
  return CUDA_SUCCESS;
}

CUresult EngineImpl::StreamDestroy(Stream* s) {
  if (s == nullptr || s == kLegacyStream || s == kPerThreadStream || s->legacy) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  std::lock_guard<std::mutex> lk(mu_);
  // Pending work still completes (real semantics); the Stream object is kept for late waiters.
  s->destroyed = true;
  auto& v = devices_[s->dev]->streams;
  v.erase(std::remove(v.begin(), v.end(), s), v.end());
  s->cv.notify_all();
  return CUDA_SUCCESS;
}

void EngineImpl::WaitDone(std::unique_lock<std::mutex>& lk, const DoneRef& d) {
  if (d) cv_.wait(lk, [&] { return d->complete; });
}

CUresult EngineImpl::StreamSynchronize(Stream* s) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t t0 = MonoNs();
  {
    std::unique_lock<std::mutex> lk(mu_);
    DoneRef tail = s->tail;
    WaitDone(lk, tail);
  }
  EmitSync(kSyncStream, s->dev, s->id, 0, t0, MonoNs());
  return CUDA_SUCCESS;
}

CUresult EngineImpl::StreamQuery(Stream* s) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lk(mu_);
  return (!s->tail || s->tail->complete) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult EngineImpl::StreamInfo(Stream* s, int* dev, unsigned* flags, int* priority, uint64_t* id) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (dev) *dev = s->dev;
  if (flags) *flags = s->flags;
  if (priority) *priority = s->priority;
  if (id) *id = s->id;
  return CUDA_SUCCESS;
}

CUresult EngineImpl::StreamWaitEvent(Stream* s, Event* e) {
  s = Resolve(s, false);
  if (s == nullptr || e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Op op;
  op.type = Op::Type::kWait;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (e->done) op.deps.push_back(e->done);
  }
  uint64_t t = MonoNs();
  CUresult r = Submit(s, std::move(op));
  EmitSync(kSyncStreamWait, s->dev, s->id, e->id, t, t);
  return r;
}

CUresult EngineImpl::DeviceSynchronize(int dev) {
  if (Device(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  uint64_t t0 = MonoNs();
  {
    std::unique_lock<std::mutex> lk(mu_);
    std::vector<DoneRef> tails;
    for (Stream* s : devices_[dev]->streams) {
      if (s->tail) tails.push_back(s->tail);
    }
    for (auto& t : tails) WaitDone(lk, t);
  }
  EmitSync(kSyncContext, dev, 0, 0, t0, MonoNs());
  return CUDA_SUCCESS;
}

CUresult EngineImpl::EventCreate(unsigned flags, Event** out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new Event();
  e->flags = flags;
  std::lock_guard<std::mutex> lk(mu_);
  e->id = next_event_id_++;
  all_events_.push_back(e);
  *out = e;
  return CUDA_SUCCESS;
}

CUresult EngineImpl::EventDestroy(Event* e) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // Kept alive: a queued record or wait may still refer to it (real destroy is deferred too).
  std::lock_guard<std::mutex> lk(mu_);
  e->destroyed = true;
  return CUDA_SUCCESS;
}

CUresult EngineImpl::EventRecord(Event* e, Stream* s) {
  s = Resolve(s, false);
  if (s == nullptr || e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Op op;
  op.type = Op::Type::kEventRecord;
  op.event = e;
  return Submit(s, std::move(op));
}

CUresult EngineImpl::EventSynchronize(Event* e) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t t0 = MonoNs();
  int dev = 0;
  {
    std::unique_lock<std::mutex> lk(mu_);
    DoneRef d = e->done;
    dev = e->dev;
    WaitDone(lk, d);
  }
  EmitSync(kSyncEvent, dev, 0, e->id, t0, MonoNs());
  return CUDA_SUCCESS;
}

CUresult EngineImpl::EventQuery(Event* e) {
  if (e == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard<std::mutex> lk(mu_);
  return (!e->done || e->done->complete) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult EngineImpl::EventElapsed(float* ms, Event* start, Event* end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(mu_);
  if (!start->done || !end->done) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->done->complete || !end->done->complete) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(
      (static_cast<double>(end->done->end_ns) - static_cast<double>(start->done->end_ns)) / 1e6);
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------- work submission

CUresult EngineImpl::Submit(Stream* s, Op op, bool wait) {
  DoneRef done;
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (s->destroyed) return CUDA_ERROR_INVALID_HANDLE;
    op.correlation = op.correlation ? op.correlation : tls_correlation;
    if (s->capture != nullptr) {
      // Stream capture: record instead of running (the graph replays it at cudaGraphLaunch).
      s->capture->ops.push_back(op);
      return CUDA_SUCCESS;
    }
    op.submit_ns = MonoNs();
    DeviceState& d = *devices_[s->dev];
    // The legacy default stream waits for all blocking streams and they wait for it
    // (CUDA Programming Guide, "Default Stream"); cudaStreamNonBlocking opts out.
    if (s->legacy) {
      for (Stream* o : d.streams) {
        if (o != s && !(o->flags & CU_STREAM_NON_BLOCKING) && o->tail && !o->tail->complete) {
          op.deps.push_back(o->tail);
        }
      }
    } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && d.legacy->tail &&
               !d.legacy->tail->complete) {
      op.deps.push_back(d.legacy->tail);
    }
    op.done = std::make_shared<Done>();
    if (op.type == Op::Type::kEventRecord) {
      op.event->done = op.done;
      op.event->dev = s->dev;
    }
    s->tail = op.done;
    done = op.done;
    s->queue.push_back(std::move(op));
    if (!s->worker_started) {
      s->worker_started = true;
      std::thread([this, s] { Worker(s); }).detach();
    }
    s->cv.notify_one();
    if (wait) WaitDone(lk, done);
  }
  return CUDA_SUCCESS;
}

void EngineImpl::Worker(Stream* s) {
  // Device threads take no signals: a traced app's handlers must run on its own threads.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  char name[16];
  snprintf(name, sizeof name, "simgpu-d%d-s%u", s->dev, static_cast<unsigned>(s->id % 1000));
  pthread_setname_np(pthread_self(), name);
  RunAsDeviceThread();
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    s->cv.wait(lk, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) return;
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    cv_.wait(lk, [&] {
      for (auto& d : op.deps) {
        if (!d->complete) return false;
      }
      return true;
    });
    // The device's timeline: an op starts when it was enqueued, the stream's previous op ended
    // and what it waits for ended, whenever this thread gets the CPU (a loaded host wakes it
    // late: that is host time, not GPU time, and must neither stretch a kernel nor open a gap).
    // A device starts work a few microseconds after it was enqueued (never before the host call
    // that enqueued it, whose time the tracer reads from another clock source).
    uint64_t ready = std::max(
        op.submit_ns + static_cast<uint64_t>(GetConfig().start_latency_us * 1000), s->model_end_ns);
    for (auto& d : op.deps) ready = std::max(ready, d->end_ns);
    lk.unlock();
    uint64_t end = Execute(*s, op, ready);
    lk.lock();
    s->model_end_ns = end;
    op.done->end_ns = end;
    op.done->complete = true;
    cv_.notify_all();
  }
}

uint64_t EngineImpl::Execute(Stream& s, Op& op, uint64_t ready) {
  const Config& c = GetConfig();
  Record rec;
  rec.device = static_cast<uint32_t>(s.dev);
  rec.context = static_cast<uint32_t>(s.dev + 1);
  rec.stream = static_cast<uint32_t>(s.id);
  rec.correlation = op.correlation;
  rec.graph_id = op.graph_id;
  uint64_t start = ready;
  uint64_t end = start;
  switch (op.type) {
    case Op::Type::kKernel:
      end = start + op.duration_ns;
      SleepUntil(end);
      break;
    case Op::Type::kCustom:
      // NCCL: the body meets the other ranks now, and says when the kernel ends on the device's
      // timeline (when the last rank's kernel started, plus the link time).
      end = std::max(start, op.body(op.arg, start));
      SleepUntil(end);
      break;
    case Op::Type::kCopy:
    case Op::Type::kMemset: {
      // Copy engines are separate from compute and from each other: one per direction; a copy
      // waits only for earlier copies on the same engine.
      uint64_t dur = op.type == Op::Type::kCopy
                         ? TransferNs(op.ext.bytes(), op.gbps, c.copy_latency_us)
                         : TransferNs(op.ext.bytes(), c.d2d_gbps, c.copy_latency_us);
      {
        std::lock_guard<std::mutex> lk(mu_);
        uint64_t& free_at = devices_[s.dev]->engine_free_at[op.engine];
        start = std::max(start, free_at);
        free_at = start + dur;
      }
      SleepUntil(start);
      if (op.type == Op::Type::kCopy) {
        DoCopy(op.dst, op.src, op.ext);
      } else {
        DoMemset(op.dst, op.ext, op.value, op.elem_size);
      }
      end = start + dur;
      SleepUntil(end);
      break;
    }
    case Op::Type::kHostFn: {
      AsHostThread as_host;
      op.fn(op.arg);
      return MonoNs();
    }
    case Op::Type::kEventRecord:
    case Op::Type::kWait:
      return start;
  }
  if (hooks_.load(std::memory_order_acquire) == nullptr) return end;
  rec.start_ns = start;
  rec.end_ns = end;
  switch (op.type) {
    case Op::Type::kKernel:
    case Op::Type::kCustom:
      rec.kind = Record::Kind::kKernel;
      rec.name = op.name;
      rec.grid = op.grid;
      rec.block = op.block;
      rec.shared_mem = op.shared_mem;
      break;
    case Op::Type::kCopy:
      rec.kind = Record::Kind::kMemcpy;
      rec.bytes = op.ext.bytes();
      rec.copy_kind = op.copy_kind;
      rec.src_kind = op.src_kind;
      rec.dst_kind = op.dst_kind;
      rec.async = op.async;
      break;
    default:
      rec.kind = Record::Kind::kMemset;
      rec.bytes = op.ext.bytes();
      rec.dst_kind = op.dst_kind;
      rec.value = op.value;
      rec.async = op.async;
      break;
  }
  Emit(rec);
  return end;
}

void EngineImpl::DoCopy(Region dst, Region src, Extent ext) {
  for (size_t z = 0; z < ext.depth; ++z) {
    for (size_t y = 0; y < ext.height; ++y) {
      char* d = static_cast<char*>(dst.base) + (z * dst.slice_rows + y) * dst.pitch;
      const char* sp = static_cast<const char*>(src.base) + (z * src.slice_rows + y) * src.pitch;
      memmove(d, sp, ext.width);
    }
  }
}

void EngineImpl::DoMemset(Region dst, Extent ext, uint32_t value, int elem) {
  for (size_t z = 0; z < ext.depth; ++z) {
    for (size_t y = 0; y < ext.height; ++y) {
      char* d = static_cast<char*>(dst.base) + (z * dst.slice_rows + y) * dst.pitch;
      if (elem == 1) {
        memset(d, static_cast<int>(value & 0xff), ext.width);
      } else if (elem == 2) {
        uint16_t v = static_cast<uint16_t>(value);
        for (size_t i = 0; i + 2 <= ext.width; i += 2) memcpy(d + i, &v, 2);
      } else {
        for (size_t i = 0; i + 4 <= ext.width; i += 4) memcpy(d + i, &value, 4);
      }
    }
  }
}

static Region Normalize(Region r, const Extent& e) {
  if (r.pitch == 0) r.pitch = e.width;
  if (r.slice_rows == 0) r.slice_rows = e.height;
  return r;
}

CUresult EngineImpl::Copy(Region dst, Region src, Extent ext, Stream* s, bool sync_call,
                          bool peer) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (ext.bytes() == 0) return CUDA_SUCCESS;
  if (dst.base == nullptr || src.base == nullptr) return CUDA_ERROR_INVALID_VALUE;
  dst = Normalize(dst, ext);
  src = Normalize(src, ext);
  const Config& c = GetConfig();
  Op op;
  op.type = Op::Type::kCopy;
  op.dst = dst;
  op.src = src;
  op.ext = ext;
  op.src_kind = PointerKind(src.base, nullptr, nullptr, nullptr);
  op.dst_kind = PointerKind(dst.base, nullptr, nullptr, nullptr);
  MemKind sk = op.src_kind == MemKind::kManaged ? MemKind::kDevice : op.src_kind;
  MemKind dk = op.dst_kind == MemKind::kManaged ? MemKind::kDevice : op.dst_kind;
  bool pageable = sk == MemKind::kPageable || dk == MemKind::kPageable;
  if (IsHost(sk) && dk == MemKind::kDevice) {
    op.copy_kind = kCopyHtoD;
    op.engine = 0;
  } else if (sk == MemKind::kDevice && IsHost(dk)) {
    op.copy_kind = kCopyDtoH;
    op.engine = 1;
  } else if (sk == MemKind::kDevice && dk == MemKind::kDevice) {
    op.copy_kind = peer ? kCopyPtoP : kCopyDtoD;
    op.engine = 2;
  } else {
    op.copy_kind = kCopyHtoH;
    op.engine = 3;
  }
  op.gbps = op.copy_kind == kCopyDtoD   ? c.d2d_gbps
            : op.copy_kind == kCopyPtoP ? c.p2p_gbps
            : pageable                  ? c.pageable_gbps
                                        : c.pinned_gbps;
  op.async = !sync_call;
  // Host blocking (CUDA Runtime API, "API synchronization behavior"): a synchronous copy
  // returns when done, except device-to-device; an async copy to/from pageable memory is
  // staged by the host and returns only when the data has been moved; host-to-host is done
  // by the host.
  bool blocking = op.copy_kind == kCopyHtoH || pageable ||
                  (sync_call && op.copy_kind != kCopyDtoD && op.copy_kind != kCopyPtoP);
  return Submit(s, std::move(op), blocking);
}

CUresult EngineImpl::Memset(Region dst, Extent ext, uint32_t value, int elem_size, Stream* s,
                            bool sync_call) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (ext.bytes() == 0) return CUDA_SUCCESS;
  if (dst.base == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Op op;
  op.type = Op::Type::kMemset;
  op.dst = Normalize(dst, ext);
  op.ext = ext;
  op.value = value;
  op.elem_size = elem_size;
  op.dst_kind = PointerKind(dst.base, nullptr, nullptr, nullptr);
  op.async = !sync_call;
  op.engine = 2;
  // cudaMemset is asynchronous to the host unless the target is host memory.
  bool blocking = sync_call && IsHost(op.dst_kind);
  return Submit(s, std::move(op), blocking);
}

uint64_t EngineImpl::KernelNs(const char* name, Dim3 grid, Dim3 block, void** args) {
  const Config& c = GetConfig();
  for (const KernelRule& r : c.kernel_rules) {
    if (name == nullptr || strstr(name, r.match.c_str()) == nullptr) continue;
    if (r.arg_ns_index >= 0) {
      if (args == nullptr || args[r.arg_ns_index] == nullptr) break;
      uint64_t ns = 0;
      memcpy(&ns, args[r.arg_ns_index], sizeof ns);
      return ns;
    }
    return static_cast<uint64_t>(r.us * 1e3);
  }
  // Default: a fixed cost plus one wave cost per "wave" of resident blocks, so a grid smaller
  // than the SM count takes as long as a full wave: the device is under-filled.
  uint64_t blocks = uint64_t{grid.x} * grid.y * grid.z;
  uint64_t threads = std::max<uint64_t>(1, uint64_t{block.x} * block.y * block.z);
  uint64_t per_sm = std::clamp<uint64_t>(2048 / threads, 1, 32);
  uint64_t slots = per_sm * static_cast<uint64_t>(c.sms);
  uint64_t waves = std::max<uint64_t>(1, (blocks + slots - 1) / slots);
  return static_cast<uint64_t>((c.kernel_base_us + static_cast<double>(waves) * c.kernel_wave_us) *
                               1e3);
}

CUresult EngineImpl::LaunchKernel(Stream* s, const char* name, Dim3 grid, Dim3 block,
                                  uint32_t shared_mem, void** args) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0 ||
      uint64_t{block.x} * block.y * block.z > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Op op;
  op.type = Op::Type::kKernel;
  op.name = Intern(name ? name : "unknown_kernel");
  op.grid = grid;
  op.block = block;
  op.shared_mem = shared_mem;
  op.duration_ns = KernelNs(op.name, grid, block, args);
  SpinFor(static_cast<uint64_t>(GetConfig().launch_us * 1e3));
  return Submit(s, std::move(op));
}

CUresult EngineImpl::LaunchCustomKernel(Stream* s, const char* name, Dim3 grid, Dim3 block,
                                        uint64_t (*body)(void*, uint64_t), void* arg) {
  s = Resolve(s, false);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Op op;
  op.type = Op::Type::kCustom;
  op.name = Intern(name);
  op.grid = grid;
  op.block = block;
  op.body = body;
  op.arg = arg;
  return Submit(s, std::move(op));
}

CUresult EngineImpl::LaunchHostFunc(Stream* s, void (*fn)(void*), void* arg) {
  s = Resolve(s, false);
  if (s == nullptr || fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Op op;
  op.type = Op::Type::kHostFn;
  op.fn = fn;
  op.arg = arg;
  return Submit(s, std::move(op));
}

const char* EngineImpl::Intern(const char* s) {
  std::lock_guard<std::mutex> lk(mu_);
  return names_.insert(s).first->c_str();
}

// ---------------------------------------------------------------- graphs

CUresult EngineImpl::BeginCapture(Stream* s) {
  s = Resolve(s, false);
  if (s == nullptr || s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard<std::mutex> lk(mu_);
  if (s->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = new Graph();
  s->capture->id = next_graph_id_++;
  all_graphs_.push_back(s->capture);
  return CUDA_SUCCESS;
}

CUresult EngineImpl::EndCapture(Stream* s, Graph** out) {
  s = Resolve(s, false);
  if (s == nullptr || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(mu_);
  if (s->capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  *out = s->capture;
  s->capture = nullptr;
  return CUDA_SUCCESS;
}

bool EngineImpl::IsCapturing(Stream* s) {
  s = Resolve(s, false);
  std::lock_guard<std::mutex> lk(mu_);
  return s != nullptr && s->capture != nullptr;
}

CUresult EngineImpl::GraphLaunch(Graph* g, Stream* s) {
  s = Resolve(s, false);
  if (g == nullptr || s == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint32_t corr = tls_correlation;
  for (const Op& recorded : g->ops) {
    Op op = recorded;
    op.deps.clear();
    op.correlation = corr;
    op.graph_id = g->id;
    CUresult r = Submit(s, std::move(op));
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult EngineImpl::GraphDestroy(Graph* g) {
  return g == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;  // kept: see all_graphs_
}

// ---------------------------------------------------------------- API frames and CUPTI

void EngineImpl::ApiEnter(ApiFrame* f, uint32_t domain, uint32_t cbid, const char* name,
                          const void* params) {
  f->top = tls_depth++ == 0;
  if (f->top) tls_correlation = next_correlation_.fetch_add(1, std::memory_order_relaxed);
  f->correlation = tls_correlation;
  f->domain = domain;
  f->cbid = cbid;
  f->name = name;
  f->params = params;
  f->start_ns = MonoNs();
  f->correlation_data = 0;
  const CuptiHooks* h = hooks_.load(std::memory_order_acquire);
  if (h == nullptr || h->on_api == nullptr) return;
  ApiCall call;
  call.domain = domain;
  call.cbid = cbid;
  call.site = 0;
  call.name = name;
  call.params = params;
  call.correlation = f->correlation;
  call.context = static_cast<uint32_t>(tls_device + 1);
  call.correlation_data = &f->correlation_data;
  call.start_ns = f->start_ns;
  h->on_api(call);
}

void EngineImpl::ApiExit(ApiFrame* f, int32_t ret) {
  const CuptiHooks* h = hooks_.load(std::memory_order_acquire);
  if (h != nullptr && h->on_api != nullptr) {
    ApiCall call;
    call.domain = f->domain;
    call.cbid = f->cbid;
    call.site = 1;
    call.name = f->name;
    call.params = f->params;
    call.ret = ret;
    call.ret_value = &call.ret;
    call.correlation = f->correlation;
    call.context = static_cast<uint32_t>(tls_device + 1);
    call.correlation_data = &f->correlation_data;
    call.start_ns = f->start_ns;
    h->on_api(call);
  }
  if (--tls_depth == 0) tls_correlation = 0;
}

void EngineImpl::SetCuptiHooks(const CuptiHooks* hooks) {
  hooks_.store(hooks, std::memory_order_release);
}

uint64_t EngineImpl::NowNs() { return MonoNs(); }

void EngineImpl::Emit(const Record& rec) {
  const CuptiHooks* h = hooks_.load(std::memory_order_acquire);
  if (h != nullptr && h->on_record != nullptr) h->on_record(rec);
}

void EngineImpl::EmitSync(uint32_t type, int dev, uint64_t stream, uint32_t event, uint64_t t0,
                          uint64_t t1) {
  if (hooks_.load(std::memory_order_acquire) == nullptr) return;
  Record rec;
  rec.kind = Record::Kind::kSync;
  rec.sync_type = type;
  rec.device = static_cast<uint32_t>(dev);
  rec.context = static_cast<uint32_t>(dev + 1);
  rec.stream = static_cast<uint32_t>(stream);
  rec.event_id = event;
  rec.correlation = tls_correlation;
  rec.start_ns = t0;
  rec.end_ns = t1;
  rec.pid = static_cast<uint32_t>(getpid());
  rec.tid = Tid();
  Emit(rec);
}

CUresult EngineImpl::Init() {
  // The real libcuda loads CUDA_INJECTION64_PATH at cuInit and calls InitializeInjection().
  // Guarded by a flag, not call_once: the injection may itself call cuInit.
  int expected = 0;
  if (!injection_state_.compare_exchange_strong(expected, 1)) return CUDA_SUCCESS;
  const char* path = getenv("CUDA_INJECTION64_PATH");
  if (path != nullptr && *path != '\0') {
    void* h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      fprintf(stderr, "simgpu: cannot load CUDA_INJECTION64_PATH %s: %s\n", path, dlerror());
    } else if (auto* init = reinterpret_cast<int (*)(void)>(dlsym(h, "InitializeInjection"))) {
      init();
    } else {
      fprintf(stderr, "simgpu: %s has no InitializeInjection\n", path);
    }
  }
  injection_state_.store(2);
  return CUDA_SUCCESS;
}

}  // namespace simgpu
