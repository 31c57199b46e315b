// The thread sampler's Python lines (issue 24), under every CPython 3.10-3.13 found on the machine
// with the real preload library and simgpu: a loop that computes in pure Python between its GPU
// calls has sampled runs whose stack is that line, and `idlescope report` gives the line as the
// cpu_work evidence; threads whose frames change as fast as they can (recursion up and down,
// generators, threads that end) are read without a crash and without a frame that is not one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/io/trace_file.h"
#include "tests/python/python_test_support.h"

namespace idlescope::testing {
namespace {

#ifdef SIMGPU_LIB_DIR

const std::string kScript = CPU_LINES_PY;

class SampledLinesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    python_ = InterpreterPath(GetParam());
    if (python_.empty() || access(python_.c_str(), X_OK) != 0) {
      GTEST_SKIP() << "CPython " << GetParam() << " is not on this machine: skipped";
    }
    out_ = MakeTempDir();
  }
  void TearDown() override {
    if (!HasFailure() && !out_.empty()) {
      std::string cmd = "rm -rf '" + out_ + "'";
      (void)system(cmd.c_str());
    }
  }
  int RunScript(const std::string& mode, std::vector<std::string> env = {}) {
    env.push_back(std::string("LD_LIBRARY_PATH=") + SIMGPU_LIB_DIR);
    return RunTraced({python_, kScript, mode}, out_, env);
  }
  std::string python_, out_;
};

std::string Describe(const std::vector<PyFrame>& frames) {
  std::string s;
  for (const PyFrame& f : frames)
    s += " " + f.file + ":" + std::to_string(f.line) + "/" + f.function;
  return s;
}

TEST_P(SampledLinesTest, CpuWorkNamesThePythonLine) {
  const uint32_t line = Marks(kScript)["augment"];
  ASSERT_EQ(RunScript("spin"), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const PyTraceFile& f = files[0];
  size_t samples = 0, with_stack = 0, at_line = 0;
  std::string seen;
  for (const PyEvent& e : f.events) {
    if (e.type != THREAD_SAMPLE) continue;
    ++samples;
    if (e.stack == 0) continue;
    ++with_stack;
    std::vector<PyFrame> frames = f.PythonFrames(e.stack);
    // Python frames only: the sampler reads no native stack.
    EXPECT_EQ(f.NativeFrames(e.stack), 0u);
    ASSERT_FALSE(frames.empty());
    if (frames[0].file == kScript && frames[0].function == "augment" && frames[0].line == line) {
      ++at_line;
      ASSERT_GE(frames.size(), 2u) << Describe(frames);
      EXPECT_EQ(frames[1].function, "spin");
    } else if (seen.size() < 2000) {
      seen += "\n   " + Describe(frames);
    }
  }
  EXPECT_GT(samples, 0u);
  // 25 steps of 40 ms in augment, read at 50 Hz, a kernel and a sync between: on an idle machine
  // one run on a CPU, cut every 250 ms (5 runs); on a loaded one more, where a sync blocked or the
  // thread waited for a CPU long enough to end a run. Each run's stack is what most of its reads
  // found: the line that computes, in nearly every run that has one.
  EXPECT_GE(at_line, 4u) << with_stack << " runs with a stack; other stacks:" << seen;
  EXPECT_GE(4 * at_line, 3 * with_stack)
      << with_stack << " runs with a stack; other stacks:" << seen;

#ifdef IDLESCOPE_CLI
  int status = 0;
  const std::string at = kScript + ":" + std::to_string(line) + " in augment";
  std::vector<std::string> lines =
      ReportedLines(IDLESCOPE_CLI, python_, REPORT_LINES_PY, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "cause:cpu_work -\t" + at), lines.end()) << [&] {
    std::string s;
    for (const std::string& l : lines) s += "\n    " + l;
    return s;
  }();
  const std::string text = Report(IDLESCOPE_CLI, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  const size_t cause = text.find("cpu_work");
  ASSERT_NE(cause, std::string::npos) << text;
  EXPECT_NE(text.find(at, cause), std::string::npos) << text;
#endif
}

// Forked workers (no exec, DataLoader's default) computing in pure Python while the training
// loop waits for them: the training process's sampler reads their frames (the state of the thread
// that forked them, in their memory), and the report gives their line as data_loading's evidence.
TEST_P(SampledLinesTest, WorkersComputingNameTheirPythonLine) {
  const uint32_t line = Marks(kScript)["decode"];
  ASSERT_EQ(RunScript("workers"), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  ASSERT_EQ(files.size(), 3u);  // the training process and its two workers
  size_t worker_runs = 0, at_line = 0;
  std::string seen;
  for (const PyTraceFile& f : files) {
    for (const PyEvent& e : f.events) {
      if (e.type != THREAD_SAMPLE || e.sampled_pid == 0) continue;
      ++worker_runs;
      if (e.stack == 0) continue;
      std::vector<PyFrame> frames = f.PythonFrames(e.stack);
      ASSERT_FALSE(frames.empty());
      if (frames[0].file == kScript && frames[0].function == "decode" && frames[0].line == line) {
        ++at_line;
        ASSERT_GE(frames.size(), 2u) << Describe(frames);
        EXPECT_EQ(frames[1].function, "worker_loop");
      } else if (seen.size() < 2000) {
        seen += "\n   " + Describe(frames);
      }
    }
  }
  // 25 rounds of 30 ms in decode per worker; adopted after 100 ms, looked at 50 Hz: runs on a
  // CPU of up to 250 ms each, most of them at the line (a run's stack is its most read one).
  EXPECT_GE(at_line, 2u) << worker_runs << " worker runs; other stacks:" << seen;

#ifdef IDLESCOPE_CLI
  int status = 0;
  const std::string at = kScript + ":" + std::to_string(line) + " in decode";
  const std::string text = Report(IDLESCOPE_CLI, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  const size_t cause = text.find("data_loading");
  ASSERT_NE(cause, std::string::npos) << text;
  EXPECT_NE(text.find("worker processes that were computing", cause), std::string::npos) << text;
  EXPECT_NE(text.find(at, cause), std::string::npos) << text;
#endif
}

// IDLESCOPE_SAMPLE_PYTHON_HZ=0: the runs carry no stack, and the evidence is the thread's last
// traced call, as before.
TEST_P(SampledLinesTest, OffWithTheVariable) {
  ASSERT_EQ(RunScript("spin", {"IDLESCOPE_SAMPLE_PYTHON_HZ=0"}), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  size_t samples = 0;
  for (const PyEvent& e : files[0].events) {
    if (e.type != THREAD_SAMPLE) continue;
    ++samples;
    EXPECT_EQ(e.stack, 0u);
  }
  EXPECT_GT(samples, 0u);
}

TEST_P(SampledLinesTest, FramesThatChangeUnderTheLookAreReadSafely) {
  // The most looks the sampler makes, each reading Python frames.
  ASSERT_EQ(RunScript("churn", {"IDLESCOPE_SAMPLE_HZ=1000", "IDLESCOPE_SAMPLE_PYTHON_HZ=1000"}), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const PyTraceFile& f = files[0];
  size_t with_stack = 0, in_deep = 0;
  for (const PyEvent& e : f.events) {
    if (e.type != THREAD_SAMPLE || e.stack == 0) continue;
    ++with_stack;
    std::vector<PyFrame> frames = f.PythonFrames(e.stack);
    ASSERT_FALSE(frames.empty());
    ASSERT_LE(frames.size(), 4u) << Describe(frames);
    // Every frame read is a frame of this run: of the script, the threading module, or the
    // interpreter's frozen modules; named, with a line.
    for (const PyFrame& p : frames) {
      EXPECT_TRUE(p.file == kScript || p.file.find("threading.py") != std::string::npos ||
                  p.file.rfind("<frozen ", 0) == 0)
          << Describe(frames);
      EXPECT_FALSE(p.function.empty()) << Describe(frames);
      EXPECT_GT(p.line, 0u) << Describe(frames);
    }
    in_deep +=
        frames[0].function == "deep" || frames[0].function.find("genexpr") != std::string::npos;
  }
  EXPECT_GT(in_deep, 10u) << with_stack << " runs with a stack";
}

INSTANTIATE_TEST_SUITE_P(Interpreters, SampledLinesTest, ::testing::ValuesIn(InterpreterLabels()),
                         [](const auto& info) { return InterpreterTestName(info.param); });

#endif  // SIMGPU_LIB_DIR

}  // namespace
}  // namespace idlescope::testing
