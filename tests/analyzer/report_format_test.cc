// The text report: causes of negligible idle time are left out of the table and the findings
// (kept in JSON).
#include <gtest/gtest.h>

#include "analyzer/report/findings_text.h"
#include "analyzer/report/report_exporters.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

// A 1 s job: 100 ms of checkpointing, and a 0.2 ms pipe write into a worker's queue
// (data_loading) in a second gap: 0.000 s when printed.
JobReport JobWithANegligibleCause() {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.ForkedProcess(101, 100);
  job.Device(p, 0, "GPU-a");
  job.Launch(p, 100, 0);
  job.Kernel(p, 0, 100);
  job.Kernel(p, 200, 500);
  job.Kernel(p, 502, 1000);
  job.Io(p, 100, FILE_WRITE, 100, 200, "/ckpt/model.pt");
  job.Io(p, 100, FILE_WRITE, 500, 500.2, "pipe:[7]", FS_PIPE);
  job.End(p, 1000);
  return job.Finish();
}

TEST(TextReport, OmitsCausesUnderHalfAMillisecondButJsonKeepsThem) {
  JobReport r = JobWithANegligibleCause();
  ASSERT_EQ(CauseNs(r, Cause::kDataLoading), Ms(0.2));
  std::string text = FormatTextReport(r);
  EXPECT_NE(text.find("checkpointing"), std::string::npos) << text;
  EXPECT_EQ(text.find("data_loading"), std::string::npos) << text;
  EXPECT_NE(text.find("(1 more cause under 0.5 ms or 0.05% of GPU time, 0.000 s in all: see "
                      "--json)"),
            std::string::npos)
      << text;
  EXPECT_NE(FormatJsonReport(r).find("\"data_loading\""), std::string::npos);
}

TEST(TextReport, ThresholdIsHalfAMillisecondOrFiveHundredthsOfAPercent) {
  CauseReport c;
  c.ns = 499'999;
  EXPECT_FALSE(ShownInText(c, 1'000'000'000));
  c.ns = 500'000;
  EXPECT_TRUE(ShownInText(c, 1'000'000'000));
  // 0.05% of 10 s of GPU time is 5 ms.
  c.ns = 4'999'999;
  EXPECT_FALSE(ShownInText(c, 10'000'000'000));
  c.ns = 5'000'000;
  EXPECT_TRUE(ShownInText(c, 10'000'000'000));
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

// The words of the report come from the typed findings, in the exporter only.
TEST(ReportText, StartupFindingsReadAsTheirSentences) {
  JobReport r;
  Finding first{.kind = FindingKind::kStartupFirstKernel, .ns = Ms(900)};
  first.pid = 100;
  first.rank = 3;
  EXPECT_EQ(FindingText(first, r),
            "pid 100 (rank 3) launched its first kernel 0.900 s after it started");
  Finding before{.kind = FindingKind::kStartupBeforeCuda,
                 .ns = Ms(500),
                 .other_ns = Ms(200),
                 .bytes = 2'000'000,
                 .count = 40};
  EXPECT_EQ(FindingText(before, r),
            "0.500 s before its first CUDA call (imports, setup; 40 reads of code files (.py/.so: "
            "2.0 MB, 0.200 s blocked))");
  Finding cuda{.kind = FindingKind::kStartupCudaToKernel,
               .ns = Ms(400),
               .other_ns = Ms(80),
               .bytes = 50'000'000};
  cuda.api = r.symbols.Intern("cudaMalloc");
  EXPECT_EQ(FindingText(cuda, r),
            "0.400 s from its first CUDA call to its first kernel (CUDA context, model "
            "construction; 50.0 MB of model files read); longest CUDA call: cudaMalloc 0.080 s");
  // Under 1 MB of model files and no API name: both are left out.
  cuda.bytes = 999'999;
  cuda.api = 0;
  EXPECT_EQ(FindingText(cuda, r),
            "0.400 s from its first CUDA call to its first kernel (CUDA context, model "
            "construction); longest CUDA call: 0.080 s");
}

TEST(ReportText, StragglerAndNcclFindings) {
  JobReport r;
  Finding straggler{.kind = FindingKind::kStragglerRank,
                    .ns = Ms(999),
                    .other_ns = Ms(100),
                    .count = 10,
                    .of_count = 10};
  straggler.rank = 1;
  EXPECT_EQ(FindingText(straggler, r),
            "rank 1 arrived last at 10 of 10 matched collectives; the other ranks waited 0.999 s "
            "for it (longest 0.100 s)");
  Finding op{.kind = FindingKind::kNcclOpBlocked, .ns = Ms(50)};
  op.nccl_op = NCCL_REDUCE_SCATTER;
  EXPECT_EQ(FindingText(op, r), "0.050 s blocked in reduce_scatter");
}

TEST(ReportText, SavingBasisSaysTheRateAndWhereItCameFrom) {
  SavingBasis checkpoint{.method = SavingMethod::kCheckpointMinusSnapshot,
                         .rate_bytes_per_ns = (1ull << 30) / 50e6,
                         .rate_source = RateSource::kPinnedDeviceToHostCopies,
                         .bytes = 1ull << 30,
                         .snapshot_ns = Ms(50)};
  EXPECT_EQ(SavingBasisText(Cause::kCheckpointing, checkpoint),
            "blocked checkpoint time minus the device-to-host snapshot copy of 1073741824 bytes at "
            "21.5 GB/s; measured from pinned device-to-host copies on the GPU (snapshot copies "
            "measured: 0.050 s)");
  SavingBasis transfer{.method = SavingMethod::kPageableAtPinnedRate,
                       .rate_bytes_per_ns = 12,
                       .rate_source = RateSource::kAssumed};
  EXPECT_EQ(SavingBasisText(Cause::kHostGpuTransfer, transfer),
            "the copies from pinned memory at 12.00 GB/s (assumed: no large pinned copy in the "
            "trace), overlapped with compute: what compute cannot hide stays");
  EXPECT_EQ(SavingBasisText(Cause::kCommunication,
                            {.method = SavingMethod::kOverlapWithCompute, .wait_ns = Ms(20)}),
            "the communication hidden by overlapping it with compute (gradients all-reduced in "
            "buckets during the backward pass), up to the compute time; not the 0.020 s waiting "
            "for slower ranks");
  EXPECT_EQ(SavingBasisText(Cause::kSmallBatch,
                            {.method = SavingMethod::kFillTheDevice, .batch_growth = 8}),
            "a 8.0x larger batch (as device memory allows): 8.0x fewer launch gaps per sample, "
            "and kernels that fill the SMs");
  EXPECT_EQ(SavingBasisText(Cause::kUnusedGpus, {.method = SavingMethod::kSpreadOverDevices,
                                                 .used_devices = 1,
                                                 .visible_devices = 4}),
            "GPU time: the unused GPUs released; the job's time: its work spread over all 4 "
            "visible GPUs instead of 1");
  EXPECT_EQ(SavingBasisText(Cause::kStartup, {}), "no estimate: no specific fix");
  EXPECT_EQ(SavingBasisText(Cause::kDataLoading, {.method = SavingMethod::kAll}),
            "all of it, if loading runs ahead of compute (enough workers, prefetching)");
}

TEST(ReportText, GapEvidenceAndWarnings) {
  ReportSymbols symbols;
  GapEvidence m{.cause = Cause::kCheckpointing,
                .object = symbols.Intern("/ckpt/model.pt"),
                .bytes = 4096,
                .stack = symbols.InternStack(
                    {{.function = symbols.Intern("save")}, {.function = symbols.Intern("main")}}),
                .pid = 100,
                .tid = 101};
  // The common tail (main) is not printed.
  EXPECT_EQ(GapEvidenceText(m, symbols),
            "checkpointing: /ckpt/model.pt, 4096 bytes at save (pid 100 tid 101)");
  // Cut to a width: the stack gives way, the pid stays.
  GapEvidence long_stack = m;
  long_stack.stack = symbols.InternStack({{.function = symbols.Intern("save_checkpoint_to_disk")},
                                          {.function = symbols.Intern("train_one_epoch")}});
  EXPECT_EQ(GapEvidenceText(long_stack, symbols, 80),
            "checkpointing: /ckpt/model.pt, 4096 bytes at save_checkpoin... (pid 100 tid 101)");
  EXPECT_EQ(GapEvidenceText(long_stack, symbols, 80).size(), 80u);
  GapEvidence gpu{.cause = Cause::kCommunication, .gpu_side = true, .pid = 100};
  EXPECT_EQ(GapEvidenceText(gpu, symbols), "communication (GPU)");
  EXPECT_EQ(WarningText({.kind = WarningKind::kNoFooter, .subject = "a.idlescope"}),
            "a.idlescope: no footer (the process was killed, crashed, or is still running)");
  EXPECT_EQ(WarningText({.kind = WarningKind::kLateGpuRecords,
                         .subject = "node0/GPU-a",
                         .count = 3,
                         .ns = Ms(2)}),
            "node0/GPU-a: 3 GPU records arrived after their time was analyzed (0.002 s dropped "
            "from busy time)");
}

}  // namespace
}  // namespace idlescope::testing
