// The startup stage on its own (analysis/startup.h): events before each process's first launch
// go in, the breakdown of the slowest process comes out as findings.
#include "analyzer/analysis/startup.h"

#include <gtest/gtest.h>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

HostEvent Event(uint32_t process, EventType type, double start_ms, double end_ms,
                std::string_view path = "") {
  HostEvent e;
  e.process = process;
  e.type = type;
  e.start = Ms(start_ms);
  e.end = Ms(end_ms);
  e.path = path;
  return e;
}

ProcessInfo Info(uint32_t pid, int32_t rank, double start_ms) {
  ProcessInfo info;
  info.pid = pid;
  info.rank = rank;
  info.start = Ms(start_ms);
  return info;
}

TEST(Startup, TheSlowestLaunchingProcessIsBrokenDown) {
  MapSymbols names;
  Startup startup;
  startup.AddProcess(0, Info(100, 0, 0));
  startup.AddProcess(1, Info(200, 1, 0));
  // Process 0 launches at 100 ms; process 1 imports, initializes CUDA, reads weights, launches at
  // 900 ms: it is the one the GPUs waited for.
  startup.Note(Event(0, CUDA_LAUNCH, 100, 100.01));
  HostEvent imports = Event(1, FILE_READ, 100, 300, "/venv/lib/torch/__init__.py");
  imports.count = 40;
  imports.bytes = 2'000'000;
  startup.Note(imports);
  HostEvent init = Event(1, CUDA_MALLOC, 500, 580);
  init.api_id = names.Intern(1, "cudaMalloc");
  startup.Note(init);
  HostEvent quick = Event(1, CUDA_MEMCPY, 590, 591);  // shorter: not the longest call
  startup.Note(quick);
  HostEvent weights = Event(1, FILE_READ, 600, 700, "/ckpt/model.safetensors");
  weights.bytes = 50'000'000;
  startup.Note(weights);
  startup.Note(Event(1, FILE_READ, 700, 800, "/data/shard0"));  // a data read is neither
  EXPECT_FALSE(startup.launched(1));
  startup.Note(Event(1, CUDA_LAUNCH, 900, 900.01));
  EXPECT_TRUE(startup.launched(0));
  EXPECT_TRUE(startup.launched(1));

  ReportSymbols out;
  EvidenceResolver evidence(names, &out);
  std::vector<Finding> findings;
  startup.Findings(evidence, &findings);
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].kind, FindingKind::kStartupFirstKernel);
  EXPECT_EQ(findings[0].pid, 200u);
  EXPECT_EQ(findings[0].rank, 1);
  EXPECT_EQ(findings[0].ns, Ms(900));
  EXPECT_EQ(findings[1].kind, FindingKind::kStartupBeforeCuda);
  EXPECT_EQ(findings[1].ns, Ms(500));
  EXPECT_EQ(findings[1].count, 40u);
  EXPECT_EQ(findings[1].bytes, 2'000'000u);
  EXPECT_EQ(findings[1].other_ns, Ms(200));
  EXPECT_EQ(findings[2].kind, FindingKind::kStartupCudaToKernel);
  EXPECT_EQ(findings[2].ns, Ms(400));
  EXPECT_EQ(findings[2].bytes, 50'000'000u);
  EXPECT_EQ(out.String(findings[2].api), "cudaMalloc");
  EXPECT_EQ(findings[2].other_ns, Ms(80));
}

TEST(Startup, NoCudaCallBeforeTheLaunchMeansNoCudaFinding) {
  MapSymbols names;
  Startup startup;
  startup.AddProcess(0, Info(100, -1, 10));
  startup.Note(Event(0, CUDA_LAUNCH, 60, 60.01));
  ReportSymbols out;
  EvidenceResolver evidence(names, &out);
  std::vector<Finding> findings;
  startup.Findings(evidence, &findings);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].ns, Ms(50));
  EXPECT_EQ(findings[0].rank, -1);
  EXPECT_EQ(findings[1].ns, Ms(50));
  EXPECT_EQ(findings[1].count, 0u);
}

TEST(Startup, NothingWhenNoProcessLaunched) {
  MapSymbols names;
  Startup startup;
  startup.AddProcess(0, Info(100, 0, 0));
  startup.Note(Event(0, FILE_READ, 0, 10, "/x.py"));
  ReportSymbols out;
  EvidenceResolver evidence(names, &out);
  std::vector<Finding> findings;
  startup.Findings(evidence, &findings);
  EXPECT_TRUE(findings.empty());
}

}  // namespace
}  // namespace idlescope::testing
