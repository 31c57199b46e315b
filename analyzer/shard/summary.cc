#include "analyzer/shard/summary.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/shard/plan.h"

namespace idlescope {
namespace {

// The strings and stacks a summary names, resolved once each into its Symbols.
class SymbolWriter {
 public:
  SymbolWriter(const SymbolSource& source, bool python_frames, shard::Symbols* out)
      : source_(source), python_frames_(python_frames), out_(out) {}

  void String(uint32_t process, uint64_t id) {
    if (id == 0 || id == kLaunchEvidence || id == kDeathEvidence || IsCommandEvidence(id) ||
        !strings_.insert({process, id}).second) {
      return;
    }
    const std::string text = source_.String(process, id);
    if (text.empty()) return;
    shard::SymbolString* s = out_->add_strings();
    s->set_process(process);
    s->set_id(id);
    s->set_text(Text(text));
  }
  void Stack(uint32_t process, uint64_t id) {
    if (id == 0 || id == kLaunchEvidence || !stacks_.insert({process, id}).second) return;
    std::vector<SymbolFrame> frames =
        python_frames_ ? source_.Stack(process, id) : source_.NativeStack(process, id);
    if (frames.empty()) return;
    shard::SymbolStack* s = out_->add_stacks();
    s->set_process(process);
    s->set_id(id);
    for (const SymbolFrame& f : frames) {
      shard::SymbolFrame* m = s->add_frames();
      m->set_function(Text(f.function));
      m->set_module(Text(f.module));
      m->set_rel_pc(f.rel_pc);
      m->set_file(Text(f.file));
      m->set_line(f.line);
      m->set_kind(static_cast<uint32_t>(f.kind));
    }
  }
  // Every key of an evidence table: stacks, or strings (objects).
  void Stacks(const TopEvidence& top) {
    for (const auto& [key, w] : top.weights()) Stack(key.process, key.id);
  }
  void Strings(const TopEvidence& top) {
    for (const auto& [key, w] : top.weights()) String(key.process, key.id);
  }

 private:
  uint32_t Text(std::string_view text) {
    auto [it, inserted] = texts_.try_emplace(std::string(text), out_->text_size());
    if (inserted) out_->add_text(it->first);
    return it->second;
  }

  const SymbolSource& source_;
  bool python_frames_;
  shard::Symbols* out_;
  absl::flat_hash_map<std::string, uint32_t> texts_;
  absl::flat_hash_set<EvidenceKey> strings_;
  absl::flat_hash_set<EvidenceKey> stacks_;
};

void ToMessage(const TopEvidence& top, shard::Evidence* out) {
  out->set_capacity(top.capacity());
  out->set_evicted(top.evicted());
  // In key order: the same state gives the same bytes.
  std::vector<std::pair<EvidenceKey, EvidenceWeight>> all(top.weights().begin(),
                                                          top.weights().end());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.process, a.first.id) < std::tie(b.first.process, b.first.id);
  });
  for (const auto& [key, w] : all) {
    out->add_process(key.process);
    out->add_id(key.id);
    out->add_ns(w.ns);
    out->add_bytes(w.bytes);
    out->add_count(w.count);
  }
}

TopEvidence FromMessage(const shard::Evidence& m) {
  TopEvidence top(m.capacity() > 0 ? m.capacity() : 1024);
  top.RestoreEvicted(m.evicted());
  const int n =
      std::min({m.process_size(), m.id_size(), m.ns_size(), m.bytes_size(), m.count_size()});
  for (int i = 0; i < n; ++i) {
    top.Restore({m.process(i), m.id(i)}, {.ns = m.ns(i), .bytes = m.bytes(i), .count = m.count(i)});
  }
  return top;
}

void ToMessage(const CauseTotals& t, shard::CauseTotals* out) {
  out->set_ns(t.ns);
  out->set_pageable_ns(t.pageable_ns);
  out->set_pageable_bytes(t.pageable_bytes);
  out->set_remote_ns(t.remote_ns);
  out->set_worker_wait_ns(t.worker_wait_ns);
  out->set_worker_cpu_ns(t.worker_cpu_ns);
  out->set_worker_read_ns(t.worker_read_ns);
  out->set_worker_cpu_wait_ns(t.worker_cpu_wait_ns);
  out->set_gpu_side_ns(t.gpu_side_ns);
  out->set_snapshot_ns(t.snapshot_ns);
  out->set_preprocess_ns(t.preprocess_ns);
  out->set_exposed_ns(t.exposed_ns);
  out->set_stdin_ns(t.stdin_ns);
  out->set_socket_ns(t.socket_ns);
  out->set_tail_ns(t.tail_ns);
  out->set_outlast_ns(t.outlast_ns);
  out->set_writer_behind_ns(t.writer_behind_ns);
  out->set_bytes(t.bytes);
  for (Ns ns : t.nccl_op_ns) out->add_nccl_op_ns(ns);
  ToMessage(t.stacks, out->mutable_stacks());
  ToMessage(t.objects, out->mutable_objects());
  ToMessage(t.directories, out->mutable_directories());
}

CauseTotals FromMessage(const shard::CauseTotals& m) {
  CauseTotals t;
  t.ns = m.ns();
  t.pageable_ns = m.pageable_ns();
  t.pageable_bytes = m.pageable_bytes();
  t.remote_ns = m.remote_ns();
  t.worker_wait_ns = m.worker_wait_ns();
  t.worker_cpu_ns = m.worker_cpu_ns();
  t.worker_read_ns = m.worker_read_ns();
  t.worker_cpu_wait_ns = m.worker_cpu_wait_ns();
  t.gpu_side_ns = m.gpu_side_ns();
  t.snapshot_ns = m.snapshot_ns();
  t.preprocess_ns = m.preprocess_ns();
  t.exposed_ns = m.exposed_ns();
  t.stdin_ns = m.stdin_ns();
  t.socket_ns = m.socket_ns();
  t.tail_ns = m.tail_ns();
  t.outlast_ns = m.outlast_ns();
  t.writer_behind_ns = m.writer_behind_ns();
  t.bytes = m.bytes();
  for (int i = 0; i < m.nccl_op_ns_size() && i < static_cast<int>(t.nccl_op_ns.size()); ++i) {
    t.nccl_op_ns[static_cast<size_t>(i)] = m.nccl_op_ns(i);
  }
  t.stacks = FromMessage(m.stacks());
  t.objects = FromMessage(m.objects());
  t.directories = FromMessage(m.directories());
  return t;
}

void ToMessage(const Candidate& c, shard::Candidate* out) {
  out->set_start(c.when.start);
  out->set_end(c.when.end);
  out->set_cause(static_cast<uint32_t>(c.cause));
  out->set_event_class(static_cast<uint32_t>(c.event_class));
  out->set_gpu_side(c.gpu_side);
  out->set_pageable(c.pageable);
  out->set_snapshot(c.snapshot);
  out->set_process(c.process);
  out->set_tid(c.tid);
  out->set_stack(c.stack);
  out->set_object(c.object);
  out->set_bytes(c.bytes);
}

Candidate FromMessage(const shard::Candidate& m) {
  Candidate c;
  c.when = {m.start(), m.end()};
  c.cause = static_cast<Cause>(m.cause());
  c.event_class = static_cast<EventClass>(m.event_class());
  c.gpu_side = m.gpu_side();
  c.pageable = m.pageable();
  c.snapshot = m.snapshot();
  c.process = m.process();
  c.tid = m.tid();
  c.stack = m.stack();
  c.object = m.object();
  c.bytes = m.bytes();
  return c;
}

void ToMessage(const ClosedGap& g, shard::Gap* out) {
  out->set_device(g.device);
  out->set_start(g.gap.start);
  out->set_end(g.gap.end);
  out->set_kind(static_cast<uint32_t>(g.kind));
  for (Ns ns : g.cause_ns) out->add_cause_ns(ns);
  out->set_main_shown(g.has_main);
  out->set_main_found(g.main_found);
  out->set_main_ns(g.main_ns);
  out->set_residual_ns(g.residual_ns);
  if (g.main_found) ToMessage(g.main, out->mutable_main());
}

void ToMessage(const KernelStats& k, shard::KernelStats* out) {
  out->set_kernels(k.kernels);
  out->set_nccl_kernels(k.nccl_kernels);
  out->set_kernel_ns(k.kernel_ns);
  out->set_below_sm_count(k.below_sm_count);
  out->set_with_grid(k.with_grid);
  out->set_below_sm_ns(k.below_sm_ns);
  out->set_below_sm_blocks(k.below_sm_blocks);
  for (uint64_t n : k.duration_log2) out->add_duration_log2(n);
}

KernelStats FromMessage(const shard::KernelStats& m) {
  KernelStats k;
  k.kernels = m.kernels();
  k.nccl_kernels = m.nccl_kernels();
  k.kernel_ns = m.kernel_ns();
  k.below_sm_count = m.below_sm_count();
  k.with_grid = m.with_grid();
  k.below_sm_ns = m.below_sm_ns();
  k.below_sm_blocks = m.below_sm_blocks();
  for (int i = 0; i < m.duration_log2_size() && i < static_cast<int>(k.duration_log2.size()); ++i) {
    k.duration_log2[static_cast<size_t>(i)] = m.duration_log2(i);
  }
  return k;
}

void ToMessage(const DeviceResult& d, shard::DeviceResult* out) {
  out->set_id(d.id);
  out->set_host(d.host);
  shard::DeviceProps* p = out->mutable_props();
  p->set_ordinal(d.props.ordinal);
  p->set_name(d.props.name);
  p->set_uuid(d.props.uuid);
  p->set_sm_count(d.props.sm_count);
  p->set_total_memory(d.props.total_memory);
  p->set_visible_devices(d.props.visible_devices);
  out->set_rank(d.rank);
  for (int32_t r : d.ranks) out->add_ranks(r);
  out->set_processes(d.processes);
  out->set_compute_ns(d.compute_ns);
  out->set_comm_ns(d.comm_ns);
  out->set_transfer_ns(d.transfer_ns);
  out->set_any_kernel_ns(d.any_kernel_ns);
  ToMessage(d.kernels, out->mutable_kernels());
  out->set_long_gaps(d.long_gaps);
  out->set_short_gaps(d.short_gaps);
  out->set_short_gap_ns(d.short_gap_ns);
  out->set_short_explained_ns(d.short_explained_ns);
  out->set_launcher_cpu_ns(d.launcher_cpu_ns);
  out->set_stretched_gaps(d.stretched_gaps);
  out->set_stretched_ns(d.stretched_ns);
  out->set_peak_memory(d.peak_memory);
  out->set_first_kernel(d.first_kernel);
  out->set_last_kernel_end(d.last_kernel_end);
  out->set_late_records(d.late_records);
  out->set_late_ns(d.late_ns);
  out->set_launches(d.launches);
  for (const CauseTotals& t : d.causes) ToMessage(t, out->add_causes());
  out->set_finished_at(d.finished_at);
  if (d.has_last_gap) ToMessage(d.last_gap, out->mutable_last_gap());
}

void ToMessage(const ReportWarning& w, uint32_t file, shard::Warning* out) {
  out->set_kind(static_cast<uint32_t>(w.kind));
  out->set_subject(w.subject);
  out->set_count(w.count);
  out->set_other_count(w.other_count);
  out->set_ns(w.ns);
  out->set_tail(w.tail);
  out->set_tail_detail(w.tail_detail);
  out->set_code(w.code);
  out->set_text(w.text);
  out->set_file(file);
}

void EvidenceSymbols(const CauseTotals& t, SymbolWriter& symbols) {
  symbols.Stacks(t.stacks);
  symbols.Strings(t.objects);
}

void GapSymbols(const ClosedGap& g, SymbolWriter& symbols) {
  if (!g.main_found) return;
  symbols.Stack(g.main.process, g.main.stack);
  symbols.String(g.main.process, g.main.object);
}

}  // namespace

// --- cross-rank records ---

void CrossRankRecorder::CloseBatch() {
  if (batch_->records_size() == 0) return;
  std::string bytes = batch_->SerializeAsString();
  batch_.Clear();
  if (writer_ == nullptr) {
    batches_.push_back(std::move(bytes));
  } else if (status_.ok()) {
    status_ = writer_->AddBatch(bytes);
  }
}

shard::CrossRankRecord* CrossRankRecorder::Add() {
  if (batch_->records_size() >= kRecordsPerBatch) CloseBatch();
  if (batch_->records_size() == 0) batch_at_ = 0;
  ++records_;
  shard::CrossRankRecord* r = batch_->add_records();
  r->set_at(at_ - batch_at_);
  batch_at_ = at_;
  return r;
}

void CrossRankRecorder::WriteActivity(const RankActivity& a, shard::Activity* out) {
  if (a.stack != 0) stacks_.insert({a.process, a.stack});
  if (a.object != 0) objects_.insert({a.process, a.object});
  out->set_rank(a.rank);
  out->set_start(a.when.start - at_);
  out->set_end(a.when.end - a.when.start);
  out->set_cause(static_cast<uint32_t>(a.cause));
  out->set_process(a.process);
  out->set_tid(a.tid);
  out->set_stack(a.stack);
  out->set_object(a.object);
}

void CrossRankRecorder::Arrival(const CollectiveArrival& a) {
  for (const RankActivity& held : callers_.Called(a.process, a.tid)) {
    WriteActivity(held, Add()->mutable_activity());
  }
  shard::Arrival* out = Add()->mutable_arrival();
  out->set_comm(a.comm);
  out->set_seq(a.seq);
  out->set_nranks(a.nranks);
  out->set_nccl_rank(a.nccl_rank);
  out->set_job_rank(a.job_rank);
  out->set_arrival(a.arrival - at_);
  out->set_process(a.process);
  out->set_tid(a.tid);
  out->set_op(static_cast<uint32_t>(a.op));
  out->set_bytes(a.bytes);
  out->set_grouped(a.grouped);
}

void CrossRankRecorder::Activity(const RankActivity& a) {
  if (callers_.Offer(a)) WriteActivity(a, Add()->mutable_activity());
}

void CrossRankRecorder::NcclKernel(int32_t rank, Interval when) {
  shard::CrossRankRecord* r = Add();
  r->set_rank(rank);
  r->mutable_nccl_kernel()->set_start(when.start - at_);
  r->mutable_nccl_kernel()->set_end(when.end - when.start);
}

void CrossRankRecorder::Snapshot(int32_t rank, uint32_t process, uint32_t tid, Interval copy) {
  shard::Activity* out = Add()->mutable_snapshot();
  out->set_rank(rank);
  out->set_process(process);
  out->set_tid(tid);
  out->set_start(copy.start - at_);
  out->set_end(copy.end - copy.start);
}

absl::StatusOr<std::vector<std::string>> CrossRankRecorder::Finish() {
  CloseBatch();
  if (!status_.ok()) return status_;
  return std::move(batches_);
}

void CrossRankReplay::Load() {
  next_ = 0;
  batch_.Clear();
  while (batch_index_ < summary_.batches() && batch_->records_size() == 0) {
    if (!batch_->ParseFromString(summary_.Batch(batch_index_++))) corrupt_ = true;
  }
  if (batch_->records_size() > 0) at_ = batch_->records(0).at();
}

void CrossRankReplay::Next(CrossRankSink& sink) {
  const shard::CrossRankRecord& r = batch_->records(next_);
  const Ns at = at_;
  const uint32_t process = r.has_arrival()    ? r.arrival().process()
                           : r.has_activity() ? r.activity().process()
                           : r.has_snapshot() ? r.snapshot().process()
                                              : 0;
  if (process >= processes_) {
    corrupt_ = true;
  } else {
    Hand(r, at, sink);
  }
  if (++next_ >= batch_->records_size()) {
    Load();
  } else {
    at_ += batch_->records(next_).at();
  }
}

void CrossRankReplay::Hand(const shard::CrossRankRecord& r, Ns at, CrossRankSink& sink) {
  auto activity = [at](const shard::Activity& m) {
    const Ns start = at + m.start();
    return RankActivity{.rank = m.rank(),
                        .when = {start, start + m.end()},
                        .cause = static_cast<Cause>(m.cause()),
                        .process = m.process(),
                        .tid = m.tid(),
                        .stack = m.stack(),
                        .object = m.object()};
  };
  switch (r.record_case()) {
    case shard::CrossRankRecord::kArrival: {
      const shard::Arrival& a = r.arrival();
      sink.Arrival({.comm = a.comm(),
                    .seq = a.seq(),
                    .nranks = a.nranks(),
                    .nccl_rank = a.nccl_rank(),
                    .job_rank = a.job_rank(),
                    .arrival = at + a.arrival(),
                    .process = a.process(),
                    .tid = a.tid(),
                    .op = static_cast<NcclOp>(a.op()),
                    .bytes = a.bytes(),
                    .grouped = a.grouped()});
      break;
    }
    case shard::CrossRankRecord::kActivity:
      sink.Activity(activity(r.activity()));
      break;
    case shard::CrossRankRecord::kNcclKernel:
      sink.NcclKernel(r.rank(), {at + r.nccl_kernel().start(),
                                 at + r.nccl_kernel().start() + r.nccl_kernel().end()});
      break;
    case shard::CrossRankRecord::kSnapshot: {
      const RankActivity a = activity(r.snapshot());
      sink.Snapshot(a.rank, a.process, a.tid, a.when);
      break;
    }
    default:
      break;
  }
}

// --- the summary ---

shard::Summary Summarize(const PartResults& part, const CrossRankRecorder& cross_rank,
                         const SymbolSource& source, const shard::Shard& shard,
                         uint32_t shard_index, bool python_frames) {
  shard::Summary s;
  s.set_format(kShardFormat);
  for (Cause c : kAllCauses) s.add_causes(std::string(InfoOf(c).name));
  s.set_shard(shard_index);
  *s.mutable_owned() = shard.owned();
  *s.mutable_guests() = shard.guests();
  s.set_end(part.end);
  s.set_finished_at(part.finished_at);
  SymbolWriter symbols(source, python_frames, s.mutable_symbols());
  const HostActivity& activity = part.host_activity;
  for (const ProcessResult& p : part.processes) {
    shard::ProcessResult* r = s.add_processes();
    r->set_process(p.process);
    r->set_last_seen(p.last_seen);
    r->set_end(p.end);
    r->set_ended(p.ended);
    r->set_visible_devices(p.visible_devices);
    const Startup::Process& st = p.startup;
    shard::StartupProcess* m = r->mutable_startup();
    m->set_launched(st.launched);
    m->set_first_launch(st.first_launch);
    m->set_first_cuda(st.first_cuda);
    m->set_longest_cuda_ns(st.longest_cuda_ns);
    m->set_longest_cuda_api(st.longest_cuda_api);
    m->set_code_reads(st.code_reads);
    m->set_code_read_bytes(st.code_read_bytes);
    m->set_code_read_ns(st.code_read_ns);
    m->set_model_read_bytes(st.model_read_bytes);
    symbols.String(p.process, st.longest_cuda_api);
    if (p.process < activity.reads().size()) {
      const HostActivity::FileReads& reads = activity.reads()[p.process];
      r->mutable_reads()->set_reads(reads.reads);
      r->mutable_reads()->set_bytes(reads.bytes);
      r->mutable_reads()->set_ns(reads.ns);
    }
  }
  for (const DeviceResult& d : part.devices) {
    for (const CauseTotals& t : d.causes) EvidenceSymbols(t, symbols);
    if (d.has_last_gap) GapSymbols(d.last_gap, symbols);
    ToMessage(d, s.add_devices());
  }
  for (const ClosedGap& g : part.top_gaps) {
    GapSymbols(g, symbols);
    ToMessage(g, s.add_top_gaps());
  }
  for (const HostActivity::Table& table : activity.tables()) {
    shard::ActivityTable* t = s.mutable_host_activity()->add_tables();
    t->set_ns(table.ns);
    t->set_bytes(table.bytes);
    t->set_count(table.count);
    t->set_main_ns(table.main_ns);
    t->set_evicted(table.evicted);
    std::vector<std::pair<EvidenceKey, const HostActivity::Table::Weight*>> items;
    for (const auto& [key, w] : table.items) items.push_back({key, &w});
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return std::tie(a.first.process, a.first.id) < std::tie(b.first.process, b.first.id);
    });
    for (const auto& [key, w] : items) {
      shard::ActivityItem* item = t->add_items();
      item->set_process(key.process);
      item->set_id(key.id);
      item->set_ns(w->ns);
      item->set_bytes(w->bytes);
      item->set_count(w->count);
      item->set_main_ns(w->main_ns);
      item->set_longest(w->longest);
      item->set_tid(w->tid);
      item->set_main_thread(w->main_thread);
      item->set_stack(w->stack);
      item->set_fs(static_cast<uint32_t>(w->fs));
      item->set_label(w->label);
      item->set_installer(w->installer);
      symbols.String(key.process, key.id);
      symbols.Stack(key.process, w->stack);
    }
  }
  const CopyRates& rates = part.copy_rates;
  shard::CopyRates* r = s.mutable_copy_rates();
  r->set_pinned_bytes(rates.pinned.bytes);
  r->set_pinned_ns(rates.pinned.ns);
  r->set_d2h_pinned_bytes(rates.d2h_pinned.bytes);
  r->set_d2h_pinned_ns(rates.d2h_pinned.ns);
  r->set_d2h_bytes(rates.d2h.bytes);
  r->set_d2h_ns(rates.d2h.ns);
  // The directories its evidence names.
  absl::flat_hash_set<uint64_t> directories;
  for (const shard::DeviceResult& d : s.devices()) {
    for (const shard::CauseTotals& t : d.causes()) {
      for (uint64_t key : t.directories().id()) directories.insert(key);
    }
  }
  std::vector<uint64_t> sorted(directories.begin(), directories.end());
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t key : sorted) {
    const std::string* name = part.directories.Find(key);
    if (name == nullptr) continue;
    shard::Directory* d = s.add_directories();
    d->set_key(key);
    d->set_name(*name);
  }
  for (const InstallerLaunch& launch : part.launches) {
    shard::Launch* l = s.add_launches();
    l->set_host(launch.host);
    l->set_pid(launch.pid);
    l->set_command(launch.launch.command);
    l->set_stack_process(launch.launch.stack_process);
    l->set_stack(launch.launch.stack);
    l->set_exec_stack(launch.launch.exec_stack);
    symbols.Stack(launch.launch.stack_process, launch.launch.stack);
  }
  s.set_host_events(part.host_events);
  s.set_gpu_records(part.gpu_records);
  s.set_forgotten_candidates(part.forgotten_candidates);
  s.set_late_candidates(part.late_candidates);
  for (const FileWarning& w : part.warnings) ToMessage(w.warning, w.file, s.add_warnings());
  for (const FileResult& f : part.files) {
    shard::FileReport* m = s.add_files();
    m->set_file(f.file);
    m->set_path(f.report.path);
    m->set_pid(f.report.pid);
    m->set_rank(f.report.rank);
    m->set_host(f.report.host);
    m->set_events(f.report.events);
    m->set_gpu_activities(f.report.gpu_activities);
    m->set_footer(f.report.footer);
  }
  for (const ProcessSteps& p : part.steps) {
    shard::ProcessSteps* m = s.add_steps();
    m->set_process(p.process);
    m->set_marker(p.marker);
    m->mutable_marker_starts()->Add(p.marker_starts.begin(), p.marker_starts.end());
    m->set_activities(p.activities);
    m->set_anchor(p.anchor);
    m->set_per_step(p.per_step);
    m->mutable_anchor_starts()->Add(p.anchor_starts.begin(), p.anchor_starts.end());
    m->set_anchor_runs(p.anchor_runs);
    for (const std::string& d : p.devices) m->add_devices(d);
    if ((p.anchor & kActivityToken) == 0) symbols.String(p.process, p.anchor);
  }
  // Blame's evidence: the activity's stacks and objects (sorted: the same summary, byte for byte).
  std::vector<EvidenceKey> keys(cross_rank.stacks().begin(), cross_rank.stacks().end());
  auto by_key = [](const EvidenceKey& a, const EvidenceKey& b) {
    return std::tie(a.process, a.id) < std::tie(b.process, b.id);
  };
  std::sort(keys.begin(), keys.end(), by_key);
  for (const EvidenceKey& k : keys) symbols.Stack(k.process, k.id);
  keys.assign(cross_rank.objects().begin(), cross_rank.objects().end());
  std::sort(keys.begin(), keys.end(), by_key);
  for (const EvidenceKey& k : keys) symbols.String(k.process, k.id);
  return s;
}

// --- back from the messages ---

absl::Status CheckCauses(const shard::Summary& s) {
  bool same = s.causes_size() == kCauseCount;
  for (int i = 0; same && i < kCauseCount; ++i) {
    same = s.causes(i) == InfoOf(kAllCauses[static_cast<size_t>(i)]).name;
  }
  if (same) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "summary of shard %u was written with another list of causes (%s): merge it with the "
      "idlescope that wrote it",
      s.shard(), absl::StrJoin(s.causes(), ", ")));
}

namespace {

ClosedGap FromMessage(const shard::Gap& m) {
  ClosedGap g;
  g.device = m.device();
  g.gap = {m.start(), m.end()};
  g.kind = static_cast<GapKind>(m.kind());
  for (int c = 0; c < m.cause_ns_size() && c < kCauseCount; ++c) {
    g.cause_ns[static_cast<size_t>(c)] = m.cause_ns(c);
  }
  g.has_main = m.main_shown();
  g.main_found = m.main_found();
  g.main_ns = m.main_ns();
  g.residual_ns = m.residual_ns();
  if (m.has_main()) g.main = FromMessage(m.main());
  return g;
}

DeviceResult FromMessage(const shard::DeviceResult& m) {
  DeviceResult d;
  d.id = m.id();
  d.host = m.host();
  d.props.ordinal = m.props().ordinal();
  d.props.name = m.props().name();
  d.props.uuid = m.props().uuid();
  d.props.sm_count = m.props().sm_count();
  d.props.total_memory = m.props().total_memory();
  d.props.visible_devices = m.props().visible_devices();
  d.rank = m.rank();
  d.ranks.assign(m.ranks().begin(), m.ranks().end());
  d.processes = m.processes();
  d.compute_ns = m.compute_ns();
  d.comm_ns = m.comm_ns();
  d.transfer_ns = m.transfer_ns();
  d.any_kernel_ns = m.any_kernel_ns();
  d.kernels = FromMessage(m.kernels());
  d.long_gaps = m.long_gaps();
  d.short_gaps = m.short_gaps();
  d.short_gap_ns = m.short_gap_ns();
  d.short_explained_ns = m.short_explained_ns();
  d.launcher_cpu_ns = m.launcher_cpu_ns();
  d.stretched_gaps = m.stretched_gaps();
  d.stretched_ns = m.stretched_ns();
  d.peak_memory = m.peak_memory();
  d.first_kernel = m.first_kernel();
  d.last_kernel_end = m.last_kernel_end();
  d.late_records = m.late_records();
  d.late_ns = m.late_ns();
  d.launches = m.launches();
  for (int c = 0; c < m.causes_size() && c < kCauseCount; ++c) {
    d.causes[static_cast<size_t>(c)] = FromMessage(m.causes(c));
  }
  d.finished_at = m.finished_at();
  d.has_last_gap = m.has_last_gap();
  if (d.has_last_gap) d.last_gap = FromMessage(m.last_gap());
  return d;
}

Startup::Process FromMessage(const shard::StartupProcess& m, const ProcessInfo& info) {
  Startup::Process p;
  p.pid = info.pid;
  p.rank = info.rank;
  p.start = info.start;
  p.launched = m.launched();
  p.first_launch = m.first_launch();
  p.first_cuda = m.first_cuda();
  p.longest_cuda_ns = m.longest_cuda_ns();
  p.longest_cuda_api = m.longest_cuda_api();
  p.code_reads = m.code_reads();
  p.code_read_bytes = m.code_read_bytes();
  p.code_read_ns = m.code_read_ns();
  p.model_read_bytes = m.model_read_bytes();
  return p;
}

CopyRates FromMessage(const shard::CopyRates& m) {
  CopyRates r;
  r.pinned = {m.pinned_bytes(), m.pinned_ns()};
  r.d2h_pinned = {m.d2h_pinned_bytes(), m.d2h_pinned_ns()};
  r.d2h = {m.d2h_bytes(), m.d2h_ns()};
  return r;
}

ReportWarning FromMessage(const shard::Warning& m) {
  ReportWarning w;
  w.kind = static_cast<WarningKind>(m.kind());
  w.subject = m.subject();
  w.count = m.count();
  w.other_count = m.other_count();
  w.ns = m.ns();
  w.tail = m.tail();
  w.tail_detail = m.tail_detail();
  w.code = m.code();
  w.text = m.text();
  return w;
}

FileReport FromMessage(const shard::FileReport& m) {
  FileReport f;
  f.path = m.path();
  f.pid = m.pid();
  f.rank = m.rank();
  f.host = m.host();
  f.events = m.events();
  f.gpu_activities = m.gpu_activities();
  f.footer = m.footer();
  return f;
}

void FromMessage(const shard::HostActivity& m, HostActivity& into) {
  std::vector<HostActivity::Table>& tables = into.mutable_tables();
  for (int k = 0; k < m.tables_size() && k < static_cast<int>(tables.size()); ++k) {
    const shard::ActivityTable& t = m.tables(k);
    HostActivity::Table& table = tables[static_cast<size_t>(k)];
    table.ns = t.ns();
    table.bytes = t.bytes();
    table.count = t.count();
    table.main_ns = t.main_ns();
    table.evicted = t.evicted();
    for (const shard::ActivityItem& item : t.items()) {
      HostActivity::Table::Weight& w = table.items[{item.process(), item.id()}];
      w.ns = item.ns();
      w.bytes = item.bytes();
      w.count = item.count();
      w.main_ns = item.main_ns();
      w.longest = item.longest();
      w.tid = item.tid();
      w.main_thread = item.main_thread();
      w.stack = item.stack();
      w.fs = static_cast<FsType>(item.fs());
      w.label = item.label();
      w.installer = item.installer();
    }
  }
}

}  // namespace

PartResults PartOf(const shard::Summary& s, const std::vector<ProcessInfo>& processes,
                   size_t top_evidence) {
  PartResults part(top_evidence);
  part.end = s.end();
  part.finished_at = s.finished_at();
  for (const shard::ProcessResult& r : s.processes()) {
    if (r.process() >= processes.size()) continue;
    part.processes.push_back({.process = r.process(),
                              .last_seen = r.last_seen(),
                              .end = r.end(),
                              .ended = r.ended(),
                              .visible_devices = r.visible_devices(),
                              .startup = FromMessage(r.startup(), processes[r.process()])});
    part.host_activity.RestoreReads(
        r.process(),
        {.reads = r.reads().reads(), .bytes = r.reads().bytes(), .ns = r.reads().ns()});
  }
  for (const shard::Launch& l : s.launches()) {
    part.launches.push_back({.host = l.host(),
                             .pid = l.pid(),
                             .launch = {.command = l.command(),
                                        .stack_process = l.stack_process(),
                                        .stack = l.stack(),
                                        .exec_stack = l.exec_stack()}});
  }
  for (const shard::DeviceResult& m : s.devices()) part.devices.push_back(FromMessage(m));
  for (const shard::Gap& m : s.top_gaps()) part.top_gaps.push_back(FromMessage(m));
  FromMessage(s.host_activity(), part.host_activity);
  part.copy_rates = FromMessage(s.copy_rates());
  for (const shard::Directory& d : s.directories()) part.directories.Add(d.key(), d.name());
  part.host_events = s.host_events();
  part.gpu_records = s.gpu_records();
  part.forgotten_candidates = s.forgotten_candidates();
  part.late_candidates = s.late_candidates();
  for (const shard::Warning& w : s.warnings()) part.warnings.push_back({w.file(), FromMessage(w)});
  for (const shard::FileReport& f : s.files()) part.files.push_back({f.file(), FromMessage(f)});
  for (const shard::ProcessSteps& m : s.steps()) {
    ProcessSteps& p = part.steps.emplace_back();
    p.process = m.process();
    p.marker = m.marker();
    p.marker_starts.assign(m.marker_starts().begin(), m.marker_starts().end());
    p.activities = m.activities();
    p.anchor = m.anchor();
    p.per_step = m.per_step();
    p.anchor_starts.assign(m.anchor_starts().begin(), m.anchor_starts().end());
    p.anchor_runs = m.anchor_runs();
    p.devices.assign(m.devices().begin(), m.devices().end());
  }
  return part;
}

HostClock FromMessage(const shard::HostClock& m) {
  HostClock c;
  c.host = m.host();
  c.method = static_cast<ClockMethod>(m.method());
  c.via = m.via();
  c.correction_ns = m.correction();
  c.collectives = m.collectives();
  c.residual_ns = m.residual();
  return c;
}

// --- symbols ---

void SummarySymbols::Add(const shard::Summary& summary) {
  const shard::Symbols& table = summary.symbols();
  for (const shard::SymbolString& s : table.strings()) {
    if (s.text() >= static_cast<uint32_t>(table.text_size())) continue;
    strings_.try_emplace(EvidenceKey{s.process(), s.id()}, table.text(static_cast<int>(s.text())));
  }
  for (const shard::SymbolStack& s : table.stacks()) {
    stacks_.try_emplace(EvidenceKey{s.process(), s.id()}, StoredStack{&table, &s});
  }
}

std::string SummarySymbols::String(uint32_t process, uint64_t id) const {
  auto it = strings_.find(EvidenceKey{process, id});
  return it == strings_.end() ? std::string() : std::string(it->second);
}

std::vector<SymbolFrame> SummarySymbols::Frames(uint32_t process, uint64_t stack_id) const {
  std::vector<SymbolFrame> frames;
  auto it = stacks_.find(EvidenceKey{process, stack_id});
  if (it == stacks_.end()) return frames;
  const shard::Symbols& table = *it->second.table;
  auto text = [&](uint32_t i) -> std::string_view {
    return i < static_cast<uint32_t>(table.text_size()) ? table.text(static_cast<int>(i))
                                                        : std::string_view();
  };
  for (const shard::SymbolFrame& f : it->second.stack->frames()) {
    frames.push_back({.function = text(f.function()),
                      .module = text(f.module()),
                      .rel_pc = f.rel_pc(),
                      .file = text(f.file()),
                      .line = f.line(),
                      .kind = static_cast<FrameKind>(f.kind())});
  }
  return frames;
}

std::vector<SymbolFrame> SummarySymbols::Stack(uint32_t process, uint64_t stack_id) const {
  return Frames(process, stack_id);
}

std::vector<SymbolFrame> SummarySymbols::NativeStack(uint32_t process, uint64_t stack_id) const {
  return Frames(process, stack_id);
}

}  // namespace idlescope
