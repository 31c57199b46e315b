// The command line of every idlescope command, end to end on the real binary (issue 27, Done-when
// 3): getopt_long's conventions (`--opt=value`, `-oFILE`, grouped short flags, a unique prefix,
// `--` ends the options, options after operands), `help CMD`, `-V` and `--help` with exit
// statuses for every command, one-line usage errors, and nothing on stderr from a report without
// --verbose but warnings and errors.
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/cli_process.h"

namespace idlescope {
namespace {

using testing::DescribeWaitStatus;
using testing::ProcessResult;
using testing::ReadFileOrEmpty;
using testing::RunProcess;

constexpr const char* kCommands[] = {"run",   "dump", "report", "diff",  "export",
                                     "index", "plan", "map",    "merge", "version"};

// Two runs of a job: checked-in traces of the golden tests.
const std::string kTrace = std::string(GOLDEN_DIR) + "/transfer_checkpoint";
const std::string kTraceV1 = std::string(GOLDEN_DIR) + "/transfer_checkpoint_v1";

int ExitStatus(const ProcessResult& r) {
  return WIFEXITED(r.wait_status) ? WEXITSTATUS(r.wait_status) : -1;
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

ProcessResult Idlescope(std::vector<std::string> args) {
  args.insert(args.begin(), IDLESCOPE_BIN);
  return RunProcess(args);
}

class OptionsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "/options-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
  }
  std::string dir_;
};

// `help CMD`, `CMD --help` and `CMD -h` print CMD's usage with its exit statuses on stdout.
TEST_F(OptionsCliTest, HelpOfEveryCommandHasItsUsageAndExitStatuses) {
  for (const char* command : kCommands) {
    SCOPED_TRACE(command);
    ProcessResult help = Idlescope({"help", command});
    EXPECT_EQ(ExitStatus(help), 0) << help.err;
    EXPECT_EQ(help.out.rfind(std::string("usage: idlescope ") + command, 0), 0u) << help.out;
    EXPECT_NE(help.out.find("exit status:"), std::string::npos) << help.out;
    EXPECT_EQ(help.err, "");
    for (const char* flag : {"--help", "-h"}) {
      ProcessResult r = Idlescope({command, flag});
      EXPECT_EQ(ExitStatus(r), 0) << flag << ": " << r.err;
      EXPECT_EQ(r.out, help.out) << flag;
    }
  }
  ProcessResult top = Idlescope({"help"});
  EXPECT_EQ(ExitStatus(top), 0);
  EXPECT_NE(top.out.find("idlescope help COMMAND"), std::string::npos) << top.out;
  ProcessResult unknown = Idlescope({"help", "nope"});
  EXPECT_EQ(ExitStatus(unknown), 2);
  EXPECT_EQ(Lines(unknown.err), 1u) << unknown.err;
}

// -V and --version of every command, and of idlescope itself, print the version.
TEST_F(OptionsCliTest, VersionFromEveryCommand) {
  ProcessResult version = Idlescope({"--version"});
  ASSERT_EQ(ExitStatus(version), 0);
  EXPECT_EQ(version.out.rfind("idlescope ", 0), 0u) << version.out;
  EXPECT_NE(version.out.find("trace format"), std::string::npos) << version.out;
  EXPECT_EQ(Idlescope({"-V"}).out, version.out);
  for (const char* command : kCommands) {
    for (const char* flag : {"-V", "--version"}) {
      ProcessResult r = Idlescope({command, flag});
      EXPECT_EQ(ExitStatus(r), 0) << command << " " << flag << ": " << r.err;
      EXPECT_EQ(r.out, version.out) << command << " " << flag;
    }
  }
}

// An unknown option, a value given to a flag and a flag without its value: one line naming it
// and where the usage is, exit status 2, nothing on stdout.
TEST_F(OptionsCliTest, UsageErrorsAreOneLineAndExitTwo) {
  for (const char* command : kCommands) {
    ProcessResult r = Idlescope({command, "--no-such-option", "x"});
    EXPECT_EQ(ExitStatus(r), 2) << command;
    EXPECT_EQ(r.err, std::string("idlescope ") + command +
                         ": unknown option '--no-such-option' (usage: idlescope help " + command +
                         ")\n");
    EXPECT_EQ(r.out, "") << command;
  }
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      // Every format, html and the timelines too.
      {{"report", "--format"}, "--format needs a value (text, json, html, perfetto, chrome)"},
      {{"report", kTrace, "-o"}, "-o needs a value (FILE)"},
      {{"report", "--quiet=yes", kTrace}, "--quiet takes no value"},
      {{"report", "--top=many", kTrace}, "--top needs a non-negative number, not 'many'"},
      {{"report", "-x", kTrace}, "unknown option '-x'"},
      {{"report", "--format=xml", kTrace}, "unknown format 'xml'"},
      {{"diff", "--fail-if-slower=fast", kTrace, kTraceV1}, "--fail-if-slower needs a non-neg"},
      {{"map", "-o", "x", "plan", "first"}, "SHARD is a number, not 'first'"},
      {{"report"}, "no trace directory or file given"},
      // The timeline exports' selection and split.
      {{"export", "--format=perfetto", "-o", "x", "--max-bytes=1000", kTrace}, "at least 64K"},
      {{"export", "--format=perfetto", "-o", "x", "--max-bytes=1T", kTrace}, "at least 64K"},
      {{"export", "--format=perfetto", "-o", "x", "--ranks=a", kTrace}, "--ranks needs a list"},
      {{"export", "--format=chrome", "-o", "x", "--ranks=3-1", kTrace}, "--ranks needs a list"},
      {{"export", "--format=perfetto", "-o", "x", "--from=2", "--to=1", kTrace}, "--to must be"},
      {{"export", "--format=json", "-o", "x", "--from=1", kTrace}, "are for --format perfetto"},
      {{"export", "--format=perfetto", "-o", "x", "--level=brief", kTrace}, "full or summary"},
  };
  for (const Case& c : cases) {
    ProcessResult r = Idlescope(c.args);
    EXPECT_EQ(ExitStatus(r), 2) << c.args[1] << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

// `export --max-bytes`: parts named FILE, FILE.1, ... before the extension (none: after the
// name), each at most the limit, and one line on stderr naming them.
TEST_F(OptionsCliTest, ExportSplitsIntoNamedParts) {
  const std::string trace = std::string(GOLDEN_DIR) + "/ddp_straggler_remote";
  const std::string whole = dir_ + "/whole.pftrace";
  ASSERT_EQ(ExitStatus(Idlescope({"export", "-q", "--format", "perfetto", "-o", whole, trace})), 0);
  const size_t size = ReadFileOrEmpty(whole).size();
  ASSERT_GT(size, 3u * 65536) << "the golden trace is too small to split";
  for (const std::string name : {"job.pftrace", "job"}) {
    const std::string path = dir_ + "/" + name;
    ProcessResult r = Idlescope(
        {"export", "-q", "--format", "perfetto", "--max-bytes", "64K", "-o", path, trace});
    ASSERT_EQ(ExitStatus(r), 0) << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("of at most 65536 bytes: " + path + ", "), std::string::npos) << r.err;
    size_t parts = 0, total = 0;
    for (;; ++parts) {
      const std::string part = parts == 0 ? path
                               : name == "job"
                                   ? path + "." + std::to_string(parts)
                                   : dir_ + "/job." + std::to_string(parts) + ".pftrace";
      struct stat st;
      if (stat(part.c_str(), &st) != 0) break;
      EXPECT_LE(st.st_size, 65536) << part;
      total += static_cast<size_t>(st.st_size);
    }
    EXPECT_GE(parts, 3u);
    EXPECT_NE(r.err.find("wrote " + std::to_string(parts) + " files"), std::string::npos) << r.err;
    // Each part begins with its own clock snapshot and tracks: a little more than one file.
    EXPECT_GE(total, size);
  }
}

// The forms getopt_long accepts give what the plain form gives.
TEST_F(OptionsCliTest, EveryFormOfAnOptionIsTheSame) {
  struct Case {
    std::vector<std::string> plain, other;
  };
  const Case cases[] = {
      {{"report", "--format", "json", kTrace}, {"report", "--format=json", kTrace}},
      {{"report", "--format", "json", kTrace}, {"report", "--form=json", kTrace}},  // a prefix
      {{"report", "--format", "json", kTrace}, {"report", kTrace, "--format", "json"}},
      {{"report", "--top", "3", "--min-gap", "2", kTrace},
       {"report", "--top=3", "--min-gap=2", kTrace}},
      {{"report", "--jobs", "1", "--reorder-window", "500", kTrace},
       {"report", "-j1", "--reorder-window=500", kTrace}},
      {{"diff", "--format", "json", "--min-gap", "2", kTrace, kTraceV1},
       {"diff", "--json", "--min-gap=2", kTrace, kTraceV1}},
      {{"dump", "--summary", kTrace + "/gen-node0-1000.idlescope"},
       {"dump", kTrace + "/gen-node0-1000.idlescope", "--summary"}},
      {{"index", "--list", kTrace}, {"index", kTrace, "--list"}},
  };
  for (const Case& c : cases) {
    ProcessResult plain = Idlescope(c.plain);
    ProcessResult other = Idlescope(c.other);
    ASSERT_EQ(ExitStatus(plain), 0) << c.plain[0] << ": " << plain.err;
    EXPECT_EQ(ExitStatus(other), 0) << c.other[1] << ": " << other.err;
    EXPECT_FALSE(plain.out.empty());
    EXPECT_EQ(other.out, plain.out) << c.other[1];
  }
}

// -oFILE, --output=FILE and grouped short flags (-qo FILE, -qoFILE) write what -o FILE writes.
TEST_F(OptionsCliTest, OutputFileInEveryForm) {
  const std::string plain = dir_ + "/plain.json";
  ProcessResult r = Idlescope({"report", "-q", "-o", plain, "--format", "json", kTrace});
  ASSERT_EQ(ExitStatus(r), 0) << r.err;
  const std::string expected = ReadFileOrEmpty(plain);
  ASSERT_FALSE(expected.empty());
  const std::vector<std::vector<std::string>> forms = {
      {"-o" + dir_ + "/attached.json"},
      {"--output=" + dir_ + "/equals.json"},
      {"-qo", dir_ + "/grouped.json"},
      {"-qo" + dir_ + "/grouped-attached.json"},
  };
  const char* names[] = {"attached", "equals", "grouped", "grouped-attached"};
  for (size_t i = 0; i < forms.size(); ++i) {
    std::vector<std::string> args = {"report", "--format", "json"};
    args.insert(args.end(), forms[i].begin(), forms[i].end());
    args.push_back(kTrace);
    ProcessResult f = Idlescope(args);
    EXPECT_EQ(ExitStatus(f), 0) << names[i] << ": " << f.err;
    EXPECT_EQ(f.out, "") << names[i];
    EXPECT_EQ(ReadFileOrEmpty(dir_ + "/" + names[i] + ".json"), expected) << names[i];
  }
}

// `--` ends the options: what follows is an operand even when it starts with '-'. `run`'s
// options end at the command: the command's own options are its.
TEST_F(OptionsCliTest, DoubleDashAndRunsCommandOptions) {
  ProcessResult r = Idlescope({"dump", "--", "--summary"});
  EXPECT_EQ(ExitStatus(r), 1) << r.err;  // a file named "--summary" that is not there
  EXPECT_NE(r.err.find("--summary"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unknown option"), std::string::npos) << r.err;

  const std::string out = dir_ + "/run";
  r = RunProcess({IDLESCOPE_BIN, "run", "-qo" + out, "/bin/echo", "--format", "-x"},
                 {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  EXPECT_EQ(ExitStatus(r), 0) << DescribeWaitStatus(r.wait_status) << r.err;
  EXPECT_EQ(r.out, "--format -x\n");
  EXPECT_EQ(r.err, "");
  struct stat st;
  EXPECT_EQ(stat(out.c_str(), &st), 0) << "-qoDIR made no " << out;
}

// A command that cannot run is one line saying so (127: not found), with no summary of a run
// that never was (no "was it static or setuid?"); a directory that cannot be made is named as it
// was given.
TEST_F(OptionsCliTest, RunMessages) {
  ProcessResult r = RunProcess({IDLESCOPE_BIN, "run", "-o", dir_ + "/out", "--", "/nonexistent"},
                               {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  EXPECT_EQ(ExitStatus(r), 127) << DescribeWaitStatus(r.wait_status);
  EXPECT_EQ(r.err, "idlescope run: cannot run /nonexistent: No such file or directory\n");

  r = RunProcess({IDLESCOPE_BIN, "run", "-o", "/proc/nope/traces", "--", "/bin/true"},
                 {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  EXPECT_EQ(ExitStatus(r), 125);
  EXPECT_EQ(r.err, "idlescope run: cannot create /proc/nope: No such file or directory\n");
}

// Without --verbose a report says nothing on stderr (a CI log gets the job's problems only);
// with it, the closing lines: what an export wrote, the throughput.
TEST_F(OptionsCliTest, ReportsAreSilentOnStderrWithoutVerbose) {
  const std::string chrome = dir_ + "/job.json";
  const std::vector<std::vector<std::string>> quiet = {
      {"report", kTrace},
      {"report", "--format", "json", kTrace},
      {"report", "--single-process", kTrace},
      {"report", "--format", "chrome", "-o", chrome, kTrace},
      {"export", "--format", "perfetto", "-o", dir_ + "/job.pftrace", kTrace},
      {"diff", kTrace, kTraceV1},
  };
  for (const std::vector<std::string>& args : quiet) {
    ProcessResult r = Idlescope(args);
    EXPECT_EQ(ExitStatus(r), 0) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_EQ(r.err, "") << args[0] << " " << args[1];
  }
  ProcessResult r = Idlescope({"report", "-v", kTrace});
  EXPECT_EQ(ExitStatus(r), 0);
  EXPECT_EQ(r.err.rfind("idlescope report: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("M events/s"), std::string::npos) << r.err;
  r = Idlescope({"report", "--verbose", "--format", "chrome", "-o", chrome, kTrace});
  EXPECT_EQ(ExitStatus(r), 0);
  EXPECT_EQ(Lines(r.err), 2u) << r.err;  // what was written, then the throughput
  EXPECT_NE(r.err.find(chrome + ": "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace idlescope
