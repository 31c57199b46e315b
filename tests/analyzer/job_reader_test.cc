// The read stage on real trace files written here with libprotobuf: merging files of two hosts
// onto one clock, stacks resolved from interned frames, footers and dropped-event warnings.
#include "analyzer/read/job_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzer/analysis/job_analysis.h"
#include "analyzer/trace/trace_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

constexpr Ns kS = 1'000'000'000;

// What a sink is handed, in order.
class RecordingSink : public RecordSink {
 public:
  std::vector<std::string> calls;
  void AddProcess(uint32_t process, const ProcessInfo& info) override {
    calls.push_back("process " + std::to_string(process) + " pid " + std::to_string(info.pid));
  }
  void AddHostEvent(const HostEvent& e) override {
    calls.push_back("event " + std::to_string(e.process));
  }
  void AddGpuRecord(const GpuRecord& r) override {
    calls.push_back("gpu " + std::to_string(r.process));
  }
  void AddFile(const FileReport& f) override { calls.push_back("file " + std::to_string(f.pid)); }
};

class TraceDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("job_reader_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void WriteFile(const std::string& name, const std::vector<Packet>& packets) {
    FILE* f = std::fopen((dir_ / name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    {
      google::protobuf::io::FileOutputStream raw(fileno(f));
      google::protobuf::io::CodedOutputStream out(&raw);
      for (const Packet& p : packets) {
        out.WriteVarint32(0x0a);
        out.WriteVarint64(p.ByteSizeLong());
        p.SerializeWithCachedSizes(&out);
      }
    }
    std::fclose(f);
  }

  static Packet HeaderPacket(uint32_t pid, int rank, const std::string& host,
                             const std::string& boot, Ns monotonic, Ns realtime) {
    Packet p;
    Header* h = p.mutable_header();
    h->set_magic("IDLESCOPE");
    h->set_format_version(1);
    h->set_pid(pid);
    h->set_ppid(1);
    h->set_host(host);
    h->set_rank(rank);
    h->set_boot_id(boot);
    h->mutable_clock()->set_monotonic_ns(static_cast<uint64_t>(monotonic));
    h->mutable_clock()->set_realtime_ns(static_cast<uint64_t>(realtime));
    h->set_process_start_ns(static_cast<uint64_t>(monotonic));
    return p;
  }

  // Kernels [start, start+1s) and [start+2s, start+3s) on device 0 (uuid), an all-reduce blocking
  // the main thread from `nccl_at` (absolute) to start+2s, and a footer at start+3s.
  static std::vector<Packet> Rank(uint32_t pid, int rank, const std::string& host,
                                  const std::string& boot, Ns start, Ns realtime, Ns nccl_at,
                                  uint64_t dropped = 0) {
    std::vector<Packet> packets = {HeaderPacket(pid, rank, host, boot, start, realtime)};
    Packet interned;
    Interned* in = interned.mutable_interned();
    auto add_string = [&](uint64_t id, const std::string& s) {
      InternedString* e = in->add_strings();
      e->set_id(id);
      e->set_str(s);
    };
    add_string(1, "allreduce_grads");
    add_string(2, "/usr/lib/libtorch_cuda.so");
    Frame* outer = in->add_frames();
    outer->set_id(1);
    outer->set_function(1);
    outer->set_module(2);
    Frame* inner = in->add_frames();  // no function name: module+offset
    inner->set_id(2);
    inner->set_module(2);
    inner->set_rel_pc(0x1234);
    StackNode* n1 = in->add_stack_nodes();
    n1->set_id(1);
    n1->set_frame(1);
    StackNode* n2 = in->add_stack_nodes();
    n2->set_id(2);
    n2->set_parent(1);
    n2->set_frame(2);
    packets.push_back(interned);
    Packet device;
    device.mutable_device()->set_device(0);
    device.mutable_device()->set_uuid("GPU-" + host);
    device.mutable_device()->set_visible_devices(1);
    packets.push_back(device);
    Packet events;
    EventBatch* batch = events.mutable_events();
    batch->set_tid(pid);
    batch->set_dropped(dropped);
    Event* launch = batch->add_events();
    launch->set_type(CUDA_LAUNCH);
    launch->set_ts(start);
    launch->set_dur(1000);
    Event* nccl = batch->add_events();
    nccl->set_type(NCCL_COLLECTIVE);
    nccl->set_ts(nccl_at - start);
    nccl->set_dur(static_cast<uint64_t>(start + 2 * kS - nccl_at));
    nccl->set_stack(2);
    nccl->set_nccl_op(NCCL_ALL_REDUCE);
    nccl->set_comm(77);
    nccl->set_seq(1);
    nccl->set_rank(rank);
    nccl->set_nranks(2);
    packets.push_back(events);
    Packet gpu;
    GpuActivity* k1 = gpu.mutable_gpu()->add_activities();
    k1->set_kind(GPU_KERNEL);
    k1->set_start(start);
    k1->set_dur(static_cast<uint64_t>(kS));
    GpuActivity* k2 = gpu.mutable_gpu()->add_activities();
    k2->set_kind(GPU_KERNEL);
    k2->set_start(2 * kS);
    k2->set_dur(static_cast<uint64_t>(kS));
    packets.push_back(gpu);
    Packet footer;
    footer.mutable_footer()->set_end_ns(static_cast<uint64_t>(start + 3 * kS));
    packets.push_back(footer);
    return packets;
  }

  std::filesystem::path dir_;
};

TEST_F(TraceDir, MergesHostsOntoOneClockAndFindsTheSlowerRank) {
  const Ns wall = 1'700'000'000 * kS;
  // Host a's monotonic clock reads 1000 s at `wall`, host b's reads 50 s at the same moment.
  // Rank 0 (host a) reaches the all-reduce at +1.0 s, rank 1 (host b) at +1.3 s.
  WriteFile("a.idlescope", Rank(10, 0, "a", "boot-a", 1000 * kS, wall, 1001 * kS));
  WriteFile("b.idlescope", Rank(20, 1, "b", "boot-b", 50 * kS, wall, 51 * kS + 300'000'000, 5));
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_TRUE(reader.ok()) << reader.status();
  JobAnalysis analysis;
  (*reader)->Run(analysis, ReadOptions{});
  JobSymbols symbols = (*reader)->TakeSymbols();
  JobReport r = analysis.BuildReport(symbols);
  EXPECT_EQ(r.span, 3 * kS);  // the two hosts' spans coincide on the job clock
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].id, "a/GPU-a");
  EXPECT_EQ(r.devices[1].id, "b/GPU-b");
  const CauseReport* comm = FindCause(r, Cause::kCommunication);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->ns, 2 * kS - 300'000'000);  // 1 s on rank 0, 0.7 s on rank 1
  const Finding* straggler = FindFinding(*comm, FindingKind::kStragglerRank);
  ASSERT_NE(straggler, nullptr);
  EXPECT_EQ(straggler->rank, 1);
  EXPECT_EQ(straggler->count, 1u);
  EXPECT_EQ(straggler->of_count, 1u);
  EXPECT_EQ(straggler->ns, 300'000'000);
  ASSERT_FALSE(comm->stacks.empty());
  EXPECT_EQ(Label(r, comm->stacks[0]), "libtorch_cuda.so+0x1234 <- allreduce_grads");
  bool dropped_warning = false;
  for (const ReportWarning& w : r.warnings) {
    dropped_warning |= w.kind == WarningKind::kDroppedRecords && w.count == 5 &&
                       w.subject.ends_with("b.idlescope");
  }
  EXPECT_TRUE(dropped_warning);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_TRUE(r.files[0].footer);
}

// The reader knows nothing of the analysis: any sink gets the processes first, numbered in file
// order, then every record, then one FileReport per file; the symbols outlive the reader.
TEST_F(TraceDir, FeedsAnySinkProcessesFirstThenEveryRecord) {
  const Ns wall = 1'700'000'000 * kS;
  WriteFile("a.idlescope", Rank(10, 0, "a", "boot-a", 1000 * kS, wall, 1001 * kS));
  WriteFile("b.idlescope", Rank(20, 1, "b", "boot-b", 50 * kS, wall, 51 * kS));
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_TRUE(reader.ok()) << reader.status();
  RecordingSink sink;
  (*reader)->Run(sink, ReadOptions{});
  ASSERT_GE(sink.calls.size(), 2u);
  EXPECT_EQ(sink.calls[0], "process 0 pid 10");
  EXPECT_EQ(sink.calls[1], "process 1 pid 20");
  size_t events = 0, gpu = 0;
  for (const std::string& c : sink.calls) {
    events += c.starts_with("event");
    gpu += c.starts_with("gpu");
  }
  EXPECT_EQ(events, (*reader)->stats().host_events);
  EXPECT_EQ(gpu, (*reader)->stats().gpu_records);
  EXPECT_EQ(events, 4u);
  EXPECT_EQ(gpu, 4u);
  EXPECT_EQ(sink.calls.back(), "file 20");
  JobSymbols symbols = (*reader)->TakeSymbols();
  reader->reset();
  EXPECT_EQ(symbols.String(0, 1), "allreduce_grads");
  std::vector<SymbolFrame> stack = symbols.Stack(1, 2);
  ASSERT_EQ(stack.size(), 2u);  // innermost first
  EXPECT_EQ(stack[0].function, "");
  EXPECT_EQ(stack[0].module, "/usr/lib/libtorch_cuda.so");
  EXPECT_EQ(stack[0].rel_pc, 0x1234u);
  EXPECT_EQ(stack[1].function, "allreduce_grads");
}

// Issue 13: the recorder writes no device for NCCL calls (0 on the wire, a real ordinal too). A
// collective names its stream's device, or none without a stream: never device 0 by default.
TEST_F(TraceDir, NcclCallsNameTheirStreamsDeviceNotDeviceZero) {
  const Ns wall = 1'700'000'000 * kS;
  std::vector<Packet> packets = {HeaderPacket(7, 1, "a", "boot-a", 1000 * kS, wall)};
  Packet interned;
  InternedStream* stream = interned.mutable_interned()->add_streams();
  stream->set_id(3);
  stream->set_handle(0x5000);
  stream->set_device(1);
  packets.push_back(interned);
  Packet events;
  EventBatch* batch = events.mutable_events();
  batch->set_tid(7);
  Event* launch = batch->add_events();
  launch->set_type(CUDA_LAUNCH);
  launch->set_ts(1000 * kS);
  launch->set_device(1);
  launch->set_stream(3);
  Event* collective = batch->add_events();
  collective->set_type(NCCL_COLLECTIVE);
  collective->set_ts(1000);
  collective->set_stream(3);
  Event* init = batch->add_events();
  init->set_type(NCCL_COMM_INIT);
  init->set_ts(1000);
  packets.push_back(events);
  WriteFile("a.idlescope", packets);
  class Devices : public RecordSink {
   public:
    std::vector<int32_t> devices;
    void AddProcess(uint32_t, const ProcessInfo&) override {}
    void AddHostEvent(const HostEvent& e) override { devices.push_back(e.device); }
  } sink;
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_TRUE(reader.ok()) << reader.status();
  (*reader)->Run(sink, ReadOptions{});
  EXPECT_EQ(sink.devices, (std::vector<int32_t>{1, 1, -1}));
}

// The reader takes a v2/v3 file's LaunchRuns and KernelRuns as stored (FormatExpander::KeepRuns,
// issue 28) and must hand out exactly the records of the events they expand to: the same random
// job written as v1 and as v3 reads into the same records, field for field.
TEST_F(TraceDir, RunsReadAsTheRecordsOfTheirExpandedEvents) {
  const Ns wall = 1'700'000'000 * kS;
  std::mt19937 random(28);
  auto pick = [&](uint32_t n) { return static_cast<uint32_t>(random() % n); };
  std::vector<Packet> packets = {HeaderPacket(7, 0, "a", "boot-a", 1000 * kS, wall)};
  Packet interned;
  InternedStream* stream = interned.mutable_interned()->add_streams();
  stream->set_id(3);
  stream->set_device(1);
  InternedString* path = interned.mutable_interned()->add_strings();
  path->set_id(5);
  path->set_str("/ckpt/model.pt");
  packets.push_back(interned);
  uint64_t correlation = 100;
  for (int b = 0; b < 6; ++b) {
    Packet events;
    EventBatch* batch = events.mutable_events();
    batch->set_tid(7 + pick(2));
    Packet gpu;
    for (int i = 0; i < 300; ++i) {
      Event* e = batch->add_events();
      e->set_ts(i == 0 ? 1000 * kS + b * kS : 1 + pick(5000));
      e->set_dur(1 + pick(3000));
      const uint32_t kind = pick(20);
      // Launches of a few call sites (a failed one stays a plain Event), other calls between.
      e->set_type(kind < 16    ? CUDA_LAUNCH
                  : kind == 16 ? CUDA_MEMCPY
                  : kind == 17 ? NCCL_COLLECTIVE
                               : FILE_WRITE);
      e->set_async(AsyncByType(e->type()));
      e->set_api(1 + pick(2));
      e->set_stack(pick(3));
      if (e->type() != FILE_WRITE) e->set_stream(pick(4));
      if (e->type() != FILE_WRITE) e->set_device(pick(2));
      if (kind == 15) e->set_result(1);
      if (kind == 16) e->set_bytes(1 + pick(1 << 20));
      if (kind == 17) {
        e->set_comm(77);
        e->set_rank(0);
        e->set_nranks(2);
        e->set_seq(1 + pick(9));
      }
      if (kind >= 18) {
        e->set_path(5);
        e->set_fd(9);
        e->set_bytes(4096);
      }
      const bool correlated = kind <= 16 && pick(8) != 0;  // CUDA calls
      if (correlated) e->set_correlation(correlation += 1 + pick(3));
      // Its GPU record: kernels of a few sites, a copy now and then.
      GpuActivity* a = gpu.mutable_gpu()->add_activities();
      a->set_start(i == 0 ? 1000 * kS + b * kS : 1 + pick(5000));
      a->set_dur(1 + pick(3000));
      a->set_kind(kind == 16 ? GPU_MEMCPY : GPU_KERNEL);
      a->set_device(pick(2));
      a->set_stream(pick(3));
      if (kind == 16) {
        a->set_bytes(e->bytes());
        a->set_copy_kind(COPY_H2D);
      } else {
        a->set_name(1 + pick(3));
        a->set_grid(1 + pick(2));
        a->set_block(128);
        a->set_nccl(kind == 17);
      }
      if (correlated) a->set_correlation(e->correlation());
    }
    packets.push_back(events);
    packets.push_back(gpu);
  }
  Packet footer;
  footer.mutable_footer()->set_end_ns(static_cast<uint64_t>(1010 * kS));
  packets.push_back(footer);
  std::filesystem::create_directories(dir_ / "v1");
  std::filesystem::create_directories(dir_ / "v3");
  WriteFile("v1/a.idlescope", packets);
  std::vector<Packet> compact;
  FormatCompactor compactor;
  for (Packet p : packets) {
    Packet comms;
    compactor.Compact(&p, comms.mutable_interned());
    if (comms.interned().comms_size() > 0) compact.push_back(comms);
    compact.push_back(p);
  }
  WriteFile("v3/a.idlescope", compact);

  class Records : public RecordSink {
   public:
    std::vector<std::string> records;
    void AddProcess(uint32_t, const ProcessInfo&) override {}
    void AddHostEvent(const HostEvent& e) override {
      records.push_back(absl::StrCat(
          "event ", e.process, " ", e.tid, " ", e.type, " ", e.start, " ", e.end, " ", e.bytes, " ",
          e.count, " ", e.device, " ", e.copy_kind, " ", e.host_mem, " ", e.async, " ", e.fs_type,
          " ", e.fd, " ", e.net_scope, " ", e.stack, " ", e.path_id, " ", e.api_id, " ",
          std::string(e.api), " ", std::string(e.path), " ", std::string(e.argv), " ", e.nccl_op,
          " ", e.comm, " ", e.seq, " ", e.rank, " ", e.nranks, " ", e.group_depth, " ", e.ptr, " ",
          e.child_pid, " ", e.source_id, " ", std::string(e.source), " ", std::string(e.local), " ",
          e.peer_pid, " ", e.addr, " ", e.writable, " ", e.result, " ", e.correlation, " ",
          e.cpu_ns, " ", e.wait_ns, " ", int{e.thread_state}, " ", e.syscall));
    }
    void AddGpuRecord(const GpuRecord& r) override {
      records.push_back(absl::StrCat("gpu ", r.process, " ", r.kind, " ", r.start, " ", r.end, " ",
                                     r.device, " ", r.stream, " ", r.nccl, " ", r.grid, " ",
                                     r.block, " ", r.bytes, " ", r.name_id, " ", r.copy_kind, " ",
                                     r.src_kind, " ", r.dst_kind, " ", r.correlation));
    }
  };
  auto read = [](const std::filesystem::path& dir) {
    Records sink;
    auto reader = JobReader::Open({dir.string()});
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (reader.ok()) (*reader)->Run(sink, ReadOptions{});
    return sink.records;
  };
  const std::vector<std::string> v1 = read(dir_ / "v1");
  const std::vector<std::string> v3 = read(dir_ / "v3");
  EXPECT_EQ(v1.size(), 2u * 6 * 300);
  ASSERT_EQ(v1.size(), v3.size());
  for (size_t i = 0; i < v1.size(); ++i) ASSERT_EQ(v1[i], v3[i]) << "record " << i;
  // The v3 file does hold runs, of several sites, correlated or not.
  auto file = TraceFileReader::Open((dir_ / "v3/a.idlescope").string());
  ASSERT_TRUE(file.ok()) << file.status();
  Packet p;
  while ((*file)->Next(&p)) {
  }
  EXPECT_GT((*file)->stats().launch_runs, 20u);
  EXPECT_GT((*file)->stats().kernel_runs, 20u);
}

// v1 has no runs: a LaunchRun in a v1 file (no writer makes one; here an inconsistent one) means
// nothing and is not read, as before the reader took runs as stored.
TEST_F(TraceDir, ARunInAV1FileIsNotRead) {
  std::vector<Packet> packets = {HeaderPacket(7, 0, "a", "boot-a", 1000 * kS, 1000 * kS)};
  Packet events;
  Event* e = events.mutable_events()->add_events();
  e->set_type(CUDA_LAUNCH);
  e->set_ts(1000 * kS);
  LaunchRun* run = e->add_launches();
  for (int64_t ts : {1, 2, 3}) run->add_ts(ts);
  run->add_dur(1);
  run->add_site(5);
  packets.push_back(events);
  WriteFile("a.idlescope", packets);
  class Types : public RecordSink {
   public:
    std::vector<EventType> types;
    void AddProcess(uint32_t, const ProcessInfo&) override {}
    void AddHostEvent(const HostEvent& e) override { types.push_back(e.type); }
  } sink;
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_TRUE(reader.ok()) << reader.status();
  (*reader)->Run(sink, ReadOptions{});
  EXPECT_EQ(sink.types, std::vector<EventType>{CUDA_LAUNCH});
}

// Issue 16: a process killed before its first flush leaves an empty file, a crash a file of
// garbage; the report of the directory skips them with a warning and reports the rest.
TEST_F(TraceDir, SkipsEmptyAndUnreadableFilesOfADirectoryWithAWarning) {
  const Ns wall = 1'700'000'000 * kS;
  WriteFile("a.idlescope", Rank(10, 0, "a", "boot-a", 1000 * kS, wall, 1001 * kS));
  WriteFile("b.idlescope", Rank(20, 1, "a", "boot-a", 1000 * kS, wall, 1001 * kS));
  { std::ofstream empty(dir_ / "empty.idlescope"); }
  std::ofstream(dir_ / "junk.idlescope") << "not a trace at all";
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_TRUE(reader.ok()) << reader.status();
  JobAnalysis analysis;
  (*reader)->Run(analysis, ReadOptions{});
  EXPECT_EQ((*reader)->stats().files, 2u);
  EXPECT_EQ((*reader)->stats().skipped_files, 2u);
  JobSymbols symbols = (*reader)->TakeSymbols();
  JobReport r = analysis.BuildReport(symbols);
  EXPECT_EQ(r.files.size(), 2u);
  std::vector<std::string> skipped;
  for (const ReportWarning& w : r.warnings) {
    if (w.kind != WarningKind::kSkippedFile) continue;
    skipped.push_back(std::filesystem::path(w.subject).filename().string());
    EXPECT_NE(w.text.find(w.subject), std::string::npos) << w.text;  // the reader's one line
  }
  EXPECT_EQ(skipped, (std::vector<std::string>{"empty.idlescope", "junk.idlescope"}));
}

TEST_F(TraceDir, ADirectoryOfUnreadableFilesOnlyIsAnError) {
  { std::ofstream empty(dir_ / "empty.idlescope"); }
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_FALSE(reader.ok());
  std::string message(reader.status().message());
  EXPECT_NE(message.find("no readable trace file: 1 skipped"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST_F(TraceDir, ANamedUnreadableFileIsStillAnError) {
  { std::ofstream empty(dir_ / "empty.idlescope"); }
  EXPECT_FALSE(JobReader::Open({(dir_ / "empty.idlescope").string()}).ok());
}

// The trace files the process holds open now (/proc/self/fd entries naming one).
size_t OpenTraceFiles() {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::filesystem::path target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.extension() == ".idlescope") ++n;
  }
  return n;
}

// Counts the trace files open whenever a record arrives.
class OpenFilesSink : public RecordSink {
 public:
  size_t most_open = 0;
  uint64_t records = 0;
  void AddProcess(uint32_t, const ProcessInfo&) override {}
  void AddHostEvent(const HostEvent&) override { Sample(); }
  void AddGpuRecord(const GpuRecord&) override { Sample(); }

 private:
  void Sample() {
    ++records;
    most_open = std::max(most_open, OpenTraceFiles());
  }
};

// Issue 15/16: a file is opened when the merge reaches its process and closed when it ends, so
// processes that come one after another (DataLoader workers respawned every epoch, a test suite's
// processes) hold one file open at a time, not all of them.
TEST_F(TraceDir, OpensEachFileWhenItsProcessStartsAndClosesItWhenItEnds) {
  const Ns wall = 1'700'000'000 * kS;
  constexpr int kProcesses = 40;
  for (int i = 0; i < kProcesses; ++i) {
    Ns start = (1000 + 10 * i) * kS;  // 3 s each, 10 s apart
    WriteFile("p" + std::to_string(100 + i) + ".idlescope",
              Rank(static_cast<uint32_t>(100 + i), i, "a", "boot-a", start, wall, start + kS));
  }
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(OpenTraceFiles(), 0u);  // headers read, files closed again
  OpenFilesSink sink;
  (*reader)->Run(sink, ReadOptions{});
  EXPECT_EQ(sink.records, 4u * kProcesses);  // 2 host events, 2 GPU records each
  EXPECT_LE(sink.most_open, 2u);
  EXPECT_EQ(OpenTraceFiles(), 0u);
}

// Files that overlap in time beyond the open-file budget are suspended and reopened where they
// were: the same records in the same order as with every file open.
TEST_F(TraceDir, FilesBeyondTheOpenFileBudgetAreReadTheSame) {
  const Ns wall = 1'700'000'000 * kS;
  for (int i = 0; i < 6; ++i) {
    Ns start = 1000 * kS + i * 100'000'000;  // all overlap
    WriteFile("p" + std::to_string(100 + i) + ".idlescope",
              Rank(static_cast<uint32_t>(100 + i), i, "a", "boot-a", start, wall, start + kS));
  }
  auto read = [&](size_t budget, ReadStats* stats) {
    auto reader = JobReader::Open({dir_.string()});
    EXPECT_TRUE(reader.ok()) << reader.status();
    RecordingSink sink;
    ReadOptions options;
    options.max_open_files = budget;
    (*reader)->Run(sink, options);
    *stats = (*reader)->stats();
    return sink.calls;
  };
  ReadStats all, two;
  std::vector<std::string> expected = read(100, &all);
  EXPECT_EQ(read(2, &two), expected);
  EXPECT_EQ(all.suspensions, 0u);
  EXPECT_GT(two.suspensions, 0u);
  EXPECT_LE(two.most_open_files, 2u);
}

TEST_F(TraceDir, EmptyDirectoryIsAnError) {
  auto reader = JobReader::Open({dir_.string()});
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(std::string(reader.status().message()).find("no *.idlescope trace files"),
            std::string::npos);
}

}  // namespace
}  // namespace idlescope::testing

namespace idlescope::testing {
namespace {

TEST(TeeSink, HandsEveryRecordToEachSinkInOrder) {
  RecordingSink a, b;
  TeeSink tee({&a, &b});
  ProcessInfo info;
  info.pid = 42;
  tee.AddProcess(0, info);
  HostEvent e;
  tee.AddHostEvent(e);
  GpuRecord r;
  tee.AddGpuRecord(r);
  FileReport f;
  f.pid = 42;
  tee.AddFile(f);
  std::vector<std::string> want = {"process 0 pid 42", "event 0", "gpu 0", "file 42"};
  EXPECT_EQ(a.calls, want);
  EXPECT_EQ(b.calls, want);
}

}  // namespace
}  // namespace idlescope::testing
