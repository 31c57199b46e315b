// The host activity stage on its own (analysis/host_activity.h): blocked calls go in, the
// report's section (kinds, items, workers, programs) and the no_gpu_work evidence come out.
#include "analyzer/analysis/host_activity.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

TEST(HostActivity, KindsOfBlockedCalls) {
  HostEvent e;
  e.type = FILE_WRITE;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kCheckpointWrite), HostActivityKind::kCheckpointWrites);
  EXPECT_EQ(ActivityKindOf(e, EventClass::kUploadWrite), HostActivityKind::kWrites);
  e.fs_type = FS_PIPE;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kIpcWrite), HostActivityKind::kIpc);
  e.fs_type = FS_SOCKET;
  e.net_scope = NET_PUBLIC;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kUploadWrite), HostActivityKind::kNetwork);
  e = {};
  e.type = FILE_CLOSE;
  e.fs_type = FS_LOCAL;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kNone), std::nullopt);  // a local close never blocks
  e.fs_type = FS_NFS;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kUploadWrite), HostActivityKind::kWrites);
  e = {};
  e.type = FILE_READ;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kTerminalRead), HostActivityKind::kTerminal);
  EXPECT_EQ(ActivityKindOf(e, EventClass::kReadWorkerQueue), HostActivityKind::kIpc);
  EXPECT_EQ(ActivityKindOf(e, EventClass::kReadLocal), HostActivityKind::kReads);
  e.type = NET_RECV;
  e.net_scope = NET_LOOPBACK;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kReadWorkerQueue), HostActivityKind::kIpc);
  e.type = PROC_SPAWN;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kInstaller), HostActivityKind::kPrograms);
  e.type = CUDA_LAUNCH;
  EXPECT_EQ(ActivityKindOf(e, EventClass::kNone), std::nullopt);
}

struct Job {
  MapSymbols names;
  JobProcesses processes;
  HostActivity activity{5};
  Job() {
    ProcessInfo main;
    main.pid = 100;
    main.ppid = 1;
    main.exe = "python";
    main.cmdline = "python train.py";
    main.host = "node0";
    processes.Add(main);
    ProcessInfo worker = main;
    worker.pid = 101;
    worker.ppid = 100;
    worker.forked = true;
    processes.Add(worker);
    ProcessInfo pip = main;
    pip.pid = 102;
    pip.ppid = 100;
    pip.exe = "/usr/bin/pip";
    pip.cmdline = "pip install tqdm";
    processes.Add(pip);
    processes.BuildFamilies();
    processes.End(2, Ms(40));
  }
  void Call(uint32_t process, uint32_t tid, EventType type, double start_ms, double end_ms,
            const std::string& path, EventClass c, FsType fs = FS_LOCAL, uint64_t bytes = 0) {
    HostEvent e;
    e.process = process;
    e.tid = tid;
    e.type = type;
    e.start = Ms(start_ms);
    e.end = Ms(end_ms);
    e.path_id = names.Intern(process, path);
    e.path = path;
    e.fs_type = fs;
    e.bytes = bytes;
    e.stack = 42;
    activity.Note(e, c, tid == processes[process].main_tid());
  }
};

TEST(HostActivity, ItemsMergeAcrossProcessesByWhatTheyName) {
  Job job;
  job.Call(0, 100, FILE_WRITE, 100, 400, "/ckpt/model.pt", EventClass::kCheckpointWrite);
  job.Call(0, 100, FILE_READ, 0, 20, "/data/a.bin", EventClass::kReadLocal, FS_NFS, 4096);
  job.Call(1, 101, FILE_READ, 20, 50, "/data/a.bin", EventClass::kReadLocal, FS_NFS, 4096);
  HostEvent spawn;
  spawn.process = 0;
  spawn.tid = 100;
  spawn.type = PROC_SPAWN;
  spawn.start = Ms(10);
  spawn.end = Ms(11);
  spawn.path = "/usr/bin/pip";
  std::string argv("pip\0install\0tqdm", 16);
  spawn.argv = argv;
  job.activity.Note(spawn, EventClass::kInstaller, true);

  ReportSymbols out;
  EvidenceResolver evidence(job.names, &out);
  HostActivityReport r = job.activity.Build(job.processes, evidence);
  ASSERT_EQ(r.groups.size(), 3u);  // in kind order: checkpoint writes, reads, programs
  EXPECT_EQ(r.groups[0].kind, HostActivityKind::kCheckpointWrites);
  EXPECT_EQ(r.groups[0].main_thread_ns, Ms(300));
  EXPECT_EQ(out.String(r.groups[0].items[0].what), "/ckpt/model.pt");
  EXPECT_EQ(out.StackLabel(r.groups[0].items[0].stack), "stack42@p0");
  const HostActivityGroup& reads = r.groups[1];
  ASSERT_EQ(reads.items.size(), 1u);  // one file, two processes
  EXPECT_EQ(reads.items[0].processes, 2u);
  EXPECT_EQ(reads.items[0].ns, Ms(50));
  EXPECT_EQ(reads.items[0].pid, 101u);      // the longest call's
  EXPECT_TRUE(reads.items[0].main_thread);  // the worker's own main thread
  EXPECT_EQ(reads.items[0].main_thread_ns, Ms(50));
  EXPECT_EQ(reads.items[0].fs_type, FS_NFS);
  const HostActivityGroup& programs = r.groups[2];
  ASSERT_EQ(programs.items.size(), 1u);  // the spawn and the traced pip are one program
  EXPECT_EQ(out.String(programs.items[0].what), "pip install tqdm");
  EXPECT_TRUE(programs.items[0].installer);
  EXPECT_EQ(programs.items[0].ns, Ms(1) + Ms(40));
  ASSERT_EQ(r.workers.size(), 1u);
  EXPECT_EQ(r.workers[0].pid, 101u);
  EXPECT_EQ(r.workers[0].reads, 1u);
  EXPECT_EQ(r.workers_with_reads, 1u);

  CauseReport no_gpu;
  no_gpu.cause = Cause::kNoGpuWork;
  PointAtHostActivity(r, 5, no_gpu);
  ASSERT_GE(no_gpu.findings.size(), 4u);
  EXPECT_EQ(no_gpu.findings[0].kind, FindingKind::kHostActivity);
  EXPECT_EQ(no_gpu.findings[0].activity, HostActivityKind::kCheckpointWrites);  // heaviest first
  EXPECT_EQ(no_gpu.findings.back().kind, FindingKind::kWorkerProcesses);
  EXPECT_EQ(no_gpu.findings.back().count, 1u);
  ASSERT_FALSE(no_gpu.objects.empty());
  EXPECT_EQ(no_gpu.objects[0].kind, EvidenceKind::kHostActivity);
  EXPECT_EQ(no_gpu.objects[0].activity, HostActivityKind::kCheckpointWrites);
  EXPECT_EQ(no_gpu.stacks.size(), 2u);  // stack 42 of process 0 (checkpoint) and 1 (the read)
}

TEST(HostActivity, TwoPartsMergedReportAsTheWholeJob) {
  // The main process's calls in one part, its worker's in another (a job analyzed in shards):
  // merged, the section is the one a single analysis of every call makes.
  Job whole, main_part, worker_part;
  for (Job* job : {&whole, &main_part}) {
    job->Call(0, 100, FILE_WRITE, 100, 400, "/ckpt/model.pt", EventClass::kCheckpointWrite);
    job->Call(0, 100, FILE_READ, 0, 20, "/data/a.bin", EventClass::kReadLocal, FS_NFS, 4096);
  }
  // MapSymbols numbers strings across processes: the worker's part numbers the main process's
  // first, as the whole job's does (a trace file numbers its own process's strings only).
  worker_part.names.Intern(0, "/ckpt/model.pt");
  worker_part.names.Intern(0, "/data/a.bin");
  for (Job* job : {&whole, &worker_part}) {
    job->Call(1, 101, FILE_READ, 20, 50, "/data/a.bin", EventClass::kReadLocal, FS_NFS, 4096);
    job->Call(1, 101, FILE_READ, 50, 52, "/data/b.bin", EventClass::kReadLocal, FS_LOCAL, 10);
  }
  main_part.activity.MergeFrom(worker_part.activity);
  ReportSymbols whole_out, merged_out;
  EvidenceResolver whole_evidence(whole.names, &whole_out);
  EvidenceResolver merged_evidence(whole.names, &merged_out);
  const HostActivityReport a = whole.activity.Build(whole.processes, whole_evidence);
  const HostActivityReport b = main_part.activity.Build(main_part.processes, merged_evidence);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t g = 0; g < a.groups.size(); ++g) {
    EXPECT_EQ(a.groups[g].kind, b.groups[g].kind);
    EXPECT_EQ(a.groups[g].ns, b.groups[g].ns);
    EXPECT_EQ(a.groups[g].main_thread_ns, b.groups[g].main_thread_ns);
    ASSERT_EQ(a.groups[g].items.size(), b.groups[g].items.size());
    for (size_t i = 0; i < a.groups[g].items.size(); ++i) {
      EXPECT_EQ(a.groups[g].items[i].ns, b.groups[g].items[i].ns);
      EXPECT_EQ(a.groups[g].items[i].processes, b.groups[g].items[i].processes);
      EXPECT_EQ(a.groups[g].items[i].pid, b.groups[g].items[i].pid);
    }
  }
  ASSERT_EQ(b.workers.size(), 1u);
  EXPECT_EQ(b.workers[0].reads, a.workers[0].reads);
  EXPECT_EQ(b.workers[0].read_bytes, a.workers[0].read_bytes);
  EXPECT_EQ(b.workers[0].read_bytes, 4106u);
}

TEST(HostActivity, TablesAreBoundedAndSayWhenApproximate) {
  Job job;
  for (int i = 0; i < 1100; ++i) {
    job.Call(0, 100, FILE_READ, i, i + (i % 7 + 1) * 0.01, "/data/" + std::to_string(i),
             EventClass::kReadLocal);
  }
  ReportSymbols out;
  EvidenceResolver evidence(job.names, &out);
  HostActivityReport r = job.activity.Build(job.processes, evidence);
  ASSERT_EQ(r.groups.size(), 2u);  // the reads, and the traced pip under programs
  EXPECT_EQ(r.groups[0].kind, HostActivityKind::kReads);
  EXPECT_TRUE(r.groups[0].approximate);
  EXPECT_FALSE(r.groups[1].approximate);
  EXPECT_EQ(r.groups[0].count, 1100u);  // the totals stay exact
  EXPECT_EQ(r.groups[0].items.size(), 5u);
}

}  // namespace
}  // namespace idlescope::testing
