// PyTorch jobs with Debian's python3-torch (/usr/bin/python3, CPU; skipped when absent): the
// checkpoints torch.save writes in a training loop and the sample reads of the DataLoader's worker
// processes (forked, and spawned) carry the script lines that made them, and torch.profiler still
// records and exports its trace (with its own Python stacks) inside a traced job. `idlescope
// report` names those lines as the evidence's first user frames.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/io/trace_file.h"
#include "tests/python/python_test_support.h"

namespace idlescope::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

bool HasTorch() {
  int status = 0;
  RunCapture(std::string(kPython) + " -c 'import torch' 2>/dev/null", &status);
  return access(kPython, X_OK) == 0 && status == 0;
}

// Whether `frames` hold `file`:`line` in `function`.
bool Holds(const std::vector<PyFrame>& frames, const std::string& file, uint32_t line,
           const std::string& function) {
  for (const PyFrame& f : frames) {
    if (f.file == file && f.line == line && f.function == function) return true;
  }
  return false;
}

std::string Describe(const std::vector<PyFrame>& frames) {
  std::string s;
  for (const PyFrame& f : frames)
    s += "\n    " + f.file + ":" + std::to_string(f.line) + " in " + f.function;
  return s;
}

// The DataLoader workers of `files` (traces of origin `origin`) read every sample, and each read
// names Dataset.__getitem__'s read line of `script`.
void ExpectWorkerReads(const std::vector<PyTraceFile>& files, const std::string& data,
                       const std::string& script, Origin origin) {
  const uint32_t line = Marks(script)["dataset-read"];
  size_t workers = 0, reads = 0;
  for (const auto& f : files) {
    if (f.header.origin() != origin) continue;
    bool any = false;
    for (const PyEvent& e : f.events) {
      if (e.type != FILE_READ || e.path.rfind(data + "/sample", 0) != 0 || e.stack == 0) continue;
      std::vector<PyFrame> frames = f.PythonFrames(e.stack);
      ASSERT_FALSE(frames.empty()) << e.path;
      EXPECT_EQ(frames[0].file, script) << Describe(frames);
      EXPECT_EQ(frames[0].line, line) << Describe(frames);
      EXPECT_EQ(frames[0].function, "FileDataset.__getitem__") << Describe(frames);
      ++reads;
      any = true;
    }
    workers += any;
  }
  EXPECT_GE(workers, 2u);
  EXPECT_GE(reads, 8u);
}

#ifdef IDLESCOPE_CLI
// `idlescope report` on the traces in `out` names the script's lines: each checkpoint's
// torch.save line in train() and the workers' read line in FileDataset.__getitem__ (JSON and
// text).
void ExpectReportLines(const std::string& out, const std::string& data, const std::string& ckpt,
                       const std::string& script) {
  // Every item: the samples' reads are small and fast next to the 1700 reads of torch's code.
  constexpr char kTop[] = "--top 100000";
  auto marks = Marks(script);
  const std::string save = script + ":" + std::to_string(marks["save"]) + " in train";
  const std::string read =
      script + ":" + std::to_string(marks["dataset-read"]) + " in FileDataset.__getitem__";
  int status = 0;
  std::vector<std::string> lines =
      ReportedLines(IDLESCOPE_CLI, kPython, REPORT_LINES_PY, out, kTop, &status);
  ASSERT_EQ(status, 0);
  std::string all;
  size_t saves = 0, reads = 0;
  for (const std::string& l : lines) {
    all += "\n    " + l;
    saves += l.starts_with("activity:checkpoint_writes " + ckpt + "/step") && l.ends_with(save);
    reads += l.starts_with("activity:reads " + data + "/sample") && l.ends_with(read);
  }
  EXPECT_EQ(saves, 4u) << all;  // every step's checkpoint file
  EXPECT_GE(reads, 1u) << all;
  std::string text = Report(IDLESCOPE_CLI, out, kTop, &status);
  ASSERT_EQ(status, 0);
  EXPECT_NE(text.find(save + " ["), std::string::npos) << text;
  EXPECT_NE(text.find(read + " ["), std::string::npos) << text;
}
#endif

TEST(TorchStacks, CheckpointsAndDataLoaderWorkersNameTheirLines) {
  if (!HasTorch()) GTEST_SKIP() << "no python3-torch for /usr/bin/python3: skipped";
  const std::string script = TORCH_STACKS_PY;
  auto marks = Marks(script);
  const std::string out = MakeTempDir(), data = MakeTempDir(), ckpt = MakeTempDir();
  ASSERT_EQ(RunTraced({kPython, script, data, ckpt}, out), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out);

  // torch.save: every step's checkpoint has events with Python stacks, and those name the loop's
  // torch.save line in train() (under torch's own serialization frames).
  size_t checkpoints = 0;
  for (int step = 0; step < 4; ++step) {
    const std::string pt = ckpt + "/step" + std::to_string(step) + ".pt";
    SCOPED_TRACE(pt);
    struct stat st;
    ASSERT_EQ(stat(pt.c_str(), &st), 0);
    size_t with_python = 0;
    for (const auto& f : files) {
      for (const PyEvent& e : f.events) {
        if (e.path != pt || e.stack == 0) continue;
        std::vector<PyFrame> frames = f.PythonFrames(e.stack);
        if (frames.empty()) continue;
        ++with_python;
        EXPECT_TRUE(Holds(frames, script, marks["save"], "train")) << Describe(frames);
        EXPECT_NE(frames[0].file.find("torch/serialization.py"), std::string::npos)
            << Describe(frames);
      }
    }
    EXPECT_GE(with_python, 1u);
    checkpoints += with_python > 0;
  }
  EXPECT_EQ(checkpoints, 4u);

  // DataLoader workers (forked): their sample reads name Dataset.__getitem__'s read line.
  ExpectWorkerReads(files, data, script, ORIGIN_FORK);
#ifdef IDLESCOPE_CLI
  ExpectReportLines(out, data, ckpt, script);
#endif
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + out + "' '" + data + "' '" + ckpt + "'";
    (void)system(cmd.c_str());
  }
}

// Workers started by spawn: fresh interpreters (their own code cache) that import the script as
// __mp_main__.
TEST(TorchStacks, SpawnedDataLoaderWorkersNameTheirLines) {
  if (!HasTorch()) GTEST_SKIP() << "no python3-torch for /usr/bin/python3: skipped";
  const std::string script = TORCH_STACKS_PY;
  const std::string out = MakeTempDir(), data = MakeTempDir(), ckpt = MakeTempDir();
  ASSERT_EQ(RunTraced({kPython, script, data, ckpt, "--spawn"}, out), 0);
  ExpectWorkerReads(ReadPyTraceDir(out), data, script, ORIGIN_PRELOAD);
#ifdef IDLESCOPE_CLI
  ExpectReportLines(out, data, ckpt, script);
#endif
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + out + "' '" + data + "' '" + ckpt + "'";
    (void)system(cmd.c_str());
  }
}

TEST(TorchStacks, TorchProfilerStillWorksInATracedJob) {
  if (!HasTorch()) GTEST_SKIP() << "no python3-torch for /usr/bin/python3: skipped";
  const std::string out = MakeTempDir();
  const std::string json = out + "/profile.json";
  TracedChild child = StartTraced({kPython, TORCH_PROFILER_PY, json}, out);
  ASSERT_GT(child.pid, 0);
  const std::string stdout_text = ReadAll(child.out);
  const std::string stderr_text = ReadAll(child.err);
  ASSERT_EQ(Wait(child.pid), 0) << stderr_text;
  // Its own Python stacks (with_stack=True) found the script's frames.
  int profiled = 0, with_stacks = 0;
  ASSERT_EQ(sscanf(stdout_text.c_str(), "profiled %d ops, %d with stacks", &profiled, &with_stacks),
            2)
      << stdout_text;
  EXPECT_GT(profiled, 5);
  EXPECT_GT(with_stacks, 0);
  std::ifstream in(json);
  std::stringstream trace;
  trace << in.rdbuf();
  EXPECT_NE(trace.str().find("\"aten::linear\""), std::string::npos) << json;
  // And our own stacks are still taken in that process.
  std::vector<PyTraceFile> files = ReadPyTraceDir(out);
  size_t python_stacks = 0;
  for (const auto& f : files) {
    for (const PyEvent& e : f.events)
      python_stacks += e.stack != 0 && !f.PythonFrames(e.stack).empty();
  }
  EXPECT_GT(python_stacks, 0u);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + out + "'";
    (void)system(cmd.c_str());
  }
}

}  // namespace
}  // namespace idlescope::testing
