// `idlescope run` end to end: environment and exec propagation, exit statuses and signals passed
// through, signals forwarded, and (with the real recorder) one trace file per process with the
// right pid/ppid in each header (issue 2, Done-when 2).
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/trace/trace_reader.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_process.h"

namespace idlescope {
namespace {

using testing::DescribeWaitStatus;
using testing::ProcessResult;
using testing::ReadFileOrEmpty;
using testing::RunProcess;

std::string Realpath(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? buf : "";
}

std::string MakeTempDir(const std::string& prefix) {
  std::string tmpl = ::testing::TempDir() + "/" + prefix + "-XXXXXX";
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return Realpath(tmpl);
}

// pid and ppid of each process image, from fork_exec_prog's "ROLE PID PPID" lines.
std::multimap<std::string, std::pair<int, int>> Roles(const std::string& out) {
  std::multimap<std::string, std::pair<int, int>> roles;
  std::istringstream in(out);
  std::string role;
  int pid, ppid;
  while (in >> role >> pid >> ppid) roles.emplace(role, std::make_pair(pid, ppid));
  return roles;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

class RunCliTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("run"); }
  std::string dir_;
};

// With the probe library: the command runs with our library first in LD_PRELOAD (absolute path,
// the caller's entries kept), IDLESCOPE_OUT absolute, into exec'd images too; 0 and 3 pass through.
TEST_F(RunCliTest, ExitStatusAndEnvironmentPassThrough) {
  for (int code : {0, 3}) {
    const std::string out = dir_ + "/out" + std::to_string(code);
    ProcessResult r = RunProcess(
        {IDLESCOPE_BIN, "run", "-o", out, "--", FORK_EXEC_PROG, "--exit", std::to_string(code)},
        {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE, "LD_PRELOAD=/nonexistent/libkeep.so"});
    ASSERT_TRUE(WIFEXITED(r.wait_status)) << DescribeWaitStatus(r.wait_status) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.wait_status), code) << r.err;
    auto roles = Roles(r.out);
    ASSERT_EQ(roles.count("parent"), 1u) << r.out;
    ASSERT_EQ(roles.count("child"), 1u) << r.out;
    ASSERT_EQ(roles.count("exec-child"), 1u) << r.out;
    ASSERT_EQ(roles.count("exec"), 1u) << r.out;
    // The constructor runs once per loaded image: the parent and the exec'd image.
    for (const char* role : {"parent", "exec"}) {
      const int pid = roles.find(role)->second.first;
      const std::string probe = ReadFileOrEmpty(out + "/probe-" + std::to_string(pid) + ".loaded");
      EXPECT_EQ(probe, "LD_PRELOAD=" + Realpath(PRELOAD_PROBE) +
                           ":/nonexistent/libkeep.so\nIDLESCOPE_OUT=" + Realpath(out) + "\n")
          << role;
    }
    // No .idlescope files from the probe: the summary says so and why it might be.
    EXPECT_NE(r.err.find("exited with status " + std::to_string(code)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no trace file was written"), std::string::npos) << r.err;
  }
}

TEST_F(RunCliTest, CommandKilledBySignalKillsRunWithTheSameSignal) {
  for (int sig : {SIGTERM, SIGSEGV}) {
    ProcessResult r = RunProcess({IDLESCOPE_BIN, "run", "-o", dir_, "--", FORK_EXEC_PROG,
                                  "--kill-self", std::to_string(sig)},
                                 {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
    ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << DescribeWaitStatus(r.wait_status) << r.err;
    EXPECT_EQ(WTERMSIG(r.wait_status), sig);
    EXPECT_NE(r.err.find(std::string("was killed by SIG") + sigabbrev_np(sig)), std::string::npos)
        << r.err;
  }
}

// kill(1) or a job scheduler signals idlescope, not the command: the signal must reach it.
TEST_F(RunCliTest, SignalsSentToRunReachTheCommand) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    const std::string pid_file = dir_ + "/pid-" + std::to_string(sig);
    pid_t run = testing::StartProcess(
        {IDLESCOPE_BIN, "run", "-q", "-o", dir_, "--", FORK_EXEC_PROG, "--wait-signal", pid_file},
        {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE}, dir_ + "/stdout", dir_ + "/stderr");
    // Generous: the machine may be loaded; the program itself waits a minute at most.
    for (int i = 0; i < 600 && !Exists(pid_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(Exists(pid_file)) << ReadFileOrEmpty(dir_ + "/stderr");
    ASSERT_EQ(kill(run, sig), 0);
    int status = 0;
    ASSERT_EQ(waitpid(run, &status, 0), run);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig)
        << strsignal(sig) << ": " << DescribeWaitStatus(status);
  }
}

// A signal that reaches `run` after fork() and before the parent knows the child's pid is
// forwarded once it does (it was dropped: the command waited for it in vain, seen on a loaded
// machine). strace holds the parent in fork's return for a second, where strace is installed.
TEST_F(RunCliTest, ASignalRightAfterForkIsForwarded) {
  if (access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/strace";
  const std::string pid_file = dir_ + "/pid";
  pid_t strace = testing::StartProcess(
      {"/usr/bin/strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=clone,clone3,fork,vfork",
       "-e", "inject=clone,clone3,fork,vfork:delay_exit=1000000", IDLESCOPE_BIN, "run", "-q", "-o",
       dir_, "--", FORK_EXEC_PROG, "--wait-signal", pid_file},
      {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE}, dir_ + "/stdout", dir_ + "/stderr");
  int pid = 0;
  // A failed check leaves nothing behind waiting for its signal.
  struct Reap {
    pid_t& strace;
    int& command;
    ~Reap() {
      if (command > 0) kill(command, SIGKILL);
      if (strace > 0 && waitpid(strace, nullptr, WNOHANG) == 0) kill(strace, SIGKILL);
    }
  } reap{strace, pid};
  for (int i = 0; i < 600 && pid <= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pid = atoi(ReadFileOrEmpty(pid_file).c_str());
  }
  ASSERT_GT(pid, 0) << ReadFileOrEmpty(dir_ + "/stderr");
  // The command's parent is `run`, still held in fork's return.
  const std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  ASSERT_NE(paren, std::string::npos) << stat;
  pid_t run = 0;
  ASSERT_EQ(sscanf(stat.c_str() + paren + 2, "%*c %d", &run), 1) << stat;
  ASSERT_EQ(kill(run, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(strace, &status, 0), strace);
  strace = pid = 0;
  // strace ends as its tracee did: killed by SIGTERM (or, where it cannot, 128 + SIGTERM).
  EXPECT_TRUE((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) ||
              (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM))
      << DescribeWaitStatus(status) << ReadFileOrEmpty(dir_ + "/stderr");
}

// A probe that passed is kept (run_command.cc, "The probe's verdict, kept"): the next `run` with
// the same library, system and environment starts the job without one; another IDLESCOPE_*
// setting is another key. Whether a probe ran is told by strace (the probe execs /bin/true, the
// job is fork_exec_prog), where strace is installed.
TEST_F(RunCliTest, AProbeThatPassedIsKeptUntilItsKeyChanges) {
  const std::string xdg = dir_ + "/xdg";
  ASSERT_EQ(mkdir(xdg.c_str(), 0700), 0);
  auto kept = [&] {
    int n = 0;
    if (DIR* d = opendir((xdg + "/idlescope").c_str())) {
      while (dirent* e = readdir(d)) n += std::string(e->d_name).rfind("probe-", 0) == 0;
      closedir(d);
    }
    return n;
  };
  const bool strace = access("/usr/bin/strace", X_OK) == 0;
  // The probes a `run` made: execs of /bin/true under strace, or -1 without strace.
  auto run = [&](const std::vector<std::string>& env) {
    const std::string log = dir_ + "/strace.log";
    std::vector<std::string> argv = {IDLESCOPE_BIN, "run",          "-q",     "-o", dir_ + "/out",
                                     "--",          FORK_EXEC_PROG, "--exit", "0"};
    if (strace) {
      argv.insert(argv.begin(), {"/usr/bin/strace", "-f", "-qq", "-e", "trace=execve", "-o", log});
    }
    ProcessResult r = RunProcess(argv, env);
    EXPECT_EQ(r.wait_status, 0) << r.err;
    if (!strace) return -1;
    std::istringstream in(ReadFileOrEmpty(log));
    int probes = 0;
    for (std::string line; std::getline(in, line);) {
      probes += line.find("execve(\"/bin/true\"") != std::string::npos;
    }
    return probes;
  };
  const std::vector<std::string> env = {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE,
                                        "XDG_RUNTIME_DIR=" + xdg};
  const int first = run(env);
  EXPECT_EQ(kept(), 1);
  const std::string file = [&] {
    DIR* d = opendir((xdg + "/idlescope").c_str());
    std::string name;
    while (dirent* e = d != nullptr ? readdir(d) : nullptr) {
      if (std::string(e->d_name).rfind("probe-", 0) == 0) name = e->d_name;
    }
    if (d != nullptr) closedir(d);
    return name;
  }();
  EXPECT_EQ(ReadFileOrEmpty(xdg + "/idlescope/" + file).rfind("idlescope probe 1\nboot ", 0), 0u);
  const int second = run(env);
  EXPECT_EQ(kept(), 1);
  std::vector<std::string> other = env;
  other.push_back("IDLESCOPE_SAMPLE_HZ=100");
  const int third = run(other);
  EXPECT_EQ(kept(), 2);
  if (strace) {
    EXPECT_EQ(first, 1);
    EXPECT_EQ(second, 0) << "the kept probe was not used";
    EXPECT_EQ(third, 1);
  }
}

TEST_F(RunCliTest, CreatesTheOutputDirectory) {
  // No -o: ./idlescope-<date>-<time> in the working directory.
  ProcessResult r = RunProcess({IDLESCOPE_BIN, "run", "--", "/bin/true"},
                               {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE}, dir_);
  ASSERT_EQ(r.wait_status, 0) << r.err;
  std::regex made(dir_ + "/idlescope-[0-9]{8}-[0-9]{6}(-[0-9]+)?");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, made)) << r.err;
  EXPECT_TRUE(Exists(m.str()));
  // -o with missing parents: created like mkdir -p.
  r = RunProcess({IDLESCOPE_BIN, "run", "-o", dir_ + "/a/b/c", "--", "/bin/true"},
                 {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  ASSERT_EQ(r.wait_status, 0) << r.err;
  EXPECT_TRUE(Exists(dir_ + "/a/b/c"));
  // -o naming a file: refused.
  r = RunProcess({IDLESCOPE_BIN, "run", "-o", PRELOAD_PROBE, "--", "/bin/true"},
                 {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 125) << r.err;
}

TEST_F(RunCliTest, OwnFailuresAreOneLineWithDistinctStatuses) {
  ProcessResult r = RunProcess({IDLESCOPE_BIN, "run", "-o", dir_, "--", "/bin/true"},
                               {"IDLESCOPE_LIB=/nonexistent/libidlescope.so"});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 125);
  EXPECT_NE(r.err.find("preload library not found: /nonexistent/libidlescope.so"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);

  r = RunProcess({IDLESCOPE_BIN, "run", "-q", "-o", dir_, "--", "no-such-command-xyz"},
                 {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 127)
      << DescribeWaitStatus(r.wait_status);
  EXPECT_NE(r.err.find("cannot run no-such-command-xyz: No such file or directory"),
            std::string::npos)
      << r.err;

  r = RunProcess({IDLESCOPE_BIN, "run", "-o", dir_});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 2);
  EXPECT_NE(r.err.find("no command given"), std::string::npos);
}

TEST_F(RunCliTest, QuietPrintsNothing) {
  ProcessResult r = RunProcess({IDLESCOPE_BIN, "run", "--quiet", "-o", dir_, "--", "/bin/true"},
                               {std::string("IDLESCOPE_LIB=") + PRELOAD_PROBE});
  EXPECT_EQ(r.wait_status, 0);
  EXPECT_EQ(r.err, "");
}

#ifdef IDLESCOPE_HAVE_RECORDER
// The real recorder, found the default way (bin/../lib/libidlescope.so): one readable file per
// process image, each header naming its own pid and its parent.
TEST_F(RunCliTest, TracesEveryProcessOfAForkingExecingProgram) {
  ASSERT_TRUE(Exists(IDLESCOPE_PRELOAD_LIB)) << IDLESCOPE_PRELOAD_LIB << " is not built";
  for (int code : {0, 3}) {
    const std::string out = dir_ + "/trace" + std::to_string(code);
    ProcessResult r = RunProcess(
        {IDLESCOPE_BIN, "run", "-o", out, "--", FORK_EXEC_PROG, "--exit", std::to_string(code)},
        {"IDLESCOPE_LIB="});
    ASSERT_TRUE(WIFEXITED(r.wait_status)) << DescribeWaitStatus(r.wait_status) << r.err;
    EXPECT_EQ(WEXITSTATUS(r.wait_status), code) << r.err;
    auto roles = Roles(r.out);
    ASSERT_EQ(roles.size(), 4u) << r.out;
    const auto [parent, parent_ppid] = roles.find("parent")->second;
    // Expected (pid, ppid) per file: parent, 2 children, and the exec'd image (same pid as the
    // child that exec'd, its own file).
    std::multiset<std::pair<int, int>> expected;
    for (const auto& [role, ids] : roles) expected.insert(ids);
    for (const auto& [role, ids] : roles) {
      if (role != "parent") {
        EXPECT_EQ(ids.second, parent) << role;
      }
    }
    ASSERT_EQ(roles.count("exec"), 1u) << r.out;
    EXPECT_EQ(roles.find("exec")->second.first, roles.find("exec-child")->second.first)
        << "the exec'd image keeps the pid of the child that exec'd";

    auto files = ListTraceFiles(out);
    ASSERT_TRUE(files.ok()) << files.status();
    EXPECT_EQ(files->size(), 4u) << "one file per process image";
    std::multiset<std::pair<int, int>> seen;
    const std::regex header_ids(" pid=([0-9]+) ppid=([0-9]+)");
    for (const std::string& file : *files) {
      ProcessResult d = RunProcess({IDLESCOPE_BIN, "dump", file});
      ASSERT_EQ(d.wait_status, 0) << file << ": " << d.err;
      std::smatch m;
      ASSERT_TRUE(std::regex_search(d.out, m, header_ids)) << d.out.substr(0, 2000);
      seen.emplace(std::stoi(m[1]), std::stoi(m[2]));
      EXPECT_EQ(d.out.find("truncated:"), std::string::npos) << file;
      EXPECT_EQ(d.out.find("no footer"), std::string::npos) << file << " ended uncleanly";
    }
    EXPECT_EQ(seen, expected);
    EXPECT_NE(r.err.find("4 trace files"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Next: idlescope report " + Realpath(out)), std::string::npos) << r.err;
    (void)parent_ppid;
  }
}

// An output directory that cannot take files is one line, before the job: not one per process
// of it (a 64-worker job printed 64), nor a job run untraced.
TEST_F(RunCliTest, UnwritableOutputDirectoryIsOneLineBeforeTheJob) {
  ASSERT_TRUE(Exists(IDLESCOPE_PRELOAD_LIB)) << IDLESCOPE_PRELOAD_LIB << " is not built";
  ProcessResult r =
      RunProcess({IDLESCOPE_BIN, "run", "-o", "/proc/self", "--", FORK_EXEC_PROG, "--exit", "0"},
                 {"IDLESCOPE_LIB="});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 125)
      << DescribeWaitStatus(r.wait_status) << r.err;
  EXPECT_EQ(r.out, "");  // the command did not run
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("cannot create trace files in /proc/"), std::string::npos) << r.err;
}

// A directory `run` makes is not probed with a file (its inode proved the file system takes
// files), but its mode still counts: a umask that takes the owner's write bit leaves a directory
// only root can fill. As root the traces are there; as anyone else it is one line before the job.
TEST_F(RunCliTest, ANewOutputDirectoryUnderAStrictUmaskIsProbed) {
  ASSERT_TRUE(Exists(IDLESCOPE_PRELOAD_LIB)) << IDLESCOPE_PRELOAD_LIB << " is not built";
  const std::string out = dir_ + "/strict";
  const mode_t was = umask(0277);
  ProcessResult r =
      RunProcess({IDLESCOPE_BIN, "run", "-q", "-o", out, "--", FORK_EXEC_PROG, "--exit", "0"},
                 {"IDLESCOPE_LIB="});
  umask(was);
  chmod(out.c_str(), 0700);  // so that the fixture can remove it
  if (geteuid() == 0) {
    EXPECT_EQ(r.wait_status, 0) << DescribeWaitStatus(r.wait_status) << r.err;
    auto files = ListTraceFiles(out);
    ASSERT_TRUE(files.ok()) << files.status();
    EXPECT_EQ(files->size(), 4u) << r.err;
  } else {
    EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 125)
        << DescribeWaitStatus(r.wait_status) << r.err;
    EXPECT_NE(r.err.find("cannot create trace files in"), std::string::npos) << r.err;
  }
}

// Without the wrapper the job's first process says it once, at start; its children say nothing.
TEST_F(RunCliTest, BadOutputDirectoryUnderPlainPreloadIsOneLinePerJob) {
  ASSERT_TRUE(Exists(IDLESCOPE_PRELOAD_LIB)) << IDLESCOPE_PRELOAD_LIB << " is not built";
  ProcessResult r = RunProcess(
      {FORK_EXEC_PROG, "--exit", "0"},
      {std::string("LD_PRELOAD=") + IDLESCOPE_PRELOAD_LIB, "IDLESCOPE_OUT=/proc/self/no/such/dir"});
  EXPECT_EQ(r.wait_status, 0) << r.err;
  EXPECT_EQ(Roles(r.out).size(), 4u) << r.out;
  size_t lines = 0;
  for (size_t at = r.err.find("idlescope:"); at != std::string::npos;
       at = r.err.find("idlescope:", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << r.err;
}

// Under `idlescope run`, a child whose stderr the job captures gets none of our lines, even when
// every process has something to say (a bad value); the command itself says it once.
TEST_F(RunCliTest, ChildrensCapturedStderrGetsNothingOfOurs) {
  ASSERT_TRUE(Exists(IDLESCOPE_PRELOAD_LIB)) << IDLESCOPE_PRELOAD_LIB << " is not built";
  const std::string python = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  ProcessResult r =
      RunProcess({IDLESCOPE_BIN, "run", "-q", "-o", dir_, "--", python, "-c",
                  "import subprocess, sys\n"
                  "r = subprocess.run([sys.executable, '-c', 'pass'], capture_output=True)\n"
                  "print(repr(r.stderr))\n"},
                 {"IDLESCOPE_LIB=", "IDLESCOPE_FLUSH_MS=soon"});
  EXPECT_EQ(r.wait_status, 0) << r.err;
  EXPECT_EQ(r.out, "b''\n");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("idlescope: IDLESCOPE_FLUSH_MS=soon"), std::string::npos) << r.err;
}

TEST_F(RunCliTest, TracedCommandKilledBySignalIsReportedAndPassedOn) {
  ASSERT_TRUE(Exists(IDLESCOPE_PRELOAD_LIB)) << IDLESCOPE_PRELOAD_LIB << " is not built";
  ProcessResult r =
      RunProcess({IDLESCOPE_BIN, "run", "-o", dir_, "--", FORK_EXEC_PROG, "--kill-self", "15"},
                 {"IDLESCOPE_LIB="});
  ASSERT_TRUE(WIFSIGNALED(r.wait_status)) << DescribeWaitStatus(r.wait_status) << r.err;
  EXPECT_EQ(WTERMSIG(r.wait_status), SIGTERM);
  EXPECT_NE(r.err.find("was killed by SIGTERM"), std::string::npos) << r.err;
  auto files = ListTraceFiles(dir_);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 4u);
  for (const std::string& file : *files) {
    ProcessResult d = RunProcess({IDLESCOPE_BIN, "dump", "--summary", file});
    EXPECT_EQ(d.wait_status, 0) << file << ": " << d.err;
  }
}
#endif  // IDLESCOPE_HAVE_RECORDER

}  // namespace
}  // namespace idlescope
