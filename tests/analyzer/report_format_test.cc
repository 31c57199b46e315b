// The text report: causes of negligible idle time are left out of the table and the findings
// (kept in JSON).
#include <gtest/gtest.h>

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
