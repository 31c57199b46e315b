// Python stacks under every CPython 3.10-3.13 found on the machine (pyenv's interpreters, Debian's
// /usr/bin/python3), with the real preload library: a script's file writes and reads, a thread's
// write, the reads of forked and spawned multiprocessing workers and a ctypes call of simgpu's
// cudaMemcpy carry Python frames that name the script's file, function and line; the native
// frames are still there; IDLESCOPE_PYTHON_STACKS=0 takes the Python frames away. `idlescope
// report` names those lines as the evidence's first user frames.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/io/trace_file.h"
#include "tests/python/python_test_support.h"

namespace idlescope::testing {
namespace {

const std::string kScript = STACK_SCRIPT_PY;

std::string Describe(const std::vector<PyFrame>& frames) {
  std::string s;
  for (const PyFrame& f : frames) {
    s += "\n    " + f.file + ":" + std::to_string(f.line) + " in " + f.function +
         (f.entry ? " [entry]" : "");
  }
  return s.empty() ? " (no Python frames)" : s;
}

class PythonStacksTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    python_ = InterpreterPath(GetParam());
    if (python_.empty() || access(python_.c_str(), X_OK) != 0) {
      GTEST_SKIP() << "CPython " << GetParam() << " is not on this machine: skipped";
    }
    out_ = MakeTempDir();
    data_ = MakeTempDir();
  }
  void TearDown() override {
    if (!HasFailure() && !out_.empty()) {
      std::string cmd = "rm -rf '" + out_ + "' '" + data_ + "'";
      (void)system(cmd.c_str());
    }
  }
  // The Python version the interpreter reports, e.g. {3, 11}.
  int Minor() {
    int status;
    std::string v = RunCapture(python_ + " -c 'import sys; print(sys.version_info[1])'", &status);
    return std::atoi(v.c_str());
  }

  // The script traced, with its ctypes CUDA calls on simgpu when it is built.
  int RunScript() {
    std::vector<std::string> argv = {python_, kScript, data_};
    std::vector<std::string> env;
#ifdef SIMGPU_LIB_DIR
    argv.push_back("--cuda");
    env.push_back(std::string("LD_LIBRARY_PATH=") + SIMGPU_LIB_DIR);
#endif
    return RunTraced(argv, out_, env);
  }

  std::string python_, out_, data_;
};

// The event's innermost Python frames are, in order, `expected` (file, function, line).
void ExpectFrames(const PyTraceFile& f, const PyEvent& e,
                  const std::vector<std::pair<std::string, uint32_t>>& expected) {
  std::vector<PyFrame> frames = f.PythonFrames(e.stack);
  SCOPED_TRACE("frames:" + Describe(frames));
  ASSERT_GE(frames.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(frames[i].file, kScript) << i;
    EXPECT_EQ(frames[i].function, expected[i].first) << i;
    EXPECT_EQ(frames[i].line, expected[i].second) << i;
  }
  // The native frames are kept, under the Python ones.
  EXPECT_GE(f.NativeFrames(e.stack), 3u);
}

TEST_P(PythonStacksTest, EventsNameTheScriptLines) {
  auto marks = Marks(kScript);
  ASSERT_EQ(RunScript(), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  const int minor = Minor();

  const PyTraceFile* main = nullptr;
  for (const auto& f : files) {
    if (!f.On(FILE_WRITE, data_ + "/main.bin").empty()) main = &f;
  }
  ASSERT_NE(main, nullptr) << "no trace wrote main.bin in " << out_;
  EXPECT_EQ(main->header.config().python_version().rfind("3." + std::to_string(minor) + ".", 0), 0u)
      << main->header.config().python_version();

  {
    SCOPED_TRACE("main write");
    auto writes = main->On(FILE_WRITE, data_ + "/main.bin");
    ASSERT_EQ(writes.size(), 1u);
    ExpectFrames(*main, *writes[0],
                 {{"write_file", marks["write"]},
                  {"main", marks["main-write"]},
                  {"<module>", marks["module-main"]}});
    // From 3.11 main() and write_file() run in the evaluation loop of <module> (Python calls
    // Python inline); in 3.10 each frame has a loop of its own.
    std::vector<PyFrame> frames = main->PythonFrames(writes[0]->stack);
    ASSERT_EQ(frames.size(), 3u) << Describe(frames);
    EXPECT_EQ(frames[0].entry, minor == 10);
    EXPECT_EQ(frames[1].entry, minor == 10);
    EXPECT_TRUE(frames[2].entry);
    EXPECT_EQ(frames[0].first_line, marks["def-write"]);
  }
  {
    SCOPED_TRACE("main read");
    auto reads = main->On(FILE_READ, data_ + "/main.bin");
    ASSERT_GE(reads.size(), 1u);
    ExpectFrames(*main, *reads[0], {{"read_file", marks["read"]}, {"main", marks["main-read"]}});
  }
  {
    SCOPED_TRACE("write called from C (map)");
    auto writes = main->On(FILE_WRITE, data_ + "/map.bin");
    ASSERT_EQ(writes.size(), 1u);
    ExpectFrames(*main, *writes[0], {{"write_file", marks["write"]}, {"main", marks["map-write"]}});
    std::vector<PyFrame> frames = main->PythonFrames(writes[0]->stack);
    EXPECT_TRUE(frames[0].entry);  // map() calls it from C: a loop of its own in every version
    EXPECT_EQ(frames[1].entry, minor == 10);
  }
  {
    SCOPED_TRACE("a generator's write");
    auto writes = main->On(FILE_WRITE, data_ + "/gen.bin");
    ASSERT_EQ(writes.size(), 1u);
    ExpectFrames(*main, *writes[0],
                 {{"gen_write", marks["gen-write"]}, {"main", marks["main-gen"]}});
  }
  {
    SCOPED_TRACE("an __init__'s write, the call specialized");
    auto writes = main->On(FILE_WRITE, data_ + "/init19.bin");
    ASSERT_EQ(writes.size(), 1u);
    // 3.10 has no qualified names (co_qualname): the function's own name.
    ExpectFrames(*main, *writes[0],
                 {{minor == 10 ? "__init__" : "Saver.__init__", marks["init-write"]},
                  {"main", marks["main-init"]}});
  }
  {
    SCOPED_TRACE("a thread's write");
    auto writes = main->On(FILE_WRITE, data_ + "/thread.bin");
    ASSERT_EQ(writes.size(), 1u);
    EXPECT_NE(writes[0]->tid, static_cast<uint32_t>(main->header.pid()));
    ExpectFrames(*main, *writes[0],
                 {{"write_file", marks["write"]}, {"thread_main", marks["thread-write"]}});
    std::vector<PyFrame> frames = main->PythonFrames(writes[0]->stack);
    EXPECT_NE(frames.back().file.find("threading.py"), std::string::npos) << Describe(frames);
  }
  // Workers: a forked one (the child inherits the code cache) and a spawned one (a fresh
  // interpreter that imports this script as __mp_main__).
  for (const char* method : {"fork", "spawn"}) {
    SCOPED_TRACE(method);
    const PyTraceFile* worker = nullptr;
    const PyEvent* read = nullptr;
    for (const auto& f : files) {
      if (&f == main) continue;
      auto reads = f.On(FILE_READ, data_ + "/" + method + ".bin");
      if (!reads.empty()) {
        worker = &f;
        read = reads[0];
      }
    }
    ASSERT_NE(worker, nullptr);
    EXPECT_EQ(worker->header.origin(),
              std::string(method) == "fork" ? ORIGIN_FORK : ORIGIN_PRELOAD);
    ExpectFrames(*worker, *read, {{"read_file", marks["read"]}, {"worker", marks["worker-read"]}});
  }
#ifdef SIMGPU_LIB_DIR
  {
    SCOPED_TRACE("ctypes cudaMemcpy from pageable memory");
    auto copies = main->On(CUDA_MEMCPY, "");
    ASSERT_EQ(copies.size(), 1u);
    ExpectFrames(*main, *copies[0],
                 {{"copy_pageable", marks["memcpy"]}, {"main", marks["main-memcpy"]}});
  }
#endif
  // The reader's merged view puts the Python frames where the evaluation loops were.
  {
    auto writes = main->On(FILE_WRITE, data_ + "/main.bin");
    std::vector<const Frame*> merged = main->interned.MergedStack(writes[0]->stack);
    size_t first_python = 0;
    while (first_python < merged.size() && merged[first_python]->kind() != FRAME_PYTHON) {
      EXPECT_NE(main->interned.String(merged[first_python]->function()),
                "_PyEval_EvalFrameDefault");
      ++first_python;
    }
    EXPECT_GT(first_python, 0u);  // write(2)'s native frames come first
    ASSERT_LT(first_python, merged.size());
    EXPECT_EQ(main->interned.FormatFrame(*merged[first_python]),
              kScript + ":" + std::to_string(marks["write"]) + " in write_file");
  }
}

#ifdef IDLESCOPE_CLI
bool Has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n    " + l;
  return s.empty() ? " (none)" : s;
}

// `idlescope report` on the same traces names the script's lines: the first user frame of the
// evidence of its file writes, reads (a spawned worker's too) and the ctypes cudaMemcpy from
// pageable memory the GPU waited for, in JSON and text; --no-python-frames gives the native
// evidence.
TEST_P(PythonStacksTest, TheReportNamesTheScriptLines) {
  auto marks = Marks(kScript);
  ASSERT_EQ(RunScript(), 0);
  auto at = [&](const char* mark, const std::string& function) {
    return kScript + ":" + std::to_string(marks[mark]) + " in " + function;
  };
  int status = 0;
  std::vector<std::string> lines =
      ReportedLines(IDLESCOPE_CLI, python_, REPORT_LINES_PY, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  SCOPED_TRACE("lines the JSON report names:" + Joined(lines));
  EXPECT_TRUE(Has(lines, "activity:writes " + data_ + "/main.bin\t" + at("write", "write_file")));
  EXPECT_TRUE(Has(lines, "activity:reads " + data_ + "/main.bin\t" + at("read", "read_file")));
  EXPECT_TRUE(Has(lines, "activity:reads " + data_ + "/spawn.bin\t" + at("read", "read_file")));
  EXPECT_TRUE(Has(lines, "activity:writes " + data_ + "/thread.bin\t" + at("write", "write_file")));
#ifdef SIMGPU_LIB_DIR
  EXPECT_TRUE(Has(lines, "cause:host_gpu_transfer -\t" + at("memcpy", "copy_pageable")));
#endif

  std::string text = Report(IDLESCOPE_CLI, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  EXPECT_NE(text.find(at("write", "write_file") + " ["), std::string::npos) << text;
  EXPECT_NE(text.find(at("read", "read_file") + " ["), std::string::npos) << text;
#ifdef SIMGPU_LIB_DIR
  EXPECT_NE(text.find("    stack  "), std::string::npos) << text;
  EXPECT_NE(text.find(at("memcpy", "copy_pageable") + " ["), std::string::npos) << text;
#endif

  // The report option: native evidence only, as with IDLESCOPE_PYTHON_STACKS=0.
  lines = ReportedLines(IDLESCOPE_CLI, python_, REPORT_LINES_PY, out_,
                        "--top 100 --no-python-frames", &status);
  ASSERT_EQ(status, 0);
  EXPECT_TRUE(lines.empty()) << Joined(lines);
  text = Report(IDLESCOPE_CLI, out_, "--top 100 --no-python-frames", &status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(text.find(kScript + ":"), std::string::npos) << text;
  EXPECT_NE(text.find("_PyEval_EvalFrameDefault"), std::string::npos) << text;
}
#endif

// CPython's C signal handler writes to the wakeup fd: our write hook then runs inside a signal
// handler that may have interrupted a frame push. Such events take native frames only.
TEST_P(PythonStacksTest, HooksInSignalHandlersTakeNoPythonFrames) {
  const std::string script = SIGNAL_WAKEUP_PY;
  TracedChild child = StartTraced({python_, script, "1.5"}, out_);
  ASSERT_GT(child.pid, 0);
  const std::string output = ReadAll(child.out);
  const std::string errors = ReadAll(child.err);
  ASSERT_EQ(Wait(child.pid), 0) << errors;
  EXPECT_EQ(output, "signals received through the wakeup fd: True\n");
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const PyTraceFile& f = files[0];
  const uint32_t recv_line = Marks(script)["recv"];
  size_t in_handler = 0, recvs = 0;
  for (const PyEvent& e : f.events) {
    if (e.stack == 0) continue;
    if (e.type == NET_SEND) {
      // The handler's writes: native frames (the handler, the signal trampoline, the interrupted
      // code), no Python ones.
      ++in_handler;
      EXPECT_TRUE(f.PythonFrames(e.stack).empty()) << Describe(f.PythonFrames(e.stack));
      EXPECT_GT(f.NativeFrames(e.stack), 0u);
    } else if (e.type == NET_RECV) {
      std::vector<PyFrame> frames = f.PythonFrames(e.stack);
      ASSERT_FALSE(frames.empty());
      EXPECT_EQ(frames[0].line, recv_line) << Describe(frames);
      ++recvs;
    }
  }
  EXPECT_GT(in_handler, 0u);
  EXPECT_GT(recvs, 0u);
}

// IDLESCOPE_REDACT=paths: a Python frame's file is a path of the job's like the others (its
// directories and name hashed, ".py" kept); function names and pseudo-files stay readable.
TEST_P(PythonStacksTest, RedactedPathsHideTheScriptsName) {
  ASSERT_EQ(RunTraced({python_, kScript, data_}, out_, {"IDLESCOPE_REDACT=paths"}), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  size_t script_frames = 0, frozen = 0;
  for (const auto& f : files) {
    for (const PyEvent& e : f.events) {
      if (e.stack == 0) continue;
      for (const PyFrame& p : f.PythonFrames(e.stack)) {
        EXPECT_EQ(p.file.find("stack_script"), std::string::npos) << p.file;
        EXPECT_EQ(p.file.find("/python/programs/"), std::string::npos) << p.file;
        if (p.function == "write_file") {
          ++script_frames;
          EXPECT_EQ(p.file.substr(p.file.size() - 3), ".py") << p.file;
        }
        frozen += p.file.rfind("<frozen ", 0) == 0;
      }
    }
  }
  EXPECT_GT(script_frames, 0u);
  EXPECT_GT(frozen, 0u);  // the import machinery's frames (stdlib frozen modules)
}

TEST_P(PythonStacksTest, OffWithTheVariable) {
  ASSERT_EQ(RunTraced({python_, kScript, data_}, out_, {"IDLESCOPE_PYTHON_STACKS=0"}), 0);
  std::vector<PyTraceFile> files = ReadPyTraceDir(out_);
  ASSERT_FALSE(files.empty());
  size_t stacks = 0;
  for (const auto& f : files) {
    EXPECT_EQ(f.header.config().python_version(), "");
    for (const PyEvent& e : f.events) {
      if (e.stack == 0) continue;
      ++stacks;
      EXPECT_TRUE(f.PythonFrames(e.stack).empty());
      EXPECT_GT(f.NativeFrames(e.stack), 0u);
    }
  }
  EXPECT_GT(stacks, 0u);
#ifdef IDLESCOPE_CLI
  // The report's evidence is native: no first user frame, no line of the script.
  int status = 0;
  std::vector<std::string> lines =
      ReportedLines(IDLESCOPE_CLI, python_, REPORT_LINES_PY, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  EXPECT_TRUE(lines.empty()) << Joined(lines);
  std::string text = Report(IDLESCOPE_CLI, out_, "--top 100", &status);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(text.find(kScript + ":"), std::string::npos) << text;
  EXPECT_NE(text.find("      at "), std::string::npos) << text;  // stacks are still there
#endif
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonStacksTest, ::testing::ValuesIn(InterpreterLabels()),
                         [](const auto& info) { return InterpreterTestName(info.param); });

}  // namespace
}  // namespace idlescope::testing
