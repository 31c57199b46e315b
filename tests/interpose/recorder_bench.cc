// Recorder figures (issue 2 Done-when 7, issue 4 stack bullet):
//   - Record() cost per event on the calling thread (target < 50 ns), alone and with what a hook
//     adds around it (guard, two clock reads);
//   - encoded bytes per event for a typical training-loop mix (target <= 16; the benchmark fails
//     above it), and per event type;
//   - CaptureStack() for a repeated stack (issue 16's target: a native stack under 1 us), and the
//     unwinders side by side in the same run: ours (interpose/unwind.cc, the cached CFI walk),
//     libunwind's unw_backtrace (what CaptureStack used before), a libunwind cursor walk, and
//     libgcc's _Unwind_Backtrace.
// The recorder core is linked in (no preload), started by hand with IDLESCOPE_OUT in a temp dir.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <libunwind.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwind.h>

#include <array>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"
#include "interpose/trace_encoder.h"
#include "interpose/unwind.h"
#include "interpose/wire.h"
#include "tests/interpose/trace_read.h"

namespace idlescope {
namespace {

std::string g_dir;

// The one file in g_dir.
std::string TracePath() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return g_dir + "/" + host + "-" + std::to_string(getpid()) + ".idlescope";
}

off_t TraceBytes() {
  struct stat st;
  return stat(TracePath().c_str(), &st) == 0 ? st.st_size : 0;
}

RawEvent LaunchEvent(uint64_t ts) {
  RawEvent e;
  e.ts = ts;
  e.dur = 3100;
  e.api = 1;
  e.type = ev::kCudaLaunch;
  e.u.cuda.stream = 0x55550000aa00;
  e.u.cuda.async = 1;  // as interpose/cuda/cudart.h fills a launch
  return e;
}

// Record() alone: batches of 1024 events, the ring drained (untimed) between batches so that every
// timed event takes the real path, never the drop path.
void BM_Record(benchmark::State& state) {
  RawEvent e = LaunchEvent(NowNs());
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) {
      e.ts += 5000;
      Record(e);
    }
    state.PauseTiming();
    FlushNow();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * 1024);
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 1024),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Record);

// The trace clock alone (a hook reads it twice).
void BM_NowNs(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(NowNs());
}
BENCHMARK(BM_NowNs);

// What a hook adds on the calling thread: the guard, two clock reads, filling the slot, Record.
void BM_HookPath(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) {
      HookGuard guard(Family::kCuda);
      if (!guard.active()) continue;
      uint64_t start = NowNs();
      benchmark::ClobberMemory();
      RawEvent e = LaunchEvent(start);
      e.dur = NowNs() - start;
      e.u.cuda.correlation = static_cast<uint64_t>(i);
      Record(e);
    }
    state.PauseTiming();
    FlushNow();
    state.ResumeTiming();
  }
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 1024),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_HookPath);

// An I/O burst as hooks/io_record.cc keeps it: its first call publishes the event as the thread's
// pending event (SetPendingEvent: a seqlock-framed 96-byte copy), every merged call after it only
// the grown counters (UpdatePendingEvent: three words); 64 calls per burst, then it is appended.
// BM_PendingEventSet republishes the whole event at every call, for comparison.
void BM_PendingEventUpdate(benchmark::State& state) {
  RawEvent e;
  e.type = ev::kFileWrite;
  e.api = 1;
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) {
      e.count += 1;
      e.bytes += 4096;
      e.dur += 700;
      if ((i & 63) == 0) {
        SetPendingEvent(e);
      } else {
        UpdatePendingEvent(e.dur, e.bytes, e.count);
      }
      if ((i & 63) == 63) RecordPendingEvent();
    }
    state.PauseTiming();
    FlushNow();
    state.ResumeTiming();
  }
  state.counters["ns_per_update"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 1024),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PendingEventUpdate);

void BM_PendingEventSet(benchmark::State& state) {
  RawEvent e;
  e.type = ev::kFileWrite;
  e.api = 1;
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) {
      e.count += 1;
      e.bytes += 4096;
      SetPendingEvent(e);
      if ((i & 63) == 63) RecordPendingEvent();
    }
    state.PauseTiming();
    FlushNow();
    state.ResumeTiming();
  }
  state.counters["ns_per_update"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 1024),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PendingEventSet);

// One training step of a data-parallel job as the hooks record it: a pinned H2D copy of the
// batch, 8 kernel launches, an all-reduce, a stream sync, a D2H copy of the loss, and every 4th
// step a checkpoint write burst. Deltas and durations as seen on real jobs (us apart, launches
// a few us, sync ms). Stacks are captured for copies, syncs, NCCL and I/O (few distinct ones).
// Launches are 65% of the events here, fewer than in real traces: a PyTorch training run traced
// on an H200 (examples/pytorch/batch_size.py) recorded 46k host events, 82% of them launches
// (the rest mostly file opens and reads while importing), and a real model's step launches
// hundreds of kernels per copy or sync. CUPTI's correlation ids advance by one per runtime call;
// PyTorch makes about ten other calls between two launches, so they advance by 12 per launch.
void TypicalStep(uint64_t* ts, uint64_t step, uint64_t* correlation, std::vector<RawEvent>* out) {
  auto add = [&](RawEvent e, uint64_t gap) {
    *ts += gap;
    e.ts = *ts;
    *ts += e.dur;
    out->push_back(e);
  };
  RawEvent copy;
  copy.type = ev::kCudaMemcpy;
  copy.api = 2;
  copy.stack = 11;
  copy.dur = 9000 + step % 97;
  copy.bytes = 4 << 20;
  copy.u.cuda.stream = 0x55550000aa00;
  copy.u.cuda.copy_kind = ev::kH2D;
  copy.u.cuda.host_mem = ev::kPinned;
  copy.u.cuda.async = 1;
  copy.u.cuda.correlation = *correlation += 12;
  add(copy, 2000 + step % 13);
  for (int k = 0; k < 8; ++k) {
    RawEvent launch = LaunchEvent(0);
    launch.dur = 2500 + (k * 37 + step) % 900;
    launch.u.cuda.correlation = *correlation += 12;
    add(launch, 1200 + (k * 131 + step) % 700);
  }
  RawEvent nccl;
  nccl.type = ev::kNcclCollective;
  nccl.api = 3;
  nccl.stack = 12;
  nccl.dur = 15000 + step % 1000;
  nccl.bytes = 100 << 20;
  nccl.count = 25 << 20;
  nccl.u.nccl.comm = 0x9e3779b97f4a7c15ull;
  nccl.u.nccl.seq = step + 1;
  nccl.u.nccl.stream = 0x55550000bb00;
  nccl.u.nccl.rank = 3;
  nccl.u.nccl.nranks = 8;
  nccl.u.nccl.op = 1;
  nccl.u.nccl.dtype = 7;
  add(nccl, 3000);
  RawEvent sync;
  sync.type = ev::kCudaSync;
  sync.api = 4;
  sync.stack = 13;
  sync.dur = 4'000'000 + (step * 7919) % 500'000;
  sync.u.cuda.stream = 0x55550000aa00;
  sync.u.cuda.correlation = *correlation += 12;
  add(sync, 800);
  RawEvent loss = copy;
  loss.dur = 30000;
  loss.bytes = 4;
  loss.stack = 14;
  loss.u.cuda.copy_kind = ev::kD2H;
  loss.u.cuda.host_mem = ev::kPageable;
  loss.u.cuda.async = 0;
  loss.u.cuda.correlation = *correlation += 12;
  add(loss, 500);
  if (step % 4 == 0) {
    RawEvent write;
    write.type = ev::kFileWrite;
    write.api = 5;
    write.stack = 15;
    write.dur = 2'000'000;
    write.bytes = 64 << 20;
    write.count = 64;
    write.u.io.path = 6;
    write.u.io.fd = 7;
    write.u.io.fs_type = 1;
    add(write, 10000);
  }
}

void BM_EncodedSizeTypicalMix(benchmark::State& state) {
  // Warm up: ids are interned and defined once per file, not per event.
  InternString("cudaLaunchKernel");
  std::vector<RawEvent> events;
  uint64_t ts = NowNs(), correlation = 1'000'000;  // a job some minutes in
  for (uint64_t step = 0; step < 2000; ++step) TypicalStep(&ts, step, &correlation, &events);
  double bytes_per_event = 0;
  off_t before = 0, after = 0;
  for (auto _ : state) {
    FlushNow();
    before = TraceBytes();
    for (size_t i = 0; i < events.size(); ++i) {
      Record(events[i]);
      if (i % 2048 == 2047) FlushNow();  // as the writer would, before the ring fills
    }
    FlushNow();
    after = TraceBytes();
    bytes_per_event = static_cast<double>(after - before) / events.size();
  }
  state.counters["bytes_per_event"] = bytes_per_event;
  // Where the bytes go, from the last iteration's packets as written: each Event's bytes (tag and
  // length included) to its type, a LaunchRun's to its launches, shared equally; what is left
  // (packet framing, batch headers, interned data) per event in bytes_overhead. The same packets
  // in format v1 (as the reader expands them; libprotobuf's serialization is byte for byte what
  // the v1 encoder wrote) give the v1_* figures: the baseline, measured on the same events.
  testing::ReadTrace whole = testing::ParseTrace(testing::Slurp(TracePath()), /*expand=*/false);
  const size_t last =
      testing::ParseTrace(testing::Slurp(TracePath()).substr(before), false).packets.size();
  FormatExpander expander(kTraceFormatVersion);
  std::map<int, std::pair<double, double>> by_type, v1_by_type;  // type -> (bytes, count)
  double in_events = 0, v1_bytes = 0;
  auto framed = [](size_t size) {
    return 1.0 + wire::VarintSize(size) + static_cast<double>(size);
  };
  for (size_t k = 0; k < whole.packets.size(); ++k) {
    idlescope::Packet p = whole.packets[k];
    const bool counted = k + last >= whole.packets.size();
    if (counted && p.has_events()) {
      for (const idlescope::Event& e : p.events().events()) {
        const int type = e.launches_size() > 0 ? int{ev::kCudaLaunch} : int{e.type()};
        by_type[type].first += framed(e.ByteSizeLong());
        int n = 1;
        if (e.launches_size() > 0) {
          n = 0;
          for (const idlescope::LaunchRun& r : e.launches()) n += r.ts_size();
        }
        by_type[type].second += n;
        in_events += framed(e.ByteSizeLong());
      }
    }
    std::string error;
    expander.Expand(&p, &error);
    if (!counted) continue;
    if (p.has_interned()) p.mutable_interned()->clear_comms();
    if (p.has_interned() && p.interned().ByteSizeLong() == 0) continue;
    v1_bytes += framed(p.ByteSizeLong());
    if (!p.has_events()) continue;
    for (const idlescope::Event& e : p.events().events()) {
      v1_by_type[e.type()].first += framed(e.ByteSizeLong());
      v1_by_type[e.type()].second += 1;
    }
  }
  const std::map<int, const char*> names = {{ev::kCudaMemcpy, "memcpy"},
                                            {ev::kCudaSync, "sync"},
                                            {ev::kCudaLaunch, "launch"},
                                            {ev::kNcclCollective, "nccl"},
                                            {ev::kFileWrite, "write"}};
  for (const auto& [type, sum] : by_type) {
    state.counters[std::string("bytes_") + names.at(type)] = sum.first / sum.second;
  }
  for (const auto& [type, sum] : v1_by_type) {
    state.counters[std::string("v1_") + names.at(type)] = sum.first / sum.second;
  }
  const double n = static_cast<double>(events.size());
  state.counters["bytes_overhead"] = (static_cast<double>(after - before) - in_events) / n;
  state.counters["v1_bytes_per_event"] = v1_bytes / n;
  state.counters["events"] = n;
  if (whole.truncated || bytes_per_event > 16) {
    state.SkipWithError("above the 16-byte target (or the trace did not read back)");
  }
}
BENCHMARK(BM_EncodedSizeTypicalMix)->Iterations(3)->Unit(benchmark::kMillisecond);

// CaptureStack from 20 frames deep, the same call site every time (a training loop's copy).
__attribute__((noinline)) uint32_t Deep(int depth, uint32_t (*leaf)()) {
  if (depth == 0) return leaf();
  uint32_t r = Deep(depth - 1, leaf);
  benchmark::DoNotOptimize(r);
  return r;
}
uint32_t CaptureLeaf() { return CaptureStack(1); }

void BM_CaptureStackRepeated(benchmark::State& state) {
  uint32_t first = 0;
  for (auto _ : state) {
    uint32_t id = Deep(20, CaptureLeaf);
    if (first == 0) first = id;
    if (id != first || id == 0) state.SkipWithError("a repeated stack changed its id");
  }
}
BENCHMARK(BM_CaptureStackRepeated);

// CaptureStack from 20 frames deep at 64 call sites in turn: each capture walks the trie (the
// per-thread repeat check misses), as for a hook called from many places.
template <int kSite>
__attribute__((noinline)) uint32_t CaptureAt() {
  uint32_t id = CaptureStack(1);
  benchmark::DoNotOptimize(id);
  return id + kSite * 0;
}
template <int... kSites>
constexpr std::array<uint32_t (*)(), sizeof...(kSites)> Sites(
    std::integer_sequence<int, kSites...>) {
  return {&CaptureAt<kSites>...};
}
constexpr auto kSites = Sites(std::make_integer_sequence<int, 64>());

void BM_CaptureStackManySites(benchmark::State& state) {
  size_t i = 0;
  for (auto _ : state) {
    uint32_t id = Deep(20, kSites[i++ & 63]);
    if (id == 0) state.SkipWithError("no stack");
  }
}
BENCHMARK(BM_CaptureStackManySites);

// The unwinders themselves, 24 frames: ours (CaptureStack's), libunwind's unw_backtrace (what
// CaptureStack used before), a libunwind cursor walk, and libgcc's _Unwind_Backtrace.
using UnwBacktrace = int (*)(void**, int);
using UnwGetcontext = int (*)(unw_context_t*);
using UnwInitLocal = int (*)(unw_cursor_t*, unw_context_t*);
using UnwStep = int (*)(unw_cursor_t*);
using UnwGetReg = int (*)(unw_cursor_t*, unw_regnum_t, unw_word_t*);
void* g_libunwind = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
template <typename F>
F Sym(const char* name) {
  return g_libunwind ? reinterpret_cast<F>(dlsym(g_libunwind, name)) : nullptr;
}
UnwBacktrace g_unw_backtrace = Sym<UnwBacktrace>("unw_backtrace");
UnwGetcontext g_getcontext = Sym<UnwGetcontext>("_Ux86_64_getcontext");
UnwInitLocal g_init_local = Sym<UnwInitLocal>("_ULx86_64_init_local");
UnwStep g_step = Sym<UnwStep>("_ULx86_64_step");
UnwGetReg g_get_reg = Sym<UnwGetReg>("_ULx86_64_get_reg");

uint32_t CfiWalkLeaf() {
  uintptr_t pcs[24];
  return static_cast<uint32_t>(unwind::Backtrace(pcs, 24));
}
// The same walk with a thread's walk cache (what CaptureStack passes: unwind.h, WalkCache).
uint32_t CachedCfiWalkLeaf() {
  static std::vector<char> memory(unwind::WalkCacheBytes(), 0);
  uintptr_t pcs[24];
  return static_cast<uint32_t>(
      unwind::Backtrace(pcs, 24, reinterpret_cast<unwind::WalkCache*>(memory.data())));
}
uint32_t UnwBacktraceLeaf() {
  void* pcs[24];
  return static_cast<uint32_t>(g_unw_backtrace(pcs, 24));
}
uint32_t UnwCursorLeaf() {
  unw_context_t ctx;
  unw_cursor_t cursor;
  g_getcontext(&ctx);
  g_init_local(&cursor, &ctx);
  uint32_t n = 0;
  void* pcs[24];
  while (n < 24 && g_step(&cursor) > 0) {
    unw_word_t ip;
    g_get_reg(&cursor, UNW_REG_IP, &ip);
    pcs[n++] = reinterpret_cast<void*>(ip);
  }
  benchmark::DoNotOptimize(pcs);
  return n;
}
struct GccTrace {
  void** pcs;
  int n;
};
_Unwind_Reason_Code GccStep(_Unwind_Context* ctx, void* arg) {
  auto* t = static_cast<GccTrace*>(arg);
  if (t->n >= 24) return _URC_END_OF_STACK;
  t->pcs[t->n++] = reinterpret_cast<void*>(_Unwind_GetIP(ctx));
  return _URC_NO_REASON;
}
uint32_t GccLeaf() {
  void* pcs[24];
  GccTrace t{pcs, 0};
  _Unwind_Backtrace(GccStep, &t);
  return static_cast<uint32_t>(t.n);
}

void BM_Unwind(benchmark::State& state, uint32_t (*leaf)()) {
  if ((leaf == CfiWalkLeaf || leaf == CachedCfiWalkLeaf) && !unwind::UsesCfiWalk()) {
    state.SkipWithError("no _dl_find_object: CaptureStack uses libgcc's walk");
    return;
  }
  if (leaf != GccLeaf && leaf != CfiWalkLeaf && leaf != CachedCfiWalkLeaf &&
      g_init_local == nullptr) {
    state.SkipWithError("libunwind.so.8 not installed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(Deep(20, leaf));
}
BENCHMARK_CAPTURE(BM_Unwind, idlescope_cfi_walk, CfiWalkLeaf);
BENCHMARK_CAPTURE(BM_Unwind, idlescope_cfi_walk_cached, CachedCfiWalkLeaf);
BENCHMARK_CAPTURE(BM_Unwind, unw_backtrace, UnwBacktraceLeaf);
BENCHMARK_CAPTURE(BM_Unwind, unw_cursor, UnwCursorLeaf);
BENCHMARK_CAPTURE(BM_Unwind, gcc_unwind_backtrace, GccLeaf);

}  // namespace
}  // namespace idlescope

int main(int argc, char** argv) {
  char tmpl[] = "/tmp/idlescope-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  idlescope::g_dir = tmpl;
  setenv("IDLESCOPE_OUT", tmpl, 1);
  setenv("IDLESCOPE_QUIET", "1", 1);
  // No thread sampler: its runs (of the threads that record device work here) are no part of the
  // figures measured (the overhead table measures it: tests/bench/run.sh, section 3b).
  setenv("IDLESCOPE_SAMPLE_HZ", "0", 1);
  idlescope::internal::Init();
  if (!idlescope::RecorderActive()) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  idlescope::internal::Shutdown(idlescope::trace::kExitNormal, 0, false);
  std::string cmd = std::string("rm -rf '") + tmpl + "'";
  return system(cmd.c_str()) == 0 ? 0 : 1;
}
