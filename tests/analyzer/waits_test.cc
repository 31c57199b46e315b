// Blocking waits (WAIT events, issue 13): how they are classified (event_classes.cc) and what they
// explain of a gap (docs/attribution.md, "Waits"). A wait on a terminal is interactive on any
// thread, as the terminal's read is. Any other wait explains a gap only on a thread that feeds a
// GPU: on pipes or connected sockets it is the read it waits for, else (a sleep, an event loop)
// the thread idling: interactive.
#include <gtest/gtest.h>

#include "analyzer/analysis/event_classes.h"
#include "analyzer/analysis/host_activity.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr uint32_t kTid = kOneGapTid;  // the training thread: launches on device 0
constexpr uint32_t kHelper = 101;      // another thread of the same process: never launches
constexpr uint64_t kGiB = 1ull << 30;

HostEvent Wait(int32_t fd, FsType fs, std::string_view path = "", int32_t device = -1) {
  HostEvent e;
  e.type = WAIT;
  e.start = Ms(100);
  e.end = Ms(200);
  e.fd = fd;
  e.fs_type = fs;
  e.path = path;
  e.device = device;
  return e;
}

TEST(WaitClasses, ATerminalIsInteractiveOnAnyThread) {
  for (int32_t device : {-1, 0}) {
    EventClassification c = ClassifyHostEvent(Wait(3, FS_DEVICE, "/dev/pts/3", device));
    EXPECT_EQ(c.event_class, EventClass::kTerminalRead);
    EXPECT_EQ(c.cause, Cause::kInteractive);
    // stdin on a device, its name unknown; a terminal among other descriptors (a mix).
    EXPECT_EQ(ClassifyHostEvent(Wait(0, FS_DEVICE, "", device)).cause, Cause::kInteractive);
    EXPECT_EQ(ClassifyHostEvent(Wait(0, FS_UNSPECIFIED, "/dev/pts/0", device)).cause,
              Cause::kInteractive);
  }
  EXPECT_FALSE(IsIdleWait(Wait(3, FS_DEVICE, "/dev/pts/3")));
}

TEST(WaitClasses, PipesAndConnectedSocketsAreTheReadTheyWaitForOnAThreadThatFeedsAGpu) {
  // A DataLoader worker's result queue (multiprocessing polls its pipe before reading it).
  EventClassification pipe = ClassifyHostEvent(Wait(7, FS_PIPE, "pipe:[123]", 0));
  EXPECT_EQ(pipe.event_class, EventClass::kReadWorkerQueue);
  EXPECT_EQ(pipe.cause, Cause::kDataLoading);
  HostEvent local = Wait(8, FS_SOCKET, "10.0.0.7:29500", 0);
  local.net_scope = NET_PRIVATE;
  EXPECT_EQ(ClassifyHostEvent(local).cause, Cause::kDataLoading);
  HostEvent remote = Wait(8, FS_SOCKET, "203.0.113.5:443", 0);
  remote.net_scope = NET_PUBLIC;
  EXPECT_EQ(ClassifyHostEvent(remote).event_class, EventClass::kDownload);
  EXPECT_EQ(ClassifyHostEvent(remote).cause, Cause::kExternalDownload);
  EXPECT_FALSE(IsIdleWait(local));
  // The same waits of a thread that feeds no GPU: an idle DataLoader worker polling its index
  // queue, a tracker's thread waiting for its server.
  for (HostEvent e : {Wait(7, FS_PIPE, "pipe:[123]"), local, remote}) {
    e.device = -1;
    EXPECT_EQ(ClassifyHostEvent(e).event_class, EventClass::kNone) << e.path;
  }
}

TEST(WaitClasses, IdlingExplainsSomethingOnlyOnAThreadThatFeedsAGpu) {
  const HostEvent idle[] = {
      Wait(-1, FS_UNSPECIFIED),                     // nanosleep, pause, sigwait
      Wait(5, FS_OTHER, "anon_inode:[eventpoll]"),  // epoll_wait: an event loop
      Wait(5, FS_UNSPECIFIED, "pipe:[9]"),          // poll of a pipe and an eventfd
      Wait(4, FS_SOCKET),                           // accept: a listening socket
      Wait(6, FS_OTHER, "anon_inode:[eventfd]"),    // a zmq socket's signaler
  };
  for (HostEvent e : idle) {
    EXPECT_TRUE(IsIdleWait(e)) << e.path;
    EXPECT_EQ(ClassifyHostEvent(e).event_class, EventClass::kNone) << e.path;
    e.device = 0;
    EventClassification c = ClassifyHostEvent(e);
    EXPECT_EQ(c.event_class, EventClass::kIdleWait) << e.path;
    EXPECT_EQ(c.cause, Cause::kInteractive) << e.path;
  }
  // Other events are no waits.
  HostEvent read = Wait(-1, FS_UNSPECIFIED);
  read.type = FILE_READ;
  EXPECT_FALSE(IsIdleWait(read));
}

// OneGap (job_builder.h), with a wait of the training thread (or another) in its gap.
struct WaitGap : OneGap {
  void Add(uint32_t tid, HostEvent e, const std::string& api, double start = 100,
           double end = 200) {
    HostEvent w = job.Event(p, tid, WAIT, start, end, std::string(e.path));
    w.fd = e.fd;
    w.fs_type = e.fs_type;
    w.net_scope = e.net_scope;
    w.device = e.device;
    w.api_id = job.Intern(p, api);
    w.stack = 77;
    job.Add(w);
  }
};

TEST(WaitAttribution, TheTrainingThreadsSleepBetweenKernelsIsInteractive) {
  WaitGap s;
  s.Add(kTid, Wait(-1, FS_UNSPECIFIED, "", 0), "nanosleep");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  const CauseReport* c = FindCause(r, Cause::kInteractive);
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->stacks.empty());
  EXPECT_EQ(Label(r, c->stacks[0]), "stack77@p0");
}

TEST(WaitAttribution, AnEventLoopOfTheTrainingThreadIsInteractive) {
  WaitGap s;  // a notebook's kernel between two cells
  s.Add(kTid, Wait(9, FS_OTHER, "anon_inode:[eventpoll]", 0), "epoll_wait");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), Ms(100));
}

TEST(WaitAttribution, AHelperThreadsSleepOrEventLoopExplainsNothing) {
  WaitGap s;
  s.Add(kHelper, Wait(-1, FS_UNSPECIFIED), "nanosleep");
  s.Add(kHelper, Wait(9, FS_OTHER, "anon_inode:[eventpoll]"), "epoll_wait");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

TEST(WaitAttribution, AWorkerProcessSleepExplainsNothing) {
  // A DataLoader worker (forked, no CUDA) sleeping for its storage: its parent's gap stays
  // unexplained but for what the parent itself waited in.
  WaitGap s;
  uint32_t worker = s.job.ForkedProcess(101, 100);
  HostEvent w = s.job.Event(worker, 101, WAIT, 100, 200);
  w.fd = -1;
  s.job.Add(w);
  s.job.End(worker, 900);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

TEST(WaitAttribution, ATerminalWaitOfAnotherThreadIsInteractiveAsItsReadIs) {
  WaitGap s;
  s.Add(kHelper, Wait(0, FS_DEVICE, "/dev/pts/1"), "select");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), Ms(100));
}

TEST(WaitAttribution, PollingTheWorkersPipeStaysDataLoadingOnTheTrainingThread) {
  // The training thread (num_workers > 0) waits for the workers' result queue: data loading,
  // counted as waiting for workers, as the read of that pipe is.
  WaitGap s;
  s.Add(kTid, Wait(11, FS_PIPE, "pipe:[4242]", 0), "poll");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), 0);
  const CauseReport* c = FindCause(r, Cause::kDataLoading);
  ASSERT_NE(c, nullptr);
  const Finding* f = FindFinding(*c, FindingKind::kWorkerQueueWaits);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, Ms(100));
}

TEST(WaitAttribution, AnIdleWorkerPollingItsIndexQueueExplainsNothing) {
  // A DataLoader worker (forked, no CUDA) waits for its next index while its parent computes on
  // the CPU: the gap is the parent's, unknown.
  WaitGap s;
  uint32_t worker = s.job.ForkedProcess(101, 100);
  HostEvent w = s.job.Event(worker, 101, WAIT, 50, 300, "pipe:[77]");
  w.fd = 5;
  w.fs_type = FS_PIPE;
  s.job.Add(w);
  s.job.End(worker, 900);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(100));
}

TEST(WaitAttribution, ASleepInsideTheGapExplainsOnlyItsOwnTime) {
  WaitGap s;  // 30 ms of CPU work, then a 50 ms sleep, then 20 ms of CPU work
  s.Add(kTid, Wait(-1, FS_UNSPECIFIED, "", 0), "usleep", 130, 180);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kInteractive), Ms(50));
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(50));
}

TEST(WaitHostActivity, IdleWaitsOfTheTrainingAndMainThreadsAreListedByCall) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  auto wait = [&](uint32_t tid, double start, double end, int32_t device, const char* api,
                  const std::string& path = "", int32_t fd = -1, FsType fs = FS_UNSPECIFIED) {
    HostEvent e = job.Event(p, tid, WAIT, start, end, path);
    e.fd = fd;
    e.fs_type = fs;
    e.device = device;
    e.api_id = job.Intern(p, api);
    job.Add(e);
  };
  wait(100, 10, 40, -1, "clock_nanosleep");  // the main thread: counted
  wait(102, 50, 60, 0, "nanosleep");         // a thread that launched: counted
  wait(101, 0, 900, -1, "epoll_wait", "anon_inode:[eventpoll]", 9, FS_OTHER);  // a helper: not
  wait(101, 60, 70, -1, "select", "/dev/pts/2", 0, FS_DEVICE);                 // a terminal
  job.End(p, 1000);
  JobReport r = job.Finish();
  const HostActivityGroup* idle = nullptr;
  const HostActivityGroup* terminal = nullptr;
  for (const HostActivityGroup& g : r.host_activity.groups) {
    if (g.kind == HostActivityKind::kIdleWaits) idle = &g;
    if (g.kind == HostActivityKind::kTerminal) terminal = &g;
  }
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->ns, Ms(40));
  EXPECT_EQ(idle->count, 2u);
  EXPECT_EQ(idle->main_thread_ns, Ms(30));
  ASSERT_EQ(idle->items.size(), 2u);
  EXPECT_EQ(r.symbols.String(idle->items[0].what), "clock_nanosleep");
  EXPECT_EQ(HostActivityKindName(HostActivityKind::kIdleWaits), "idle_waits");
  ASSERT_NE(terminal, nullptr);
  EXPECT_EQ(terminal->ns, Ms(10));
}

}  // namespace
}  // namespace idlescope::testing
