// An interpreter version the recorder does not read (a fake one exporting CPython 3.14's symbols,
// and pyenv's real 3.9 when present): Python stacks are turned off with one notice, on stderr and
// in the trace, and nothing else changes: the job's stdout and exit status are those of an
// untraced run, and its events still carry native stacks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/io/trace_file.h"
#include "tests/python/python_test_support.h"

namespace idlescope::testing {
namespace {

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Runs `argv` untraced and traced; checks the notice, the output, the status and the trace.
void ExpectOneNoticeAndNoChange(const std::vector<std::string>& argv, const std::string& version) {
  std::string command;
  for (const auto& a : argv) {
    command += "'";
    for (char c : a) command += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += "' ";
  }
  int bare_status = 0;
  const std::string bare_out = RunCapture(command + "2>/dev/null", &bare_status);

  const std::string out = MakeTempDir();
  TracedChild child = StartTraced(argv, out);
  ASSERT_GT(child.pid, 0);
  const std::string traced_out = ReadAll(child.out);
  const std::string traced_err = ReadAll(child.err);
  const int traced_status = Wait(child.pid);

  EXPECT_EQ(traced_out, bare_out);
  EXPECT_EQ(traced_status, bare_status);
  EXPECT_EQ(Count(traced_err, "idlescope: "), 1u) << traced_err;
  EXPECT_EQ(Count(traced_err, "Python stacks are off: CPython " + version), 1u) << traced_err;

  std::vector<PyTraceFile> files = ReadPyTraceDir(out);
  ASSERT_EQ(files.size(), 1u);
  const PyTraceFile& f = files[0];
  EXPECT_EQ(f.header.config().python_version(), "");
  size_t notices = 0;
  for (const Notice& n : f.notices) notices += n.code() == "python_stacks_unsupported";
  EXPECT_EQ(notices, 1u);
  size_t stacks = 0;
  for (const PyEvent& e : f.events) {
    if (e.stack == 0) continue;
    ++stacks;
    EXPECT_TRUE(f.PythonFrames(e.stack).empty());
  }
  EXPECT_GT(stacks, 0u);
  if (!::testing::Test::HasFailure()) {
    std::string cmd = "rm -rf '" + out + "'";
    (void)system(cmd.c_str());
  }
}

TEST(UnknownInterpreter, FakeCPython314) {
  const std::string data = MakeTempDir();
  ExpectOneNoticeAndNoChange({FAKE_INTERPRETER, data + "/out.bin"}, "3.14.0");
}

TEST(UnknownInterpreter, RealCPython39) {
  const std::string python = InterpreterPath("3.9");
  if (python.empty() || access(python.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no CPython 3.9 on this machine: skipped";
  }
  const std::string data = MakeTempDir();
  ExpectOneNoticeAndNoChange(
      {python, "-c",
       "import sys; open(sys.argv[1], 'w').write('data'); print('job output'); sys.exit(3)",
       data + "/out.txt"},
      "3.9.");
}

}  // namespace
}  // namespace idlescope::testing
