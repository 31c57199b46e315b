// Done-when 1: for every cause, a synthetic job where it must be found and a close one where it
// must not; overlapping causes resolve by the documented precedence (docs/attribution.md).
#include <gtest/gtest.h>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr uint32_t kTid = kOneGapTid;  // OneGap's launching thread (job_builder.h)
constexpr uint64_t kGiB = 1ull << 30;

TEST(AttributionRules, PageableCopyIsHostGpuTransfer) {
  OneGap s;
  s.job.Copy(s.p, kTid, 100, 200, MEM_PAGEABLE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(100));
  const CauseReport* c = FindCause(r, Cause::kHostGpuTransfer);
  ASSERT_NE(c, nullptr);
  EXPECT_GT(c->saving_ns, 0);
  const Finding* f = FindFinding(*c, FindingKind::kPageableCopies);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, Ms(100));
  EXPECT_EQ(f->other_ns, 0);
}

TEST(AttributionRules, PinnedCopyIsTransferButNotPageable) {
  OneGap s;
  s.job.Copy(s.p, kTid, 100, 200, MEM_PINNED);
  JobReport r = s.job.Finish();
  const CauseReport* c = FindCause(r, Cause::kHostGpuTransfer);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ns, Ms(100));
  // Nothing to gain from pinning what is pinned: the saving is the copy overlapped with compute
  // (900 ms of kernels hide all of it).
  EXPECT_EQ(c->saving_ns, Ms(100));
  EXPECT_EQ(c->job_saving_ns, Ms(100));
  const Finding* f = FindFinding(*c, FindingKind::kPageableCopies);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, 0);
  EXPECT_EQ(f->other_ns, Ms(100));
}

TEST(AttributionRules, CopyDuringBusyTimeExplainsNothing) {
  OneGap s;
  s.job.Copy(s.p, kTid, 300, 400, MEM_PAGEABLE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

TEST(AttributionRules, ModelFileWriteIsCheckpointing) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 180, "/ckpt/step100/model.pt", FS_LOCAL, 1ull << 30);
  s.job.Io(s.p, kTid, FILE_SYNC, 180, 200, "/ckpt/step100/model.pt");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->objects.empty());
  EXPECT_EQ(Label(r, c->objects[0]), "/ckpt/step100/model.pt");
  EXPECT_EQ(Label(r, c->stacks[0]), "stack42@p0");
}

// The snapshot bandwidth of the checkpointing estimate is the GPU's: 1 GiB in 50 ms of pinned
// device-to-host copy (21.5 GB/s), not the host's 1 GiB in 1 s blocked in the synchronous copy
// (which waited for queued kernels too: 1.1 GB/s would leave no saving).
TEST(AttributionRules, CheckpointSavingUsesTheGpuSideDeviceToHostBandwidth) {
  OneGap s;
  HostEvent copy = s.job.Event(s.p, kTid, CUDA_MEMCPY, 0, 100);
  copy.device = 0;
  copy.copy_kind = COPY_D2H;
  copy.host_mem = MEM_PINNED;
  copy.bytes = 1ull << 30;
  s.job.Add(copy);
  GpuRecord r;
  r.process = s.p;
  r.kind = GPU_MEMCPY;
  r.start = Ms(50);
  r.end = Ms(100);
  r.copy_kind = COPY_D2H;
  r.src_kind = MEM_DEVICE;
  r.dst_kind = MEM_PINNED;
  r.bytes = 1ull << 30;
  s.job.analysis().AddGpuRecord(r);
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 200, "/ckpt/model.pt", FS_LOCAL, 1ull << 30);
  JobReport report = s.job.Finish();
  const CauseReport* c = FindCause(report, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->basis.method, SavingMethod::kCheckpointMinusSnapshot);
  EXPECT_EQ(c->basis.rate_source, RateSource::kPinnedDeviceToHostCopies);
  EXPECT_NEAR(c->basis.rate_bytes_per_ns, (1ull << 30) / 50e6, 1e-9);  // 21.5 GB/s
  EXPECT_EQ(c->saving_ns, Ms(50));  // 100 ms blocked - 50 ms snapshot
}

TEST(AttributionRules, AFinalCheckpointAfterTheLastKernelSavesNothing) {
  // Kernels until 100 ms, a checkpoint write mid-job (150-250) and one after the last kernel
  // (1100-1300): asynchronous, the first hides behind the training after it, the second has none.
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 150);
  job.Kernel(p, 250, 1100);
  job.Io(p, kTid, FILE_WRITE, 150, 250, "/ckpt/model.pt", FS_LOCAL, 1 << 20);
  job.Io(p, kTid, FILE_WRITE, 1100, 1300, "/ckpt/final.pt", FS_LOCAL, 1 << 20);
  job.End(p, 1300);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ns, Ms(300));
  EXPECT_EQ(c->basis.tail_ns, Ms(200));
  EXPECT_NEAR(static_cast<double>(c->job_saving_ns), static_cast<double>(Ms(100)),
              static_cast<double>(Ms(1)));  // less the 1 MiB's snapshot at 12 GB/s (87 us)
}

// Saves due more often than their writes take (docs/attribution.md, "Estimated savings"): an
// asynchronous writer with one save in flight hides each save's writes only until the next save
// is due, then that save waits for the rest; the job's exit waits for what the last one's
// writes outlast of the training after it.
TEST(AttributionRules, WritesOutlastingTheTrainingUntilTheNextSaveAreNotHidden) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 100);
  job.Io(p, kTid, FILE_WRITE, 100, 200, "/ckpt/a.pt", FS_LOCAL, 1 << 20);  // 100 ms of writes
  job.Kernel(p, 200, 230);  // 30 ms of training: 70 ms of the writes outlast it
  job.Io(p, kTid, FILE_WRITE, 230, 330, "/ckpt/b.pt", FS_LOCAL, 1 << 20);
  job.Kernel(p, 330, 1330);  // all hidden
  job.Io(p, kTid, FILE_WRITE, 1330, 1430, "/ckpt/c.pt", FS_LOCAL, 1 << 20);
  job.Kernel(p, 1430, 1470);  // 60 ms of this save's writes outlast the training after it
  job.End(p, 1470);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ns, Ms(300));
  EXPECT_EQ(c->basis.tail_ns, 0);
  EXPECT_EQ(c->basis.outlast_ns, Ms(130));
  EXPECT_NEAR(static_cast<double>(c->job_saving_ns), static_cast<double>(Ms(170)),
              static_cast<double>(Ms(1)));  // less the snapshots of 3 MiB at 12 GB/s
}

// Close case: one save's writes cut by a device-to-host copy of its own (a copy runs no
// kernel: the same gap, the same save) and training as long as the writes before the next.
TEST(AttributionRules, ASaveCutByItsOwnCopyIsOneSaveAndHidesBehindTheTrainingAfterIt) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 100);
  job.Io(p, kTid, FILE_WRITE, 100, 150, "/ckpt/a.pt", FS_LOCAL, 1 << 20);
  job.CopyToHost(p, kTid, 150, 160, 1 << 20);
  job.GpuCopy(p, 152, 158, MEM_PAGEABLE);
  job.Io(p, kTid, FILE_WRITE, 160, 200, "/ckpt/a.pt", FS_LOCAL, 1 << 20);
  job.Kernel(p, 200, 300);  // 100 ms of training: the save's 90 ms of writes hide
  job.Io(p, kTid, FILE_WRITE, 300, 400, "/ckpt/b.pt", FS_LOCAL, 1 << 20);
  job.Kernel(p, 400, 500);
  job.End(p, 500);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ns, Ms(200));
  EXPECT_EQ(c->basis.outlast_ns, 0);
}

// An asynchronous checkpoint whose writer falls behind: each save's gap is the training thread
// waiting for the previous save's writes (on the writer thread), then its own snapshot copy. Those
// waits are the writer's, not writes to hide (finding checkpoint_writer_behind); saving less
// often removes them whole.
TEST(AttributionRules, AnAsynchronousWriterThatFallsBehindIsNamedAndItsWaitsCountWhole) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 100);
  const uint64_t bytes = 8 << 20;
  // Each save: a 10 ms snapshot copy on the training thread, a launch, 210 ms of writes on the
  // writer thread; 40 ms of training before the next save is due, which waits for them.
  for (double copy : {100.0, 320.0, 540.0}) {
    job.CopyToHost(p, kTid, copy, copy + 10, bytes);
    job.Launch(p, kTid, copy + 10);
    job.Io(p, kTid + 1, FILE_WRITE, copy + 10, copy + 220, "/ckpt/model.pt", FS_LOCAL, bytes);
    job.Kernel(p, copy + 10, copy == 540.0 ? 1000 : copy + 50);
  }
  job.End(p, 1000);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ns, Ms(370));  // 10 ms, then twice 170 ms of waits and 10 ms of snapshot
  EXPECT_EQ(c->basis.snapshot_ns, Ms(30));
  const Finding* f = FindFinding(*c, FindingKind::kCheckpointWriterBehind);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, Ms(340));
  EXPECT_EQ(c->basis.outlast_ns, 0);
  EXPECT_EQ(c->saving_ns, Ms(340));  // all but the snapshots
}

// torch.save on the training thread: the weights are copied to the host, then written. The copy
// is the checkpoint's (its snapshot), not a data transfer of the training loop.
TEST(AttributionRules, DeviceToHostCopyBeforeAModelWriteIsCheckpointSnapshot) {
  OneGap s;
  s.job.CopyToHost(s.p, kTid, 100, 140, 256 << 20);
  s.job.Sync(s.p, kTid, 140, 150);
  s.job.Io(s.p, kTid, FILE_WRITE, 150, 200, "/ckpt/model.pt", FS_LOCAL, 256 << 20);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), 0);
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), 0);
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  bool copy_stack = false;
  for (const EvidenceItem& item : c->stacks) {
    if (Label(r, item) == "stack7@p0") {
      copy_stack = true;
      EXPECT_EQ(item.ns, Ms(40));
      EXPECT_EQ(item.bytes, uint64_t{256} << 20);
    }
  }
  EXPECT_TRUE(copy_stack);
  // Snapshot bytes are not written bytes: the estimate counts the 256 MiB written once.
  EXPECT_EQ(c->basis.bytes, uint64_t{256} << 20);
  // The async checkpoint keeps the measured 50 ms snapshot (copy and its sync).
  EXPECT_EQ(c->saving_ns, Ms(50));
}

TEST(AttributionRules, AnAsynchronousCheckpointsSnapshotIsCheckpointing) {
  // The training thread copies 256 MiB to the host and launches again; a writer thread writes
  // them to the model file.
  OneGap s;
  s.job.CopyToHost(s.p, kTid, 100, 150);
  s.job.Launch(s.p, kTid, 150);
  s.job.Io(s.p, kTid + 1, FILE_WRITE, 160, 180, "/ckpt/model.pt", FS_LOCAL, 128 << 20);
  s.job.Io(s.p, kTid + 1, FILE_WRITE, 180, 195, "/ckpt/model.pt", FS_LOCAL, 128 << 20);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), 0);
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(85));  // the snapshot (50) and the writes (35)
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  const Finding* f = FindFinding(*c, FindingKind::kSnapshotCopies);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, Ms(50));
}

TEST(AttributionRules, DeviceToHostCopyIsNoSnapshotOnAnotherThreadAfterALaunchOrBeforeOtherFiles) {
  {  // the write is another thread's, of fewer bytes than half the copy's
    OneGap s;
    s.job.CopyToHost(s.p, kTid, 100, 150);
    s.job.Io(s.p, kTid + 1, FILE_WRITE, 150, 200, "/ckpt/model.pt");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(50));
    EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(50));
  }
  {  // a kernel launch between the copy and the write: the copy was the training loop's
    OneGap s;
    s.job.CopyToHost(s.p, kTid, 100, 150);
    s.job.Launch(s.p, kTid, 150);
    s.job.Io(s.p, kTid, FILE_WRITE, 151, 200, "/ckpt/model.pt");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(50));
  }
  {  // a write of another file (metrics, samples)
    OneGap s;
    s.job.CopyToHost(s.p, kTid, 100, 150);
    s.job.Io(s.p, kTid, FILE_WRITE, 150, 200, "/runs/samples.csv");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(50));
    EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
  }
  {  // the write comes more than 1 s after the copy
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 100);
    job.Kernel(p, 3000, 3100);
    job.End(p, 3100);
    job.CopyToHost(p, kTid, 100, 150);
    job.Io(p, kTid, FILE_WRITE, 1200, 1300, "/ckpt/model.pt");
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(50));
    EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  }
}

TEST(AttributionRules, CheckpointSavingWithoutCopiesUsesTheDocumentedDefault) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 200, "/ckpt/model.pt", FS_LOCAL, 600'000'000);
  JobReport report = s.job.Finish();
  const CauseReport* c = FindCause(report, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->basis.rate_source, RateSource::kAssumed);
  EXPECT_EQ(c->basis.rate_bytes_per_ns, 12.0);
  EXPECT_EQ(c->saving_ns, Ms(50));  // 100 ms - 600 MB / 12 GB/s
}

TEST(AttributionRules, OtherFileWriteIsIntermediateUploadNotCheckpointing) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 200, "/runs/exp1/metrics.csv");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(100));
}

TEST(AttributionRules, CheckpointPathPatterns) {
  EXPECT_TRUE(IsModelCheckpointPath("/x/model.safetensors"));
  EXPECT_TRUE(IsModelCheckpointPath("/x/pytorch_model.BIN"));
  EXPECT_FALSE(IsModelCheckpointPath("/out/checkpoint-500/optimizer.json"));  // identity decides
  EXPECT_TRUE(IsModelCheckpointPath("weights.h5"));
  EXPECT_FALSE(IsModelCheckpointPath("/out/log.txt"));
  EXPECT_FALSE(IsModelCheckpointPath("/runs/samples/img_0001.png"));
  EXPECT_TRUE(IsModelCheckpointPath("/x/adapter_model.bin"));
  EXPECT_FALSE(IsModelCheckpointPath("/data/sample00008.bin"));  // a dataset shard
}

TEST(AttributionRules, LauncherReadIsDataLoading) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_READ, 100, 200, "/data/shard-0001.tar");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
}

// DataLoader(num_workers=0) on a real GPU: the training thread reads a sample file in
// microseconds, then transforms it on the CPU for most of the gap. The rest of a gap in which the
// launching thread read data files is that thread's preprocessing, not "unknown".
TEST(AttributionRules, LauncherPreprocessingAfterItsReadIsDataLoading) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_READ, 101, 102, "/data/sample00017.bin", FS_LOCAL, 4096);
  s.job.Io(s.p, kTid, FILE_READ, 140, 141, "/data/sample00018.bin", FS_LOCAL, 4096);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* c = FindCause(r, Cause::kDataLoading);
  ASSERT_NE(c, nullptr);
  const Finding* preprocessing = FindFinding(*c, FindingKind::kLauncherPreprocessing);
  ASSERT_NE(preprocessing, nullptr);
  EXPECT_EQ(preprocessing->ns, Ms(98));
  ASSERT_EQ(c->objects.size(), 2u);  // the files it read: 1 ms each
  EXPECT_EQ(Label(r, c->objects[0]).rfind("/data/sample0001", 0), 0u) << Label(r, c->objects[0]);
}

// Close cases: code and system files read between kernels (a late import, /proc polling),
// another thread's read, and a read while the GPU computes leave the CPU time unknown.
TEST(AttributionRules, CodeReadsOtherThreadsAndOtherGapsAreNotPreprocessing) {
  EXPECT_TRUE(IsDataFilePath("/data/sample00017.bin"));
  EXPECT_TRUE(IsDataFilePath("train.jsonl"));
  EXPECT_FALSE(IsDataFilePath("/usr/lib/python3/dist-packages/torch/functional.py"));
  EXPECT_FALSE(IsDataFilePath("/x/__pycache__/a.cpython-311.pyc"));
  EXPECT_FALSE(IsDataFilePath("/usr/lib/libfoo.so.1"));
  EXPECT_FALSE(IsDataFilePath("/proc/self/status"));
  EXPECT_FALSE(IsDataFilePath("anon_inode:[eventfd]"));
  EXPECT_TRUE(IsDataFilePath("/dev/shm/batch-17"));
  EXPECT_FALSE(IsDataFilePath("/ckpt/model.pt"));  // loading a checkpoint
  {
    OneGap s;
    s.job.Io(s.p, kTid, FILE_READ, 101, 102, "/venv/lib/python3.11/site-packages/x/y.py");
    s.job.Io(s.p, kTid, FILE_READ, 110, 111, "/proc/meminfo");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));  // neither read is data loading either
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  }
  {
    OneGap s;
    s.job.Io(s.p, kTid + 1, FILE_READ, 101, 102, "/data/sample00017.bin");  // another thread
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(1));
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(99));
  }
  {
    OneGap s;
    s.job.Io(s.p, kTid, FILE_READ, 300, 310, "/data/sample00017.bin");  // while the GPU computes
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
  }
}

// `import torch` before the first kernel: thousands of .py/.so reads (slow on NFS homes) are
// startup, not data_loading; a dataset read at the same time still is.
TEST(AttributionRules, ImportsBeforeTheFirstKernelAreStartup) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Launch(p, kTid, 0);
  job.Io(p, kTid, FILE_READ, 10, 40, "/home/u/venv/lib/python3.11/site-packages/torch/nn/f.py",
         FS_NFS);
  job.Io(p, kTid, FILE_READ, 40, 70, "/home/u/venv/lib/libtorch_cuda.so", FS_NFS);
  job.Io(p, kTid, FILE_READ, 70, 80, "/mnt/nfs/data/shard-0.tar", FS_NFS);
  job.Kernel(p, 100, 200);
  job.End(p, 200);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(10));
  EXPECT_EQ(CauseNs(r, Cause::kStartup), Ms(90));
}

// The startup cause says where the time before the first kernel went: before the first CUDA call
// (imports: reads of code files), then CUDA (its longest call) and model construction.
TEST(AttributionRules, StartupNotesBreakTheTimeBeforeTheFirstKernelDown) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 3, "python", "python train.py", "node0", /*start_ms=*/0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  HostEvent import = job.Event(p, kTid, FILE_READ, 100, 300, "/venv/lib/torch/__init__.py");
  import.count = 40;
  import.bytes = 2'000'000;
  job.Add(import);
  job.Io(p, kTid, FILE_READ, 600, 700, "/ckpt/model.safetensors", FS_LOCAL, 50'000'000);
  HostEvent init = job.Event(p, kTid, CUDA_MALLOC, 500, 580);
  init.device = 0;
  init.api_id = job.Intern(p, "cudaMalloc");
  job.Add(init);
  job.Launch(p, kTid, 900);
  job.Kernel(p, 900, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kStartup);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->findings.size(), 3u);
  const Finding& first = c->findings[0];
  EXPECT_EQ(first.kind, FindingKind::kStartupFirstKernel);
  EXPECT_EQ(first.pid, 100u);
  EXPECT_EQ(first.rank, 3);
  EXPECT_EQ(first.ns, Ms(900));
  const Finding& before = c->findings[1];
  EXPECT_EQ(before.kind, FindingKind::kStartupBeforeCuda);
  EXPECT_EQ(before.ns, Ms(500));
  EXPECT_EQ(before.count, 40u);  // reads of code files
  EXPECT_EQ(before.bytes, 2'000'000u);
  EXPECT_EQ(before.other_ns, Ms(200));
  const Finding& cuda = c->findings[2];
  EXPECT_EQ(cuda.kind, FindingKind::kStartupCudaToKernel);
  EXPECT_EQ(cuda.ns, Ms(400));
  EXPECT_EQ(cuda.bytes, 50'000'000u);  // model files read
  EXPECT_EQ(r.symbols.String(cuda.api), "cudaMalloc");
  EXPECT_EQ(cuda.other_ns, Ms(80));
}

TEST(AttributionRules, WorkerReadingRemoteFsWhileLauncherWaitsOnQueue) {
  OneGap s;
  uint32_t worker = s.job.Process(101, 100);  // DataLoader worker, child of the launcher
  s.job.Io(s.p, kTid, FILE_READ, 100, 200, "pipe:[1234]", FS_PIPE);
  s.job.Io(worker, 101, FILE_READ, 110, 190, "/mnt/nfs/imagenet/n01440764.tar", FS_NFS);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  const CauseReport* c = FindCause(r, Cause::kDataLoading);
  ASSERT_NE(c, nullptr);
  // The worker's remote read explains 80 ms, the wait on the queue the rest.
  const Finding* remote = FindFinding(*c, FindingKind::kRemoteReads);
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->ns, Ms(80));
  EXPECT_EQ(Label(r, c->objects[0]), "/mnt/nfs/imagenet/n01440764.tar");
}

TEST(AttributionRules, UnrelatedProcessReadingExplainsNothing) {
  OneGap s;
  // Not an ancestor or descendant of the launching process, and on another host.
  uint32_t other = s.job.Process(500, 1, -1, "python", "python other.py", "node9");
  s.job.Io(other, 500, FILE_READ, 100, 200, "/data/x");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

TEST(AttributionRules, PublicDownloadIsExternalDownload) {
  OneGap s;
  s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_PUBLIC, "huggingface.co:443");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kExternalDownload), Ms(100));
}

TEST(AttributionRules, ClusterLocalReceiveIsNotExternalDownload) {
  OneGap s;
  s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_PRIVATE, "10.0.0.7:5000");
  s.job.Net(s.p, kTid, NET_CONNECT, 100, 200, NET_PRIVATE, "10.0.0.7:5000");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kExternalDownload), 0);
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
}

TEST(AttributionRules, BlockedInNcclIsCommunication) {
  OneGap s;
  s.job.Nccl(s.p, kTid, 100, 200, 1, 0, 1);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCommunication), Ms(100));
}

TEST(AttributionRules, SyncWhileNcclKernelRunsIsCommunicationElseSynchronization) {
  OneGap s;
  s.job.Sync(s.p, kTid, 100, 200);
  s.job.Kernel(s.p, 100, 150, 0, /*nccl=*/true);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCommunication), Ms(50));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(50));
}

TEST(AttributionRules, SyncWhileCopyRunsIsTransfer) {
  OneGap s;
  s.job.Sync(s.p, kTid, 100, 200);
  s.job.GpuCopy(s.p, 100, 200, MEM_PAGEABLE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), 0);
}

TEST(AttributionRules, ExposedNcclKernelWithoutHostEventIsCommunication) {
  OneGap s;
  s.job.Kernel(s.p, 120, 170, 0, /*nccl=*/true);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCommunication), Ms(50));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(50));
}

TEST(AttributionRules, SlowerRankIsNamed) {
  JobBuilder job;
  uint32_t r0 = job.Process(100, 1, 0);
  uint32_t r1 = job.Process(200, 1, 1);
  job.Device(r0, 0, "GPU-a");
  job.Device(r1, 0, "GPU-b");
  for (uint32_t p : {r0, r1}) job.Launch(p, p == r0 ? 100 : 200, 0);
  // Rank 0 computes for 100 ms then waits in all-reduce; rank 1 computes for 190 ms.
  job.Kernel(r0, 0, 100);
  job.Kernel(r1, 0, 190);
  job.Nccl(r0, 100, 100, 200, 1, 0, 2);
  job.Nccl(r1, 200, 190, 200, 1, 1, 2);
  job.Kernel(r0, 200, 300);
  job.Kernel(r1, 200, 300);
  job.End(r0, 300);
  job.End(r1, 300);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCommunication), Ms(100) + Ms(10));
  const CauseReport* c = FindCause(r, Cause::kCommunication);
  ASSERT_NE(c, nullptr);
  const Finding* straggler = FindFinding(*c, FindingKind::kStragglerRank);
  ASSERT_NE(straggler, nullptr);
  EXPECT_EQ(straggler->rank, 1);
  EXPECT_EQ(straggler->count, 1u);     // arrived last at 1
  EXPECT_EQ(straggler->of_count, 1u);  // of 1 matched collective
  EXPECT_EQ(straggler->ns, Ms(90));    // the other rank waited 90 ms
}

TEST(AttributionRules, InstallerChildBeforeFirstKernelIsLibraryInstallation) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  uint32_t pip = job.Process(150, 100, -1, "/usr/bin/python3", "python3 -m pip install torch");
  job.Device(p, 0, "GPU-a");
  job.Launch(p, kTid, 600);
  HostEvent exit_event = job.Event(pip, 150, PROC_EXIT, 499.99, 500);
  job.Add(exit_event);
  job.End(pip, 500);
  job.Kernel(p, 600, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kLibraryInstallation), Ms(500));
  EXPECT_EQ(CauseNs(r, Cause::kStartup), Ms(100));
}

// Issue 13: subprocess.run(["pip", ...]) between kernels reads the installer's output through a
// pipe on the launching thread: that wait is the installation, not data loading.
TEST(AttributionRules, ReadingAnInstallersOutputIsLibraryInstallation) {
  for (bool installer : {true, false}) {
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    uint32_t child =
        job.Process(150, 100, -1, installer ? "/usr/bin/pip" : "/usr/bin/git",
                    installer ? "pip install tqdm" : "git rev-parse HEAD", "node0", 100);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 100);
    job.Io(p, kTid, FILE_READ, 100, 500, "pipe:[77]", FS_PIPE);
    job.End(child, 500);
    job.Launch(p, kTid, 500);
    job.Kernel(p, 500, 600);
    job.End(p, 600);
    JobReport r = job.Finish();
    SCOPED_TRACE(installer ? "pip" : "git");
    EXPECT_EQ(CauseNs(r, Cause::kLibraryInstallation), installer ? Ms(400) : 0);
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), installer ? 0 : Ms(400));
  }
}

TEST(AttributionRules, NonInstallerChildIsPlainStartup) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  uint32_t child = job.Process(150, 100, -1, "/usr/bin/python3", "python3 prepare.py --install");
  job.Device(p, 0, "GPU-a");
  job.Launch(p, kTid, 600);
  job.End(child, 500);
  job.Kernel(p, 600, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kLibraryInstallation), 0);
  EXPECT_EQ(CauseNs(r, Cause::kStartup), Ms(600));
}

TEST(AttributionRules, InstallerCommands) {
  EXPECT_TRUE(IsInstallerCommand("/opt/conda/bin/conda", ""));
  EXPECT_TRUE(
      IsInstallerCommand("/bin/sh", std::string_view("sh\0-c\0pip install -r req.txt", 29)));
  EXPECT_TRUE(IsInstallerCommand("/usr/bin/apt-get", "apt-get install -y libfoo"));
  EXPECT_FALSE(IsInstallerCommand("/usr/bin/python3", "python3 train.py --pip"));
  EXPECT_FALSE(IsInstallerCommand("/bin/sh", "sh -c ls pip"));
}

TEST(AttributionRules, TailAfterLastKernelUnlessExplained) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 500);
  job.Io(p, kTid, FILE_WRITE, 500, 600, "/out/final.ckpt");
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));  // an event beats the residual
  EXPECT_EQ(CauseNs(r, Cause::kTail), Ms(400));
}

TEST(AttributionRules, ResidualByGapKind) {
  OneGap s;
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kStartup), 0);
  EXPECT_EQ(CauseNs(r, Cause::kTail), 0);
}

// Many 0.5 ms gaps between 0.5 ms kernels: 50% compute utilization, all idle in short gaps.
void ShortGaps(JobBuilder& job, uint32_t p) {
  job.Launch(p, kTid, 0);
  for (int i = 0; i < 1000; ++i) job.Kernel(p, i * 1.0, i * 1.0 + 0.4, 0, false, 7, 8);
  job.End(p, 1000);
}

TEST(AttributionRules, ShortGapsLowMemoryAreSmallBatch) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Malloc(p, kTid, 0, 0x1000, 10 * kGiB);
  ShortGaps(job, p);
  JobReport r = job.Finish();
  EXPECT_NEAR(CauseNs(r, Cause::kSmallBatch), Ms(600), 1000);
  EXPECT_EQ(CauseNs(r, Cause::kLaunchBound), 0);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_DOUBLE_EQ(r.devices[0].below_sm_fraction, 1.0);
}

TEST(AttributionRules, ShortGapsHighMemoryAreInsufficientMemory) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Malloc(p, kTid, 0, 0x1000, 70 * kGiB);
  ShortGaps(job, p);
  JobReport r = job.Finish();
  EXPECT_NEAR(CauseNs(r, Cause::kInsufficientMemory), Ms(600), 1000);
  EXPECT_EQ(CauseNs(r, Cause::kSmallBatch), 0);
}

TEST(AttributionRules, ShortGapsMidMemoryOrHighUtilAreLaunchBound) {
  {
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
    job.Malloc(p, kTid, 0, 0x1000, 50 * kGiB);  // 62.5%: neither rule of the paper
    ShortGaps(job, p);
    EXPECT_NEAR(CauseNs(job.Finish(), Cause::kLaunchBound), Ms(600), 1000);
  }
  {
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
    job.Malloc(p, kTid, 0, 0x1000, 1 * kGiB);
    job.Launch(p, kTid, 0);
    // 80% compute utilization: not a batch-size problem by the paper's rule.
    for (int i = 0; i < 1000; ++i) job.Kernel(p, i * 1.0, i * 1.0 + 0.8);
    job.End(p, 1000);
    JobReport r = job.Finish();
    EXPECT_NEAR(CauseNs(r, Cause::kLaunchBound), Ms(200), 1000);
    EXPECT_EQ(CauseNs(r, Cause::kSmallBatch), 0);
  }
}

TEST(AttributionRules, FreedMemoryDoesNotCountTowardsPeak) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Malloc(p, kTid, 0, 0x1000, 30 * kGiB);
  HostEvent free_event = job.Event(p, kTid, CUDA_FREE, 0.1, 0.2);
  free_event.device = 0;
  free_event.ptr = 0x1000;
  job.Add(free_event);
  job.Malloc(p, kTid, 0.3, 0x2000, 30 * kGiB);
  ShortGaps(job, p);
  JobReport r = job.Finish();
  EXPECT_EQ(r.devices[0].peak_memory, static_cast<int64_t>(30 * kGiB));
  EXPECT_NEAR(CauseNs(r, Cause::kSmallBatch), Ms(600), 1000);
}

TEST(AttributionRules, DeviceWithoutKernelsIsUnused) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 0, 0, 2);
  job.Device(p, 1, "GPU-b", 0, 0, 2);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 1000);
  job.Copy(p, kTid, 10, 20, MEM_PINNED);  // touches device 0 only
  HostEvent touch = job.Event(p, kTid, CUDA_MALLOC, 0, 1);
  touch.device = 1;
  touch.bytes = 1;
  touch.ptr = 8;
  job.Add(touch);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), Ms(1000));
  EXPECT_EQ(r.devices.size(), 2u);
  EXPECT_DOUBLE_EQ(r.compute_util, 0.5);
}

TEST(AttributionRules, VisibleButNeverTouchedGpusAreUnused) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 0, 0, /*visible=*/4);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(r.devices.size(), 4u);
  EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), 3 * Ms(1000));
  EXPECT_DOUBLE_EQ(r.compute_util, 0.25);
}

// Issue 13 (API misuse): ranks crowding onto one device while another visible one stays unused.
const Finding* SharedDeviceFinding(const JobReport& r) {
  const CauseReport* c = FindCause(r, Cause::kUnusedGpus);
  if (c == nullptr) return nullptr;
  for (const Finding& f : c->findings) {
    if (f.kind == FindingKind::kRanksShareDevice) return &f;
  }
  return nullptr;
}

TEST(AttributionRules, RanksOnOneDeviceWhileAnotherStaysUnusedAreNamed) {
  JobBuilder job;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    uint32_t p = job.Process(100 + rank, 1, static_cast<int32_t>(rank));
    job.Device(p, 0, "GPU-a", 0, 0, /*visible=*/2);
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 1000);
    job.End(p, 1000);
  }
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), Ms(1000));
  const Finding* f = SharedDeviceFinding(r);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 2u);
  EXPECT_EQ(f->rank, 0);
  EXPECT_EQ(f->other_count, 1u);
  EXPECT_EQ(r.symbols.String(f->api), "node0/GPU-a");
}

TEST(AttributionRules, RanksOnTheirOwnDevicesOrAllDevicesUsedAreNoSharedDevice) {
  {  // each rank its own device, a third visible one unused: unused, but nobody crowds
    JobBuilder job;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      uint32_t p = job.Process(100 + rank, 1, static_cast<int32_t>(rank));
      job.Device(p, rank, rank == 0 ? "GPU-a" : "GPU-b", 0, 0, /*visible=*/3);
      job.Launch(p, kTid, 0, rank);
      job.Kernel(p, 0, 1000, rank);
      job.End(p, 1000);
    }
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), Ms(1000));
    EXPECT_EQ(SharedDeviceFinding(r), nullptr);
  }
  {  // two ranks on one device, but it is the only visible one: nothing unused
    JobBuilder job;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      uint32_t p = job.Process(100 + rank, 1, static_cast<int32_t>(rank));
      job.Device(p, 0, "GPU-a", 0, 0, /*visible=*/1);
      job.Launch(p, kTid, 0);
      job.Kernel(p, 0, 1000);
      job.End(p, 1000);
    }
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), 0);
    EXPECT_EQ(SharedDeviceFinding(r), nullptr);
  }
  {  // one rank and a process without a rank (a tool, a launcher) on one device of two
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    uint32_t q = job.Process(200, 1, -1);
    for (uint32_t x : {p, q}) {
      job.Device(x, 0, "GPU-a", 0, 0, /*visible=*/2);
      job.Launch(x, kTid, 0);
      job.Kernel(x, 0, 1000);
      job.End(x, 1000);
    }
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), Ms(1000));
    EXPECT_EQ(SharedDeviceFinding(r), nullptr);
  }
}

// One gap, one story (issue 13): a device that ran no kernel is one whole-span gap of the cause
// the table gives it, never the crediting's pieces around its copies and syncs.
TEST(AttributionRules, ADeviceWithoutKernelsIsOneGapOfItsTableCause) {
  for (bool kernels_elsewhere : {true, false}) {
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a", 0, 0, /*visible=*/kernels_elsewhere ? 3 : 1);
    if (kernels_elsewhere) {
      job.Device(p, 1, "GPU-b", 0, 0, 3);
      job.Launch(p, kTid, 0, 1);
      job.Kernel(p, 0, 1000, 1);
    }
    // Device 0: copies and a sync, no kernel.
    job.Copy(p, kTid, 100, 110, MEM_PAGEABLE);
    job.GpuCopy(p, 100, 110, MEM_PAGEABLE);
    job.Sync(p, kTid, 300, 600);
    job.Copy(p, kTid, 600, 610, MEM_PAGEABLE);
    job.GpuCopy(p, 600, 610, MEM_PAGEABLE);
    job.End(p, 1000);
    JobReport r = job.Finish();
    const Cause whole = kernels_elsewhere ? Cause::kUnusedGpus : Cause::kNoGpuWork;
    SCOPED_TRACE(kernels_elsewhere ? "kernels on GPU-b" : "no kernel anywhere");
    EXPECT_EQ(CauseNs(r, whole), (kernels_elsewhere ? 2 : 1) * Ms(1000));
    size_t whole_gaps = 0;
    for (const GapReport& g : r.top_gaps) {
      if (g.device == "node0/GPU-b") continue;
      EXPECT_EQ(g.kind, GapKind::kWhole) << g.device;
      EXPECT_EQ(g.length, Ms(1000)) << g.device;
      ASSERT_EQ(g.causes.size(), 1u) << g.device;
      EXPECT_EQ(g.causes[0].first, whole) << g.device;
      EXPECT_FALSE(g.has_evidence) << g.device;
      ++whole_gaps;
    }
    // GPU-a, and with kernels elsewhere the visible one no process used.
    EXPECT_EQ(whole_gaps, kernels_elsewhere ? 2u : 1u);
  }
}

// Issue 13: host work exposed by a per-step read-back (loss.item(): the GPU runs dry while the
// launching thread waits, then the thread computes on the CPU before its next launch).
TEST(AttributionRules, HostWorkAfterTheSyncThatOpenedTheGapIsTheSyncs) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 10);
  HostEvent sync = job.Event(p, kTid, CUDA_SYNC, 5, 11);
  sync.device = 0;
  sync.stack = 42;
  job.Add(sync);
  // 11-30: CPU work, no traced call.
  job.Launch(p, kTid, 30);
  job.Kernel(p, 30, 40);
  job.End(p, 40);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(20));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* c = FindCause(r, Cause::kSynchronization);
  ASSERT_NE(c, nullptr);
  bool found = false;
  for (const Finding& f : c->findings) {
    if (f.kind == FindingKind::kHostWorkAfterSync) {
      found = true;
      EXPECT_EQ(f.ns, Ms(19));
    }
  }
  EXPECT_TRUE(found);
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(r.symbols.StackLabel(c->stacks[0].id), "stack42@p0");
  EXPECT_EQ(c->stacks[0].ns, Ms(20));
  ASSERT_FALSE(r.top_gaps.empty());
  EXPECT_EQ(r.top_gaps[0].causes[0].first, Cause::kSynchronization);
}

// The same after a synchronous device-to-host copy (cudaMemcpy of the loss): the copy's own slice
// is the transfer's; the host work after it is the synchronization's, without the copy's bytes.
TEST(AttributionRules, HostWorkAfterAReadBackCopyIsSynchronizationWithoutItsBytes) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 10);
  job.CopyToHost(p, kTid, 5, 11, 4);
  job.Launch(p, kTid, 30);
  job.Kernel(p, 30, 40);
  job.End(p, 40);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(1));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(19));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* c = FindCause(r, Cause::kSynchronization);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(c->stacks[0].bytes, 0u);
}

TEST(AttributionRules, HostWorkNotAfterASyncThatOpenedTheGapStaysUnknown) {
  {  // CPU work first, then a sync that returns at once: the GPU was dry before the sync
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 10);
    job.Sync(p, kTid, 20, 20.1);
    job.Launch(p, kTid, 30);
    job.Kernel(p, 30, 40);
    job.End(p, 40);
    JobReport r = job.Finish();
    EXPECT_NEAR(static_cast<double>(CauseNs(r, Cause::kUnknown)), Ms(19.9), Ms(0.01));
    EXPECT_NEAR(static_cast<double>(CauseNs(r, Cause::kSynchronization)), Ms(0.1), Ms(0.01));
  }
  {  // after the last kernel: the tail's, not the sync's
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 10);
    job.Sync(p, kTid, 5, 11);
    job.End(p, 40);
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(1));
    EXPECT_EQ(CauseNs(r, Cause::kTail), Ms(29));
  }
  {  // the thread read a data file after the sync: preparing that data (data_loading)
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 10);
    job.Sync(p, kTid, 5, 11);
    job.Io(p, kTid, FILE_READ, 12, 14, "/data/shard-0001.npy");
    job.Launch(p, kTid, 30);
    job.Kernel(p, 30, 40);
    job.End(p, 40);
    JobReport r = job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(1));
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(19));
  }
}

// Issue 13: a terminal library's own configuration reads (GNU readline reads /etc/inputrc and
// ~/.inputrc when a prompt starts) are no data loading; a dataset file is.
TEST(AttributionRules, SystemConfigurationReadsAreNoDataLoading) {
  for (const char* path : {"/etc/inputrc", "/home/u/.inputrc", "/usr/share/terminfo/x/xterm",
                           "/usr/lib/locale/C.utf8/LC_CTYPE", "/data/etc/shard-1.bin"}) {
    JobBuilder job;
    uint32_t p = job.Process(100, 1, 0);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, kTid, 0);
    job.Kernel(p, 0, 10);
    job.Io(p, kTid, FILE_READ, 10, 30, path);
    job.Launch(p, kTid, 30);
    job.Kernel(p, 30, 40);
    job.End(p, 40);
    JobReport r = job.Finish();
    bool data = std::string_view(path).starts_with("/data/");
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), data ? Ms(20) : 0) << path;
  }
}

TEST(AttributionRules, AllVisibleGpusUsedMeansNoneUnused) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 0, 0, 1);
  job.Launch(p, kTid, 0);
  job.Kernel(p, 0, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kUnusedGpus), 0);
  EXPECT_EQ(r.idle_ns, 0);
}

TEST(AttributionRules, NoKernelsAtAllIsNoGpuWork) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Io(p, kTid, FILE_READ, 0, 500, "/data/x.csv");
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kNoGpuWork), Ms(1000));
  EXPECT_EQ(r.causes.size(), 1u);
}

TEST(AttributionRules, OneKernelIsNotNoGpuWork) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Kernel(p, 0, 1);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kNoGpuWork), 0);
  EXPECT_EQ(CauseNs(r, Cause::kTail), Ms(999));
}

// --- precedence ---------------------------------------------------------------------------------

TEST(AttributionPrecedence, LaunchingThreadBeatsOtherThreads) {
  OneGap s;
  s.job.Io(s.p, /*tid=*/555, FILE_WRITE, 100, 200, "/ckpt/model.pt");  // a helper thread
  s.job.Copy(s.p, kTid, 100, 200, MEM_PAGEABLE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
}

TEST(AttributionPrecedence, OtherThreadsExplainWhatTheLauncherDoesNot) {
  OneGap s;
  s.job.Io(s.p, /*tid=*/555, FILE_WRITE, 100, 200, "/ckpt/model.pt");
  s.job.Copy(s.p, kTid, 150, 200, MEM_PAGEABLE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(50));
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(50));
}

TEST(AttributionPrecedence, CauseOrderWithinATier) {
  OneGap s;
  // Two launching threads of device 0, blocked in a write and a copy at the same time.
  s.job.Launch(s.p, 101, 0);
  s.job.Io(s.p, 101, FILE_WRITE, 100, 200, "/ckpt/model.pt");
  s.job.Copy(s.p, kTid, 120, 160, MEM_PAGEABLE);
  s.job.Sync(s.p, kTid, 160, 200);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(40));
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(60));  // checkpointing before synchronization
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), 0);
}

TEST(AttributionPrecedence, HostEventsBeatGpuSideEvidence) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_READ, 100, 200, "/data/a");
  s.job.Kernel(s.p, 100, 200, 0, /*nccl=*/true);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCommunication), 0);
}

// --- conservation and thresholds ------------------------------------------------------------

TEST(AttributionConservation, CausesPlusComputeCoverTheSpan) {
  OneGap s(AnalysisOptions{.min_gap = Ms(5)});
  s.job.Kernel(s.p, 400, 402);
  s.job.Kernel(s.p, 1000, 1000);
  s.job.Copy(s.p, kTid, 90, 130, MEM_PAGEABLE);
  s.job.Io(s.p, 7, FILE_READ, 120, 170, "/data/b");
  JobReport r = s.job.Finish();
  ASSERT_EQ(r.devices.size(), 1u);
  Ns sum = 0;
  for (Ns ns : r.devices[0].cause_ns) sum += ns;
  EXPECT_EQ(sum + r.devices[0].compute_ns, r.span);
  EXPECT_EQ(r.idle_ns, sum);
}

TEST(AttributionConservation, GapsBelowMinGapAreNotSliced) {
  OneGap s(AnalysisOptions{.min_gap = Ms(150)});  // the 100 ms gap is "short"
  s.job.Kernel(s.p, 150, 160);                    // it is two short gaps: 100-150, 160-200
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  EXPECT_EQ(r.devices[0].short_gap_ns, Ms(90));
  EXPECT_EQ(r.devices[0].short_gaps, 2u);
  EXPECT_EQ(r.devices[0].long_gaps, 0u);
  EXPECT_EQ(CauseNs(r, Cause::kLaunchBound), Ms(90));  // U 91%: as a whole
}

// A short gap's time in the launching thread's blocking host work (a per-step pageable copy) is
// that work's cause; the rest stays the short gaps' cause.
TEST(AttributionConservation, BlockingHostWorkInAShortGapIsItsCause) {
  OneGap s(AnalysisOptions{.min_gap = Ms(150)});
  s.job.Copy(s.p, kTid, 120, 180, MEM_PAGEABLE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), Ms(60));
  EXPECT_EQ(r.devices[0].short_gap_ns, Ms(100));
  EXPECT_EQ(r.devices[0].long_gaps, 0u);
  Ns rest = 0;
  for (Cause c : {Cause::kSmallBatch, Cause::kLaunchBound, Cause::kInsufficientMemory}) {
    rest += CauseNs(r, c);
  }
  EXPECT_EQ(rest, Ms(40));
  const CauseReport* c = FindCause(r, Cause::kHostGpuTransfer);
  ASSERT_NE(c, nullptr);
  const Finding* f = FindFinding(*c, FindingKind::kPageableCopies);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, Ms(60));
}

// Close cases: a sync or a pinned read-back waits for the device, idle in the gap (what is left
// of it is launch latency); a read by a thread that launches nothing does not block launches.
TEST(AttributionConservation, SyncsPinnedCopiesAndOtherThreadsInAShortGapAreNot) {
  OneGap s(AnalysisOptions{.min_gap = Ms(150)});
  s.job.Sync(s.p, kTid, 90, 130);
  s.job.Copy(s.p, kTid, 130, 150, MEM_PINNED);
  s.job.Io(s.p, kTid + 1, FILE_READ, 150, 190, "/data/a");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), 0);
  EXPECT_EQ(CauseNs(r, Cause::kHostGpuTransfer), 0);
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  EXPECT_EQ(CauseNs(r, Cause::kSmallBatch) + CauseNs(r, Cause::kLaunchBound), Ms(100));
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

TEST(AttributionRules, LaunchesWithoutGpuRecordsAreWarnedAbout) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Launch(p, 100, 10);
  job.End(p, 1000);
  JobReport r = job.Finish();
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0].kind, WarningKind::kLaunchesWithoutGpuRecords);
  EXPECT_EQ(r.warnings[0].count, 1u);
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

TEST(AttributionRules, ReadingTheTerminalIsInteractive) {
  OneGap s;
  HostEvent e = s.job.Event(s.p, kTid, FILE_READ, 100, 200, "/dev/pts/3");
  e.fd = 0;
  e.fs_type = FS_DEVICE;
  s.job.Add(e);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), Ms(100));
}

TEST(AttributionRules, ReadingOtherDevicesIsNotInteractive) {
  OneGap s;
  HostEvent e = s.job.Event(s.p, kTid, FILE_READ, 100, 200, "/dev/shm/batch-17");
  e.fd = 9;
  e.fs_type = FS_TMPFS;
  s.job.Add(e);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), 0);
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
}

// A job with no GPU work: the host activity section and the no_gpu_work evidence say what its
// threads did (a synchronous checkpoint on the main thread, DataLoader-like forked workers).
TEST(HostActivity, NoGpuJobListsCheckpointWritesWorkersAndPrograms) {
  JobBuilder job;
  uint32_t main = job.Process(100, 1);
  uint32_t worker1 = job.ForkedProcess(101, 100);
  uint32_t worker2 = job.ForkedProcess(102, 100);
  uint32_t pip = job.Process(103, 100, -1, "/usr/bin/pip", "pip install tqdm");
  job.Io(main, 100, FILE_WRITE, 100, 400, "/ckpt/model_step3.pt", FS_LOCAL, 64 << 20);
  job.Io(main, 100, FILE_WRITE, 500, 600, "/runs/metrics.csv", FS_LOCAL, 100);
  job.Io(main, 100, FILE_READ, 600, 610, "/sock", FS_SOCKET, 8);
  job.Io(worker1, 101, FILE_READ, 50, 70, "/data/sample1.bin", FS_NFS, 4096);
  job.Io(worker2, 102, FILE_READ, 60, 90, "/data/sample1.bin", FS_NFS, 4096);
  HostEvent exec = job.Event(main, 100, PROC_SPAWN, 10, 11, "/usr/bin/pip");
  std::string argv("pip\0install\0tqdm", 16);
  exec.argv = argv;
  job.Add(exec);
  job.End(pip, 40);
  job.End(worker1, 900);
  job.End(worker2, 900);
  job.End(main, 1000);
  JobReport r = job.Finish();

  const HostActivityReport& host = r.host_activity;
  auto group = [&](HostActivityKind kind) -> const HostActivityGroup* {
    for (const HostActivityGroup& g : host.groups) {
      if (g.kind == kind) return &g;
    }
    return nullptr;
  };
  const HostActivityGroup* ckpt = group(HostActivityKind::kCheckpointWrites);
  ASSERT_NE(ckpt, nullptr);
  EXPECT_EQ(ckpt->ns, Ms(300));
  EXPECT_EQ(ckpt->bytes, 64u << 20);
  ASSERT_EQ(ckpt->items.size(), 1u);
  EXPECT_EQ(r.symbols.String(ckpt->items[0].what), "/ckpt/model_step3.pt");
  EXPECT_EQ(ckpt->items[0].pid, 100u);
  EXPECT_TRUE(ckpt->items[0].main_thread);
  EXPECT_EQ(r.symbols.StackLabel(ckpt->items[0].stack), "stack42@p0");
  const HostActivityGroup* writes = group(HostActivityKind::kWrites);
  ASSERT_NE(writes, nullptr);
  EXPECT_EQ(r.symbols.String(writes->items[0].what), "/runs/metrics.csv");
  const HostActivityGroup* reads = group(HostActivityKind::kReads);
  ASSERT_NE(reads, nullptr);
  ASSERT_EQ(reads->items.size(), 1u);  // one file, read by two processes
  EXPECT_EQ(reads->items[0].processes, 2u);
  EXPECT_EQ(reads->items[0].ns, Ms(50));
  EXPECT_EQ(reads->items[0].fs_type, FS_NFS);
  EXPECT_NE(group(HostActivityKind::kIpc), nullptr);
  const HostActivityGroup* programs = group(HostActivityKind::kPrograms);
  ASSERT_NE(programs, nullptr);
  ASSERT_EQ(programs->items.size(), 1u);  // the spawn and the traced process are one program
  EXPECT_EQ(r.symbols.String(programs->items[0].what), "pip install tqdm");
  EXPECT_TRUE(programs->items[0].installer);
  EXPECT_EQ(programs->items[0].ns, Ms(1) + Ms(40));

  ASSERT_EQ(host.workers.size(), 2u);
  EXPECT_EQ(host.workers[0].pid, 101u);
  EXPECT_EQ(host.workers[1].pid, 102u);
  EXPECT_EQ(host.workers_with_reads, 2u);
  EXPECT_EQ(host.workers[1].read_ns, Ms(30));

  // no_gpu_work points at the heaviest of them: the checkpoint write.
  const CauseReport* c = FindCause(r, Cause::kNoGpuWork);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->objects.empty());
  EXPECT_EQ(c->objects[0].kind, EvidenceKind::kHostActivity);
  EXPECT_EQ(c->objects[0].activity, HostActivityKind::kCheckpointWrites);
  EXPECT_EQ(r.symbols.String(c->objects[0].id), "/ckpt/model_step3.pt");
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(Label(r, c->stacks[0]), "stack42@p0");
  const Finding* workers = FindFinding(*c, FindingKind::kWorkerProcesses);
  ASSERT_NE(workers, nullptr);
  EXPECT_EQ(workers->count, 2u);
  EXPECT_EQ(workers->other_count, 2u);  // both read files
  EXPECT_EQ(workers->calls, 2u);
  const Finding* checkpoints = FindFinding(*c, FindingKind::kHostActivity);
  ASSERT_NE(checkpoints, nullptr);  // the heaviest kind comes first
  EXPECT_EQ(checkpoints->activity, HostActivityKind::kCheckpointWrites);
  EXPECT_EQ(checkpoints->ns, Ms(300));
}

TEST(HostActivity, GpuJobKeepsItsCauseEvidenceAndListsHostActivity) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_READ, 100, 200, "/data/shard0", FS_LOCAL, 1 << 20);
  JobReport r = s.job.Finish();
  EXPECT_EQ(FindCause(r, Cause::kNoGpuWork), nullptr);
  ASSERT_EQ(r.host_activity.groups.size(), 1u);
  EXPECT_EQ(r.host_activity.groups[0].kind, HostActivityKind::kReads);
  EXPECT_EQ(r.symbols.String(r.host_activity.groups[0].items[0].what), "/data/shard0");
  EXPECT_TRUE(r.host_activity.workers.empty());
}

TEST(HostActivity, ClosingALocalModelFileIsNoCheckpointWrite) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1);
  job.Io(p, 100, FILE_CLOSE, 10, 20, "/weights/model.pt", FS_LOCAL, 0);
  job.Io(p, 100, FILE_CLOSE, 30, 40, "/nfs/model.pt", FS_NFS, 0);
  job.End(p, 100);
  JobReport r = job.Finish();
  ASSERT_EQ(r.host_activity.groups.size(), 1u);
  EXPECT_EQ(r.host_activity.groups[0].kind, HostActivityKind::kCheckpointWrites);
  EXPECT_EQ(r.host_activity.groups[0].ns, Ms(10));  // the NFS close only
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

// The job forks a child (fork stack 7 in the parent) that execs `pip install -r requirements.txt`
// (exec stack 9 in the forked copy); the exec'd installer runs [0, 500) before the first kernel.
TEST(AttributionRules, InstallerEvidenceIsItsCommandLineAndTheStackThatStartedIt) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0, "/job/train", "train");
  uint32_t forked = job.ForkedProcess(150, 100);
  uint32_t pip =
      job.Process(150, 100, -1, "/bin/dash", "sh /opt/fake/pip install -r requirements.txt");
  (void)forked;
  job.Device(p, 0, "GPU-a");
  HostEvent fork_event = job.Event(p, 100, PROC_FORK, 0, 0.1);
  fork_event.child_pid = 150;
  fork_event.stack = 7;
  job.Add(fork_event);
  // The forked copy of the job calls exec with the job's own stack (fork copies it).
  HostEvent exec_event = job.Event(forked, 150, PROC_EXEC, 0.2, 0.2, "/opt/fake/pip");
  std::string argv("pip\0install\0-r\0requirements.txt", 31);
  exec_event.argv = argv;
  exec_event.stack = 9;
  job.analysis().AddHostEvent([&] {
    HostEvent e = exec_event;
    e.path = "/opt/fake/pip";
    return e;
  }());
  job.End(pip, 500);
  job.Launch(p, 100, 600);
  job.Kernel(p, 600, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kLibraryInstallation), Ms(500));
  const CauseReport* c = FindCause(r, Cause::kLibraryInstallation);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->objects.empty());
  EXPECT_EQ(Label(r, c->objects[0]), "pip install -r requirements.txt");
  ASSERT_FALSE(c->stacks.empty());
  // The exec call's stack (in the forked copy) is preferred to the fork call's.
  EXPECT_EQ(Label(r, c->stacks[0]), "stack9@p" + std::to_string(forked));
  ASSERT_FALSE(r.top_gaps.empty());
  ASSERT_TRUE(r.top_gaps[0].has_evidence);
  EXPECT_EQ(r.top_gaps[0].evidence.cause, Cause::kLibraryInstallation);
  EXPECT_EQ(r.symbols.String(r.top_gaps[0].evidence.object), "pip install -r requirements.txt");
  // The forked copy that exec'd is no DataLoader-style worker.
  EXPECT_TRUE(r.host_activity.workers.empty());
}

// popen/system (issue 13): a spawn with no child pid, linked to the shell it started by parent
// pid and start time; the caller's stack and the command are the installer's evidence. A second
// shell started later by the same parent (not an installer) is not taken for it.
TEST(AttributionRules, PopenOfAnInstallerLeadsToTheCallersStack) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0, "/job/train", "train");
  uint32_t other = job.Process(140, 100, -1, "/bin/dash", "sh -c date", "node0", 0);
  uint32_t sh =
      job.Process(150, 100, -1, "/bin/dash", "sh -c pip install -r requirements.txt", "node0", 5);
  job.Device(p, 0, "GPU-a");
  HostEvent spawn = job.Event(p, 100, PROC_SPAWN, 8, 9, "/bin/sh");
  std::string argv("sh\0-c\0pip install -r requirements.txt", 38);
  spawn.argv = argv;
  spawn.stack = 7;
  spawn.child_pid = 0;
  job.analysis().AddHostEvent([&] {
    HostEvent e = spawn;
    e.path = "/bin/sh";
    return e;
  }());
  job.End(other, 1);
  job.End(sh, 500);
  job.Launch(p, 100, 600);
  job.Kernel(p, 600, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kLibraryInstallation), Ms(500 - 5));
  const CauseReport* c = FindCause(r, Cause::kLibraryInstallation);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->objects.empty());
  EXPECT_EQ(Label(r, c->objects[0]), "sh -c pip install -r requirements.txt");
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(Label(r, c->stacks[0]), "stack7@p" + std::to_string(p));
}

// An installer started by an untraced parent: its own command line, no stack; a fork's stack
// alone is used when no exec/spawn was seen.
TEST(AttributionRules, InstallerEvidenceFallsBackToItsOwnCommandLineAndTheForkStack) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  uint32_t pip = job.Process(150, 100, -1, "/usr/bin/python3", "python3 -m pip install torch");
  job.Device(p, 0, "GPU-a");
  HostEvent spawn = job.Event(p, 100, PROC_FORK, 0, 0.1);
  spawn.child_pid = 150;
  spawn.stack = 7;
  job.Add(spawn);
  job.End(pip, 500);
  job.Launch(p, 100, 600);
  job.Kernel(p, 600, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kLibraryInstallation);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->objects.empty());
  EXPECT_EQ(Label(r, c->objects[0]), "python3 -m pip install torch");
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(Label(r, c->stacks[0]), "stack7@p" + std::to_string(p));
}

// Pipes and sockets are not uploads (OneGap: the gap is [100, 200)).
struct PipeWriteJob {
  JobBuilder job;
  uint32_t p;
  explicit PipeWriteJob(bool with_worker) {
    p = job.Process(100, 1, 0);
    if (with_worker) job.ForkedProcess(101, 100);
    job.Device(p, 0, "GPU-a");
    job.Launch(p, 100, 0);
    job.Kernel(p, 0, 100);
    job.Kernel(p, 200, 1000);
    job.End(p, 1000);
  }
};

TEST(AttributionRules, PipeWriteWithoutWorkersIsNoUpload) {
  PipeWriteJob s(false);
  s.job.Io(s.p, 100, FILE_WRITE, 100, 200, "pipe:[4242]", FS_PIPE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

TEST(AttributionRules, PipeWriteToWorkersIsDataLoading) {
  PipeWriteJob s(true);
  s.job.Io(s.p, 100, FILE_WRITE, 100, 200, "pipe:[4242]", FS_PIPE);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
}

TEST(AttributionRules, LoopbackSocketWriteIsNoUploadButPublicIsAndPrivateIsCommunication) {
  {
    PipeWriteJob s(false);
    s.job.Io(s.p, 100, FILE_WRITE, 100, 200, "socket:[77]", FS_SOCKET);
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
  }
  for (NetScope scope : {NET_PUBLIC, NET_PRIVATE}) {
    PipeWriteJob s(false);
    HostEvent e = s.job.Event(s.p, 100, FILE_WRITE, 100, 200, "socket:[78]");
    e.fs_type = FS_SOCKET;
    e.net_scope = scope;
    e.bytes = 1000;
    s.job.Add(e);
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), scope == NET_PUBLIC ? Ms(100) : 0);
    EXPECT_EQ(CauseNs(r, Cause::kCommunication), scope == NET_PRIVATE ? Ms(100) : 0);
  }
}

// Two ranks, ten asynchronous all-reduces: rank 0's host enqueues one per ms (it runs ahead),
// rank 1 calls one every 100 ms. Rank 0 cannot wait at a collective for longer than since the
// previous one completed (no earlier than rank 1's previous call): 99 ms, then 100 ms x 9, which
// is at most the 1 s span (summing the host drift said 5.445 s). Rank 0's device idles between
// two NCCL kernels, so communication is a cause with notes.
TEST(AttributionRules, StragglerWaitsAreBoundedByThePreviousCollective) {
  JobBuilder job;
  uint32_t a = job.Process(100, 1, 0);
  uint32_t b = job.Process(200, 1, 1);
  job.Device(a, 0, "GPU-a");
  job.Device(b, 0, "GPU-b");
  for (int k = 1; k <= 10; ++k) {
    job.Nccl(a, 100, k, k + 0.01, static_cast<uint64_t>(k), 0, 2);
    job.Nccl(b, 200, 100.0 * k, 100.0 * k + 0.01, static_cast<uint64_t>(k), 1, 2);
  }
  job.Launch(a, 100, 0);
  job.Kernel(a, 0, 1, 0, /*nccl=*/true);
  job.Kernel(a, 990, 1000, 0, /*nccl=*/true);
  job.Kernel(b, 0, 1000);
  job.End(a, 1000);
  job.End(b, 1000);
  JobReport r = job.Finish();
  const CauseReport* c = FindCause(r, Cause::kCommunication);
  ASSERT_NE(c, nullptr);
  const Finding* straggler = FindFinding(*c, FindingKind::kStragglerRank);
  ASSERT_NE(straggler, nullptr);
  EXPECT_EQ(straggler->rank, 1);
  EXPECT_EQ(straggler->count, 10u);
  EXPECT_EQ(straggler->of_count, 10u);
  EXPECT_EQ(straggler->ns, Ms(999));  // at most the span, not the summed drift
  EXPECT_EQ(straggler->other_ns, Ms(100));
}

TEST(AttributionRules, WorkerBlockedOnItsResultQueueExplainsNothing) {
  PipeWriteJob s(true);
  s.job.Io(1, 101, FILE_WRITE, 100, 200, "pipe:[4243]", FS_PIPE);  // process 1: the worker
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
}

}  // namespace
}  // namespace idlescope::testing
