// File, network and process hooks end to end: small C programs (tests/io/programs) run under the
// real preload library; their trace files are read back and checked.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "interpose/hooks/io_fd_table.h"
#include "tests/io/trace_file.h"

namespace idlescope::testing {
namespace {

std::string Program(const std::string& name) { return std::string(IO_PROGRAMS_DIR) + "/" + name; }

FsType ExpectedFs(const std::string& dir) {
  struct statfs sfs;
  if (statfs(dir.c_str(), &sfs) != 0) return FS_UNSPECIFIED;
  return static_cast<FsType>(io::FsTypeFromStatfsMagic(static_cast<uint64_t>(sfs.f_type)));
}

const TraceFile* FileOfPid(const std::vector<TraceFile>& files, uint32_t pid) {
  for (const auto& f : files) {
    if (f.header.pid() == pid) return &f;
  }
  return nullptr;
}

// Sums of the FILE_* events of one kind on `path`.
struct Totals {
  uint64_t bytes = 0, calls = 0, events = 0, dur = 0;
};
Totals Sum(const TraceFile& f, EventType type, const std::string& path) {
  Totals t;
  for (const TraceEvent* e : f.OfType(type)) {
    if (f.Str(e->event.path()) != path) continue;
    t.bytes += e->event.bytes();
    t.calls += e->event.count();
    t.events += 1;
    t.dur += e->event.dur();
  }
  return t;
}

class IoTraceTest : public ::testing::Test {
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
  std::string out_, work_;
};

TEST_F(IoTraceTest, StdioCheckpointWithFflushFsyncRename) {
  ASSERT_EQ(RunTraced({Program("checkpoint_stdio"), work_, "8"}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  std::string tmp = work_ + "/model.pt.tmp";
  FsType fs = ExpectedFs(work_);

  auto opens = f.OfType(FILE_OPEN);
  const TraceEvent* open = nullptr;
  for (auto* e : opens) {
    if (f.Str(e->event.path()) == tmp) open = e;
  }
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->event.fs_type(), fs);
  EXPECT_EQ(f.Str(open->event.api()), "fopen");
  int fd = open->event.fd();

  // 8 MB of fwrite plus the fprintf trailer; fflush's time joins the burst.
  Totals w = Sum(f, FILE_WRITE, tmp);
  EXPECT_EQ(w.bytes, 8u * 1024 * 1024 + strlen("end of checkpoint 8\n"));
  EXPECT_GE(w.calls, 8u * 16 + 2);
  EXPECT_LT(w.events, w.calls);  // merged
  EXPECT_GT(w.dur, 0u);
  for (auto* e : f.OfType(FILE_WRITE)) {
    if (f.Str(e->event.path()) == tmp) {
      EXPECT_EQ(e->event.fd(), fd);
      EXPECT_EQ(e->event.fs_type(), fs);
    }
  }

  auto syncs = f.OfType(FILE_SYNC);
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(f.Str(syncs[0]->event.api()), "fsync");
  EXPECT_EQ(f.Str(syncs[0]->event.path()), tmp);
  EXPECT_EQ(syncs[0]->event.fs_type(), fs);
  EXPECT_EQ(syncs[0]->event.result(), 0);

  Totals closes = Sum(f, FILE_CLOSE, tmp);
  EXPECT_EQ(closes.events, 1u);

  auto renames = f.OfType(FILE_RENAME);
  ASSERT_EQ(renames.size(), 1u);
  EXPECT_EQ(f.Str(renames[0]->event.path()), work_ + "/model.pt");

  // Order on the thread: open < writes < fsync < close < rename.
  EXPECT_LT(open->ts, syncs[0]->ts);
  EXPECT_LT(syncs[0]->ts, renames[0]->ts);
}

TEST_F(IoTraceTest, RawWriteCheckpointIsMergedIntoFewEvents) {
  std::string path = work_ + "/raw.ckpt";
  ASSERT_EQ(RunTraced({Program("checkpoint_raw"), path, "4096", "4000"}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  Totals w = Sum(f, FILE_WRITE, path);
  EXPECT_EQ(w.bytes, 4096u * 4000);
  EXPECT_EQ(w.calls, 4000u);
  EXPECT_LE(w.events, 100u);  // bursts, not 4000 events
  EXPECT_GT(w.dur, 0u);
  auto writes = f.OfType(FILE_WRITE);
  ASSERT_FALSE(writes.empty());
  EXPECT_EQ(writes[0]->event.fs_type(), ExpectedFs(work_));
  EXPECT_EQ(f.Str(writes[0]->event.api()), "write");
  EXPECT_EQ(Sum(f, FILE_SYNC, path).events, 1u);
  EXPECT_EQ(Sum(f, FILE_CLOSE, path).events, 1u);
  EXPECT_EQ(f.dropped, 0u);
}

TEST_F(IoTraceTest, TmpfsIsClassified) {
  if (access("/dev/shm", W_OK) != 0) GTEST_SKIP() << "no writable /dev/shm";
  std::string shm = MakeTempDir("/dev/shm");
  std::string path = shm + "/x.bin";
  ASSERT_EQ(RunTraced({Program("checkpoint_raw"), path, "65536", "4"}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  Totals w = Sum(files[0], FILE_WRITE, path);
  EXPECT_EQ(w.bytes, 65536u * 4);
  for (auto* e : files[0].OfType(FILE_WRITE)) EXPECT_EQ(e->event.fs_type(), FS_TMPFS);
  std::string cmd = "rm -rf '" + shm + "'";
  (void)system(cmd.c_str());
}

TEST_F(IoTraceTest, ForkedReadersHaveTheirOwnTracesLinkedToTheParent) {
  for (int i = 0; i < 2; ++i) {
    std::ofstream(work_ + "/shard" + std::to_string(i) + ".bin") << std::string(100000 + i, 'x');
  }
  ASSERT_EQ(RunTraced({Program("fork_readers"), work_, "2"}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 3u);
  const TraceFile* parent = nullptr;
  for (const auto& f : files) {
    if (!f.OfType(PROC_FORK).empty()) parent = &f;
  }
  ASSERT_NE(parent, nullptr);
  auto forks = parent->OfType(PROC_FORK);
  ASSERT_EQ(forks.size(), 2u);
  std::set<std::string> shards_read;
  for (auto* fork : forks) {
    const TraceFile* child = FileOfPid(files, fork->event.child_pid());
    ASSERT_NE(child, nullptr) << "no trace for child " << fork->event.child_pid();
    EXPECT_EQ(child->header.ppid(), parent->header.pid());
    for (int i = 0; i < 2; ++i) {
      std::string shard = work_ + "/shard" + std::to_string(i) + ".bin";
      Totals r = Sum(*child, FILE_READ, shard);
      if (r.events > 0) {
        EXPECT_EQ(r.bytes, 100000u + i);
        shards_read.insert(shard);
      }
    }
  }
  EXPECT_EQ(shards_read.size(), 2u);
}

TEST_F(IoTraceTest, ExecWithClearedEnvironmentStaysTraced) {
  std::string marker = work_ + "/exec-marker";
  ASSERT_EQ(RunTraced({Program("exec_cleared_env"), Program("write_marker"), marker}, out_), 7);
  auto files = ReadTraceDir(out_);
  const TraceFile* before = nullptr;
  const TraceFile* after = nullptr;
  for (const auto& f : files) {
    for (auto* e : f.OfType(PROC_EXEC)) {
      if (f.Str(e->event.path()) == Program("write_marker")) before = &f;
    }
    if (Sum(f, FILE_WRITE, marker).bytes > 0) after = &f;
  }
  ASSERT_NE(before, nullptr) << "no PROC_EXEC recorded";
  ASSERT_NE(after, nullptr) << "the exec'd program was not traced";
  EXPECT_EQ(after->header.pid(), before->header.pid());  // exec keeps the pid
  auto exec = before->OfType(PROC_EXEC)[0];
  std::string argv = before->Str(exec->event.argv());
  EXPECT_EQ(argv, Program("write_marker") + std::string(1, '\0') + marker);
  EXPECT_EQ(Sum(*after, FILE_WRITE, marker).bytes, strlen("written by the exec'd child\n"));
}

TEST_F(IoTraceTest, PosixSpawnWithOwnEnvironmentStaysTraced) {
  std::string marker = work_ + "/spawn-marker";
  ASSERT_EQ(RunTraced({Program("spawn_child"), Program("write_marker"), marker}, out_), 7);
  auto files = ReadTraceDir(out_);
  const TraceFile* parent = nullptr;
  for (const auto& f : files) {
    if (!f.OfType(PROC_SPAWN).empty()) parent = &f;
  }
  ASSERT_NE(parent, nullptr);
  auto spawn = parent->OfType(PROC_SPAWN)[0];
  EXPECT_EQ(parent->Str(spawn->event.path()), Program("write_marker"));
  EXPECT_EQ(parent->Str(spawn->event.argv()),
            Program("write_marker") + std::string(1, '\0') + marker);
  const TraceFile* child = FileOfPid(files, spawn->event.child_pid());
  ASSERT_NE(child, nullptr) << "the spawned program was not traced";
  EXPECT_EQ(child->header.ppid(), parent->header.pid());
  EXPECT_GT(Sum(*child, FILE_WRITE, marker).bytes, 0u);
}

TEST_F(IoTraceTest, VforkThenExecStaysTraced) {
  std::string marker = work_ + "/vfork-marker";
  ASSERT_EQ(RunTraced({Program("vfork_exec"), Program("write_marker"), marker}, out_), 7);
  auto files = ReadTraceDir(out_);
  const TraceFile* parent = nullptr;
  for (const auto& f : files) {
    if (!f.OfType(PROC_FORK).empty()) parent = &f;
  }
  ASSERT_NE(parent, nullptr);
  auto fork = parent->OfType(PROC_FORK)[0];
  EXPECT_EQ(parent->Str(fork->event.api()), "vfork");
  bool child_traced = false;
  for (const auto& f : files) {
    if (f.header.pid() == fork->event.child_pid() && Sum(f, FILE_WRITE, marker).bytes > 0) {
      child_traced = true;
      EXPECT_EQ(f.header.ppid(), parent->header.pid());
    }
  }
  EXPECT_TRUE(child_traced);
}

TEST_F(IoTraceTest, BurstOpenAtExitIsNotLost) {
  std::string path = work_ + "/unclosed";
  ASSERT_EQ(RunTraced({Program("exit_with_open_burst"), path}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  Totals w = Sum(files[0], FILE_WRITE, path);
  EXPECT_EQ(w.bytes, 5000u);
  EXPECT_EQ(w.calls, 5u);
}

// The burst is the recorder's pending event: another event of the same thread (here a MARK, as
// a CUDA or NCCL call would be) comes after it in the thread's batch, since it started later.
TEST_F(IoTraceTest, BurstComesBeforeTheThreadsNextEvent) {
  std::string path = work_ + "/ordered";
  ASSERT_EQ(RunTraced({Program("open_burst_endings"), "order", path}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  std::vector<const TraceEvent*> seq;  // the main thread's writes to `path` and its mark
  for (const TraceEvent& e : f.events) {
    if (e.tid != f.header.pid()) continue;
    bool write = e.event.type() == FILE_WRITE && f.Str(e.event.path()) == path;
    bool mark = e.event.type() == MARK && f.Str(e.event.path()) == "after-writes";
    if (write || mark) seq.push_back(&e);
  }
  // Under load a burst may be cut in two (more than 1 ms between two writes): count calls.
  uint64_t before = 0, after = 0, marks = 0;
  for (const TraceEvent* e : seq) {
    if (e->event.type() == MARK) {
      ++marks;
      continue;
    }
    (marks == 0 ? before : after) += e->event.count();
  }
  EXPECT_EQ(marks, 1u);
  EXPECT_EQ(before, 3u);
  EXPECT_EQ(after, 2u);
  // Start order (1 ms of slack: bursts are timed with the TSC, converted to trace-clock ns).
  for (size_t i = 1; i < seq.size(); ++i) EXPECT_LE(seq[i - 1]->ts, seq[i]->ts + 1'000'000);
}

// Open bursts at every ending of a thread or of the process: none is lost.
struct Ending {
  const char* name;
  const char* mode;
  int status;
  uint64_t bytes;
  bool other_thread;
};
void PrintTo(const Ending& ending, std::ostream* os) { *os << ending.mode; }
class OpenBurstEndingTest : public IoTraceTest, public ::testing::WithParamInterface<Ending> {};

TEST_P(OpenBurstEndingTest, BurstIsInTheTrace) {
  const Ending& ending = GetParam();
  std::string path = work_ + "/unclosed";
  ASSERT_EQ(RunTraced({Program("open_burst_endings"), ending.mode, path}, out_), ending.status);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  EXPECT_TRUE(f.has_footer);
  Totals w = Sum(f, FILE_WRITE, path);
  EXPECT_EQ(w.bytes, ending.bytes);
  EXPECT_EQ(w.calls, ending.bytes / 1000);
  for (const TraceEvent* e : f.OfType(FILE_WRITE)) {
    if (f.Str(e->event.path()) != path) continue;
    EXPECT_EQ(e->tid != f.header.pid(), ending.other_thread);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Endings, OpenBurstEndingTest,
    ::testing::Values(Ending{"ExitInOtherThread", "exit-other", 0, 4000, true},
                      Ending{"UnderscoreExit", "_exit", 0, 5000, false},
                      Ending{"UnderscoreExitInOtherThread", "_exit-other", 0, 4000, true},
                      Ending{"ThreadEnds", "thread-ends", 0, 3000, true},
                      Ending{"SigtermInOtherThread", "sigterm-other", 128 + SIGTERM, 4000, true}),
    [](const ::testing::TestParamInfo<Ending>& info) { return std::string(info.param.name); });

// Another thread makes the fd of this thread's open burst name another file (dup2 onto it): the
// next writes are that file's (a new burst), not more of the old one. Each file's size says how
// many bytes went to it; the trace may put one or two writes on the wrong side (a write under way
// while the number changes is attributed after it returns).
TEST_F(IoTraceTest, FdNumberReusedByAnotherThreadStartsANewBurst) {
  std::string a = work_ + "/first", b = work_ + "/second";
  ASSERT_EQ(RunTraced({Program("fd_reused_by_other_thread"), a, b}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  struct stat sa, sb;
  ASSERT_EQ(stat(a.c_str(), &sa), 0);
  ASSERT_EQ(stat(b.c_str(), &sb), 0);
  ASSERT_GE(sb.st_size, 100'000);
  Totals wa = Sum(f, FILE_WRITE, a), wb = Sum(f, FILE_WRITE, b);
  EXPECT_EQ(wa.bytes + wb.bytes, static_cast<uint64_t>(sa.st_size + sb.st_size));
  EXPECT_NEAR(static_cast<double>(wa.bytes), static_cast<double>(sa.st_size), 2000);
  EXPECT_NEAR(static_cast<double>(wb.bytes), static_cast<double>(sb.st_size), 2000);
}

// The writer thread's descriptor table is its own and holds only the trace file: the program's
// pipes are not kept open by it (the reader of a closed stdout sees EOF while the program runs).
// The program issues no device work: IDLESCOPE_WRITER=thread gives it the writer all the same.
TEST_F(IoTraceTest, WriterHoldsNoDescriptorOfTheProgram) {
  TracedChild child =
      StartTraced({Program("writer_fd_table"), "close-stdout"}, out_, {"IDLESCOPE_WRITER=thread"});
  ASSERT_GT(child.pid, 0);
  auto start = std::chrono::steady_clock::now();
  std::string out = ReadAll(child.out);  // EOF when the program closes stdout (it then sleeps 3 s)
  double eof_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(out, "closing\n");
  EXPECT_LT(eof_s, 2.0);
  // While it sleeps: the writer thread's table is the trace file alone, once the writer has run
  // (the program does not wait for it to start: on a loaded machine that may take a while, and
  // until then the table is shared, so the writer holds no copy of anything either).
  std::string task_dir = "/proc/" + std::to_string(child.pid) + "/task";
  int writers = 0;
  std::vector<std::string> targets;
  for (int attempt = 0; attempt < 200 && (writers != 1 || targets.size() != 1); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    writers = 0;
    targets.clear();
    for (const auto& task : std::filesystem::directory_iterator(task_dir)) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name != "idlescope-wr") continue;
      ++writers;
      for (const auto& fd : std::filesystem::directory_iterator(task.path() / "fd")) {
        targets.push_back(std::filesystem::read_symlink(fd.path()).string());
      }
    }
  }
  EXPECT_EQ(writers, 1);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].rfind(out_ + "/", 0), 0u) << targets[0];
  EXPECT_EQ(Wait(child.pid), 0);
  ReadAll(child.err);
}

// Without device work (IDLESCOPE_WRITER=auto, the default) the process has no thread of ours and
// no descriptor of ours while it runs, and its trace is complete all the same.
TEST_F(IoTraceTest, ThreadlessProcessHasOnlyItsOwnThreadsAndDescriptors) {
  TracedChild child = StartTraced({Program("writer_fd_table"), "close-stdout"}, out_);
  ASSERT_GT(child.pid, 0);
  EXPECT_EQ(ReadAll(child.out), "closing\n");
  // While it sleeps (3 s): its one thread, and no descriptor of the output directory.
  std::string proc = "/proc/" + std::to_string(child.pid);
  int threads = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator(proc + "/task")) {
    ++threads;
  }
  EXPECT_EQ(threads, 1);
  for (const auto& fd : std::filesystem::directory_iterator(proc + "/fd")) {
    std::string target = std::filesystem::read_symlink(fd.path()).string();
    EXPECT_NE(target.rfind(out_ + "/", 0), 0u) << target;
  }
  EXPECT_EQ(Wait(child.pid), 0);
  ReadAll(child.err);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].has_footer);
}

TEST_F(IoTraceTest, LoopbackDownloadIsConnectAndRecvBytes) {
  constexpr uint64_t kBytes = 3 << 20;
  ASSERT_EQ(RunTraced({Program("loopback_download"), std::to_string(kBytes)}, out_), 0);
  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 2u);
  const TraceFile* client = nullptr;
  const TraceFile* server = nullptr;
  for (const auto& f : files) {
    if (!f.OfType(NET_CONNECT).empty()) client = &f;
    if (!f.OfType(NET_SEND).empty()) server = &f;
  }
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  auto connect = client->OfType(NET_CONNECT)[0];
  std::string remote = client->Str(connect->event.path());
  EXPECT_EQ(remote.rfind("127.0.0.1:", 0), 0u) << remote;
  EXPECT_EQ(connect->event.net_scope(), NET_LOOPBACK);
  uint64_t received = 0, calls = 0, events = 0;
  for (auto* e : client->OfType(NET_RECV)) {
    EXPECT_EQ(client->Str(e->event.path()), remote);
    EXPECT_EQ(e->event.net_scope(), NET_LOOPBACK);
    EXPECT_EQ(e->event.fs_type(), FS_SOCKET);
    received += e->event.bytes();
    calls += e->event.count();
    ++events;
  }
  EXPECT_EQ(received, kBytes);
  EXPECT_LE(events, calls);
  uint64_t sent = 0;
  for (auto* e : server->OfType(NET_SEND)) sent += e->event.bytes();
  EXPECT_EQ(sent, kBytes);
}

}  // namespace
}  // namespace idlescope::testing
