// Savings (analysis/savings.h), one rule per cause, and the report's assembly rules that stand
// alone (analysis/report_builder.h): the short-gap cause and the findings of a cause's totals.
#include "analyzer/analysis/savings.h"

#include <gtest/gtest.h>

#include "analyzer/analysis/report_builder.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

GpuRecord Copy(CopyKind kind, MemKind host, uint64_t bytes, double ms) {
  GpuRecord r;
  r.kind = GPU_MEMCPY;
  r.copy_kind = kind;
  r.src_kind = kind == COPY_H2D ? host : MEM_DEVICE;
  r.dst_kind = kind == COPY_D2H ? host : MEM_DEVICE;
  r.bytes = bytes;
  r.start = 0;
  r.end = Ms(ms);
  return r;
}

TEST(Savings, CopyRatesComeFromLargeGpuCopiesOnly) {
  CopyRates rates;
  rates.Add(Copy(COPY_H2D, MEM_PINNED, 1ull << 30, 50));
  rates.Add(Copy(COPY_D2H, MEM_PINNED, 1ull << 30, 100));
  rates.Add(Copy(COPY_D2H, MEM_PAGEABLE, 1ull << 30, 100));
  rates.Add(Copy(COPY_D2H, MEM_PINNED, 4, 1));  // a loss read-back: latency, not bandwidth
  EXPECT_NEAR(rates.pinned.BytesPerNs(), 2.0 * (1ull << 30) / 150e6, 1e-9);
  EXPECT_NEAR(rates.d2h_pinned.BytesPerNs(), (1ull << 30) / 100e6, 1e-9);
  EXPECT_NEAR(rates.d2h.BytesPerNs(), (1ull << 30) / 100e6, 1e-9);
  EXPECT_EQ(CopyRates{}.pinned.BytesPerNs(), 0);
}

TEST(Savings, CopyRatesOfTwoPartsAreThoseOfTheirCopiesTogether) {
  CopyRates a, b, both;
  for (CopyRates* r : {&a, &both}) r->Add(Copy(COPY_H2D, MEM_PINNED, 1ull << 30, 50));
  for (CopyRates* r : {&b, &both}) {
    r->Add(Copy(COPY_D2H, MEM_PINNED, 1ull << 30, 100));
    r->Add(Copy(COPY_D2H, MEM_PAGEABLE, 1ull << 30, 100));
  }
  a.MergeFrom(b);
  for (auto [merged, whole] :
       {std::pair{a.pinned, both.pinned}, {a.d2h_pinned, both.d2h_pinned}, {a.d2h, both.d2h}}) {
    EXPECT_EQ(merged.bytes, whole.bytes);
    EXPECT_EQ(merged.ns, whole.ns);
  }
}

TEST(Savings, PageableCopiesSaveTheirTimeMinusThePinnedTimeThatComputeCannotHide) {
  CauseTotals t;
  t.pageable_ns = Ms(100);
  t.pageable_bytes = 600e6;
  Saving s = EstimateSaving(Cause::kHostGpuTransfer, Ms(150), t, {}, {});
  EXPECT_EQ(s.basis.method, SavingMethod::kPageableAtPinnedRate);
  EXPECT_EQ(s.basis.rate_source, RateSource::kAssumed);
  EXPECT_EQ(s.ns, Ms(50));  // 600 MB at the assumed 12 GB/s take 50 ms
  CopyRates rates;
  rates.Add(Copy(COPY_H2D, MEM_PINNED, 24'000'000'000, 1000));  // 24 GB/s
  s = EstimateSaving(Cause::kHostGpuTransfer, Ms(150), t, rates, {});
  EXPECT_EQ(s.basis.rate_source, RateSource::kPinnedCopies);
  EXPECT_EQ(s.ns, Ms(75));
  // Overlapped with compute, the copies hide behind it: 25 ms of pinned-rate pageable bytes and
  // 50 ms of pinned copies behind 60 ms of compute leave 15 ms exposed.
  s = EstimateSaving(Cause::kHostGpuTransfer, Ms(150), t, rates, {.compute_ns = Ms(60)});
  EXPECT_EQ(s.ns, Ms(135));
  s = EstimateSaving(Cause::kHostGpuTransfer, Ms(150), t, rates, {.compute_ns = Ms(600)});
  EXPECT_EQ(s.ns, Ms(150));
}

TEST(Savings, CheckpointsKeepTheirSnapshot) {
  CauseTotals t;
  t.bytes = 600e6;
  Saving s = EstimateSaving(Cause::kCheckpointing, Ms(100), t, {}, {});
  EXPECT_EQ(s.basis.method, SavingMethod::kCheckpointMinusSnapshot);
  EXPECT_EQ(s.basis.rate_source, RateSource::kAssumed);
  EXPECT_EQ(s.basis.bytes, 600'000'000u);
  EXPECT_EQ(s.ns, Ms(50));
  t.snapshot_ns = Ms(80);  // a measured snapshot longer than the bytes need
  s = EstimateSaving(Cause::kCheckpointing, Ms(100), t, {}, {});
  EXPECT_EQ(s.ns, Ms(20));
  EXPECT_EQ(s.basis.snapshot_ns, Ms(80));
  CopyRates rates;
  rates.Add(Copy(COPY_D2H, MEM_PAGEABLE, 1'200'000'000, 50));  // 24 GB/s, not pinned
  t.snapshot_ns = 0;
  s = EstimateSaving(Cause::kCheckpointing, Ms(100), t, rates, {});
  EXPECT_EQ(s.basis.rate_source, RateSource::kDeviceToHostCopies);
  EXPECT_EQ(s.ns, Ms(75));
  t.tail_ns = Ms(40);  // a final checkpoint after the last kernel: the job waits for it anyway
  s = EstimateSaving(Cause::kCheckpointing, Ms(100), t, rates, {});
  EXPECT_EQ(s.ns, Ms(35));
  EXPECT_EQ(s.basis.tail_ns, Ms(40));
  t.outlast_ns = Ms(20);  // writes outlasting the training until the next save: waited for
  s = EstimateSaving(Cause::kCheckpointing, Ms(100), t, rates, {});
  EXPECT_EQ(s.ns, Ms(15));
  EXPECT_EQ(s.basis.outlast_ns, Ms(20));
  t.outlast_ns = Ms(90);  // never more than the time left after the tail
  s = EstimateSaving(Cause::kCheckpointing, Ms(100), t, rates, {});
  EXPECT_EQ(s.ns, 0);
  EXPECT_EQ(s.basis.outlast_ns, Ms(60));
}

TEST(Savings, EveryOtherCauseIsAllHalfOrNothing) {
  const CauseTotals t;
  for (Cause c : {Cause::kDataLoading, Cause::kIntermediateUpload, Cause::kExternalDownload,
                  Cause::kLibraryInstallation, Cause::kInteractive, Cause::kSynchronization,
                  Cause::kTail, Cause::kUnusedGpus, Cause::kNoGpuWork}) {
    Saving s = EstimateSaving(c, Ms(100), t, {}, {});
    EXPECT_EQ(s.basis.method, SavingMethod::kAll) << InfoOf(c).name;
    EXPECT_EQ(s.ns, Ms(100));
  }
  // Short gaps of a device whose kernels' grids are unknown, or that is memory- or launch-bound.
  for (Cause c : {Cause::kSmallBatch, Cause::kInsufficientMemory, Cause::kLaunchBound}) {
    Saving s = EstimateSaving(c, Ms(100), t, {}, {});
    EXPECT_EQ(s.basis.method, SavingMethod::kHalf) << InfoOf(c).name;
    EXPECT_EQ(s.ns, Ms(50));
    EXPECT_EQ(s.busy_ns, 0);
  }
  for (Cause c : {Cause::kStartup, Cause::kUnknown}) {
    Saving s = EstimateSaving(c, Ms(100), t, {}, {});
    EXPECT_EQ(s.basis.method, SavingMethod::kNone);
    EXPECT_EQ(s.ns, 0);
  }
}

TEST(Savings, OverlapHidesCommunicationUpToTheComputeButNotTheWaitsForSlowerRanks) {
  const CauseTotals t;
  Saving s = EstimateSaving(Cause::kCommunication, Ms(100), t, {}, {.compute_ns = Ms(300)});
  EXPECT_EQ(s.basis.method, SavingMethod::kOverlapWithCompute);
  EXPECT_EQ(s.ns, Ms(100));  // compute enough to hide it all
  s = EstimateSaving(Cause::kCommunication, Ms(100), t, {}, {.compute_ns = Ms(30)});
  EXPECT_EQ(s.ns, Ms(30));  // only as much as there is compute to run beside
  s = EstimateSaving(Cause::kCommunication, Ms(100), t, {},
                     {.compute_ns = Ms(300), .collective_wait_ns = Ms(70)});
  EXPECT_EQ(s.ns, Ms(30));  // the wait for a slower rank stays
  EXPECT_EQ(s.basis.wait_ns, Ms(70));
  s = EstimateSaving(Cause::kCommunication, Ms(100), t, {},
                     {.compute_ns = Ms(300), .collective_wait_ns = Ms(700)});
  EXPECT_EQ(s.ns, 0);
  EXPECT_EQ(s.basis.wait_ns, Ms(100));
}

TEST(Savings, ALargerBatchAsMemoryAllowsAmortizesLaunchesAndFillsTheSms) {
  const CauseTotals t;
  // Memory for a 10x batch, kernels of a quarter of the SMs: 100 ms of launch gaps lose 90%,
  // 40 ms of such kernels run full (a quarter of their time per sample stays).
  DeviceWork w{.small_kernel_ns = Ms(40), .small_kernel_fill = 0.25, .memory_headroom = 10};
  Saving s = EstimateSaving(Cause::kSmallBatch, Ms(100), t, {}, w);
  EXPECT_EQ(s.basis.method, SavingMethod::kFillTheDevice);
  EXPECT_DOUBLE_EQ(s.basis.batch_growth, 10);
  EXPECT_EQ(s.ns, Ms(90));
  EXPECT_EQ(s.busy_ns, Ms(30));
  w.memory_headroom = 2;  // memory for only twice the batch: the kernels fill half the SMs
  s = EstimateSaving(Cause::kSmallBatch, Ms(100), t, {}, w);
  EXPECT_DOUBLE_EQ(s.basis.batch_growth, 2);
  EXPECT_EQ(s.ns, Ms(50));
  EXPECT_EQ(s.busy_ns, Ms(20));
  w.memory_headroom = 1000;  // claimed at most kMaxBatchGrowth
  s = EstimateSaving(Cause::kSmallBatch, Ms(100), t, {}, w);
  EXPECT_DOUBLE_EQ(s.basis.batch_growth, kMaxBatchGrowth);
  w.memory_headroom = 0;  // memory use unknown: only until the SMs are full
  s = EstimateSaving(Cause::kSmallBatch, Ms(100), t, {}, w);
  EXPECT_DOUBLE_EQ(s.basis.batch_growth, 4);
  EXPECT_EQ(s.ns, Ms(75));
  EXPECT_EQ(s.busy_ns, Ms(30));
}

TEST(Savings, TheJobEndsWhenItsLastDeviceDoes) {
  JobSaving none;
  EXPECT_EQ(none.job_ns(), 0);
  JobSaving j;
  j.AddDevice({.ns = Ms(100)});
  j.AddDevice({.ns = Ms(80), .busy_ns = Ms(10)});
  EXPECT_EQ(j.gpu_ns(), Ms(180));
  EXPECT_EQ(j.job_ns(), Ms(90));  // the second device's timeline shrinks least
  j.AddDevice({});                // a device the cause took nothing from keeps the job's end
  EXPECT_EQ(j.gpu_ns(), Ms(180));
  EXPECT_EQ(j.job_ns(), 0);
}

TEST(ReportAssembly, ShortGapsFollowThePapersBatchSizeAndMemoryRule) {
  const uint64_t total = 80ull << 30;
  EXPECT_EQ(ShortGapCause(0.5, int64_t{70} << 30, total), Cause::kInsufficientMemory);
  EXPECT_EQ(ShortGapCause(0.5, int64_t{40} << 30, total), Cause::kSmallBatch);
  EXPECT_EQ(ShortGapCause(0.5, int64_t{50} << 30, total), Cause::kLaunchBound);  // 62.5%
  EXPECT_EQ(ShortGapCause(0.51, int64_t{10} << 30, total), Cause::kLaunchBound);
  EXPECT_EQ(ShortGapCause(0.2, 0, total), Cause::kLaunchBound);  // memory unknown
  EXPECT_EQ(ShortGapCause(0.2, int64_t{1} << 30, 0), Cause::kLaunchBound);
}

TEST(ReportAssembly, FindingsOfACausesTotals) {
  CauseTotals t;
  t.pageable_ns = Ms(30);
  t.gpu_side_ns = Ms(5);
  std::vector<Finding> f;
  TotalsFindings(Cause::kHostGpuTransfer, Ms(100), t, {}, &f);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, FindingKind::kPageableCopies);
  EXPECT_EQ(f[0].ns, Ms(30));
  EXPECT_EQ(f[0].other_ns, Ms(70));
  EXPECT_EQ(f[1].kind, FindingKind::kGpuOnlyCopies);
  t = CauseTotals();
  t.nccl_op_ns[NCCL_ALL_GATHER] = Ms(7);
  t.nccl_op_ns[NCCL_ALL_REDUCE] = Ms(9);
  f.clear();
  TotalsFindings(Cause::kCommunication, Ms(16), t, {}, &f);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].nccl_op, NCCL_ALL_REDUCE);  // in op order
  EXPECT_EQ(f[1].nccl_op, NCCL_ALL_GATHER);
  KernelStats k;
  k.kernels = 10;
  k.kernel_ns = Ms(1);
  k.with_grid = 10;
  k.below_sm_count = 4;
  f.clear();
  TotalsFindings(Cause::kLaunchBound, Ms(1), CauseTotals(), k, &f);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, FindingKind::kComputeKernels);
  EXPECT_EQ(f[1].kind, FindingKind::kKernelsBelowSmCount);
  EXPECT_EQ(f[1].count, 4u);
  EXPECT_EQ(f[1].of_count, 10u);
  f.clear();
  TotalsFindings(Cause::kUnknown, Ms(1), CauseTotals(), k, &f);
  EXPECT_TRUE(f.empty());
}

}  // namespace
}  // namespace idlescope::testing
