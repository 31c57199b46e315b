// The thread sampler's runs in attribution (docs/attribution.md, "Samples"): each rule fires, and a
// close case where it must not.
#include <gtest/gtest.h>

#include "analyzer/analysis/event_classes.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr uint32_t kTid = kOneGapTid;  // OneGap's launching thread (job_builder.h)
constexpr uint32_t kOtherTid = 101;
constexpr uint64_t kGiB = 1ull << 30;

// A THREAD_SAMPLE run of thread `tid` over [start_ms, end_ms): `cpu` and `wait` its fractions on
// a CPU and runnable waiting for one; the rest blocked.
HostEvent Sample(JobBuilder& job, uint32_t process, uint32_t tid, double start_ms, double end_ms,
                 double cpu, double wait) {
  HostEvent e = job.Event(process, tid, THREAD_SAMPLE, start_ms, end_ms);
  const double ns = static_cast<double>(e.end - e.start);
  e.cpu_ns = static_cast<uint64_t>(cpu * ns);
  e.wait_ns = static_cast<uint64_t>(wait * ns);
  e.thread_state = 'R';
  e.syscall = HostEvent::kNotBlocked;
  return e;
}

TEST(Samples, ClassifiedByWhatTheThreadDidMostOfTheRun) {
  JobBuilder job;
  uint32_t p = job.Process(100);
  EXPECT_EQ(ClassifySample(Sample(job, p, kTid, 0, 10, 0.9, 0.05)).cause, Cause::kCpuWork);
  EXPECT_EQ(ClassifySample(Sample(job, p, kTid, 0, 10, 0.3, 0.6)).cause, Cause::kCpuStarvation);
  // Mostly blocked, in a call a look found it in (sleeping, an untraced call): no cause.
  HostEvent sleeping = Sample(job, p, kTid, 0, 10, 0.2, 0.1);
  sleeping.syscall = 230;  // clock_nanosleep
  EXPECT_EQ(ClassifySample(sleeping).event_class, EventClass::kNone);
  // Mostly blocked, but in no call at any of its looks (running or runnable at each): it blocked
  // between looks, in calls that returned before the next; what it did besides is the run...
  EXPECT_EQ(ClassifySample(Sample(job, p, kTid, 0, 10, 0.2, 0.1)).cause, Cause::kCpuWork);
  EXPECT_EQ(ClassifySample(Sample(job, p, kTid, 0, 10, 0.1, 0.2)).cause, Cause::kCpuStarvation);
  // ... when that is a quarter of the run or more.
  EXPECT_EQ(ClassifySample(Sample(job, p, kTid, 0, 10, 0.1, 0.1)).event_class, EventClass::kNone);
  // Blocked 40%, on a CPU 45%, waiting 15%: CPU work.
  EXPECT_EQ(ClassifySample(Sample(job, p, kTid, 0, 10, 0.45, 0.15)).cause, Cause::kCpuWork);
}

// CPU work between kernels, no traced call: cpu_work, with the thread's last traced call's stack.
TEST(Samples, CpuWorkOfTheLaunchingThreadBetweenKernelsIsCpuWork) {
  OneGap g;
  HostEvent before = g.job.Event(g.p, kTid, CUDA_LAUNCH, 95, 95.005);
  before.device = 0;
  before.stack = 7;
  g.job.Add(before);
  g.job.Add(Sample(g.job, g.p, kTid, 100, 200, 0.95, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* c = FindCause(r, Cause::kCpuWork);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(r.symbols.StackLabel(c->stacks[0].id), "stack7@p0");
}

// A run whose Python frames the sampler read: its own stack is the evidence (the line that
// computed), not the last traced call's; a run of the same thread without one falls back to the
// last traced call's. A wait for a CPU keeps the last traced call's even with a stack.
TEST(Samples, CpuWorkWithItsOwnStackNamesIt) {
  OneGap g;
  HostEvent before = g.job.Event(g.p, kTid, CUDA_LAUNCH, 95, 95.005);
  before.device = 0;
  before.stack = 7;
  g.job.Add(before);
  HostEvent with_stack = Sample(g.job, g.p, kTid, 100, 160, 0.95, 0.0);
  with_stack.stack = 9;
  g.job.Add(with_stack);
  g.job.Add(Sample(g.job, g.p, kTid, 160, 180, 0.95, 0.0));
  HostEvent waiting = Sample(g.job, g.p, kTid, 180, 200, 0.1, 0.85);
  waiting.stack = 11;
  g.job.Add(waiting);
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(80));
  const CauseReport* c = FindCause(r, Cause::kCpuWork);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->stacks.size(), 2u);
  EXPECT_EQ(r.symbols.StackLabel(c->stacks[0].id), "stack9@p0");
  EXPECT_EQ(c->stacks[0].ns, Ms(60));
  EXPECT_EQ(r.symbols.StackLabel(c->stacks[1].id), "stack7@p0");
  const CauseReport* w = FindCause(r, Cause::kCpuStarvation);
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->stacks.size(), 1u);
  EXPECT_EQ(r.symbols.StackLabel(w->stacks[0].id), "stack7@p0");
}

// Close cases: another thread's CPU work, and the launching thread blocked (sleeping in an untraced
// call), explain nothing: unknown.
TEST(Samples, OtherThreadsCpuWorkAndBlockedRunsStayUnknown) {
  OneGap g;
  g.job.Add(Sample(g.job, g.p, kOtherTid, 100, 200, 1.0, 0.0));
  g.job.Add(Sample(g.job, g.p, kTid, 100, 200, 0.01, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

// A run that blocked between its looks, in a traced call (beside CPU hogs: preempted, then a
// 40 ms write): the write is its own cause, and the rest of the gap what the thread did besides,
// mostly waiting for a CPU. Close case: a look found the thread blocked in a call (an untraced
// one, the write aside): the rest stays unknown.
TEST(Samples, ARunBlockedBetweenItsLooksIsWhatTheThreadDidBesides) {
  OneGap g;
  g.job.Io(g.p, kTid, FILE_WRITE, 150, 190, "/out/metrics.jsonl");
  g.job.Add(Sample(g.job, g.p, kTid, 100, 200, 0.2, 0.37));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(40));
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), Ms(60));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);

  OneGap in_call;
  in_call.job.Io(in_call.p, kTid, FILE_WRITE, 150, 190, "/out/metrics.jsonl");
  HostEvent run = Sample(in_call.job, in_call.p, kTid, 100, 200, 0.2, 0.37);
  run.syscall = 202;  // futex
  in_call.job.Add(run);
  r = in_call.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(40));
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(60));
}

// A traced call outranks a run that covers it: only the rest of the gap is CPU work.
TEST(Samples, TracedCallsOutrankRunsOfTheSameThread) {
  OneGap g;
  g.job.Io(g.p, kTid, FILE_WRITE, 120, 150, "/out/metrics.jsonl");
  g.job.Add(Sample(g.job, g.p, kTid, 100, 200, 0.9, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(30));
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(70));
}

// Runnable but not running: cpu_starvation, even where a residual rule would have claimed the time.
TEST(Samples, WaitingForACpuIsCpuStarvation) {
  OneGap g;
  g.job.Sync(g.p, kTid, 95, 101);
  g.job.Add(Sample(g.job, g.p, kTid, 101, 200, 0.2, 0.75));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), Ms(99));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(1));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
}

// A sync that returns after the device went idle because its thread waited for a CPU (beside CPU
// hogs): that wait is cpu_starvation, and the host work after the sync is still the sync's (up to
// its length, 16 ms), then CPU work. Close case: a run that was blocked leaves the sync its tail.
TEST(Samples, ASyncsLateReturnForWantOfACpuIsCpuStarvation) {
  OneGap g;
  g.job.Sync(g.p, kTid, 90, 106);
  g.job.Add(Sample(g.job, g.p, kTid, 98, 106, 0.1, 0.8));
  g.job.Add(Sample(g.job, g.p, kTid, 106, 200, 0.9, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), Ms(6));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(16));
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(78));

  OneGap blocked;
  blocked.job.Sync(blocked.p, kTid, 90, 106);
  blocked.job.Add(Sample(blocked.job, blocked.p, kTid, 98, 106, 0.1, 0.1));
  blocked.job.Add(Sample(blocked.job, blocked.p, kOtherTid, 98, 106, 0.1, 0.8));
  r = blocked.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), 0);
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(100));
}

// The same for a read-back (loss.item(): a 4-byte device-to-host copy) whose return waits for a
// CPU; a host-to-device copy (its CPU staging is the copy's) keeps its slices.
TEST(Samples, AReadBacksLateReturnForWantOfACpuIsCpuStarvation) {
  OneGap g;
  g.job.CopyToHost(g.p, kTid, 90, 103, 4);
  g.job.Add(Sample(g.job, g.p, kTid, 98, 103, 0.1, 0.8));
  g.job.Add(Sample(g.job, g.p, kTid, 103, 200, 0.9, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), Ms(3));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(13));
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(84));

  OneGap upload;
  upload.job.Copy(upload.p, kTid, 90, 103, MEM_PAGEABLE);
  upload.job.Add(Sample(upload.job, upload.p, kTid, 98, 103, 0.1, 0.8));
  r = upload.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), 0);
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(3));
}

// After the sync that opened the gap, the sampled CPU work is the sync's for as long as the sync
// waited (the GPU work the thread could have queued first), and CPU work beyond that.
TEST(Samples, HostWorkAfterASyncIsTheSyncsUpToItsWaitThenCpuWork) {
  OneGap g;
  g.job.Sync(g.p, kTid, 90, 110);  // waited 10 ms of the gap, 20 ms in all
  g.job.Add(Sample(g.job, g.p, kTid, 110, 200, 0.9, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(10 + 20));
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(70));
}

// Without samples the rule takes the whole rest, as before the sampler (traces before 0.5).
TEST(Samples, WithoutSamplesTheSyncTakesAllTheHostWorkAfterIt) {
  OneGap g;
  g.job.Sync(g.p, kTid, 90, 110);
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), 0);
}

// A data file read in the gap makes its CPU work the data's preprocessing (data_loading).
TEST(Samples, CpuWorkAfterADataReadIsDataLoading) {
  OneGap g;
  g.job.Io(g.p, kTid, FILE_READ, 100, 101, "/data/shard-0001.tar");
  g.job.Add(Sample(g.job, g.p, kTid, 101, 200, 0.9, 0.0));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), 0);
}

// Before the first kernel CPU work stays startup.
TEST(Samples, CpuWorkBeforeTheFirstKernelIsStartup) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Launch(p, kTid, 0);
  job.Add(Sample(job, p, kTid, 1, 100, 1.0, 0.0));
  job.Kernel(p, 100, 200);
  job.End(p, 200);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), 0);
  EXPECT_GT(CauseNs(r, Cause::kStartup), Ms(99));
}

// Runs that reach the analysis late (with the writer's flush): kernels [0, 100), [200, 300) and
// [400, 5000) of thread kTid; Attributed() hands out the gaps [100, 200) and [300, 400) (as
// unknown: no candidate yet), then the runs come.
struct TwoClosedGaps {
  JobBuilder job;
  uint32_t p;
  TwoClosedGaps() {
    p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
    job.Launch(p, kTid, 0);
  }
  void Attributed() {
    job.Kernel(p, 0, 100);
    job.Kernel(p, 200, 300);
    job.Kernel(p, 400, 5000);
    job.analysis().AdvanceTo(Ms(4000));
  }
  JobReport Finish() {
    job.End(p, 5000);
    return job.Finish();
  }
};

// A run that arrives after its gap was closed turns that gap's unknown into cpu_work.
TEST(Samples, ALateRunTurnsAClosedGapsUnknownIntoCpuWork) {
  TwoClosedGaps g;
  g.Attributed();
  g.job.Add(Sample(g.job, g.p, kTid, 100, 200, 0.9, 0.0));
  JobReport r = g.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

// A run blocked outside every system call (a page fault): in a process that maps a data file for
// reading, data loading from that file (the largest mapped one; named like a model file or not:
// nanoGPT's train.bin).
HostEvent Fault(JobBuilder& job, uint32_t process, uint32_t tid, double start_ms, double end_ms) {
  HostEvent e = Sample(job, process, tid, start_ms, end_ms, 0.1, 0.0);
  e.thread_state = 'D';
  e.syscall = -1;
  return e;
}

HostEvent Mapping(JobBuilder& job, uint32_t process, double at_ms, const std::string& path,
                  uint64_t addr, uint64_t bytes, bool writable = false) {
  HostEvent e = job.Event(process, kTid, FILE_MMAP, at_ms, at_ms + 0.01, path);
  e.fs_type = FS_LOCAL;
  e.addr = addr;
  e.bytes = bytes;
  e.writable = writable;
  return e;
}

TEST(Samples, PageFaultsOfAMappedDataFileAreDataLoadingFromIt) {
  OneGap g;
  g.job.Add(Mapping(g.job, g.p, 10, "/data/vocab.json", 0x7000000, 1 << 20));
  g.job.Add(Mapping(g.job, g.p, 11, "/data/train.bin", 0x9000000, 512 << 20));
  // The runs come with the writer's flush: after the unmap at the job's end.
  HostEvent unmap = g.job.Event(g.p, kTid, FILE_MUNMAP, 900, 900.01, "/data/train.bin");
  unmap.addr = 0x9000000;
  unmap.bytes = 512 << 20;
  g.job.Add(unmap);
  g.job.Add(Fault(g.job, g.p, kTid, 100, 200));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* c = FindCause(r, Cause::kDataLoading);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->objects.empty());
  EXPECT_EQ(Label(r, c->objects[0]), "/data/train.bin");
}

// After the sync that opened the gap (a per-step read-back, then the next batch read through the
// mapping): the faults are data loading, not host work after the sync.
TEST(Samples, PageFaultsAfterASyncAreDataLoading) {
  OneGap g;
  g.job.Add(Mapping(g.job, g.p, 10, "/data/train.bin", 0x9000000, 512 << 20));
  g.job.Sync(g.p, kTid, 90, 105);
  g.job.Add(Fault(g.job, g.p, kTid, 105, 200));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(95));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(5));
}

// Runs reach the trace with the writer's flush, after the kernels that end their gap: a late run
// of faults takes the gap back from the residual rules that claimed it.
TEST(Samples, LateFaultsAfterASyncAreDataLoading) {
  TwoClosedGaps g;
  g.job.Add(Mapping(g.job, g.p, 0, "/data/train.bin", 0x9000000, 512 << 20));
  g.job.Sync(g.p, kTid, 90, 105);
  g.Attributed();
  g.job.Add(Fault(g.job, g.p, kTid, 105, 200));
  JobReport r = g.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(95));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(5));
}

// Close cases: no mapping (a fault of the heap, swap), a mapping gone before the fault, a writable
// shared mapping (a checkpoint written through it: its msync is traced), a mapped library, and a
// thread blocked in a system call: no cause.
TEST(Samples, FaultsWithoutAMappedDataFileExplainNothing) {
  for (int c = 0; c < 5; ++c) {
    OneGap g;
    if (c == 1) {
      g.job.Add(Mapping(g.job, g.p, 10, "/data/train.bin", 0x9000000, 512 << 20));
      HostEvent unmap = g.job.Event(g.p, kTid, FILE_MUNMAP, 50, 50.01, "/data/train.bin");
      unmap.addr = 0x9000000;
      unmap.bytes = 512 << 20;
      g.job.Add(unmap);
    }
    if (c == 2) g.job.Add(Mapping(g.job, g.p, 10, "/ckpt/optim.pt", 0x9000000, 64 << 20, true));
    if (c == 3) g.job.Add(Mapping(g.job, g.p, 10, "/usr/lib/libtorch.so.2", 0x9000000, 1 << 30));
    HostEvent run = Fault(g.job, g.p, kTid, 100, 200);
    if (c == 4) {
      g.job.Add(Mapping(g.job, g.p, 10, "/data/train.bin", 0x9000000, 512 << 20));
      run.syscall = 202;  // futex
    }
    g.job.Add(run);
    JobReport r = g.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0) << "case " << c;
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100)) << "case " << c;
  }
}

// Another thread's faults say nothing of the device: only the launching thread's.
TEST(Samples, AnotherThreadsFaultsExplainNothing) {
  OneGap g;
  g.job.Add(Mapping(g.job, g.p, 10, "/data/train.bin", 0x9000000, 512 << 20));
  g.job.Add(Fault(g.job, g.p, kOtherTid, 100, 200));
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
}

// --- Launch gaps stretched by waits for a CPU

// A launch loop: a kernel of 10 us every 0.5 ms from 0 to 200 ms, the launching thread on a CPU
// between them (sampled), but at [100, 104) where it was preempted: one gap of 4 ms, mostly waiting
// for a CPU. `gap_cpu`, `gap_wait`: the fractions of that run.
struct LaunchLoop {
  JobBuilder job;
  uint32_t p;
  explicit LaunchLoop(double gap_cpu = 0.1, double gap_wait = 0.85) {
    p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
    job.Launch(p, kTid, 0);
    for (double t = 0; t < 200; t += 0.5) {
      if (t > 100 && t < 104) continue;
      job.Kernel(p, t, t + 0.01);
    }
    job.Add(Sample(job, p, kTid, 0, 100, 0.5, 0.0));
    job.Add(Sample(job, p, kTid, 100, 104, gap_cpu, gap_wait));
    job.Add(Sample(job, p, kTid, 104, 200, 0.5, 0.0));
    job.End(p, 200.01);
  }
};

const CauseReport* WithStretchedGaps(const JobReport& r, const Finding** finding) {
  for (const CauseReport& c : r.causes) {
    for (const Finding& f : c.findings) {
      if (f.kind != FindingKind::kStretchedLaunchGaps) continue;
      *finding = &f;
      return &c;
    }
  }
  return nullptr;
}

// The preempted gap is cpu_starvation; the short-gap cause's saving counts it too (fewer launches
// remove it with the short gaps), and says so.
TEST(Samples, ALaunchGapStretchedByAWaitForACpuCountsInTheShortGapsSaving) {
  LaunchLoop loop;
  JobReport r = loop.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), Ms(104) - Ms(100.01));
  const Finding* f = nullptr;
  const CauseReport* c = WithStretchedGaps(r, &f);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->cause, Cause::kLaunchBound);  // memory use unknown
  EXPECT_EQ(f->count, 1u);
  EXPECT_EQ(f->ns, Ms(104) - Ms(100.01));
  // launch_bound saves half (kHalf): of the short gaps and of the stretched one.
  EXPECT_EQ(c->saving_ns, (c->ns + f->ns) / 2);
}

// Close cases: a thread that computes between its kernels (more CPU per kernel than a short gap
// allows: augmentation on the training thread, waiting for a CPU too), a gap a traced call explains
// part of, and a gap with no wait for a CPU in it (CPU work only).
TEST(Samples, GapsOfWorkBetweenKernelsAreNoStretchedLaunchGaps) {
  {
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
    job.Launch(p, kTid, 0);
    for (int k = 0; k < 20; ++k) {
      job.Kernel(p, 5.0 * k, 5.0 * k + 1);
      job.Add(Sample(job, p, kTid, 5.0 * k + 1, 5.0 * k + 5, 0.7, 0.3));
    }
    job.End(p, 100);
    JobReport r = job.Finish();
    EXPECT_GT(CauseNs(r, Cause::kCpuWork), Ms(70));
    const Finding* f = nullptr;
    EXPECT_EQ(WithStretchedGaps(r, &f), nullptr);
  }
  {
    LaunchLoop loop;
    loop.job.Io(loop.p, kTid, FILE_READ, 101, 102, "/data/shard-7.bin");
    JobReport r = loop.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(1));
    const Finding* f = nullptr;
    EXPECT_EQ(WithStretchedGaps(r, &f), nullptr);
  }
  {
    LaunchLoop loop(0.95, 0.0);
    JobReport r = loop.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kCpuWork), Ms(104) - Ms(100.01));
    const Finding* f = nullptr;
    EXPECT_EQ(WithStretchedGaps(r, &f), nullptr);
  }
}

// --- Worker processes' runs (docs/attribution.md, "Samples", *Worker processes*) ---------------

// The training thread's read of its workers' result queue over the whole gap.
void WaitForWorkers(OneGap& g, double start_ms = 100, double end_ms = 200) {
  HostEvent read = g.job.Event(g.p, kTid, FILE_READ, start_ms, end_ms, "pipe:[4242]");
  read.fd = 11;
  read.fs_type = FS_PIPE;
  read.stack = 5;
  g.job.Add(read);
}

// A worker thread's run blocked in read(2) on `path` (descriptor 7).
HostEvent BlockedRead(JobBuilder& job, uint32_t process, uint32_t tid, double start_ms,
                      double end_ms, const std::string& path) {
  HostEvent e = job.Event(process, tid, THREAD_SAMPLE, start_ms, end_ms, path);
  const double ns = static_cast<double>(e.end - e.start);
  e.cpu_ns = static_cast<uint64_t>(0.02 * ns);
  e.thread_state = 'D';
  e.syscall = 0;  // read
  e.fd = 7;
  return e;
}

// While the training thread waits for its workers, what their sampled threads did explains the
// wait: a worker waiting for a CPU (cpu_starvation), then one computing, then one blocked reading
// a data file (data_loading, its file the object). Where a read and a CPU run of two workers
// overlap, the read goes first.
TEST(Samples, WhatTheWorkersDidExplainsTheWaitForThem) {
  OneGap g;
  WaitForWorkers(g);
  const uint32_t w1 = g.job.ForkedProcess(101, 100);
  const uint32_t w2 = g.job.ForkedProcess(102, 100);
  g.job.Add(Sample(g.job, w1, 101, 100, 130, 0.1, 0.85));  // waiting for a CPU
  g.job.Add(Sample(g.job, w1, 101, 130, 180, 0.95, 0.0));  // computing
  g.job.Add(BlockedRead(g.job, w2, 102, 160, 200, "/data/shard-0003.tar"));
  g.job.End(w1, 900);
  g.job.End(w2, 900);
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCpuStarvation), Ms(30));
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(70));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* d = FindCause(r, Cause::kDataLoading);
  ASSERT_NE(d, nullptr);
  const Finding* computing = FindFinding(*d, FindingKind::kWorkersComputing);
  const Finding* reading = FindFinding(*d, FindingKind::kWorkersReading);
  ASSERT_NE(computing, nullptr);
  ASSERT_NE(reading, nullptr);
  EXPECT_EQ(computing->ns, Ms(30));
  EXPECT_EQ(reading->ns, Ms(40));
  EXPECT_EQ(FindFinding(*d, FindingKind::kWorkerQueueWaits), nullptr);
  ASSERT_FALSE(d->objects.empty());
  EXPECT_EQ(Label(r, d->objects[0]), "/data/shard-0003.tar");
  const CauseReport* s = FindCause(r, Cause::kCpuStarvation);
  ASSERT_NE(s, nullptr);
  const Finding* waiting = FindFinding(*s, FindingKind::kWorkersWaitingForCpu);
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->ns, Ms(30));
}

// Close cases. The workers compute, but the training thread waits for no worker (an untraced
// stretch, then a sleep): their runs explain nothing, the gap stays unknown and interactive. A
// worker blocked on a pipe (waiting for its next index) says nothing of the wait for it: the
// wait stays a wait for workers.
TEST(Samples, WorkersRunsExplainOnlyAWaitForThem) {
  OneGap g;
  HostEvent sleep = g.job.Event(g.p, kTid, WAIT, 150, 200);
  sleep.fd = -1;
  sleep.device = 0;  // a wait of the thread that feeds device 0 (Event.launch_device)
  g.job.Add(sleep);
  const uint32_t w = g.job.ForkedProcess(101, 100);
  g.job.Add(Sample(g.job, w, 101, 100, 200, 0.95, 0.0));
  g.job.End(w, 900);
  JobReport r = g.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(50));
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), Ms(50));

  OneGap idle;
  WaitForWorkers(idle);
  const uint32_t iw = idle.job.ForkedProcess(101, 100);
  HostEvent index_wait = BlockedRead(idle.job, iw, 101, 100, 200, "pipe:[77]");
  idle.job.Add(index_wait);
  idle.job.End(iw, 900);
  JobReport ri = idle.job.Finish();
  EXPECT_EQ(CauseNs(ri, Cause::kDataLoading), Ms(100));
  const CauseReport* d = FindCause(ri, Cause::kDataLoading);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(FindFinding(*d, FindingKind::kWorkersReading), nullptr);
  const Finding* queue = FindFinding(*d, FindingKind::kWorkerQueueWaits);
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(queue->ns, Ms(100));
}

}  // namespace
}  // namespace idlescope::testing
