// A traced job behaves as the bare one: its descriptor table, its stdin/stderr data, vfork's
// shared memory, its children's environment, and the files we leave. Real programs (the C
// programs of tests/io/programs, bash, python3) run bare and under the real preload library;
// what they print is compared.
//
// IDLESCOPE_TEST_PRELOAD_LIB=/path/libidlescope.so runs the same tests against another build of
// the library (to show that a regression test fails on the code before its fix).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/io/trace_file.h"

namespace idlescope::testing {
namespace {

std::string Program(const std::string& name) { return std::string(IO_PROGRAMS_DIR) + "/" + name; }

std::string PreloadLib() {
  const char* v = getenv("IDLESCOPE_TEST_PRELOAD_LIB");
  return v != nullptr && *v != '\0' ? v : IDLESCOPE_PRELOAD_LIB;
}

// A Python 3 for the CPython cases (Debian's, else the one on PATH).
std::string Python() {
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Outcome {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "status " << o.status << ", stdout [" << o.out << "], stderr [" << o.err << "]";
}

enum class Stdin { kDevNull, kClosed };

// Runs argv with stdout and stderr captured, `env` added to the environment; descriptors >= 3 of
// the test process are closed first, so bare and traced runs start from the same table.
// `in_child` runs in the child just before exec (setrlimit, umask).
Outcome RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   Stdin in = Stdin::kDevNull, const std::function<void()>& in_child = {}) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    syscall(SYS_close_range, 3u, ~0u, 0u);
    if (in == Stdin::kClosed) close(0);
    signal(SIGINT, SIG_DFL);
    for (const std::string& e : env) putenv(strdup(e.c_str()));
    if (in_child) in_child();
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  Outcome o;
  std::thread drain_err([&] { o.err = ReadAll(err[0]); });
  o.out = ReadAll(out[0]);
  drain_err.join();
  o.status = Wait(pid);
  return o;
}

class JobUnchangedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = MakeTempDir();
    work_ = MakeTempDir();
    ASSERT_FALSE(out_.empty());
    ASSERT_FALSE(work_.empty());
  }
  void TearDown() override {
    if (!HasFailure()) {
      std::string cmd = "rm -rf '" + out_ + "' '" + work_ + "'";
      (void)system(cmd.c_str());
    } else {
      printf("traces kept in %s\n", out_.c_str());
    }
  }

  std::vector<std::string> Traced(std::vector<std::string> env = {}) const {
    env.push_back("LD_PRELOAD=" + PreloadLib());
    env.push_back("IDLESCOPE_OUT=" + out_);
    return env;
  }

  // The same command bare and traced: both outcomes, for the caller to compare.
  std::pair<Outcome, Outcome> BareAndTraced(const std::vector<std::string>& argv,
                                            std::vector<std::string> env = {},
                                            Stdin in = Stdin::kDevNull,
                                            const std::function<void()>& in_child = {}) {
    Outcome bare = RunProgram(argv, env, in, in_child);
    Outcome traced = RunProgram(argv, Traced(env), in, in_child);
    return {bare, traced};
  }

  void ExpectSameAsBare(const std::vector<std::string>& argv, std::vector<std::string> env = {},
                        Stdin in = Stdin::kDevNull, const std::function<void()>& in_child = {}) {
    auto [bare, traced] = BareAndTraced(argv, std::move(env), in, in_child);
    EXPECT_EQ(bare.status, traced.status) << "bare: " << bare << "\ntraced: " << traced;
    EXPECT_EQ(bare.out, traced.out) << "bare: " << bare << "\ntraced: " << traced;
    EXPECT_EQ(bare.err, traced.err) << "bare: " << bare << "\ntraced: " << traced;
  }

  std::string out_, work_;
};

// ---------------------------------------------------------------------------------------------
// Descriptors: the program's table is its own (no trace fd, no unwinder pipe).

TEST_F(JobUnchangedTest, TheProgramsDescriptorTableHoldsNothingOfOurs) {
  ExpectSameAsBare({Program("fd_numbers"), "list"});
  // The trace was written all the same.
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].has_footer);
  EXPECT_FALSE(files[0].OfType(FILE_WRITE).empty());
}

// A hook in a signal handler that interrupted malloc (the arena's lock held by the same thread)
// never allocates: the handler opens and writes a new file each time, and naming each file once
// took malloc's lock (it hung in 3 runs of 3; a CPython job writing to its wakeup fd hung so in 1
// of 25). `timeout` ends a hung run (status 137).
TEST_F(JobUnchangedTest, HooksInASignalHandlerThatInterruptedMallocNeverWait) {
  ExpectSameAsBare({"timeout", "-s", "KILL", "60", Program("signal_io_in_malloc"), work_, "1"});
  // Handlers of 1.5 ms, recorded as they return (still in the signal): a threadless process
  // flushed at the end of that record, allocating inside the interrupted malloc, and died of a
  // corrupted heap in 4 of 8 runs beside two CPU hogs (only they made a handler that long).
  ExpectSameAsBare(
      {"timeout", "-s", "KILL", "60", Program("signal_io_in_malloc"), work_, "1", "slow"});
  // The handler installed with sigset(3), which glibc makes past sigaction: unwrapped, its hooks
  // flushed when one was due (10 of 10 runs crashed with flushes every 20 ms).
  ExpectSameAsBare(
      {"timeout", "-s", "KILL", "60", Program("signal_io_in_malloc"), work_, "1", "sigset"},
      {"IDLESCOPE_FLUSH_MS=20"});
}

TEST_F(JobUnchangedTest, PipeGetsTheNumbersItGetsBare) {
  ExpectSameAsBare({Program("fd_numbers"), "pipe"});
  ExpectSameAsBare({Python(), "-c", "import os; open(os.devnull).close(); print(os.pipe())"});
}

TEST_F(JobUnchangedTest, LowDescriptorLimitOpensAsManyFilesAsBare) {
  ExpectSameAsBare({Program("fd_numbers"), "nofile", "32"});
}

// With stdin closed, the lowest free number is 0: whatever we opened there, the program would
// read from (an unwinder's pipe gave Python b'\x00' instead of EBADF).
TEST_F(JobUnchangedTest, ClosedStdinStaysClosed) {
  ExpectSameAsBare({Program("fd_numbers"), "stdin"}, {}, Stdin::kClosed);
  ExpectSameAsBare({Python(), "-c",
                    "import os\n"
                    "with open(os.devnull, 'w') as f: f.write('x')\n"
                    "try:\n"
                    "    print(os.read(0, 1))\n"
                    "except OSError as e:\n"
                    "    print(e)\n"},
                   {}, Stdin::kClosed);
}

// ---------------------------------------------------------------------------------------------
// Messages: never in the program's data.

// What `idlescope run` puts in the environment of its command, for a child of the test: this
// process may print while its stderr is the file it is now.
void AsUnderIdlescopeRun() {
  struct stat st;
  if (fstat(2, &st) != 0) return;
  std::string v = "IDLESCOPE_STDERR=" + std::to_string(getpid()) + ":" + std::to_string(st.st_dev) +
                  ":" + std::to_string(st.st_ino);
  putenv(strdup(v.c_str()));
}

// A message of the writer thread (the trace file hits RLIMIT_FSIZE) reaches the program's stderr,
// which is not in the writer's own table, under `idlescope run`; under a plain LD_PRELOAD, after
// the program started, stderr is the program's alone.
TEST_F(JobUnchangedTest, WriterMessagesReachStderrOnlyUnderIdlescopeRun) {
  Outcome plain =
      RunProgram({Program("writer_fd_table"), "fsize-limit"}, Traced({"IDLESCOPE_FLUSH_MS=10"}));
  EXPECT_EQ(plain.status, 0) << plain;
  EXPECT_EQ(plain.err, "") << plain;
  Outcome run = RunProgram({Program("writer_fd_table"), "fsize-limit"},
                           Traced({"IDLESCOPE_FLUSH_MS=10"}), Stdin::kDevNull, AsUnderIdlescopeRun);
  EXPECT_EQ(run.status, 0) << run;
  EXPECT_NE(run.err.find("idlescope: cannot write "), std::string::npos) << run;
  EXPECT_NE(run.err.find("tracing stopped"), std::string::npos) << run;
}

// A program that closes every fd and makes a data file its fd 2 (a daemon's log, a job's result
// file): our notice about its closing of the trace fd once went into that file. Under `idlescope
// run` too: the new fd 2 is not the stderr idlescope run had.
TEST_F(JobUnchangedTest, DataFileOnFd2HoldsTheProgramsRecordsAlone) {
  for (bool run : {false, true}) {
    SCOPED_TRACE(run ? "under idlescope run" : "plain LD_PRELOAD");
    std::string bare_data = work_ + "/bare.data", traced_data = work_ + "/traced.data";
    Outcome bare = RunProgram({Program("fd_numbers"), "stderr-data", bare_data}, {});
    Outcome traced =
        RunProgram({Program("fd_numbers"), "stderr-data", traced_data}, Traced(), Stdin::kDevNull,
                   run ? AsUnderIdlescopeRun : std::function<void()>());
    EXPECT_EQ(bare.status, 0) << bare;
    EXPECT_EQ(traced.status, 0) << traced;
    EXPECT_EQ(ReadFile(bare_data), ReadFile(traced_data));
    EXPECT_EQ(ReadFile(traced_data).find("idlescope"), std::string::npos);
  }
}

// subprocess(close_fds=True), os.closerange and close_range in the children of a Python program:
// their captured stderr is what it is bare (empty).
TEST_F(JobUnchangedTest, ChildrenThatCloseEveryFdHaveTheirStderrToThemselves) {
  const std::string script =
      "import os, subprocess, sys\n"
      "progs = ['import os; os.closerange(3, 65536)',\n"
      "         'import os; os.close_range(3, 65535) if hasattr(os, \"close_range\") else None',\n"
      "         'import subprocess, sys; subprocess.run([sys.executable, \"-c\", \"pass\"], "
      "close_fds=True)']\n"
      "for p in progs:\n"
      "    r = subprocess.run([sys.executable, '-c', p], capture_output=True, close_fds=True)\n"
      "    print(r.returncode, repr(r.stdout), repr(r.stderr))\n";
  ExpectSameAsBare({Python(), "-c", script});
}

// ---------------------------------------------------------------------------------------------
// vfork stays vfork.

TEST_F(JobUnchangedTest, VforkChildWritesTheParentsMemory) {
  ExpectSameAsBare({Program("vfork_memory")});
  ExpectSameAsBare({Program("vfork_memory"), "exec", "/bin/true"});
  // The parent recorded the vfork, the exec'd child wrote its own file; the child's few instants
  // between vfork and exec (on the parent's memory) recorded nothing.
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 3u);  // two parents, one exec'd /bin/true
  int vforks = 0, children = 0;
  for (const TraceFile& f : files) {
    EXPECT_TRUE(f.has_footer) << f.path;
    for (const TraceEvent* e : f.OfType(PROC_FORK)) {
      EXPECT_EQ(f.Str(e->event.api()), "vfork");
      EXPECT_GT(e->event.child_pid(), 0u);
      ++vforks;
    }
    if (f.header.exe() == "/usr/bin/true" || f.header.exe() == "/bin/true") ++children;
  }
  EXPECT_EQ(vforks, 2);
  EXPECT_EQ(children, 1);
}

// CPython's subprocess starts children with vfork (3.10+) and runs dup2/close between vfork and
// exec: the child's work must not show up in the parent's fd table or trace.
TEST_F(JobUnchangedTest, PythonSubprocessThroughVforkIsUnchanged) {
  ExpectSameAsBare({Python(), "-c",
                    "import subprocess, sys\n"
                    "for i in range(20):\n"
                    "    r = subprocess.run(['/bin/echo', str(i)], capture_output=True)\n"
                    "    sys.stdout.write(r.stdout.decode())\n"
                    "print(open('/dev/null').fileno())\n"});
}

// A failed exec: the writer wrote exec's footer, then took it off again; the trace goes on in the
// same file and ends with the real footer.
TEST_F(JobUnchangedTest, FailedExecGoesOnInTheSameFile) {
  ExpectSameAsBare({Program("exec_cleared_env"), work_ + "/no-such-program"});
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  ASSERT_TRUE(f.has_footer);
  EXPECT_EQ(f.footer.reason(), EXIT_NORMAL);
  EXPECT_EQ(f.footer.exit_status(), 127);
  auto execs = f.OfType(PROC_EXEC);
  ASSERT_EQ(execs.size(), 2u);
  EXPECT_EQ(execs[1]->event.result(), -ENOENT);  // recorded after the footer came off
}

// ---------------------------------------------------------------------------------------------
// Children's environment: IDLESCOPE_CHILDREN.

// Trace files of the exec'd programs (not the launcher's own).
int ExecdImagesTraced(const std::vector<TraceFile>& files, const std::string& exe) {
  int n = 0;
  for (const TraceFile& f : files) n += f.header.exe() == exe;
  return n;
}

TEST_F(JobUnchangedTest, ChildrenPolicyDecidesWhichExecdProgramsAreTraced) {
  struct Case {
    std::string policy;
    int traced_after_cleared_env;  // exec with an empty environment
    int traced_after_kept_env;     // exec with the environment as it is (LD_PRELOAD kept)
  };
  for (const Case& c : {Case{"", 1, 1}, Case{"all", 1, 1}, Case{"env", 0, 1}, Case{"none", 0, 0}}) {
    SCOPED_TRACE("IDLESCOPE_CHILDREN=" + c.policy);
    std::vector<std::string> env;
    if (!c.policy.empty()) env.push_back("IDLESCOPE_CHILDREN=" + c.policy);
    std::string marker = work_ + "/marker";
    Outcome cleared =
        RunProgram({Program("exec_cleared_env"), Program("write_marker"), marker}, Traced(env));
    EXPECT_EQ(cleared.status, 7) << cleared;
    EXPECT_EQ(cleared.err, "") << cleared;
    EXPECT_EQ(ExecdImagesTraced(ReadTraceDir(out_), Program("write_marker")),
              c.traced_after_cleared_env);
    ASSERT_EQ(system(("rm -f '" + out_ + "'/*").c_str()), 0);
    Outcome kept =
        RunProgram({Program("vfork_memory"), "exec", Program("write_marker"), marker}, Traced(env));
    EXPECT_EQ(kept.out, "x=42 status=7\n") << kept;
    EXPECT_EQ(ExecdImagesTraced(ReadTraceDir(out_), Program("write_marker")),
              c.traced_after_kept_env);
    ASSERT_EQ(system(("rm -f '" + out_ + "'/*").c_str()), 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Trace files: never empty, never through someone else's name, under the user's umask.

// Every trace file in `dir` starts with a whole header packet.
void ExpectEveryFileHasItsHeader(const std::string& dir, size_t* files_seen) {
  *files_seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++*files_seen;
    TraceFile f = ReadTraceFile(entry.path().string());
    EXPECT_EQ(f.header.magic(), "IDLESCOPE")
        << entry.path() << ": " << std::filesystem::file_size(entry.path()) << " bytes";
  }
}

// A scheduler cancelling a batch of jobs kills processes right after they started: a file named
// before its header was in it stayed empty (42 of 51 in one try), and `report DIR` failed.
TEST_F(JobUnchangedTest, ProcessesKilledRightAfterStartLeaveNoEmptyFile) {
  std::vector<pid_t> pids;
  std::vector<std::string> env = Traced();
  for (int i = 0; i < 60; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      for (const std::string& e : env) putenv(strdup(e.c_str()));
      execl("/bin/sleep", "sleep", "5", static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    pids.push_back(pid);
    // Killed 0-4 ms in: inside the preload library's start, most of them.
    std::this_thread::sleep_for(std::chrono::microseconds(i % 5 * 1000));
    kill(pid, SIGKILL);
  }
  for (pid_t pid : pids) Wait(pid);
  size_t files = 0;
  ExpectEveryFileHasItsHeader(out_, &files);
  printf("%zu of 60 killed processes left a trace file\n", files);
}

// A full disk (here: RLIMIT_FSIZE below the header's size) leaves no file, and the program runs
// as it does bare: its own writes exceed the limit too, and it dies of SIGXFSZ, as bare. It is
// told at most once that nothing is traced: once if the writer tried before the program died
// (the writer's SIGXFSZ is blocked: its write fails with EFBIG), never if it died first.
TEST_F(JobUnchangedTest, NoRoomForTheHeaderLeavesNoFileAndTheProgramAsItIs) {
  auto small_files = [] {
    struct rlimit rl = {64, 64};
    setrlimit(RLIMIT_FSIZE, &rl);
  };
  auto [bare, traced] =
      BareAndTraced({Program("fd_numbers"), "pipe"}, {}, Stdin::kDevNull, small_files);
  EXPECT_EQ(bare.status, traced.status) << traced;
  EXPECT_EQ(bare.out, traced.out) << traced;
  const std::string said =
      "idlescope: cannot create a trace file in " + out_ + ": File too large; not tracing\n";
  EXPECT_TRUE(traced.err.empty() || traced.err == said) << traced;
  size_t files = 0;
  ExpectEveryFileHasItsHeader(out_, &files);
  EXPECT_EQ(files, 0u);
}

// A program that ends before the writer first ran, when the trace file cannot be created: the
// writer tries (and says so) while the program's exit waits for it, and the exit goes on at once.
// Before, the exit waited its full 10 s for a footer that no file would get. SCHED_FIFO on one
// CPU orders it: the new writer thread does not preempt the program's thread, which runs to its
// exit first, as it does on a loaded machine.
TEST_F(JobUnchangedTest, NoTraceFileNeverDelaysAnExitThatCameFirst) {
  auto first_on_one_cpu = [] {
    struct rlimit rl = {64, 64};
    setrlimit(RLIMIT_FSIZE, &rl);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    struct sched_param param = {};
    param.sched_priority = 1;
    if (sched_setaffinity(0, sizeof one, &one) != 0 ||
        sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
      _exit(77);
    }
  };
  auto start = std::chrono::steady_clock::now();
  Outcome traced = RunProgram({"/bin/echo", "hi"}, Traced(), Stdin::kDevNull, first_on_one_cpu);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (traced.status == 77) GTEST_SKIP() << "no SCHED_FIFO here (needs CAP_SYS_NICE)";
  EXPECT_EQ(traced.status, 0) << traced;
  EXPECT_EQ(traced.out, "hi\n");
  EXPECT_EQ(traced.err,
            "idlescope: cannot create a trace file in " + out_ + ": File too large; not tracing\n");
  EXPECT_LT(seconds, 5.0) << "the exit waited for a writer that had no file";
}

// A trace holds the job's paths and command lines: its owner's alone (0600), less what the umask
// takes.
TEST_F(JobUnchangedTest, TraceFilesAreTheOwnersAlone) {
  for (mode_t umask_value : {mode_t{002}, mode_t{077}, mode_t{022}}) {
    ASSERT_EQ(system(("rm -f '" + out_ + "'/*").c_str()), 0);
    Outcome o = RunProgram({Program("fd_numbers"), "pipe"}, Traced(), Stdin::kDevNull,
                           [umask_value] { umask(umask_value); });
    ASSERT_EQ(o.status, 0) << o;
    auto files = ReadTraceDir(out_);
    ASSERT_EQ(files.size(), 1u);
    struct stat st;
    ASSERT_EQ(stat(files[0].path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600 & ~umask_value) << "umask " << std::oct << umask_value;
  }
}

// A name planted in a shared directory (a symlink to the victim's file, at the name the next
// process will use) is skipped, never opened.
TEST_F(JobUnchangedTest, APlantedSymlinkIsNeverFollowed) {
  std::string victim = work_ + "/victim";
  std::string out = out_;
  Outcome o = RunProgram({Program("fd_numbers"), "pipe"}, Traced(), Stdin::kDevNull, [&] {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    std::string name = out + "/" + host + "-" + std::to_string(getpid()) + ".idlescope";
    if (symlink(victim.c_str(), name.c_str()) != 0) _exit(90);
  });
  ASSERT_EQ(o.status, 0) << o;
  EXPECT_FALSE(std::filesystem::exists(victim));
  auto files = ReadTraceDir(out_);  // the symlink (dangling) and the -1 file
  int traces = 0;
  for (const TraceFile& f : files) {
    if (std::filesystem::is_symlink(f.path)) continue;
    ++traces;
    EXPECT_NE(f.path.find("-1.idlescope"), std::string::npos) << f.path;
    EXPECT_TRUE(f.has_footer);
  }
  EXPECT_EQ(traces, 1);
}

// ---------------------------------------------------------------------------------------------
// IDLESCOPE_REDACT=paths,cmdline: no name of the job in its traces, one key for the whole job.

// Every string a trace holds (its interned strings and the header's).
std::string AllText(const TraceFile& f) {
  std::string all = f.header.exe();
  for (const std::string& a : f.header.cmdline()) all += "\n" + a;
  for (const auto& [id, s] : f.strings) all += "\n" + s;
  return all;
}

// Secrets in command lines are redacted by default, the rest of the command line kept;
// IDLESCOPE_REDACT=none keeps them.
TEST_F(JobUnchangedTest, SecretsInCommandLinesAreRedactedUnlessNone) {
  const std::string marker = work_ + "/marker.csv";
  for (const char* redact : {"", "none"}) {
    SCOPED_TRACE(redact);
    ASSERT_EQ(system(("rm -f '" + out_ + "'/*").c_str()), 0);
    std::vector<std::string> env;
    if (*redact != '\0') env.push_back(std::string("IDLESCOPE_REDACT=") + redact);
    auto [bare, traced] =
        BareAndTraced({Program("write_marker"), marker, "--api-key", "hunter2"}, env);
    EXPECT_EQ(bare.status, traced.status) << traced;
    auto files = ReadTraceDir(out_);
    ASSERT_EQ(files.size(), 1u);
    std::vector<std::string> argv(files[0].header.cmdline().begin(),
                                  files[0].header.cmdline().end());
    const std::string value = *redact == '\0' ? "<redacted>" : "hunter2";
    EXPECT_EQ(argv,
              (std::vector<std::string>{Program("write_marker"), marker, "--api-key", value}));
    EXPECT_EQ(files[0].header.config().redacted_size(), *redact == '\0' ? 1 : 0);
  }
}

TEST_F(JobUnchangedTest, RedactedTracesHoldNoNameOfTheJob) {
  std::string dir = work_ + "/secret-project";
  ASSERT_TRUE(std::filesystem::create_directory(dir));
  std::string marker = dir + "/patient-records.csv";
  for (const char* what : {"paths", "paths,cmdline"}) {
    SCOPED_TRACE(what);
    ASSERT_EQ(system(("rm -f '" + out_ + "'/*").c_str()), 0);
    // The job's children get the cleared environment: the key reaches them all the same.
    auto [bare, traced] = BareAndTraced(
        {Program("exec_cleared_env"), Program("write_marker"), marker, "--token=hunter2"},
        {std::string("IDLESCOPE_REDACT=") + what});
    EXPECT_EQ(bare.status, traced.status) << traced;
    EXPECT_EQ(bare.err, traced.err) << traced;
    auto files = ReadTraceDir(out_);
    ASSERT_EQ(files.size(), 2u);
    std::vector<std::string> marker_paths;
    for (const TraceFile& f : files) {
      std::string text = AllText(f);
      EXPECT_EQ(text.find("secret"), std::string::npos) << f.path;
      EXPECT_EQ(text.find("patient"), std::string::npos) << f.path;
      EXPECT_EQ(text.find("idlescope-io-"), std::string::npos) << f.path;  // the temp dir's name
      std::vector<std::string> redacted(f.header.config().redacted().begin(),
                                        f.header.config().redacted().end());
      std::vector<std::string> expected = {"paths"};
      if (std::string(what) != "paths") expected.push_back("cmdline");
      expected.push_back("secrets");
      EXPECT_EQ(redacted, expected);
      EXPECT_TRUE(f.header.exe().ends_with("/exec_cleared_env") ||
                  f.header.exe().ends_with("/write_marker"))
          << f.header.exe();
      for (const TraceEvent* e : f.OfType(FILE_WRITE)) {
        std::string p = f.Str(e->event.path());
        if (p.ends_with(".csv")) marker_paths.push_back(p);
      }
      bool cmdline = std::string(what) != "paths";
      EXPECT_EQ(text.find("hunter2"), std::string::npos) << f.path;
      if (cmdline) {
        EXPECT_EQ(f.header.cmdline_size(), 1);
      }
    }
    ASSERT_EQ(marker_paths.size(), 1u);  // written by the exec'd program, redacted, .csv kept
    // The directory's hash in the exec'd child is the one the parent's header would give it:
    // the same key (a path in the clear header of the parent's argv, with paths only).
    if (std::string(what) == "paths") {
      for (const TraceFile& f : files) {
        if (!f.header.exe().ends_with("/exec_cleared_env")) continue;
        ASSERT_GE(f.header.cmdline_size(), 3);
        EXPECT_EQ(f.header.cmdline(2), marker_paths[0]);
      }
    }
  }
  EXPECT_TRUE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace idlescope::testing
