// The identity rules of issue 24 (docs/attribution.md, "Identity of files", "Who is at the other
// end", "Child processes", "Signal handlers", "File mappings and copies"): for each, a job where it
// must fire and a close one where it must not.
#include <gtest/gtest.h>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr uint32_t kTid = kOneGapTid;  // OneGap's launching thread (job_builder.h)
constexpr uint64_t kGiB = 1ull << 30;

const HostActivityGroup* Group(const JobReport& r, HostActivityKind kind) {
  for (const HostActivityGroup& g : r.host_activity.groups) {
    if (g.kind == kind) return &g;
  }
  return nullptr;
}

std::string FirstObject(const JobReport& r, Cause cause) {
  const CauseReport* c = FindCause(r, cause);
  if (c == nullptr || c->objects.empty()) return "";
  return Label(r, c->objects[0]);
}

// --- Files: by what the job does with them

TEST(ModelFileIdentity, WritesOfAFileRenamedToAModelNameAreCheckpointing) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 180, "/out/tmp8f2k1x", FS_LOCAL, kGiB);
  s.job.Io(s.p, kTid, FILE_SYNC, 180, 195, "/out/tmp8f2k1x");
  s.job.FromTo(s.p, kTid, FILE_RENAME, 195, 200, "/out/tmp8f2k1x", "/out/weights.safetensors");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
  EXPECT_EQ(FirstObject(r, Cause::kCheckpointing), "/out/tmp8f2k1x");
  const HostActivityGroup* ckpt = Group(r, HostActivityKind::kCheckpointWrites);
  ASSERT_NE(ckpt, nullptr);
  EXPECT_EQ(ckpt->ns, Ms(100));
  EXPECT_EQ(Group(r, HostActivityKind::kWrites), nullptr);
}

// The writes' time was credited (as an upload) before the rename arrived: it moves.
TEST(ModelFileIdentity, ARenameMovesTimeAlreadyCreditedToUploads) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 200, "/out/tmp8f2k1x", FS_LOCAL, kGiB);
  s.job.analysis().AdvanceTo(Ms(600));
  s.job.FromTo(s.p, kTid, FILE_RENAME, 700, 701, "/out/tmp8f2k1x", "/out/weights.safetensors");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
  const CauseReport* c = FindCause(r, Cause::kCheckpointing);
  ASSERT_NE(c, nullptr);
  const Finding* bytes = FindFinding(*c, FindingKind::kCheckpointBytes);
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes->bytes, kGiB);
}

TEST(ModelFileIdentity, ARenameToAnotherNameLeavesAnUpload) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 195, "/out/metrics.tmp");
  s.job.FromTo(s.p, kTid, FILE_RENAME, 195, 200, "/out/metrics.tmp", "/out/metrics.json");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
}

// A checkpoint directory written under a temporary name and renamed: its other files too.
TEST(ModelFileIdentity, ADirectoryRenamedWithAModelFileInItMakesItsFilesCheckpoints) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 150, "/out/tmp-checkpoint-5/model.safetensors");
  s.job.Io(s.p, kTid, FILE_WRITE, 150, 199, "/out/tmp-checkpoint-5/trainer_state.json");
  s.job.FromTo(s.p, kTid, FILE_RENAME, 199, 200, "/out/tmp-checkpoint-5", "/out/checkpoint-5");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
}

TEST(ModelFileIdentity, ADirectoryRenamedWithoutAModelFileStaysUploads) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 199, "/out/tmp-samples-5/img0.png");
  s.job.FromTo(s.p, kTid, FILE_RENAME, 199, 200, "/out/tmp-samples-5", "/out/samples-5");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
}

// A resumed job reads its checkpoint before its first kernel and writes it again later.
TEST(ModelFileIdentity, AFileReadBackAtStartAndWrittenLaterIsAModelFile) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Io(p, kTid, FILE_READ, 1, 20, "/runs/exp1/state", FS_LOCAL, 512 << 20);
  job.Launch(p, kTid, 25);
  job.Kernel(p, 25, 100);
  job.Io(p, kTid, FILE_WRITE, 100, 200, "/runs/exp1/state", FS_LOCAL, 512 << 20);
  job.Kernel(p, 200, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
}

// The job makes its state file, reads it back (resumes from it) before its first kernel, and
// writes it again later: the first writes were the model file's too.
TEST(ModelFileIdentity, WritesBeforeTheReadBackAreTheModelFilesToo) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Io(p, kTid, FILE_WRITE, 2, 40, "/runs/exp1/state", FS_LOCAL, 512 << 20);
  job.Io(p, kTid, FILE_READ, 40, 50, "/runs/exp1/state", FS_LOCAL, 512 << 20);
  job.Launch(p, kTid, 55);
  job.Kernel(p, 55, 100);
  job.Io(p, kTid, FILE_WRITE, 100, 200, "/runs/exp1/state", FS_LOCAL, 512 << 20);
  job.Kernel(p, 200, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), 0);
  EXPECT_GE(CauseNs(r, Cause::kCheckpointing), Ms(100));
}

// The close cases: a small file read at start (a configuration), or a file first read after the
// first kernel, is no model file when written.
TEST(ModelFileIdentity, ASmallFileReadAtStartOrAFileReadLaterIsNoModelFile) {
  JobBuilder job;
  uint32_t p = job.Process(100, 1, 0);
  job.Device(p, 0, "GPU-a", 80 * kGiB, 132);
  job.Io(p, kTid, FILE_READ, 1, 20, "/runs/exp1/progress.json", FS_LOCAL, 4096);
  job.Launch(p, kTid, 25);
  job.Kernel(p, 25, 100);
  job.Io(p, kTid, FILE_READ, 60, 70, "/runs/exp1/cache.arrow", FS_LOCAL, 512 << 20);
  job.Io(p, kTid, FILE_WRITE, 100, 150, "/runs/exp1/progress.json");
  job.Io(p, kTid, FILE_WRITE, 150, 200, "/runs/exp1/cache.arrow");
  job.Kernel(p, 200, 1000);
  job.End(p, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
}

// A job run from a directory named for checkpoints writes its logs there: they are logs.
TEST(ModelFileIdentity, ADirectoryNamedForCheckpointsIsNoSign) {
  OneGap s;
  s.job.Io(s.p, kTid, FILE_WRITE, 100, 200, "/home/u/ckpt-experiments/run3/train.log");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
  EXPECT_FALSE(IsModelCheckpointPath("/out/checkpoint-500/optimizer.json"));
  EXPECT_TRUE(IsModelCheckpointPath("/out/checkpoint-500/optimizer.pt"));
}

// --- Mappings and copies

// msync names the file its mapping is of (interpose/hooks/mappings.cc): a checkpoint written
// through a mapping is checkpointing; an msync the recorder could not name stays an upload.
TEST(MappingsAndCopies, AnMsyncOfAModelFileMappingIsCheckpointing) {
  OneGap s;
  HostEvent map = s.job.Event(s.p, kTid, FILE_MMAP, 100, 100.1, "/out/model.safetensors");
  map.bytes = kGiB;
  map.writable = true;
  s.job.Add(map);
  s.job.Io(s.p, kTid, FILE_SYNC, 150, 200, "/out/model.safetensors");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(50));
  // The copy into the mapping (page faults, no call) stays unexplained until a sampler sees it.
  EXPECT_EQ(CauseNs(r, Cause::kUnknown), Ms(50));
}

TEST(MappingsAndCopies, ACopyOfACheckpointIsCheckpointingAndOfOtherFilesAnUpload) {
  {
    OneGap s;
    s.job.FromTo(s.p, kTid, FILE_COPY, 100, 200, "/ckpt/step100/model.pt", "/backup/model_100",
                 kGiB);
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), Ms(100));
  }
  {
    OneGap s;
    s.job.FromTo(s.p, kTid, FILE_COPY, 100, 200, "/runs/samples.tar", "/backup/samples.tar", kGiB);
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kIntermediateUpload), Ms(100));
    EXPECT_EQ(CauseNs(r, Cause::kCheckpointing), 0);
  }
}

TEST(MappingsAndCopies, ACopyFromASocketIsADownload) {
  OneGap s;
  s.job.FromTo(s.p, kTid, FILE_COPY, 100, 200, "203.0.113.7:443", "/data/shard0.tar", kGiB);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kExternalDownload), Ms(100));
}

// --- Sockets: by who is at the other end

// Two ranks on one host exchange gradients over TCP (Gloo): communication, not data loading.
TEST(SocketPeers, ASocketToAnotherRankIsCommunication) {
  JobBuilder job;
  uint32_t r0 = job.Process(100, 1, 0);
  uint32_t r1 = job.Process(200, 1, 1);
  job.SocketAddress(r0, "node0", "127.0.0.1:40000");
  job.SocketAddress(r1, "node0", "127.0.0.1:50000");
  job.Device(r0, 0, "GPU-a", 80 * kGiB, 132);
  job.Device(r1, 0, "GPU-b", 80 * kGiB, 132);
  job.Socket(r0, 1, "127.0.0.1:40000", "127.0.0.1:50000", NET_LOOPBACK);
  job.Socket(r1, 1, "127.0.0.1:50000", "127.0.0.1:40000", NET_LOOPBACK);
  job.Launch(r0, kTid, 0);
  job.Launch(r1, 200, 0);
  job.Kernel(r0, 0, 100);
  job.Kernel(r1, 0, 1000);
  job.Net(r0, kTid, NET_RECV, 100, 200, NET_LOOPBACK, "127.0.0.1:50000");
  job.Kernel(r0, 200, 1000);
  job.End(r0, 1000);
  job.End(r1, 1000);
  JobReport r = job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kCommunication), Ms(100));
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  const CauseReport* c = FindCause(r, Cause::kCommunication);
  ASSERT_NE(c, nullptr);
  const Finding* f = FindFinding(*c, FindingKind::kPeerSocketTransfers);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ns, Ms(100));
}

// A model downloaded from a server inside the cluster (private address, no process of the job):
// an external download. Without the socket's identity (an older trace), the address range rules.
TEST(SocketPeers, AServerOutsideTheJobIsADownloadWhateverItsAddress) {
  {
    OneGap s;
    s.job.Socket(s.p, 50, "10.0.0.1:41234", "10.0.0.9:80", NET_PRIVATE);
    s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_PRIVATE, "10.0.0.9:80");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kExternalDownload), Ms(100));
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), 0);
  }
  {
    OneGap s;
    s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_PRIVATE, "10.0.0.9:80");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  }
}

// A socket to a worker of the process (found in the records of its family, not in the addresses
// read before the analysis): data loading.
TEST(SocketPeers, ASocketToAWorkerIsDataLoading) {
  OneGap s;
  uint32_t worker = s.job.ForkedProcess(300, 100);
  s.job.Socket(worker, 50, "unix:/tmp/pymp-x/listener-1", "unix:", NET_LOOPBACK, 100);
  s.job.Socket(s.p, 60, "unix:", "unix:/tmp/pymp-x/listener-1", NET_LOOPBACK, 300);
  s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_LOOPBACK, "unix:/tmp/pymp-x/listener-1");
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  const CauseReport* c = FindCause(r, Cause::kDataLoading);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(FindFinding(*c, FindingKind::kWorkerQueueWaits), nullptr);
}

// An unnamed unix socket names its peer by pid only: a worker's, or a process outside the job.
TEST(SocketPeers, AnUnnamedUnixSocketIsFoundByItsPeersPid) {
  {
    OneGap s;
    s.job.ForkedProcess(300, 100);
    s.job.Socket(s.p, 60, "unix:", "unix:", NET_LOOPBACK, 300);
    s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_LOOPBACK, "unix:");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  }
  {
    OneGap s;
    s.job.Socket(s.p, 60, "unix:", "unix:", NET_LOOPBACK, 999);
    s.job.Net(s.p, kTid, NET_RECV, 100, 200, NET_LOOPBACK, "unix:");
    JobReport r = s.job.Finish();
    EXPECT_EQ(CauseNs(r, Cause::kExternalDownload), Ms(100));
  }
}

// stdin from a pipe is the program before this one in a pipeline: data loading, not workers.
TEST(SocketPeers, StdinFromAPipeIsNotAWorkerQueue) {
  {
    OneGap s;
    HostEvent e = s.job.Event(s.p, kTid, FILE_READ, 100, 200, "pipe:[4242]");
    e.fd = 0;
    e.fs_type = FS_PIPE;
    s.job.Add(e);
    JobReport r = s.job.Finish();
    const CauseReport* c = FindCause(r, Cause::kDataLoading);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->ns, Ms(100));
    EXPECT_NE(FindFinding(*c, FindingKind::kStdinPipeWaits), nullptr);
    EXPECT_EQ(FindFinding(*c, FindingKind::kWorkerQueueWaits), nullptr);
  }
  {
    OneGap s;
    HostEvent e = s.job.Event(s.p, kTid, FILE_READ, 100, 200, "pipe:[4242]");
    e.fd = 7;
    e.fs_type = FS_PIPE;
    s.job.Add(e);
    JobReport r = s.job.Finish();
    const CauseReport* c = FindCause(r, Cause::kDataLoading);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(FindFinding(*c, FindingKind::kStdinPipeWaits), nullptr);
    EXPECT_NE(FindFinding(*c, FindingKind::kWorkerQueueWaits), nullptr);
  }
}

// --- Children: a wait is for the child's work, by its command

struct ChildWait {
  OneGap s;
  uint32_t child;
  ChildWait(const std::string& exe, const std::string& cmdline) {
    ProcessInfo info;
    info.pid = 300;
    info.ppid = 100;
    info.exe = exe;
    info.cmdline = cmdline;
    info.host = "node0";
    info.start = Ms(99);
    child = s.job.AddProcess(info);
    s.job.End(child, 200);
  }
  JobReport WaitAndFinish() {
    HostEvent e = s.job.Event(s.p, kTid, PROC_WAIT, 100, 200);
    e.child_pid = 300;
    e.stack = 44;
    s.job.Add(e);
    return s.job.Finish();
  }
};

TEST(ChildProcesses, WaitingForAMediaToolIsDataLoadingNamedByItsCommand) {
  ChildWait w("/usr/bin/ffmpeg", "ffmpeg -i /data/clip.mp4 -ar 16000 /tmp/clip.wav");
  JobReport r = w.WaitAndFinish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
  EXPECT_EQ(FirstObject(r, Cause::kDataLoading),
            "ffmpeg -i /data/clip.mp4 -ar 16000 /tmp/clip.wav");
}

TEST(ChildProcesses, WaitingForAScriptOrACompilerIsChildProcess) {
  {
    ChildWait w("/usr/bin/python3", "python3 tools/prep.py --shard 3");
    JobReport r = w.WaitAndFinish();
    EXPECT_EQ(CauseNs(r, Cause::kChildProcess), Ms(100));
    EXPECT_EQ(FirstObject(r, Cause::kChildProcess), "python3 tools/prep.py --shard 3");
    EXPECT_EQ(CauseNs(r, Cause::kUnknown), 0);
  }
  {
    ChildWait w("/usr/bin/gcc", "gcc /tmp/x/main.c -O3 -shared -fPIC -o /tmp/x/kern.so");
    JobReport r = w.WaitAndFinish();
    EXPECT_EQ(CauseNs(r, Cause::kChildProcess), Ms(100));
  }
}

TEST(ChildProcesses, WaitingForAnInstallerOrADownloadIsThatCause) {
  {
    ChildWait w("/usr/bin/pip", "pip install einops");
    JobReport r = w.WaitAndFinish();
    EXPECT_EQ(CauseNs(r, Cause::kLibraryInstallation), Ms(100));
  }
  {
    ChildWait w("/usr/bin/curl", "curl -o /tmp/w.bin http://10.0.0.9/w.bin");
    JobReport r = w.WaitAndFinish();
    EXPECT_EQ(CauseNs(r, Cause::kExternalDownload), Ms(100));
  }
}

// A child that was not traced (its environment lost the preload): still a wait for a child.
TEST(ChildProcesses, AWaitForAChildNotTracedIsChildProcessWithoutItsCommand) {
  OneGap s;
  HostEvent e = s.job.Event(s.p, kTid, PROC_WAIT, 100, 200);
  e.child_pid = 4242;
  s.job.Add(e);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kChildProcess), Ms(100));
  EXPECT_EQ(FirstObject(r, Cause::kChildProcess), "");
}

// system() returns when its command did: the shell it started (and the shell's child) decide.
TEST(ChildProcesses, SystemWaitsForTheShellItStarted) {
  OneGap s;
  ProcessInfo sh;
  sh.pid = 300;
  sh.ppid = 100;
  sh.exe = "/bin/sh";
  sh.cmdline = "sh -c ffmpeg -i in.mp4 out.wav";
  sh.host = "node0";
  sh.start = Ms(100);
  s.job.AddProcess(sh);
  ProcessInfo ff = sh;
  ff.pid = 301;
  ff.ppid = 300;
  ff.exe = "/usr/bin/ffmpeg";
  ff.cmdline = "ffmpeg -i in.mp4 out.wav";
  s.job.AddProcess(ff);
  HostEvent e = s.job.Event(s.p, kTid, PROC_SPAWN, 100, 200, "/bin/sh");
  e.api = "system";
  s.job.Add(e);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kDataLoading), Ms(100));
}

// --- Signal handlers

// A 60 ms handler that landed in a cudaDeviceSynchronize: the handler's, not the sync's.
TEST(SignalHandlers, AHandlerInsideASyncIsNotSynchronization) {
  OneGap s;
  s.job.Sync(s.p, kTid, 100, 200);
  HostEvent h = s.job.Event(s.p, kTid, SIGNAL_HANDLER, 120, 180, "on_alarm");
  h.result = 14;  // SIGALRM
  h.stack = 45;
  s.job.Add(h);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSignalHandler), Ms(60));
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(40));
  EXPECT_EQ(FirstObject(r, Cause::kSignalHandler), "on_alarm");
  const CauseReport* sync = FindCause(r, Cause::kSynchronization);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->saving_ns, Ms(40));
}

// The close case: a handler on a thread of another process (a worker) explains nothing of the
// sync's time on the launching thread.
TEST(SignalHandlers, AHandlerOfAnotherProcessLeavesTheSync) {
  OneGap s;
  uint32_t worker = s.job.ForkedProcess(300, 100);
  s.job.Sync(s.p, kTid, 100, 200);
  HostEvent h = s.job.Event(worker, 300, SIGNAL_HANDLER, 120, 180, "on_alarm");
  s.job.Add(h);
  JobReport r = s.job.Finish();
  EXPECT_EQ(CauseNs(r, Cause::kSynchronization), Ms(100));
}

}  // namespace
}  // namespace idlescope::testing
