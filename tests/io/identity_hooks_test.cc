// The identity hooks of issue 24 under the real preload library: programs/identity_io.c runs bare
// and traced and must write the same results (errno values, the dispositions sigaction and signal
// report, what its handlers saw); the traced run's events say which file an mmap'ed range is and
// name it at msync and munmap, give copies and renames their source, write each socket's identity
// (both ends naming each other), time a wait for a child and the program's signal handlers (one
// inside a nanosleep, after that call's event and within its span).
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/io/trace_file.h"

namespace idlescope::testing {
namespace {

std::string Program(const std::string& name) { return std::string(IO_PROGRAMS_DIR) + "/" + name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class IdentityHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = MakeTempDir();
    work_ = MakeTempDir();
    bare_work_ = MakeTempDir();
    ASSERT_FALSE(out_.empty());
  }
  void TearDown() override {
    if (!HasFailure()) {
      std::string cmd = "rm -rf '" + out_ + "' '" + work_ + "' '" + bare_work_ + "'";
      (void)system(cmd.c_str());
    } else {
      printf("traces kept in %s, work in %s\n", out_.c_str(), work_.c_str());
    }
  }
  std::string out_, work_, bare_work_;
};

TEST_F(IdentityHooksTest, EventsNameFilesSocketsChildrenAndHandlersAndTheProgramSeesNoChange) {
  const std::string bare = bare_work_ + "/results.txt", traced = work_ + "/results.txt";
  ASSERT_EQ(RunBare({Program("identity_io"), bare_work_, bare}), 0);
  ASSERT_EQ(RunTraced({Program("identity_io"), work_, traced}, out_), 0);
  const std::string results = ReadFile(traced);
  EXPECT_EQ(results, ReadFile(bare));
  EXPECT_NE(results.find("usr1 reported: ours=1 restart=1 siginfo=0"), std::string::npos);
  EXPECT_NE(results.find("usr1 runs=1"), std::string::npos);
  // The kernel resets the handler only: the flags stay, SA_RESETHAND included (kernel/signal.c).
  EXPECT_NE(results.find("usr2 runs=1 reset to default=1 resethand=1"), std::string::npos);
  EXPECT_NE(results.find("siginfo signo=" + std::to_string(SIGHUP) + " reported ours=1"),
            std::string::npos);
  EXPECT_NE(results.find("signal usr1 previous ours=1"), std::string::npos);
  EXPECT_NE(results.find("usr1 runs after ignore=1"), std::string::npos);

  auto files = ReadTraceDir(out_);
  const TraceFile* main = nullptr;
  for (const TraceFile& f : files) {
    if (f.header.origin() != ORIGIN_FORK) main = &f;
  }
  ASSERT_NE(main, nullptr);
  const TraceFile& f = *main;

  // The mapping: one FILE_MMAP (the anonymous one has none), msync and munmap name its file.
  auto maps = f.OfType(FILE_MMAP);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(f.Str(maps[0]->event.path()), work_ + "/mapped.bin");
  EXPECT_TRUE(maps[0]->event.writable());
  EXPECT_EQ(maps[0]->event.bytes(), 1u << 20);
  EXPECT_NE(maps[0]->event.addr(), 0u);
  bool named_msync = false, unnamed_msync = false;
  for (const TraceEvent* e : f.OfType(FILE_SYNC)) {
    if (f.Str(e->event.api()) != "msync") continue;
    if (f.Str(e->event.path()) == work_ + "/mapped.bin") named_msync = e->event.result() == 0;
    if (e->event.path() == 0) unnamed_msync = e->event.result() < 0;
  }
  EXPECT_TRUE(named_msync);
  EXPECT_TRUE(unnamed_msync);  // the msync of no mapping: its error, no path
  auto unmaps = f.OfType(FILE_MUNMAP);
  ASSERT_EQ(unmaps.size(), 1u);
  EXPECT_EQ(f.Str(unmaps[0]->event.path()), work_ + "/mapped.bin");
  EXPECT_EQ(unmaps[0]->event.addr(), maps[0]->event.addr());

  // Copies: destination and source.
  bool sendfile_seen = false, splice_in = false, splice_out = false;
  for (const TraceEvent* e : f.OfType(FILE_COPY)) {
    const std::string api = f.Str(e->event.api()), to = f.Str(e->event.path()),
                      from = f.Str(e->event.source());
    if (api == "sendfile") {
      sendfile_seen = to == work_ + "/copy1.bin" && from == work_ + "/mapped.bin" &&
                      e->event.bytes() == (1u << 20);
    }
    if (api == "splice" && from == work_ + "/mapped.bin") splice_in = to.rfind("pipe:", 0) == 0;
    if (api == "splice" && to == work_ + "/copy3.bin") splice_out = from.rfind("pipe:", 0) == 0;
  }
  EXPECT_TRUE(sendfile_seen);
  EXPECT_TRUE(splice_in);
  EXPECT_TRUE(splice_out);

  // The rename by relative names: both absolute.
  auto renames = f.OfType(FILE_RENAME);
  ASSERT_EQ(renames.size(), 1u);
  EXPECT_EQ(f.Str(renames[0]->event.path()), work_ + "/weights.safetensors");
  EXPECT_EQ(f.Str(renames[0]->event.source()), work_ + "/tmpXYZ");

  // The connection's two ends: each one's local address is the other's peer.
  auto sockets = f.OfType(NET_SOCKET);
  ASSERT_EQ(sockets.size(), 2u);
  const Event& a = sockets[0]->event;
  const Event& b = sockets[1]->event;
  EXPECT_EQ(f.Str(a.local()), f.Str(b.path()));
  EXPECT_EQ(f.Str(b.local()), f.Str(a.path()));
  EXPECT_TRUE(f.Str(a.local()).rfind("127.0.0.1:", 0) == 0) << f.Str(a.local());

  // The wait for the child: its pid, at least its 30 ms of sleep.
  const std::string stdout_child = "child=";
  auto waits = f.OfType(PROC_WAIT);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(f.Str(waits[0]->event.api()), "waitpid");
  EXPECT_GE(waits[0]->event.dur(), 20'000'000u);
  uint32_t forked_pid = 0;
  for (const TraceFile& other : files) {
    if (other.header.origin() == ORIGIN_FORK) forked_pid = other.header.pid();
  }
  EXPECT_EQ(waits[0]->event.child_pid(), forked_pid);

  // The handlers: SIGUSR1 raised outside any call, SIGALRM inside the nanosleep (recorded after
  // that call's WAIT, within its span). The short SIGUSR2 and SIGHUP ones are not recorded.
  const TraceEvent* usr1 = nullptr;
  const TraceEvent* alarm = nullptr;
  for (const TraceEvent* e : f.OfType(SIGNAL_HANDLER)) {
    if (e->event.result() == SIGUSR1) usr1 = e;
    if (e->event.result() == SIGALRM) alarm = e;
    EXPECT_NE(e->event.result(), SIGUSR2);
    EXPECT_NE(e->event.result(), SIGHUP);
  }
  ASSERT_NE(usr1, nullptr);
  EXPECT_EQ(f.Str(usr1->event.path()), "busy_usr1");
  EXPECT_GE(usr1->event.dur(), 4'000'000u);
  ASSERT_NE(alarm, nullptr);
  EXPECT_EQ(f.Str(alarm->event.path()), "busy_alarm");
  const TraceEvent* nap = nullptr;
  for (const TraceEvent* e : f.OfType(WAIT)) {
    if (f.Str(e->event.api()) == "nanosleep") nap = e;
  }
  ASSERT_NE(nap, nullptr);
  EXPECT_GE(alarm->ts, nap->ts);
  EXPECT_LE(alarm->ts + alarm->event.dur(), nap->ts + nap->event.dur());
}

}  // namespace
}  // namespace idlescope::testing
