// Done-when 4 of issue 3: a consumer written against the real cupti.h receives kernel, memcpy
// (with src/dst kinds), memset and synchronization records whose times and correlation ids
// match the API calls seen through the callback API. Timestamps are on CLOCK_MONOTONIC through
// cuptiActivityRegisterTimestampCallback, as the tracer's interpose/cuda/cupti_layer.cc does.
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <gtest/gtest.h>
#include <time.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim_kernels.h"

namespace {

uint64_t Mono() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct ApiCall {
  std::string name;
  uint32_t correlation = 0;
  uint64_t enter = 0, exit = 0;
};

struct Seen {
  std::mutex mu;
  std::vector<CUpti_ActivityKernel10> kernels;
  std::vector<CUpti_ActivityMemcpy6> memcpys;
  std::vector<CUpti_ActivityMemset4> memsets;
  std::vector<CUpti_ActivitySynchronization2> syncs;
  std::vector<CUpti_ActivityAPI> apis;
  std::vector<std::string> kernel_names;
  std::map<uint32_t, ApiCall> calls;  // by correlation id
  std::vector<std::thread::id> completion_threads;
  size_t buffer_size = 1 << 20;
  bool refuse_buffers = false;
};
Seen g;

void CUPTIAPI Request(uint8_t** buf, size_t* size, size_t* max_records) {
  *max_records = 0;
  if (g.refuse_buffers) {
    *buf = nullptr;
    *size = 0;
    return;
  }
  *size = g.buffer_size;
  *buf = static_cast<uint8_t*>(aligned_alloc(8, g.buffer_size));
}

void CUPTIAPI Complete(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  std::lock_guard<std::mutex> lk(g.mu);
  g.completion_threads.push_back(std::this_thread::get_id());
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
        g.kernels.push_back(*k);
        g.kernel_names.push_back(k->name);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        g.memcpys.push_back(*reinterpret_cast<CUpti_ActivityMemcpy6*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        g.memsets.push_back(*reinterpret_cast<CUpti_ActivityMemset4*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        g.syncs.push_back(*reinterpret_cast<CUpti_ActivitySynchronization2*>(rec));
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
        g.apis.push_back(*reinterpret_cast<CUpti_ActivityAPI*>(rec));
        break;
      default:
        break;
    }
  }
  free(buf);
}

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  auto* cb = static_cast<const CUpti_CallbackData*>(data);
  std::lock_guard<std::mutex> lk(g.mu);
  ApiCall& c = g.calls[cb->correlationId];
  c.name = cb->functionName;
  c.correlation = cb->correlationId;
  (cb->callbackSite == CUPTI_API_ENTER ? c.enter : c.exit) = Mono();
}

const ApiCall* Find(const std::string& name, size_t nth = 0) {
  for (auto& [id, c] : g.calls) {
    if (c.name == name && nth-- == 0) return &c;
  }
  return nullptr;
}

class SimgpuCupti : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(cuptiActivityRegisterTimestampCallback([]() -> uint64_t { return Mono(); }),
              CUPTI_SUCCESS);
    ASSERT_EQ(cuptiActivityRegisterCallbacks(Request, Complete), CUPTI_SUCCESS);
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                 CUPTI_ACTIVITY_KIND_RUNTIME}) {
      ASSERT_EQ(cuptiActivityEnable(k), CUPTI_SUCCESS);
    }
    CUpti_SubscriberHandle sub;
    ASSERT_EQ(cuptiSubscribe(&sub, OnCallback, nullptr), CUPTI_SUCCESS);
    ASSERT_EQ(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_SUCCESS);
  }
};

TEST_F(SimgpuCupti, VersionAndClock) {
  uint32_t v = 0;
  ASSERT_EQ(cuptiGetVersion(&v), CUPTI_SUCCESS);
  EXPECT_EQ(v, static_cast<uint32_t>(CUPTI_API_VERSION));
  uint64_t a = Mono(), t = 0;
  ASSERT_EQ(cuptiGetTimestamp(&t), CUPTI_SUCCESS);
  EXPECT_GE(t, a);
  EXPECT_LT(t - a, 50'000'000u);
  const char* s = nullptr;
  ASSERT_EQ(cuptiGetResultString(CUPTI_ERROR_MAX_LIMIT_REACHED, &s), CUPTI_SUCCESS);
  EXPECT_STREQ(s, "CUPTI_ERROR_MAX_LIMIT_REACHED");
}

TEST_F(SimgpuCupti, RecordsMatchCalls) {
  constexpr size_t kBytes = 1 << 20;
  std::vector<char> pageable(kBytes, 3);
  void *dev = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, kBytes), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);

  ASSERT_EQ(cudaMemcpy(dev, pageable.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(simgpu_test::LaunchSleep(5'000'000, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev, 0, kBytes, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, dev, kBytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  cudaFree(dev);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  // No CUDA call below: the callback takes g.mu.
  std::lock_guard<std::mutex> lk(g.mu);
  const ApiCall* copy = Find("cudaMemcpy");
  const ApiCall* launch = Find("cudaLaunchKernel");
  const ApiCall* memset = Find("cudaMemsetAsync");
  const ApiCall* copy_async = Find("cudaMemcpyAsync");
  const ApiCall* sync = Find("cudaStreamSynchronize");
  ASSERT_TRUE(copy && launch && memset && copy_async && sync);

  // Pageable H2D copy: inside its (synchronous) call.
  const CUpti_ActivityMemcpy6* h2d = nullptr;
  const CUpti_ActivityMemcpy6* d2h = nullptr;
  for (auto& m : g.memcpys) {
    if (m.correlationId == copy->correlation) h2d = &m;
    if (m.correlationId == copy_async->correlation) d2h = &m;
  }
  ASSERT_NE(h2d, nullptr);
  EXPECT_EQ(h2d->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  EXPECT_EQ(h2d->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  EXPECT_EQ(h2d->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  EXPECT_EQ(h2d->bytes, kBytes);
  EXPECT_GE(h2d->start, copy->enter);
  EXPECT_LE(h2d->end, copy->exit);
  ASSERT_NE(d2h, nullptr);
  EXPECT_EQ(d2h->copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
  EXPECT_EQ(d2h->srcKind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  EXPECT_EQ(d2h->dstKind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  EXPECT_TRUE(d2h->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
  EXPECT_LE(d2h->end, sync->exit);

  // Kernel: starts after its launch call, lasts its modelled 5 ms.
  const CUpti_ActivityKernel10* k = nullptr;
  for (size_t i = 0; i < g.kernels.size(); ++i) {
    if (g.kernels[i].correlationId == launch->correlation) k = &g.kernels[i];
  }
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "_Z9sim_sleepm");
  EXPECT_GE(k->start, launch->enter);
  EXPECT_GE(k->end - k->start, 4'900'000u);
  EXPECT_LT(k->end - k->start, 500'000'000u);
  EXPECT_EQ(k->gridX, 1);
  EXPECT_EQ(k->blockX, 32);

  // Memset after the kernel on the same stream.
  const CUpti_ActivityMemset4* ms = nullptr;
  for (auto& m : g.memsets) {
    if (m.correlationId == memset->correlation) ms = &m;
  }
  ASSERT_NE(ms, nullptr);
  EXPECT_EQ(ms->bytes, kBytes);
  EXPECT_GE(ms->start, k->end);
  EXPECT_EQ(ms->streamId, k->streamId);

  // Stream synchronize: a sync record inside the call.
  const CUpti_ActivitySynchronization2* sr = nullptr;
  for (auto& r : g.syncs) {
    if (r.correlationId == sync->correlation) sr = &r;
  }
  ASSERT_NE(sr, nullptr);
  EXPECT_EQ(sr->type, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  EXPECT_GE(sr->start, sync->enter);
  EXPECT_LE(sr->end, sync->exit);
  EXPECT_GE(sr->end, d2h->end);

  // Runtime API records share the correlation ids.
  bool api_seen = false;
  for (auto& a : g.apis) {
    if (a.correlationId == copy->correlation) {
      api_seen = true;
      EXPECT_EQ(a.cbid, static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020));
      EXPECT_LE(a.start, h2d->start);
      EXPECT_GE(a.end, h2d->end);
    }
  }
  EXPECT_TRUE(api_seen);
}

TEST_F(SimgpuCupti, FullBuffersArriveFromAnotherThreadAndDropsAreCounted) {
  {
    std::lock_guard<std::mutex> lk(g.mu);
    g.buffer_size = 1024;  // a few records per buffer
    g.completion_threads.clear();
  }
  cuptiActivityFlushAll(0);
  for (int i = 0; i < 20; ++i) simgpu_test::LaunchSleep(10'000);
  cudaDeviceSynchronize();
  // Full buffers go to CUPTI's delivery thread; give it up to 5 s on a loaded machine.
  bool other = false;
  for (int i = 0; i < 500 && !other; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lk(g.mu);
    for (auto id : g.completion_threads) other |= id != std::this_thread::get_id();
  }
  EXPECT_TRUE(other);
  cuptiActivityFlushAll(0);
  {
    std::lock_guard<std::mutex> lk(g.mu);
    g.refuse_buffers = true;
  }
  size_t before = 0, after = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &before);
  simgpu_test::LaunchSleep(10'000);
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(0);  // hands back the current buffer; the next record finds none
  simgpu_test::LaunchSleep(10'000);
  cudaDeviceSynchronize();
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &after);
  EXPECT_GT(after, before);
  std::lock_guard<std::mutex> lk(g.mu);
  g.refuse_buffers = false;
  g.buffer_size = 1 << 20;
}

}  // namespace
