// The recorder core in-process (unit: also runs under ASan+UBSan): rings and drop accounting
// across threads, delta timestamps, interning of strings, streams and stacks, GPU batches, device
// info and notices, read back from the file with libprotobuf.
#include "interpose/recorder.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "interpose/recorder_internal.h"
#include "interpose/sampler.h"
#include "tests/interpose/trace_read.h"

namespace idlescope {
namespace {

using testing::Flatten;
using testing::Flattened;
using testing::ReadTrace;

std::string g_dir;

ReadTrace ReadOwnTrace() {
  FlushNow();
  std::vector<std::string> files = testing::TraceFiles(g_dir);
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? ReadTrace{} : testing::ReadTraceFile(files[0]);
}

uint32_t Tid() { return static_cast<uint32_t>(gettid()); }

TEST(RecorderTest, EveryEventOfEveryThreadIsWrittenOrCountedAsDropped) {
  // 128-slot rings (IDLESCOPE_BUFFER_KB=16): the producers outrun the writer, so some events are
  // dropped; none may vanish.
  constexpr int kThreads = 4, kEvents = 20000;
  uint32_t api = InternString("unit-thread-event");
  std::vector<uint32_t> tids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tids[t] = Tid();
      for (int i = 0; i < kEvents; ++i) {
        RawEvent e;
        e.ts = 1'000'000'000ull + static_cast<uint64_t>(i) * 7;  // exact values checked below
        e.dur = static_cast<uint64_t>(i);
        e.api = api;
        e.type = ev::kFileRead;
        Record(e);
      }
    });
  }
  for (auto& t : threads) t.join();
  ReadTrace trace = ReadOwnTrace();
  std::map<uint32_t, uint64_t> written, dropped, next_seq;
  for (const idlescope::Packet& p : trace.packets) {
    if (!p.has_events()) continue;
    const auto& b = p.events();
    EXPECT_EQ(b.seq(), next_seq[b.tid()]++);
    dropped[b.tid()] += b.dropped();
    uint64_t ts = 0;
    for (const auto& e : b.events()) {
      ts += static_cast<uint64_t>(e.ts());
      if (e.api() != api) continue;
      ++written[b.tid()];
      EXPECT_EQ(ts, 1'000'000'000ull + e.dur() * 7);  // delta decoding restores every ts
    }
  }
  for (uint32_t tid : tids) {
    EXPECT_EQ(written[tid] + dropped[tid], static_cast<uint64_t>(kEvents)) << tid;
    EXPECT_GT(written[tid], 0u);
  }
}

TEST(RecorderTest, StringsAreInternedOnceAndDefinedBeforeUse) {
  uint32_t a = InternString("cudaMemcpyAsync");
  EXPECT_EQ(InternString("cudaMemcpyAsync"), a);
  uint32_t b = InternString(std::string("path\0with-nul", 13));
  EXPECT_NE(a, b);
  EXPECT_GE(a, 1u);
  std::vector<std::thread> threads;
  std::vector<uint32_t> ids(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { ids[t] = InternString("concurrently-interned"); });
  }
  for (auto& t : threads) t.join();
  for (uint32_t id : ids) EXPECT_EQ(id, ids[0]);
  RawEvent e;
  e.ts = NowNs();
  e.type = ev::kFileOpen;
  e.u.io.path = b;
  e.api = a;
  Record(e);
  Flattened f = Flatten(ReadOwnTrace());
  EXPECT_TRUE(f.ids_defined_before_use);
  EXPECT_EQ(f.strings[a], "cudaMemcpyAsync");
  EXPECT_EQ(f.strings[b], std::string("path\0with-nul", 13));
  EXPECT_EQ(f.strings[ids[0]], "concurrently-interned");
}

TEST(RecorderTest, StreamHandlesBecomeSmallIds) {
  auto event = [](uint8_t type, uint64_t handle, uint32_t device) {
    RawEvent e;
    e.ts = NowNs();
    e.type = type;
    e.u.cuda.stream = handle;
    e.u.cuda.device = device;
    Record(e);
  };
  event(ev::kCudaMemcpy, 0x7f00aa001000, 1);
  event(ev::kCudaMemcpy, 0x7f00aa001000, 1);
  event(ev::kCudaMemcpy, 1, 0);  // the legacy default stream exists once per device
  event(ev::kCudaMemcpy, 1, 1);
  event(ev::kCudaSync, 0, 1);  // cudaDeviceSynchronize: no stream
  Flattened f = Flatten(ReadOwnTrace());
  EXPECT_TRUE(f.ids_defined_before_use);
  std::vector<uint64_t> ids;
  uint64_t sync_stream = ~0ull;
  for (const auto& e : f.events) {
    if (e.event.type() == idlescope::CUDA_MEMCPY) ids.push_back(e.event.stream());
    if (e.event.type() == idlescope::CUDA_SYNC) sync_stream = e.event.stream();
  }
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], ids[1]);
  EXPECT_NE(ids[2], ids[3]);
  EXPECT_EQ(f.streams[ids[0]].handle(), 0x7f00aa001000u);
  EXPECT_EQ(f.streams[ids[0]].device(), 1);
  EXPECT_EQ(f.streams[ids[3]].handle(), 1u);
  EXPECT_EQ(f.streams[ids[3]].device(), 1);
  // Raw 0 is "no stream": the event says 0 and no stream has handle 0.
  EXPECT_EQ(sync_stream, 0u);
  for (const auto& [id, stream] : f.streams) EXPECT_NE(stream.handle(), 0u) << id;
}

// Not tail calls (the leaves must keep their frames), and not identical (GCC's -fipa-icf would
// fold them into one function).
volatile uint32_t g_sink_a, g_sink_b;
__attribute__((noinline)) uint32_t LeafA() {
  uint32_t id = CaptureStack(0);
  g_sink_a = id;
  return id;
}
__attribute__((noinline)) uint32_t LeafB() {
  uint32_t id = CaptureStack(0);
  g_sink_b = id + 1;
  return id;
}
__attribute__((noinline)) uint32_t CallerOfBoth(bool a) {
  uint32_t id = a ? LeafA() : LeafB();
  asm volatile("" ::: "memory");
  return id;
}

TEST(RecorderTest, StacksAreATrieWithSymbolizedFrames) {
  uint32_t ids[2];
  volatile int n = 2;  // a real loop: one call site
  for (int i = 0; i < n; ++i) ids[i] = CallerOfBoth(true);
  uint32_t a1 = ids[0], a2 = ids[1];
  uint32_t b = CallerOfBoth(false);
  ASSERT_NE(a1, 0u);
  EXPECT_EQ(a1, a2);  // the same stack: the same id
  EXPECT_NE(a1, b);
  RawEvent e;
  e.ts = NowNs();
  e.type = ev::kMark;
  e.stack = a1;
  Record(e);
  e.stack = b;
  Record(e);
  Flattened f = Flatten(ReadOwnTrace());
  EXPECT_TRUE(f.ids_defined_before_use);
  std::vector<std::string> fa = testing::StackFunctions(f, a1);
  std::vector<std::string> fb = testing::StackFunctions(f, b);
  ASSERT_GE(fa.size(), 3u);
  EXPECT_NE(fa[0].find("LeafA"), std::string::npos) << fa[0];
  EXPECT_NE(fb[0].find("LeafB"), std::string::npos) << fb[0];
  EXPECT_NE(fa[1].find("CallerOfBoth"), std::string::npos) << fa[1];
  // The stacks differ in the leaf, the call site in CallerOfBoth and the one in TestBody; from
  // TestBody's caller to the root they are one shared chain of nodes.
  auto up = [&](uint64_t node, int levels) {
    while (levels-- > 0) node = f.nodes[node].parent();
    return node;
  };
  EXPECT_NE(up(a1, 2), up(b, 2));
  EXPECT_EQ(up(a1, 3), up(b, 3));
  EXPECT_NE(up(a1, 3), 0u);
  // Frames carry their module and a module-relative pc.
  const idlescope::Frame& frame = f.frames[f.nodes[a1].frame()];
  EXPECT_NE(f.strings[frame.module()].find("recorder_test"), std::string::npos);
  EXPECT_GT(frame.rel_pc(), 0u);
}

// A module with thousands of dynamic symbols (gcc's cc1 has 28,902, libtorch more) is named from
// the symbolizer's sorted copy of its .dynsym, not by dladdr, which scans them all per frame: the
// names must be dladdr's.
volatile uint32_t g_sink_big;
__attribute__((noinline)) uint32_t CaptureForBigModule() {
  uint32_t id = CaptureStack(0);
  g_sink_big = id;
  return id;
}

TEST(RecorderTest, FramesOfAModuleWithThousandsOfDynamicSymbolsAreNamedAsDladdrNamesThem) {
  void* lib = dlopen(BIG_DYNSYM_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using BigFn = unsigned (*)(unsigned (*)());
  std::vector<std::pair<std::string, uint32_t>> stacks;
  for (const char* name : {"big_fn_0", "big_fn_1", "big_fn_2500", "big_fn_4998", "big_fn_4999"}) {
    auto fn = reinterpret_cast<BigFn>(dlsym(lib, name));
    ASSERT_NE(fn, nullptr) << name;
    // The callback's return address lies inside big_fn_N: dladdr names it so.
    Dl_info info;
    ASSERT_NE(dladdr(reinterpret_cast<void*>(fn), &info), 0);
    ASSERT_STREQ(info.dli_sname, name);
    uint32_t id = fn(&CaptureForBigModule) - static_cast<uint32_t>(atoi(name + 7));
    ASSERT_NE(id, 0u) << name;
    stacks.push_back({name, id});
  }
  for (const auto& [name, id] : stacks) {
    RawEvent e;
    e.ts = NowNs();
    e.type = ev::kMark;
    e.stack = id;
    Record(e);
  }
  Flattened f = Flatten(ReadOwnTrace());
  for (const auto& [name, id] : stacks) {
    std::vector<std::string> frames = testing::StackFunctions(f, id);
    ASSERT_GE(frames.size(), 2u) << name;
    EXPECT_NE(frames[0].find("CaptureForBigModule"), std::string::npos) << frames[0];
    EXPECT_EQ(frames[1], name);
    // Its module is the big library, at a module-relative pc inside the function.
    const idlescope::Frame& frame = f.frames[f.nodes[f.nodes[id].parent()].frame()];
    EXPECT_NE(f.strings[frame.module()].find("big_dynsym"), std::string::npos);
  }
}

TEST(RecorderTest, GpuActivitiesDevicesAndNotices) {
  uint32_t name = InternString("ampere_sgemm_128x64_nn");
  RawGpuActivity k;
  k.kind = 1;
  k.start = 2'000'000;
  k.dur = 500;
  k.name = name;
  RawGpuActivity m = k;
  m.kind = 2;
  m.start = 1'999'000;  // not in start order across streams
  m.name = 0;
  m.bytes = 4096;
  RecordGpu(k);
  RecordGpu(m);
  RecordGpuDropped(3);
  RawDeviceInfo d;
  d.device = 2;
  d.sm_count = 132;
  strcpy(d.name, "NVIDIA H200");
  RecordDeviceInfo(d);
  RecordDeviceInfo(d);  // written once per device
  errno = EXDEV;
  RecordNotice(NoticeSeverity::kWarning, "cupti_unavailable", "no libcupti", /*print=*/false);
  EXPECT_EQ(errno, EXDEV);
  ReadTrace t = ReadOwnTrace();
  std::vector<uint64_t> starts;
  uint64_t dropped = 0;
  int devices = 0, notices = 0;
  for (const idlescope::Packet& p : t.packets) {
    if (p.has_gpu()) {
      uint64_t s = 0;
      for (const auto& a : p.gpu().activities()) {
        s += static_cast<uint64_t>(a.start());
        starts.push_back(s);
      }
      dropped += p.gpu().dropped();
    }
    if (p.has_device() && p.device().device() == 2) {
      ++devices;
      EXPECT_EQ(p.device().name(), "NVIDIA H200");
      EXPECT_EQ(p.device().sm_count(), 132u);
    }
    if (p.has_notice() && p.notice().code() == "cupti_unavailable") {
      ++notices;
      EXPECT_EQ(p.notice().severity(), idlescope::WARNING);
      EXPECT_EQ(p.notice().text(), "no libcupti");
    }
  }
  EXPECT_EQ(starts, (std::vector<uint64_t>{2'000'000, 1'999'000}));
  EXPECT_EQ(dropped, 3u);
  EXPECT_EQ(devices, 1);
  EXPECT_EQ(notices, 1);
}

TEST(RecorderTest, GuardAndFamilies) {
  EXPECT_TRUE(RecorderActive());
  {
    HookGuard outer(Family::kIo);
    EXPECT_TRUE(outer.active());
    HookGuard inner(Family::kIo);  // a hook called from inside a hook
    EXPECT_FALSE(inner.active());
  }
  HookGuard net(Family::kNet);  // IDLESCOPE_DISABLE=net in main()
  EXPECT_FALSE(net.active());
  EXPECT_FALSE(FamilyEnabled(Family::kNet));
  EXPECT_TRUE(FamilyEnabled(Family::kCuda));
}

// The events of `tid` whose api is `api`, in file order.
std::vector<idlescope::Event> EventsOf(const Flattened& f, uint32_t tid, uint32_t api) {
  std::vector<idlescope::Event> out;
  for (const auto& e : f.events) {
    if (e.tid == tid && e.event.api() == api) out.push_back(e.event);
  }
  return out;
}

RawEvent BurstEvent(uint32_t api, uint64_t ts, uint64_t count) {
  RawEvent e;
  e.ts = ts;
  e.type = ev::kFileWrite;
  e.api = api;
  e.count = count;
  e.bytes = count * 4096;
  return e;
}

TEST(RecorderTest, PendingEventGoesBeforeTheThreadsNextEventWithItsLastContent) {
  uint32_t api = InternString("unit-pending-order");
  uint64_t t0 = NowNs();
  SetPendingEvent(BurstEvent(api, t0, 1));
  EXPECT_TRUE(PendingEventOpen());
  SetPendingEvent(BurstEvent(api, t0, 2));  // grows
  SetPendingEvent(BurstEvent(api, t0, 3));
  RawEvent launch;
  launch.ts = t0 + 1000;
  launch.type = ev::kCudaLaunch;
  launch.api = api;
  Record(launch);
  EXPECT_FALSE(PendingEventOpen());
  RecordPendingEvent();  // nothing pending: nothing written
  std::vector<idlescope::Event> events = EventsOf(Flatten(ReadOwnTrace()), Tid(), api);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type(), idlescope::FILE_WRITE);
  EXPECT_EQ(events[0].count(), 3u);
  EXPECT_EQ(events[0].bytes(), 3u * 4096);
  EXPECT_EQ(events[1].type(), idlescope::CUDA_LAUNCH);
}

TEST(RecorderTest, OpenPendingEventWaitsForItsEndAndIsWrittenOnce) {
  uint32_t api = InternString("unit-pending-once");
  SetPendingEvent(BurstEvent(api, NowNs(), 5));
  // A periodic flush leaves an open pending event where it is: it may still grow.
  EXPECT_TRUE(EventsOf(Flatten(ReadOwnTrace()), Tid(), api).empty());
  EXPECT_TRUE(PendingEventOpen());
  RecordPendingEvent();
  EXPECT_FALSE(PendingEventOpen());
  std::vector<idlescope::Event> events = EventsOf(Flatten(ReadOwnTrace()), Tid(), api);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count(), 5u);
}

TEST(RecorderTest, UpdatedCountersGoWithTheRestOfThePendingEvent) {
  uint32_t api = InternString("unit-pending-update");
  uint64_t t0 = NowNs();
  RawEvent e = BurstEvent(api, t0, 1);
  e.dur = 10;
  e.u.io.fd = 9;
  SetPendingEvent(e);
  UpdatePendingEvent(/*dur=*/20, /*bytes=*/2 * 4096, /*count=*/2);
  UpdatePendingEvent(/*dur=*/35, /*bytes=*/3 * 4096, /*count=*/3);
  RecordPendingEvent();
  std::vector<idlescope::Event> events = EventsOf(Flatten(ReadOwnTrace()), Tid(), api);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type(), idlescope::FILE_WRITE);
  EXPECT_EQ(events[0].count(), 3u);
  EXPECT_EQ(events[0].bytes(), 3u * 4096);
  EXPECT_EQ(events[0].dur(), 35u);
  EXPECT_EQ(events[0].fd(), 9);
}

TEST(RecorderTest, PendingEventOfAnEndingThreadIsKept) {
  uint32_t api = InternString("unit-pending-thread-end");
  uint32_t tid = 0;
  std::thread t([&] {
    tid = Tid();
    SetPendingEvent(BurstEvent(api, NowNs(), 7));
  });
  t.join();
  std::vector<idlescope::Event> events = EventsOf(Flatten(ReadOwnTrace()), tid, api);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].count(), 7u);
}

// The thread sampler (interpose/sampler.cc): threads that record device work are looked at from
// the writer; a thread that computes is a run of CPU work, one that sleeps a blocked run in its
// call; threads that never fed a GPU are not sampled. Runs are THREAD_SAMPLE events in the
// writer's own batch, naming the thread. Under ThreadSanitizer too (threaded_recorder).
TEST(RecorderTest, SamplerRecordsWhatThreadsThatFeedAGpuDo) {
  std::atomic<uint32_t> busy_tid{0}, sleepy_tid{0}, bystander_tid{0};
  auto feed_gpu = [] {
    RawEvent e;
    e.ts = NowNs();
    e.type = ev::kCudaLaunch;
    e.u.cuda.device = 0;
    Record(e);
  };
  std::atomic<uint64_t> busy_cpu_ns{0}, busy_end{0}, sleepy_end{0};
  auto thread_cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  std::thread busy([&] {
    busy_tid = Tid();
    feed_gpu();
    const uint64_t cpu0 = thread_cpu_ns();
    const uint64_t until = NowNs() + 150'000'000;
    volatile uint64_t n = 0;
    while (NowNs() < until) n = n + 1;
    busy_cpu_ns = thread_cpu_ns() - cpu0;
    busy_end = NowNs();
  });
  std::thread sleepy([&] {
    sleepy_tid = Tid();
    feed_gpu();
    usleep(150'000);
    sleepy_end = NowNs();
  });
  std::thread bystander([&] {
    bystander_tid = Tid();
    const uint64_t until = NowNs() + 150'000'000;
    volatile uint64_t n = 0;
    while (NowNs() < until) n = n + 1;
  });
  busy.join();
  sleepy.join();
  bystander.join();
  // A thread's open run ends at the sampler's next look after the thread did (the look that
  // finds it gone), where the thread said it ended: read until both threads' runs reach their
  // ends in the file (a loaded machine delays the writer, whose flush may come in between), at
  // most 10 s.
  std::map<uint32_t, uint64_t> reached;
  std::map<uint32_t, uint64_t> cpu_ns, blocked_ns, runs;
  std::set<int32_t> sleepy_calls;
  std::string sleepy_runs;  // for the failure message
  ReadTrace trace;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    trace = ReadOwnTrace();
    reached.clear();
    for (const idlescope::Packet& p : trace.packets) {
      if (!p.has_events()) continue;
      uint64_t ts = 0;  // delta-decoded
      for (const auto& e : p.events().events()) {
        ts += static_cast<uint64_t>(e.ts());
        if (e.type() != THREAD_SAMPLE) continue;
        reached[e.tid()] = std::max(reached[e.tid()], ts + e.dur());
      }
    }
    if (reached[busy_tid] >= busy_end && reached[sleepy_tid] >= sleepy_end) break;
    usleep(10'000);
  }
  for (const idlescope::Packet& p : trace.packets) {
    if (!p.has_events()) continue;
    for (const auto& e : p.events().events()) {
      if (e.type() != THREAD_SAMPLE) continue;
      EXPECT_NE(p.events().tid(), e.tid()) << "a run is in the sampler's batch, not the thread's";
      ++runs[e.tid()];
      cpu_ns[e.tid()] += e.cpu_ns();
      if (e.tid() == sleepy_tid) {
        sleepy_runs += " [ts " + std::to_string(e.ts()) + " dur " + std::to_string(e.dur()) +
                       " cpu " + std::to_string(e.cpu_ns()) + " wait " +
                       std::to_string(e.wait_ns()) + " syscall " +
                       (e.has_syscall() ? std::to_string(e.syscall()) : "-") + "]";
      }
      if (e.has_syscall()) {
        blocked_ns[e.tid()] += e.dur() - std::min<uint64_t>(e.dur(), e.cpu_ns() + e.wait_ns());
        if (e.tid() == sleepy_tid) sleepy_calls.insert(e.syscall());
      }
    }
  }
  EXPECT_EQ(runs.count(bystander_tid), 0u) << "a thread that never fed a GPU was sampled";
  ASSERT_GT(runs[busy_tid], 0u);
  ASSERT_GT(runs[sleepy_tid], 0u);
  // The runs reach each thread's end: the interval from the last look to the thread's end is
  // taken from what the thread said as it ended (sampler::ThisThreadExits).
  EXPECT_GE(reached[busy_tid], busy_end.load());
  EXPECT_GE(reached[sleepy_tid], sleepy_end.load()) << "runs:" << sleepy_runs;
  // The busy thread's runs hold all of its CPU time (as much as a loaded machine gave it), from
  // its first call that fed the GPU to its end.
  EXPECT_GE(cpu_ns[busy_tid], busy_cpu_ns.load());
  // The sleepy one was blocked, in its sleep (clock_nanosleep, or nanosleep where usleep uses it).
  EXPECT_GT(blocked_ns[sleepy_tid], 50'000'000u) << "runs:" << sleepy_runs;
  EXPECT_TRUE(sleepy_calls.count(SYS_clock_nanosleep) || sleepy_calls.count(SYS_nanosleep));
}

// A thread that shares one CPU with a spinning thread waits for it about half the time and is
// never blocked: its runs say so (their CPU time and waits fill them). The kernel charges a wait
// when the thread gets the CPU back, so a look inside a wait sees it only later (LookAt).
TEST(RecorderTest, SamplerTellsWaitsForACpuFromBlocking) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  std::atomic<uint32_t> crowded_tid{0};
  std::atomic<bool> go{false};
  auto spin = [](uint64_t ns) {
    const uint64_t until = NowNs() + ns;
    volatile uint64_t n = 0;
    while (NowNs() < until) n = n + 1;
  };
  std::thread crowded([&] {
    // Device work first: the writer thread it may start is not confined to the CPU.
    crowded_tid = Tid();
    RawEvent e;
    e.ts = NowNs();
    e.type = ev::kCudaLaunch;
    e.u.cuda.device = 0;
    Record(e);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    go = true;
    spin(300'000'000);
  });
  std::thread neighbour([&] {
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    while (!go) sched_yield();
    spin(300'000'000);
  });
  crowded.join();
  neighbour.join();
  // Its runs reach the file with the writer's flushes (a loaded machine delays them): read until
  // they cover most of its 300 ms, at most 10 s.
  uint64_t dur = 0, accounted = 0, waited = 0;
  for (int attempt = 0; attempt < 1000 && dur < 250'000'000; ++attempt) {
    dur = accounted = waited = 0;
    for (const idlescope::Packet& p : ReadOwnTrace().packets) {
      if (!p.has_events()) continue;
      for (const auto& e : p.events().events()) {
        if (e.type() != THREAD_SAMPLE || e.tid() != crowded_tid) continue;
        dur += e.dur();
        accounted += std::min<uint64_t>(e.dur(), e.cpu_ns() + e.wait_ns());
        waited += e.wait_ns();
      }
    }
    if (dur < 250'000'000) usleep(10'000);
  }
  ASSERT_GT(dur, 100'000'000u);
  std::printf("crowded thread: %.1f%% of its runs accounted, %.1f%% waiting\n",
              100.0 * accounted / dur, 100.0 * waited / dur);
  EXPECT_GT(accounted, dur * 9 / 10) << "of " << dur << " ns, " << waited << " waiting";
  EXPECT_GT(waited, dur / 5) << "of " << dur << " ns";
}

// The trace file of process `pid` in the test's directory (flushed first when it is ours).
ReadTrace ReadTraceOf(uint32_t pid) {
  if (pid == static_cast<uint32_t>(getpid())) FlushNow();
  for (const std::string& file : testing::TraceFiles(g_dir)) {
    ReadTrace t = testing::ReadTraceFile(file);
    if (!t.packets.empty() && t.packets[0].has_header() && t.packets[0].header().pid() == pid) {
      return t;
    }
  }
  return {};
}

// A forked child's runs as its parent's sampler wrote them (Event.sampled_pid).
struct WorkerRuns {
  uint64_t runs = 0, cpu_ns = 0, last_end = 0;
  std::set<uint32_t> tids;
};
std::map<uint32_t, WorkerRuns> RunsByWorker(const ReadTrace& trace) {
  std::map<uint32_t, WorkerRuns> out;
  for (const idlescope::Packet& p : trace.packets) {
    if (!p.has_events()) continue;
    uint64_t ts = 0;
    for (const auto& e : p.events().events()) {
      ts += static_cast<uint64_t>(e.ts());
      if (e.type() != THREAD_SAMPLE || e.sampled_pid() == 0) continue;
      WorkerRuns& w = out[e.sampled_pid()];
      ++w.runs;
      w.cpu_ns += e.cpu_ns();
      w.last_end = std::max(w.last_end, ts + e.dur());
      w.tids.insert(e.tid());
    }
  }
  return out;
}

// Worker processes of the family (sampler.h, NoteChild; the fork hook calls it in the preload
// library): children forked by a process whose writer samples are looked at from that writer
// while they run its program with no writer of their own. A child that computes has runs of CPU
// work; one that exec's, or starts its own writer (and then samples itself), stops being looked
// at within a family check (100 ms); the worker threads sampled are at most 16; children that
// end at once are never adopted. Their runs are the parent's THREAD_SAMPLE events with the
// child's pid.
TEST(RecorderTest, SamplerLooksAtForkedWorkersWhileTheyAreOnes) {
  RawEvent launch;
  launch.ts = NowNs();
  launch.type = ev::kCudaLaunch;
  launch.u.cuda.device = 0;
  Record(launch);  // this process feeds a GPU: its writer samples
  struct Shared {
    std::atomic<int> go_exec{0}, go_writer{0};
    std::atomic<uint64_t> exec_ns{0}, own_writer_ns{0};
  };
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  Shared* shared = new (mem) Shared();
  auto child = [](auto body) {
    const pid_t pid = fork();
    if (pid == 0) {
      body();
      _exit(0);
    }
    sampler::NoteChild(static_cast<uint32_t>(pid));
    return static_cast<uint32_t>(pid);
  };
  auto process_cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  // Computes 600 ms of CPU time, however long a loaded machine makes that.
  const uint32_t computes = child([&] {
    volatile uint64_t n = 0;
    while (process_cpu_ns() < 600'000'000) n = n + 1;
  });
  // Sleeps until it was looked at, then exec's a program without us.
  const uint32_t execs = child([&] {
    while (shared->go_exec.load() == 0) usleep(1000);
    shared->exec_ns = NowNs();
    execl("/bin/sleep", "sleep", "2", static_cast<char*>(nullptr));
  });
  // Sleeps until it was looked at, then feeds a GPU itself: its own writer samples it.
  const uint32_t own_writer = child([&] {
    while (shared->go_writer.load() == 0) usleep(1000);
    RawEvent e;
    e.ts = NowNs();
    e.type = ev::kCudaLaunch;
    e.u.cuda.device = 0;
    Record(e);
    FlushNow();  // done by its writer, now running (its mark is set as it starts)
    shared->own_writer_ns = NowNs();
    const uint64_t until = NowNs() + 1'500'000'000;
    volatile uint64_t n = 0;
    while (NowNs() < until) n = n + 1;
    FlushNow();
  });
  // More threads than the sampler looks at in all workers.
  const uint32_t many = child([] {
    std::vector<std::thread> threads;
    for (int i = 0; i < 20; ++i) threads.emplace_back([] { usleep(800'000); });
    for (auto& t : threads) t.join();
  });
  // A shell loop's children: gone before they could be adopted (those reaped within 90 ms of
  // their fork; a loaded machine may keep one alive longer, and it is then a worker).
  std::vector<uint32_t> short_lived;
  for (int i = 0; i < 40; ++i) {
    const uint32_t pid = child([] {});
    const uint64_t forked = NowNs();
    waitpid(static_cast<pid_t>(pid), nullptr, 0);
    if (NowNs() < forked + 90'000'000) short_lived.push_back(pid);
  }
  // Let the two wait until the parent's file shows they were looked at (at most 10 s each).
  const uint32_t self = static_cast<uint32_t>(getpid());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::map<uint32_t, WorkerRuns> runs = RunsByWorker(ReadTraceOf(self));
    if (runs[execs].runs > 0) shared->go_exec = 1;
    if (runs[own_writer].runs > 0) shared->go_writer = 1;
    if (shared->go_exec && shared->go_writer) break;
    usleep(10'000);
  }
  if (!(shared->go_exec && shared->go_writer)) {
    for (const auto& [pid, w] : RunsByWorker(ReadTraceOf(self))) {
      std::printf("worker %u: %lu runs, %zu threads\n", pid, static_cast<unsigned long>(w.runs),
                  w.tids.size());
    }
    std::printf("computes %u execs %u own_writer %u many %u\n", computes, execs, own_writer, many);
  }
  EXPECT_TRUE(shared->go_exec && shared->go_writer) << "children not adopted in 10 s";
  shared->go_exec = shared->go_writer = 1;
  for (uint32_t pid : {computes, execs, own_writer, many}) {
    int status = 0;
    waitpid(static_cast<pid_t>(pid), &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid;
  }
  // Runs end at the look that finds their thread gone, and reach the file with the next flush
  // (a loaded machine delays both): read until the two that ran last are there, at most 10 s.
  std::map<uint32_t, WorkerRuns> runs;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    runs = RunsByWorker(ReadTraceOf(self));
    if (runs[computes].cpu_ns >= 100'000'000 && runs[many].tids.size() > 1) break;
    usleep(10'000);
  }
  EXPECT_GE(runs[computes].cpu_ns, 100'000'000u) << "of its 600 ms of CPU time";
  EXPECT_EQ(runs[computes].tids, std::set<uint32_t>{computes});
  // Not looked at past the first family check after its exec (100 ms; a loaded machine may delay
  // the exec itself after the time taken, or the check), long before the 2 s its program runs.
  ASSERT_GT(runs[execs].runs, 0u);
  EXPECT_LT(runs[execs].last_end, shared->exec_ns + 1'000'000'000)
      << (runs[execs].last_end - shared->exec_ns) / 1000 << " us after the exec";
  // Nor past the first one after it started its own writer, which samples it from then on (its
  // 1.5 s of CPU work after that).
  ASSERT_GT(runs[own_writer].runs, 0u);
  EXPECT_LT(runs[own_writer].last_end, shared->own_writer_ns + 1'000'000'000)
      << (runs[own_writer].last_end - shared->own_writer_ns) / 1000 << " us after its writer";
  bool samples_itself = false;
  for (const idlescope::Packet& p : ReadTraceOf(own_writer).packets) {
    if (!p.has_events()) continue;
    for (const auto& e : p.events().events()) {
      samples_itself |= e.type() == THREAD_SAMPLE && e.tid() == own_writer && e.sampled_pid() == 0;
    }
  }
  EXPECT_TRUE(samples_itself);
  // 21 threads, at most 16 looked at in all workers.
  EXPECT_GT(runs[many].tids.size(), 1u);
  EXPECT_LE(runs[many].tids.size(), 16u);
  for (uint32_t pid : short_lived) EXPECT_EQ(runs.count(pid), 0u) << "short-lived child " << pid;
  // The children's files are not this process's (ReadOwnTrace expects one file).
  for (const std::string& file : testing::TraceFiles(g_dir)) {
    ReadTrace t = testing::ReadTraceFile(file);
    if (t.packets.empty() || !t.packets[0].has_header() || t.packets[0].header().pid() != self) {
      unlink(file.c_str());
    }
  }
  munmap(mem, 4096);
}

TEST(RecorderTest, EntryPointsKeepErrno) {
  errno = ENOTTY;
  RawEvent e;
  e.ts = NowNs();
  Record(e);
  EXPECT_EQ(errno, ENOTTY);
  InternString("a-new-string-for-errno");
  EXPECT_EQ(errno, ENOTTY);
  CaptureStack();
  EXPECT_EQ(errno, ENOTTY);
  FlushNow();
  EXPECT_EQ(errno, ENOTTY);
}

}  // namespace
}  // namespace idlescope

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  char tmpl[] = "/tmp/idlescope-unit-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  idlescope::g_dir = tmpl;
  setenv("IDLESCOPE_OUT", tmpl, 1);
  setenv("IDLESCOPE_BUFFER_KB", "16", 1);
  setenv("IDLESCOPE_DISABLE", "net", 1);
  setenv("IDLESCOPE_FLUSH_MS", "5", 1);
  idlescope::internal::Init();
  int rc = RUN_ALL_TESTS();
  std::string cmd = std::string("rm -rf '") + tmpl + "'";
  if (system(cmd.c_str()) != 0) return 1;
  return rc;
}
