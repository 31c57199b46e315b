// The wait hooks (interpose/hooks/wait.cc, accept in net.cc) under the real preload library:
// programs/waits.c runs bare and traced and must write the same results and errno values; the
// traced run's WAIT events are one per long wait (none for short ones), with the call, its result
// and what it waited on (a terminal, a pipe, sockets, a mix, an epoll instance, nothing).
#include <errno.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
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

int Field(const std::string& text, const std::string& key) {
  size_t at = text.find(key + "=");
  return at == std::string::npos ? -1000 : std::stoi(text.substr(at + key.size() + 1));
}

class WaitHooksTest : public ::testing::Test {
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
      printf("traces kept in %s, results in %s\n", out_.c_str(), work_.c_str());
    }
  }
  std::string out_, work_;
};

struct Wait {
  std::string api;
  const TraceEvent* e;
};

TEST_F(WaitHooksTest, LongWaitsAreEventsShortOnesAreNotAndTheProgramSeesNoDifference) {
  const std::string bare = work_ + "/bare.txt", traced = work_ + "/traced.txt";
  ASSERT_EQ(RunBare({Program("waits"), bare}), 0);
  ASSERT_EQ(RunTraced({Program("waits"), traced}, out_), 0);
  const std::string results = ReadFile(traced);
  // Same results, same errno (the sentinel kept by every success), traced or not.
  EXPECT_EQ(results, ReadFile(bare));
  EXPECT_NE(results.find("short fails=0\n"), std::string::npos) << results;
  EXPECT_NE(results.find("poll eintr r=-1 errno=" + std::to_string(EINTR)), std::string::npos);
  EXPECT_NE(results.find("nanosleep eintr r=-1 errno=" + std::to_string(EINTR)), std::string::npos);
  EXPECT_NE(results.find("select tty ready=1"), std::string::npos);
  const int short_fd = Field(results, "short_fd"), empty_fd = Field(results, "empty_fd");

  auto files = ReadTraceDir(out_);
  ASSERT_EQ(files.size(), 1u);
  const TraceFile& f = files[0];
  const uint32_t main_tid = f.header.pid();
  std::vector<Wait> waits;
  int short_polls = 0, short_usleeps = 0;
  // The 200 usleep(100) come first and the one long usleep (20 ms) last: told apart by their order,
  // since a short one the scheduler holds up can last any time (10 ms once, in a full ctest run).
  const TraceEvent* long_usleep = nullptr;
  for (const TraceEvent* e : f.OfType(WAIT)) {
    if (e->tid == main_tid && f.Str(e->event.api()) == "usleep") long_usleep = e;
  }
  for (const TraceEvent* e : f.OfType(WAIT)) {
    const std::string api = f.Str(e->event.api());
    // No thread here ever gave a GPU work.
    EXPECT_FALSE(e->event.has_launch_device()) << api;
    EXPECT_GE(e->event.dur(), 1'000'000u) << api;  // the threshold
    EXPECT_EQ(e->event.count(), 1u);
    if (e->tid != main_tid) {  // the helper threads' 20 ms sleeps
      EXPECT_EQ(api, "nanosleep");
      continue;
    }
    // A short call the scheduler held up past 1 ms (a loaded machine) is a long wait.
    if (api == "poll" && e->event.fd() == short_fd) {
      ++short_polls;
      continue;
    }
    if (api == "usleep" && e != long_usleep) {
      ++short_usleeps;
      continue;
    }
    waits.push_back({api, e});
  }
  EXPECT_LE(short_polls, 20) << "of 1000 polls answered at once";
  EXPECT_LE(short_usleeps, 20) << "of 200 usleep(100)";

  // The long waits, in order; the failures that return at once (EINVAL, EBADF, ENOTSOCK) are not.
  std::vector<std::string> apis;
  for (const Wait& w : waits) apis.push_back(w.api);
  const std::vector<std::string> expected = {
      "poll",      "poll",         "select",          "pselect",      "ppoll",
      "poll",      "epoll_wait",   "epoll_pwait",     "epoll_pwait2", "accept",
      "nanosleep", "nanosleep",    "clock_nanosleep", "usleep",       "sleep",
      "pause",     "sigtimedwait", "sigwait",         "sigwaitinfo"};
  ASSERT_EQ(apis, expected);
  auto at = [&](size_t i) -> const Event& { return waits[i].e->event; };
  auto path = [&](size_t i) { return f.Str(at(i).path()); };

  // poll of the empty pipe: timed out, then interrupted.
  EXPECT_EQ(at(0).fd(), empty_fd);
  EXPECT_EQ(at(0).fs_type(), FS_PIPE);
  EXPECT_EQ(at(0).result(), 0);
  EXPECT_GE(at(0).dur(), 25'000'000u);
  EXPECT_EQ(at(1).fs_type(), FS_PIPE);
  EXPECT_EQ(at(1).result(), -EINTR);
  // select of a terminal: the pty, by its path.
  EXPECT_EQ(path(2).rfind("/dev/pts/", 0), 0u) << path(2);
  EXPECT_EQ(at(2).fs_type(), FS_DEVICE);
  EXPECT_EQ(at(2).result(), 0);
  EXPECT_NE(at(2).stack(), 0u);
  // pselect of no descriptor: a sleep.
  EXPECT_EQ(at(3).fd(), -1);
  EXPECT_EQ(at(3).fs_type(), FS_UNSPECIFIED);
  // ppoll of a connected socket pair: a socket with its (unnamed) peer.
  EXPECT_EQ(at(4).fs_type(), FS_SOCKET);
  EXPECT_EQ(path(4), "unix:");
  EXPECT_EQ(at(4).net_scope(), NET_LOOPBACK);
  // poll of a pipe and a socket: a mix, named by its first descriptor.
  EXPECT_EQ(at(5).fs_type(), FS_UNSPECIFIED);
  EXPECT_EQ(at(5).fd(), empty_fd);
  // epoll: the instance.
  for (size_t i = 6; i <= 8; ++i) {
    EXPECT_EQ(path(i), "anon_inode:[eventpoll]") << apis[i];
    EXPECT_EQ(at(i).result(), 0) << apis[i];
  }
  // accept: a listening socket, no peer.
  EXPECT_EQ(at(9).fs_type(), FS_SOCKET);
  EXPECT_EQ(at(9).path(), 0u);
  // Sleeps and signal waits: no descriptor; the result as the call gave it.
  const std::map<size_t, int> results_by_wait = {{10, 0},       {11, -EINTR}, {12, 0},
                                                 {13, 0},       {14, -EINTR}, {15, -EINTR},
                                                 {16, -EAGAIN}, {17, 0},      {18, 0}};
  for (const auto& [i, result] : results_by_wait) {
    EXPECT_EQ(at(i).fd(), -1) << apis[i];
    EXPECT_EQ(at(i).result(), result) << apis[i];
    EXPECT_GE(at(i).dur(), 15'000'000u) << apis[i];
  }
}

}  // namespace
}  // namespace idlescope::testing
