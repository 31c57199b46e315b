// Fake libcupti.so.13: the activity and callback APIs, fed by simgpu's device model.
//
// Records are built from engine Records in the thread that finished the work (a device worker
// or the calling host thread), appended to one global buffer obtained through the client's
// bufferRequested callback, and delivered through bufferCompleted: full buffers from a CUPTI
// delivery thread (as real CUPTI may), the rest from the thread calling cuptiActivityFlushAll.
// No CUPTI lock is held while a client callback runs. SIMGPU_CUPTI_FLUSH_DELAY_US holds a flush
// that is not FORCED that long between taking its buffers and handing them over (real CUPTI's
// hand-over takes time; a forced flush elsewhere meanwhile does not wait for it).
#include <cupti.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <bitset>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "engine.h"

#define SIMGPU_EXPORT extern "C" __attribute__((visibility("default")))

struct CUpti_Subscriber_st {
  CUpti_CallbackFunc fn;
  void* user;
};

namespace {

using simgpu::Record;

constexpr size_t kMaxKinds = 128;

size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }

size_t RecordSize(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return Align8(sizeof(CUpti_ActivityKernel10));
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return Align8(sizeof(CUpti_ActivityMemcpy6));
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return Align8(sizeof(CUpti_ActivityMemset4));
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return Align8(sizeof(CUpti_ActivitySynchronization2));
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return Align8(sizeof(CUpti_ActivityAPI));
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return Align8(sizeof(CUpti_ActivityExternalCorrelation));
    default:
      return 0;
  }
}

uint64_t ClockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0, used = 0;
};

class Cupti {
 public:
  static Cupti& Get() {
    static Cupti* c = new Cupti();  // leaked: device threads may record during exit
    return *c;
  }

  simgpu::Engine* engine() { return engine_; }

  // Engine time (CLOCK_MONOTONIC) to CUPTI time: the registered timestamp callback's clock,
  // else CUPTI's own (here CLOCK_REALTIME, like the GPU's global timer).
  uint64_t ToCupti(uint64_t mono) const {
    return mono + static_cast<uint64_t>(offset_.load(std::memory_order_relaxed));
  }
  uint64_t Now() const {
    if (auto cb = timestamp_cb_.load()) return cb();
    return ToCupti(ClockNs(CLOCK_MONOTONIC));
  }

  CUptiResult SetTimestampCallback(CUpti_TimestampCallbackFunc cb) {
    timestamp_cb_.store(cb);
    if (cb == nullptr) {
      offset_.store(static_cast<int64_t>(ClockNs(CLOCK_REALTIME) - ClockNs(CLOCK_MONOTONIC)));
      return CUPTI_SUCCESS;
    }
    // Offset between the client's clock and the engine's, taken from the tightest of a few
    // bracketed samples (an exact 0 when the client's clock is CLOCK_MONOTONIC).
    int64_t best = 0;
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 5; ++i) {
      uint64_t a = ClockNs(CLOCK_MONOTONIC);
      uint64_t t = cb();
      uint64_t b = ClockNs(CLOCK_MONOTONIC);
      if (b - a < best_width) {
        best_width = b - a;
        best = static_cast<int64_t>(t) - static_cast<int64_t>(a + (b - a) / 2);
      }
    }
    if (best_width < 2000 && best > -2000 && best < 2000) best = 0;  // same clock
    offset_.store(best);
    return CUPTI_SUCCESS;
  }

  CUptiResult Enable(CUpti_ActivityKind kind, bool on) {
    if (static_cast<size_t>(kind) >= kMaxKinds) return CUPTI_ERROR_INVALID_KIND;
    if (RecordSize(kind) == 0 && kind != CUPTI_ACTIVITY_KIND_OVERHEAD) {
      return CUPTI_ERROR_NOT_COMPATIBLE;
    }
    std::lock_guard<std::mutex> lk(mu_);
    enabled_[kind] = on;
    return CUPTI_SUCCESS;
  }

  bool Enabled(CUpti_ActivityKind kind) {
    std::lock_guard<std::mutex> lk(mu_);
    return enabled_[kind];
  }

  CUptiResult RegisterBuffers(CUpti_BuffersCallbackRequestFunc req,
                              CUpti_BuffersCallbackCompleteFunc done) {
    if (req == nullptr || done == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lk(mu_);
    request_ = req;
    complete_ = done;
    if (!delivery_started_) {
      delivery_started_ = true;
      std::thread([this] { DeliveryLoop(); }).detach();
    }
    return CUPTI_SUCCESS;
  }

  // Copies one record into the current buffer; counts it as dropped when there is none.
  void Append(const void* rec, CUpti_ActivityKind kind) {
    size_t n = RecordSize(kind);
    std::unique_lock<std::mutex> lk(mu_);
    if (!enabled_[kind]) return;
    if (cur_.data != nullptr && cur_.used + n > cur_.size) {
      full_.push_back(cur_);
      cur_ = Buffer();
      cv_.notify_all();
    }
    if (cur_.data == nullptr) {
      CUpti_BuffersCallbackRequestFunc req = request_;
      if (req == nullptr) {
        ++dropped_;
        return;
      }
      lk.unlock();
      Buffer b;
      size_t max_records = 0;
      req(&b.data, &b.size, &max_records);
      lk.lock();
      if (b.data == nullptr || b.size < n) {
        ++dropped_;
        return;
      }
      if (cur_.data != nullptr) {  // another thread installed one meanwhile
        full_.push_back(cur_);
        cv_.notify_all();
      }
      cur_ = b;
    }
    memcpy(cur_.data + cur_.used, rec, n);
    cur_.used += n;
  }

  CUptiResult Flush(uint32_t flag) {
    std::vector<Buffer> ready;
    CUpti_BuffersCallbackCompleteFunc done;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return !delivering_; });
      ready.assign(full_.begin(), full_.end());
      full_.clear();
      if (cur_.data != nullptr && cur_.used > 0) {
        ready.push_back(cur_);
        cur_ = Buffer();
      }
      done = complete_;
    }
    if (!ready.empty() && (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == 0 && flush_delay_us_ > 0) {
      usleep(static_cast<useconds_t>(flush_delay_us_));
    }
    for (const Buffer& b : ready) {
      if (done) done(nullptr, 0, b.data, b.size, b.used);
    }
    return CUPTI_SUCCESS;
  }

  size_t Dropped() {
    std::lock_guard<std::mutex> lk(mu_);
    return dropped_;
  }

  void Finalize() {
    Flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lk(mu_);
    enabled_.reset();
    subscriber_ = nullptr;
  }

  // --- callback API ---
  CUptiResult Subscribe(CUpti_SubscriberHandle* out, CUpti_CallbackFunc fn, void* user) {
    if (out == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> lk(mu_);
    if (subscriber_ != nullptr) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscriber_ = new CUpti_Subscriber_st{fn, user};
    for (auto& d : domains_) d.assign(d.size(), false);
    *out = subscriber_;
    return CUPTI_SUCCESS;
  }

  CUptiResult Unsubscribe(CUpti_SubscriberHandle s) {
    std::lock_guard<std::mutex> lk(mu_);
    if (s == nullptr || s != subscriber_) return CUPTI_ERROR_INVALID_PARAMETER;
    subscriber_ = nullptr;  // the handle is leaked: a callback may be running on it
    return CUPTI_SUCCESS;
  }

  CUptiResult EnableCallback(bool on, CUpti_SubscriberHandle s, CUpti_CallbackDomain d, int cbid) {
    std::lock_guard<std::mutex> lk(mu_);
    if (s == nullptr || s != subscriber_) return CUPTI_ERROR_INVALID_PARAMETER;
    if (d <= CUPTI_CB_DOMAIN_INVALID || d >= CUPTI_CB_DOMAIN_SIZE) {
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
    auto& v = domains_[d];
    if (cbid < 0) {
      v.assign(v.size(), on);
    } else {
      if (static_cast<size_t>(cbid) >= v.size()) return CUPTI_ERROR_INVALID_PARAMETER;
      v[static_cast<size_t>(cbid)] = on;
    }
    return CUPTI_SUCCESS;
  }

  void OnApi(const simgpu::ApiCall& call) {
    CUpti_Subscriber_st* sub = nullptr;
    bool want_api_record, want_ext;
    CUpti_ActivityKind api_kind = call.domain == CUPTI_CB_DOMAIN_DRIVER_API
                                      ? CUPTI_ACTIVITY_KIND_DRIVER
                                      : CUPTI_ACTIVITY_KIND_RUNTIME;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (subscriber_ != nullptr && call.domain < CUPTI_CB_DOMAIN_SIZE &&
          call.cbid < domains_[call.domain].size() && domains_[call.domain][call.cbid]) {
        sub = subscriber_;
      }
      want_api_record = enabled_[api_kind] && call.site == CUPTI_API_EXIT;
      want_ext = enabled_[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION] && call.site == CUPTI_API_ENTER;
    }
    if (want_ext) EmitExternal(call.correlation);
    if (sub != nullptr && sub->fn != nullptr) {
      CUpti_CallbackData data;
      memset(&data, 0, sizeof data);
      data.callbackSite = call.site == 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT;
      data.functionName = call.name;
      data.functionParams = call.params;
      data.functionReturnValue = call.ret_value;
      data.symbolName = call.symbol;
      data.context = nullptr;
      data.contextUid = call.context;
      data.correlationData = call.correlation_data;
      data.correlationId = call.correlation;
      sub->fn(sub->user, static_cast<CUpti_CallbackDomain>(call.domain), call.cbid, &data);
    }
    if (want_api_record) {
      CUpti_ActivityAPI r;
      memset(&r, 0, sizeof r);
      r.kind = api_kind;
      r.cbid = call.cbid;
      r.start = ToCupti(call.start_ns);
      r.end = Now();
      r.processId = static_cast<uint32_t>(getpid());
      r.threadId = Tid();
      r.correlationId = call.correlation;
      r.returnValue = static_cast<uint32_t>(call.ret);
      Append(&r, api_kind);
    }
  }

  void OnRecord(const Record& in) {
    switch (in.kind) {
      case Record::Kind::kKernel: {
        CUpti_ActivityKind kind = Enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                                      ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                      : CUPTI_ACTIVITY_KIND_KERNEL;
        CUpti_ActivityKernel10 r;
        memset(&r, 0, sizeof r);
        r.kind = kind;
        r.start = ToCupti(in.start_ns);
        r.end = ToCupti(in.end_ns);
        r.completed = r.end;
        r.queued = CUPTI_TIMESTAMP_UNKNOWN;
        r.submitted = CUPTI_TIMESTAMP_UNKNOWN;
        r.deviceId = in.device;
        r.contextId = in.context;
        r.streamId = in.stream;
        r.gridX = static_cast<int32_t>(in.grid.x);
        r.gridY = static_cast<int32_t>(in.grid.y);
        r.gridZ = static_cast<int32_t>(in.grid.z);
        r.blockX = static_cast<int32_t>(in.block.x);
        r.blockY = static_cast<int32_t>(in.block.y);
        r.blockZ = static_cast<int32_t>(in.block.z);
        r.dynamicSharedMemory = static_cast<int32_t>(in.shared_mem);
        r.registersPerThread = 32;
        r.correlationId = in.correlation;
        r.gridId = next_grid_id_.fetch_add(1);
        r.name = in.name;
        r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
        r.graphId = in.graph_id;
        Append(&r, kind);
        break;
      }
      case Record::Kind::kMemcpy: {
        CUpti_ActivityMemcpy6 r;
        memset(&r, 0, sizeof r);
        r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r.copyKind = in.copy_kind;
        r.srcKind = static_cast<uint8_t>(in.src_kind);
        r.dstKind = static_cast<uint8_t>(in.dst_kind);
        r.flags = in.async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
        r.bytes = in.bytes;
        r.start = ToCupti(in.start_ns);
        r.end = ToCupti(in.end_ns);
        r.deviceId = in.device;
        r.contextId = in.context;
        r.streamId = in.stream;
        r.correlationId = in.correlation;
        r.runtimeCorrelationId = in.correlation;
        r.graphId = in.graph_id;
        r.copyCount = 1;
        Append(&r, CUPTI_ACTIVITY_KIND_MEMCPY);
        break;
      }
      case Record::Kind::kMemset: {
        CUpti_ActivityMemset4 r;
        memset(&r, 0, sizeof r);
        r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r.value = in.value;
        r.bytes = in.bytes;
        r.start = ToCupti(in.start_ns);
        r.end = ToCupti(in.end_ns);
        r.deviceId = in.device;
        r.contextId = in.context;
        r.streamId = in.stream;
        r.correlationId = in.correlation;
        r.flags = in.async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
        r.memoryKind = static_cast<uint16_t>(in.dst_kind);
        r.graphId = in.graph_id;
        Append(&r, CUPTI_ACTIVITY_KIND_MEMSET);
        break;
      }
      case Record::Kind::kSync: {
        CUpti_ActivitySynchronization2 r;
        memset(&r, 0, sizeof r);
        r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        r.type = static_cast<CUpti_ActivitySynchronizationType>(in.sync_type);
        r.start = ToCupti(in.start_ns);
        r.end = ToCupti(in.end_ns);
        r.correlationId = in.correlation;
        r.contextId = in.context;
        r.streamId = in.stream ? in.stream : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
        r.cudaEventId = in.event_id ? in.event_id : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
        Append(&r, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        break;
      }
      case Record::Kind::kApi:
        break;
    }
  }

  // --- external correlation (per thread, per kind stacks) ---
  static std::map<int, std::vector<uint64_t>>& ExtStacks() {
    thread_local std::map<int, std::vector<uint64_t>> stacks;
    return stacks;
  }

  void EmitExternal(uint32_t correlation) {
    for (auto& [kind, stack] : ExtStacks()) {
      if (stack.empty()) continue;
      CUpti_ActivityExternalCorrelation r;
      memset(&r, 0, sizeof r);
      r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
      r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(kind);
      r.externalId = stack.back();
      r.correlationId = correlation;
      Append(&r, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    }
  }

 private:
  Cupti() {
    for (auto& d : domains_) d.assign(1024, false);
    if (const char* v = getenv("SIMGPU_CUPTI_FLUSH_DELAY_US"); v != nullptr) {
      flush_delay_us_ = strtoul(v, nullptr, 10);
    }
    SetTimestampCallback(nullptr);
    engine_ = simgpu::GetEngine();
    if (engine_ != nullptr) engine_->SetCuptiHooks(&kHooks);
  }

  void DeliveryLoop() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_setname_np(pthread_self(), "simgpu-cupti");
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return !full_.empty(); });
      Buffer b = full_.front();
      full_.pop_front();
      CUpti_BuffersCallbackCompleteFunc done = complete_;
      delivering_ = true;
      lk.unlock();
      if (done) done(nullptr, 0, b.data, b.size, b.used);
      lk.lock();
      delivering_ = false;
      cv_.notify_all();
    }
  }

  static const simgpu::CuptiHooks kHooks;

  simgpu::Engine* engine_ = nullptr;
  unsigned long flush_delay_us_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::bitset<kMaxKinds> enabled_;
  CUpti_BuffersCallbackRequestFunc request_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete_ = nullptr;
  Buffer cur_;
  std::deque<Buffer> full_;
  bool delivery_started_ = false, delivering_ = false;
  size_t dropped_ = 0;
  std::atomic<CUpti_TimestampCallbackFunc> timestamp_cb_{nullptr};
  std::atomic<int64_t> offset_{0};
  std::atomic<int64_t> next_grid_id_{1};
  CUpti_Subscriber_st* subscriber_ = nullptr;
  std::vector<bool> domains_[CUPTI_CB_DOMAIN_SIZE];
};

const simgpu::CuptiHooks Cupti::kHooks = {
    [](const Record& r) { Cupti::Get().OnRecord(r); },
    [](const simgpu::ApiCall& c) { Cupti::Get().OnApi(c); },
};

Cupti& C() { return Cupti::Get(); }

}  // namespace

SIMGPU_EXPORT CUptiResult cuptiGetVersion(uint32_t* v) {
  if (v == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *v = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char** str) {
  if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  switch (r) {
    case CUPTI_SUCCESS:
      *str = "CUPTI_SUCCESS";
      break;
    case CUPTI_ERROR_INVALID_PARAMETER:
      *str = "CUPTI_ERROR_INVALID_PARAMETER";
      break;
    case CUPTI_ERROR_INVALID_KIND:
      *str = "CUPTI_ERROR_INVALID_KIND";
      break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED:
      *str = "CUPTI_ERROR_MAX_LIMIT_REACHED";
      break;
    case CUPTI_ERROR_NOT_COMPATIBLE:
      *str = "CUPTI_ERROR_NOT_COMPATIBLE";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
      *str = "CUPTI_ERROR_NOT_INITIALIZED";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    default:
      *str = "CUPTI_ERROR_UNKNOWN";
      break;
  }
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* ts) {
  if (ts == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *ts = C().Now();
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  return C().SetTimestampCallback(f);
}

SIMGPU_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (C().engine() == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  return C().Enable(kind, true);
}

SIMGPU_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  return C().Enable(kind, false);
}

SIMGPU_EXPORT CUptiResult cuptiActivityEnableContext(CUcontext, CUpti_ActivityKind kind) {
  return cuptiActivityEnable(kind);
}

SIMGPU_EXPORT CUptiResult cuptiActivityDisableContext(CUcontext, CUpti_ActivityKind kind) {
  return cuptiActivityDisable(kind);
}

SIMGPU_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                         CUpti_BuffersCallbackCompleteFunc done) {
  return C().RegisterBuffers(req, done);
}

SIMGPU_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) { return C().Flush(flag); }

SIMGPU_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid,
                                                     CUpti_Activity** record) {
  if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t* next = buffer;
  if (*record != nullptr) {
    size_t n = RecordSize((*record)->kind);
    if (n == 0) return CUPTI_ERROR_INVALID_KIND;
    next = reinterpret_cast<uint8_t*>(*record) + n;
  }
  if (next + sizeof(CUpti_ActivityKind) > buffer + valid) {
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *dropped = C().Dropped();
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                                 uint64_t id) {
  Cupti::ExtStacks()[k].push_back(id);
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k,
                                                                uint64_t* id) {
  auto& stack = Cupti::ExtStacks()[k];
  if (stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (id) *id = stack.back();
  stack.pop_back();
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute, size_t*, void*) {
  return CUPTI_SUCCESS;  // buffer sizes and pools are the client's business here
}

SIMGPU_EXPORT CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute, size_t* size,
                                                    void* value) {
  if (size == nullptr || value == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  memset(value, 0, *size);
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiFinalize() {
  C().Finalize();
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* s, CUpti_CallbackFunc fn,
                                         void* user) {
  if (C().engine() == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  return C().Subscribe(s, fn, user);
}

SIMGPU_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) { return C().Unsubscribe(s); }

SIMGPU_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s,
                                              CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  return C().EnableCallback(enable != 0, s, d, static_cast<int>(cbid));
}

SIMGPU_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s,
                                            CUpti_CallbackDomain d) {
  return C().EnableCallback(enable != 0, s, d, -1);
}

SIMGPU_EXPORT CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle s) {
  for (int d = CUPTI_CB_DOMAIN_DRIVER_API; d < CUPTI_CB_DOMAIN_SIZE; ++d) {
    CUptiResult r = C().EnableCallback(enable != 0, s, static_cast<CUpti_CallbackDomain>(d), -1);
    if (r != CUPTI_SUCCESS) return r;
  }
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t* dev) {
  if (dev == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  // simgpu's CUcontext points at {int device}; no context means the current device.
  *dev = ctx ? static_cast<uint32_t>(*reinterpret_cast<const int*>(ctx))
             : (C().engine() ? static_cast<uint32_t>(C().engine()->CurrentDevice()) : 0);
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiGetContextId(CUcontext ctx, uint32_t* id) {
  if (id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint32_t dev = 0;
  cuptiGetDeviceId(ctx, &dev);
  *id = dev + 1;
  return CUPTI_SUCCESS;
}

SIMGPU_EXPORT CUptiResult cuptiGetStreamId(CUcontext, CUstream stream, uint32_t* id) {
  if (id == nullptr || C().engine() == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  uint64_t sid = 0;
  simgpu::Engine* e = C().engine();
  if (e->StreamInfo(e->Resolve(reinterpret_cast<simgpu::Stream*>(stream), false), nullptr, nullptr,
                    nullptr, &sid) != CUDA_SUCCESS) {
    return CUPTI_ERROR_INVALID_STREAM;
  }
  *id = static_cast<uint32_t>(sid);
  return CUPTI_SUCCESS;
}
