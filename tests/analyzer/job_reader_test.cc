// The read stage on real trace files written here with libprotobuf: merging files of two hosts
// onto one clock, stacks resolved from interned frames, footers and dropped-event warnings.
#include "analyzer/read/job_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "analyzer/analysis/job_analysis.h"
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
