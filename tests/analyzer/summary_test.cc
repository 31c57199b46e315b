// A shard's summary (analyzer/shard/summary.h) carries its part of the analysis
// (analysis/part_results.h) there and back: every field of a part written, every field of the
// message set by a part whose every figure is set, and a part read back summarizes to the same
// bytes. A field added to one side and forgotten on the other fails here.
#include "analyzer/shard/summary.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/reflection.h"

namespace idlescope::testing {
namespace {

// Strings "s<process>.<id>", stacks of one frame with every field set (SymbolFrame holds views:
// the names live here).
class Symbols : public SymbolSource {
 public:
  std::string String(uint32_t process, uint64_t id) const override {
    return "s" + std::to_string(process) + "." + std::to_string(id);
  }
  std::vector<SymbolFrame> Stack(uint32_t process, uint64_t id) const override {
    const std::string& function = Keep("f" + std::to_string(id));
    const std::string& module = Keep("/job/m" + std::to_string(process));
    return {SymbolFrame{.function = function,
                        .module = module,
                        .rel_pc = 0x40 + id,
                        .file = "/job/train.py",
                        .line = 7,
                        .kind = FRAME_PYTHON}};
  }
  std::vector<SymbolFrame> NativeStack(uint32_t process, uint64_t id) const override {
    return Stack(process, id);
  }

 private:
  const std::string& Keep(std::string s) const { return *names_.insert(std::move(s)).first; }
  mutable std::set<std::string> names_;
};

TopEvidence Evidence(uint32_t process, uint64_t id) {
  TopEvidence top(64);
  top.Add({process, id}, 11, 12, 2);
  top.RestoreEvicted(true);
  return top;
}

CauseTotals Totals(int cause) {
  CauseTotals t;
  t.ns = 100 + cause;
  t.pageable_ns = 2;
  t.pageable_bytes = 3.5;
  t.remote_ns = 4;
  t.worker_wait_ns = 5;
  t.gpu_side_ns = 6;
  t.snapshot_ns = 7;
  t.preprocess_ns = 8;
  t.exposed_ns = 9;
  t.stdin_ns = 12;
  t.socket_ns = 13;
  t.worker_cpu_ns = 14;
  t.worker_read_ns = 15;
  t.worker_cpu_wait_ns = 16;
  t.tail_ns = 10;
  t.outlast_ns = 17;
  t.writer_behind_ns = 18;
  t.bytes = 11.5;
  for (size_t op = 0; op < t.nccl_op_ns.size(); ++op) t.nccl_op_ns[op] = 20 + op;
  t.stacks = Evidence(1, 3);
  t.objects = Evidence(1, 4);
  t.directories = Evidence(0, 77);  // directories are job-wide: process 0
  return t;
}

ClosedGap Gap(uint32_t device, Ns start) {
  ClosedGap g;
  g.device = device;
  g.gap = {start, start + 50};
  g.kind = GapKind::kTail;
  for (int c = 0; c < kCauseCount; ++c) g.cause_ns[c] = c + 1;
  g.main = {.when = {start, start + 30},
            .cause = Cause::kCheckpointing,
            .event_class = EventClass::kCheckpointWrite,
            .gpu_side = true,
            .pageable = true,
            .snapshot = true,
            .process = 1,
            .tid = 9,
            .stack = 5,
            .object = 6,
            .bytes = 4096};
  g.has_main = true;
  g.main_found = true;
  g.main_ns = 30;
  g.residual_ns = 20;
  return g;
}

// A part with every figure set (the message's every field must then be set too).
PartResults FullPart() {
  PartResults part(16);
  part.end = 1000;
  part.finished_at = 1200;
  part.processes.push_back({.process = 1,
                            .last_seen = 900,
                            .end = 950,
                            .ended = true,
                            .visible_devices = 4,
                            .startup = {.pid = 11,
                                        .rank = 1,
                                        .start = 1,
                                        .launched = true,
                                        .first_launch = 300,
                                        .first_cuda = 200,
                                        .longest_cuda_ns = 50,
                                        .longest_cuda_api = 8,
                                        .code_reads = 3,
                                        .code_read_bytes = 300,
                                        .code_read_ns = 30,
                                        .model_read_bytes = 4000}});
  part.launches.push_back(
      {.host = "node0",
       .pid = 11,
       .launch = {
           .command = "pip install x", .stack_process = 1, .stack = 12, .exec_stack = true}});
  DeviceResult d;
  d.id = "node0/GPU-a";
  d.host = "node0";
  d.props = {.ordinal = 1,
             .name = "H200",
             .uuid = "GPU-a",
             .sm_count = 132,
             .total_memory = 1 << 30,
             .visible_devices = 4};
  d.rank = 1;
  d.ranks = {1, 2};
  d.processes = 2;
  d.compute_ns = 500;
  d.comm_ns = 40;
  d.transfer_ns = 30;
  d.any_kernel_ns = 520;
  d.kernels = {.kernels = 9,
               .nccl_kernels = 2,
               .kernel_ns = 480,
               .below_sm_count = 3,
               .with_grid = 8,
               .below_sm_ns = 60,
               .below_sm_blocks = 90};
  for (size_t b = 0; b < d.kernels.duration_log2.size(); ++b) d.kernels.duration_log2[b] = b + 1;
  d.long_gaps = 3;
  d.short_gaps = 40;
  d.short_gap_ns = 70;
  d.short_explained_ns = 20;
  d.launcher_cpu_ns = 31;
  d.stretched_gaps = 32;
  d.stretched_ns = 33;
  d.peak_memory = 1 << 20;
  d.first_kernel = 100;
  d.last_kernel_end = 1150;
  d.late_records = 1;
  d.late_ns = 2;
  d.launches = 99;
  for (int c = 0; c < kCauseCount; ++c) d.causes[c] = Totals(c);
  d.finished_at = 1200;
  d.has_last_gap = true;
  d.last_gap = Gap(0, 1150);
  part.devices.push_back(d);
  d.id = "node0/GPU-b";
  d.last_gap = Gap(1, 1150);
  part.devices.push_back(d);
  part.top_gaps.push_back(Gap(1, 400));
  for (size_t k = 0; k < part.host_activity.tables().size(); ++k) {
    HostActivity::Table& t = part.host_activity.mutable_tables()[k];
    t.ns = 10 + k;
    t.bytes = 20;
    t.count = 2;
    t.main_ns = 5;
    t.evicted = true;
    t.items[{1, 30 + k}] = {.ns = 10,
                            .bytes = 20,
                            .count = 2,
                            .main_ns = 5,
                            .longest = 7,
                            .tid = 9,
                            .main_thread = true,
                            .stack = 13,
                            .fs = FS_NFS,
                            .label = "cp a b",
                            .installer = true};
  }
  part.host_activity.RestoreReads(1, {.reads = 5, .bytes = 500, .ns = 50});
  part.copy_rates.pinned = {1 << 20, 100};
  part.copy_rates.d2h_pinned = {2 << 20, 200};
  part.copy_rates.d2h = {3 << 20, 300};
  part.directories.Add(77, "/data/shards");
  part.host_events = 1234;
  part.gpu_records = 567;
  part.forgotten_candidates = 8;
  part.late_candidates = 9;
  part.warnings.push_back({1,
                           {.kind = WarningKind::kNoFooter,
                            .subject = "/t/node0-11.idlescope",
                            .count = 1,
                            .other_count = 2,
                            .ns = 3,
                            .tail = 1,
                            .tail_detail = "length 99",
                            .code = "c",
                            .text = "t"}});
  part.files.push_back({1,
                        {.path = "/t/node0-11.idlescope",
                         .pid = 11,
                         .rank = 1,
                         .host = "node0",
                         .events = 1234,
                         .gpu_activities = 567,
                         .footer = true,
                         .ending = {}}});
  part.steps.push_back({.process = 1,
                        .marker = "ProfilerStep",
                        .marker_starts = {10, 20, 30},
                        .activities = 40,
                        .anchor = 3,
                        .per_step = 4,
                        .anchor_starts = {11, 21, 31},
                        .anchor_runs = 3,
                        .devices = {"node0/GPU-0"}});
  return part;
}

shard::Summary Summary(const PartResults& part) {
  shard::Shard shard;
  shard.add_owned(1);
  shard.add_guests(0);
  CrossRankRecorder cross_rank;
  cross_rank.Activity({.rank = 1,
                       .when = {5, 6},
                       .cause = Cause::kCheckpointing,
                       .process = 1,
                       .tid = 9,
                       .stack = 14,
                       .object = 15});
  return Summarize(part, cross_rank, Symbols(), shard, 3, true);
}

// Paths of the fields of `m` (recursively) that a message with every figure set leaves unset. A
// field of a repeated message is set when any element sets it (a first index is 0).
std::set<std::string> Unset(const google::protobuf::Message& m, const std::string& path) {
  std::set<std::string> out;
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  const google::protobuf::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const std::string name = path + "." + f->name();
    const bool message = f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE;
    if (f->is_repeated()) {
      const int n = r->FieldSize(m, f);
      if (n == 0) {
        out.insert(name);
      } else if (message) {
        std::set<std::string> all = Unset(r->GetRepeatedMessage(m, f, 0), name);
        for (int k = 1; k < n; ++k) {
          std::set<std::string> each = Unset(r->GetRepeatedMessage(m, f, k), name);
          std::erase_if(all, [&](const std::string& p) { return !each.contains(p); });
        }
        out.insert(all.begin(), all.end());
      }
    } else if (!r->HasField(m, f)) {
      out.insert(name);
    } else if (message) {
      std::set<std::string> inner = Unset(r->GetMessage(m, f), name);
      out.insert(inner.begin(), inner.end());
    }
  }
  return out;
}

TEST(Summary, APartWithEveryFigureSetSetsEveryFieldOfTheSummary) {
  const shard::Summary s = Summary(FullPart());
  // The cross-rank records are written by the summary file as they are made (summary_file.h),
  // the checksum is the file's last bytes, and the job digest is the plan's (map.cc).
  EXPECT_EQ(Unset(s, "Summary"),
            (std::set<std::string>{"Summary.checksum", "Summary.cross_rank", "Summary.job"}));
}

TEST(Summary, APartReadBackSummarizesToTheSameBytes) {
  std::vector<ProcessInfo> processes(2);
  processes[0].pid = 10;
  processes[1].pid = 11;
  processes[1].rank = 1;
  processes[1].start = 1;
  const shard::Summary first = Summary(FullPart());
  const PartResults back = PartOf(first, processes, 16);
  const shard::Summary second = Summary(back);
  EXPECT_TRUE(first.SerializeAsString() == second.SerializeAsString())
      << "first:\n"
      << first.DebugString() << "\nsecond:\n"
      << second.DebugString();
  // A few figures by hand: the struct side, not only the bytes.
  ASSERT_EQ(back.devices.size(), 2u);
  EXPECT_EQ(back.devices[0].causes[Index(Cause::kTail)].tail_ns, 10);
  EXPECT_EQ(back.devices[0].last_gap.main.bytes, 4096u);
  EXPECT_EQ(back.processes[0].startup.pid, 11u);  // from the plan's process, not the summary
  EXPECT_EQ(back.host_activity.reads()[1].bytes, 500u);
  EXPECT_EQ(*back.directories.Find(77), "/data/shards");
  EXPECT_EQ(back.warnings[0].warning.tail_detail, "length 99");
}

TEST(Summary, ProcessesOutsideTheJobAreLeftOut) {
  const shard::Summary s = Summary(FullPart());
  const PartResults back = PartOf(s, {}, 16);
  EXPECT_TRUE(back.processes.empty());
}

}  // namespace
}  // namespace idlescope::testing
