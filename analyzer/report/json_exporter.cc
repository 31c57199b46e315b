// The JSON report, schema version 2 (docs/report-json.md documents every field): the report model
// as it is, figures with their units in the field names, enums by their stable names, stacks by
// id into one table at the end. No sentences: the text exporter words the same data.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "analyzer/model/labels.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/report/units.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {
namespace {

std::string_view SavingMethodName(SavingMethod m) {
  switch (m) {
    case SavingMethod::kNone:
      return "none";
    case SavingMethod::kAll:
      return "all";
    case SavingMethod::kHalf:
      return "half";
    case SavingMethod::kPageableAtPinnedRate:
      return "pageable_at_pinned_rate";
    case SavingMethod::kCheckpointMinusSnapshot:
      return "checkpoint_minus_snapshot";
    case SavingMethod::kOverlapWithCompute:
      return "overlap_with_compute";
    case SavingMethod::kFillTheDevice:
      return "fill_the_device";
    case SavingMethod::kSpreadOverDevices:
      return "spread_over_devices";
  }
  return "none";
}

std::string_view RateSourceName(RateSource s) {
  switch (s) {
    case RateSource::kNone:
      return "";
    case RateSource::kPinnedCopies:
      return "pinned_copies";
    case RateSource::kPinnedDeviceToHostCopies:
      return "pinned_device_to_host_copies";
    case RateSource::kDeviceToHostCopies:
      return "device_to_host_copies";
    case RateSource::kAssumed:
      return "assumed";
  }
  return "";
}

std::string_view WarningKindName(WarningKind k) {
  switch (k) {
    case WarningKind::kTraceCut:
      return "trace_cut";
    case WarningKind::kNoFooter:
      return "no_footer";
    case WarningKind::kUndefinedCommIds:
      return "undefined_comm_ids";
    case WarningKind::kUnknownFields:
      return "unknown_fields";
    case WarningKind::kDroppedRecords:
      return "dropped_records";
    case WarningKind::kRecorderNotice:
      return "recorder_notice";
    case WarningKind::kSkippedFile:
      return "skipped_file";
    case WarningKind::kLaunchesWithoutGpuRecords:
      return "launches_without_gpu_records";
    case WarningKind::kLateGpuRecords:
      return "late_gpu_records";
    case WarningKind::kIncompleteCollectives:
      return "incomplete_collectives";
    case WarningKind::kForgottenCandidates:
      return "forgotten_events";
    case WarningKind::kLateCandidates:
      return "late_events";
  }
  return "";
}

// ReportWarning::tail, a TailProblem of the reader.
std::string_view TailProblemName(int tail) {
  switch (static_cast<TailProblem>(tail)) {
    case TailProblem::kNone:
      return "none";
    case TailProblem::kCutInPacket:
      return "cut_in_packet";
    case TailProblem::kCutInFraming:
      return "cut_in_framing";
    case TailProblem::kOversizedPacket:
      return "oversized_packet";
    case TailProblem::kBadFraming:
      return "bad_framing";
    case TailProblem::kUnparseablePacket:
      return "unparseable_packet";
    case TailProblem::kReadError:
      return "read_error";
  }
  return "";
}

void OptionalString(JsonWriter& j, std::string_view key, std::string_view s) {
  if (s.empty()) {
    j.Null(key);
  } else {
    j.String(key, s);
  }
}

void OptionalStack(JsonWriter& j, std::string_view key, StackId stack) {
  if (stack == 0) {
    j.Null(key);
  } else {
    j.Uint(key, stack);
  }
}

void CauseMap(JsonWriter& j, std::string_view key, const std::array<Ns, kCauseCount>& ns) {
  j.Key(key);
  j.BeginObject();
  for (int c = 0; c < kCauseCount; ++c) {
    if (ns[c] != 0) j.Int(InfoOf(static_cast<Cause>(c)).name, ns[c]);
  }
  j.EndObject();
}

// A finding as its row of model/findings.def names its fields.
void WriteFinding(JsonWriter& j, const Finding& f, const ReportSymbols& symbols) {
  const FindingKindInfo& names = InfoOf(f.kind);
  j.BeginObject();
  j.String("kind", names.name);
  if (!names.ns.empty()) j.Int(names.ns, f.ns);
  if (!names.other_ns.empty()) j.Int(names.other_ns, f.other_ns);
  if (!names.bytes.empty()) j.Uint(names.bytes, f.bytes);
  if (!names.count.empty()) j.Uint(names.count, f.count);
  if (!names.other_count.empty()) j.Uint(names.other_count, f.other_count);
  if (!names.of_count.empty()) j.Uint(names.of_count, f.of_count);
  if (!names.calls.empty()) j.Uint(names.calls, f.calls);
  if (names.rank) j.Int("rank", f.rank);
  if (names.pid) j.Uint("pid", f.pid);
  if (names.nccl_op) j.String("op", NcclOpName(f.nccl_op));
  if (names.activity) j.String("activity", HostActivityKindName(f.activity));
  if (!names.api.empty()) OptionalString(j, names.api, symbols.String(f.api));
  if (names.waiting_ranks) {
    j.Int("first_waiting_rank", f.first_rank);
    j.Int("last_waiting_rank", f.last_rank);
  }
  if (names.activity_evidence) {
    j.String("activity_cause", InfoOf(f.cause).name);
    j.Key("stack_id");
    if (f.stack != 0) {
      j.Uint(f.stack);
    } else {
      j.Null();
    }
    OptionalString(j, "object", symbols.String(f.object));
  }
  j.EndObject();
}

void WriteSaving(JsonWriter& j, const SavingBasis& b) {
  j.Key("saving");
  j.BeginObject();
  j.String("method", SavingMethodName(b.method));
  if (b.rate_source != RateSource::kNone) {
    j.Key("rate_bytes_per_ns");
    j.Fixed(b.rate_bytes_per_ns, 4);
    j.String("rate_source", RateSourceName(b.rate_source));
  }
  if (b.method == SavingMethod::kCheckpointMinusSnapshot) {
    j.Uint("written_bytes", b.bytes);
    j.Int("snapshot_ns", b.snapshot_ns);
    j.Int("tail_ns", b.tail_ns);
    j.Int("outlast_ns", b.outlast_ns);
  }
  if (b.method == SavingMethod::kOverlapWithCompute) j.Int("wait_ns", b.wait_ns);
  if (b.method == SavingMethod::kFillTheDevice) {
    j.Key("batch_growth");
    j.Fixed(b.batch_growth, 2);
  }
  if (b.method == SavingMethod::kSpreadOverDevices) {
    j.Uint("used_devices", b.used_devices);
    j.Uint("visible_devices", b.visible_devices);
  }
  j.EndObject();
}

void WriteEvidence(JsonWriter& j, std::string_view key, const std::vector<EvidenceItem>& items,
                   const ReportSymbols& symbols) {
  j.Key(key);
  j.BeginArray();
  for (const EvidenceItem& e : items) {
    j.BeginObject();
    switch (e.kind) {
      case EvidenceKind::kStack:
        j.Uint("stack_id", e.id);
        break;
      case EvidenceKind::kObject:
        j.String("object", symbols.String(e.id));
        break;
      case EvidenceKind::kDirectory:
        OptionalString(j, "directory", symbols.String(e.id));
        break;
      case EvidenceKind::kHostActivity:
        j.String("host_activity", HostActivityKindName(e.activity));
        OptionalString(j, "object", symbols.String(e.id));
        break;
      case EvidenceKind::kUnresolvedStack:
      case EvidenceKind::kUnresolvedObject:
        j.Null(e.kind == EvidenceKind::kUnresolvedStack ? "stack_id" : "object");
        j.Uint("process", e.process);
        j.Uint("trace_id", e.trace_id);
        break;
    }
    j.Int("idle_ns", e.ns);
    j.Uint("bytes", e.bytes);
    j.Uint("slices", e.count);
    j.EndObject();
  }
  j.EndArray();
}

void WriteDevices(JsonWriter& j, const JobReport& r) {
  j.Key("devices");
  j.BeginArray();
  for (const DeviceReport& d : r.devices) {
    j.BeginObject();
    j.String("id", d.id);
    j.String("host", d.host);
    OptionalString(j, "name", d.name);
    j.Int("rank", d.rank);
    j.Bool("used", d.used);
    j.Uint("processes", d.processes);
    j.Ratio("compute_fraction", d.compute_util);
    j.Ratio("kernel_active_fraction", d.kernel_active_util);
    j.Int("compute_ns", d.compute_ns);
    j.Int("comm_ns", d.comm_ns);
    j.Int("transfer_ns", d.transfer_ns);
    j.Int("kernel_active_ns", d.any_kernel_ns);
    j.Int("idle_ns", d.idle_ns);
    j.Uint("kernels", d.kernels);
    j.Uint("nccl_kernels", d.nccl_kernels);
    j.Int("median_kernel_ns", d.median_kernel_ns);
    if (d.below_sm_fraction < 0) {
      j.Null("below_sm_fraction");
    } else {
      j.Ratio("below_sm_fraction", d.below_sm_fraction);
    }
    j.Uint("long_gaps", d.long_gaps);
    j.Uint("short_gaps", d.short_gaps);
    j.Int("short_gap_ns", d.short_gap_ns);
    j.Int("peak_memory_bytes", d.peak_memory);
    if (d.total_memory == 0) {
      j.Null("total_memory_bytes");
    } else {
      j.Uint("total_memory_bytes", d.total_memory);
    }
    CauseMap(j, "idle_by_cause_ns", d.cause_ns);
    j.EndObject();
  }
  j.EndArray();
}

void WriteCauses(JsonWriter& j, const JobReport& r) {
  j.Key("causes");
  j.BeginArray();
  for (const CauseReport& c : r.causes) {
    const CauseInfo& info = InfoOf(c.cause);
    j.BeginObject();
    j.String("cause", info.name);
    j.String("dimension", info.dimension);
    j.String("paper_category", info.paper_category);
    j.String("fix", info.fix);
    j.Int("idle_ns", c.ns);
    j.Ratio("share_fraction", c.share);
    j.Int("saving_ns", c.saving_ns);
    j.Int("job_saving_ns", c.job_saving_ns);
    WriteSaving(j, c.basis);
    j.Key("findings");
    j.BeginArray();
    for (const Finding& f : c.findings) WriteFinding(j, f, r.symbols);
    j.EndArray();
    WriteEvidence(j, "stacks", c.stacks, r.symbols);
    WriteEvidence(j, "objects", c.objects, r.symbols);
    WriteEvidence(j, "directories", c.directories, r.symbols);
    j.EndObject();
  }
  j.EndArray();
}

void WriteTopGaps(JsonWriter& j, const JobReport& r) {
  j.Key("top_gaps");
  j.BeginArray();
  for (const GapReport& g : r.top_gaps) {
    j.BeginObject();
    j.String("device", g.device);
    j.Int("start_ns", g.start);
    j.Int("length_ns", g.length);
    j.String("kind", GapKindName(g.kind));
    j.Key("idle_by_cause_ns");
    j.BeginObject();
    for (const auto& [cause, ns] : g.causes) j.Int(InfoOf(cause).name, ns);
    j.EndObject();
    if (!g.has_evidence) {
      j.Null("evidence");
    } else {
      const GapEvidence& m = g.evidence;
      j.Key("evidence");
      j.BeginObject();
      j.String("cause", InfoOf(m.cause).name);
      j.Bool("gpu_side", m.gpu_side);
      OptionalString(j, "object", r.symbols.String(m.object));
      j.Uint("bytes", m.bytes);
      OptionalStack(j, "stack_id", m.stack);
      j.Uint("pid", m.pid);
      j.Uint("tid", m.tid);
      j.EndObject();
    }
    j.EndObject();
  }
  j.EndArray();
}

void WriteSteps(JsonWriter& j, const StepsReport& s) {
  j.Key("steps");
  j.BeginObject();
  j.String("source", StepSourceName(s.source));
  j.Uint("count", s.steps);
  j.Uint("measured", s.durations.size());
  OptionalString(j, "anchor", s.anchor);
  j.Uint("activities_per_step", s.per_step);
  j.Uint("pid", s.pid);
  j.Int("first_start_ns", s.first_start);
  j.Int("p25_ns", s.p25);
  j.Int("median_ns", s.median);
  j.Int("p90_ns", s.p90);
  j.Int("max_ns", s.max);
  j.Key("slowest");
  j.BeginArray();
  for (const SlowStep& slow : s.slowest) {
    j.BeginObject();
    j.Uint("step", slow.number);
    j.Int("start_ns", slow.start);
    j.Int("length_ns", slow.length);
    j.Int("gap_ns", slow.gap_ns);
    if (slow.gap_ns > 0) {
      j.String("cause", InfoOf(slow.cause).name);
    } else {
      j.Null("cause");
    }
    j.Int("cause_ns", slow.cause_ns);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

// Communicator ids as 16 hex digits: JSON numbers lose precision past 2^53.
std::string CommId(uint64_t comm) { return absl::StrFormat("%016x", comm); }

void WriteCollectives(JsonWriter& j, const JobReport& r) {
  j.Key("collectives");
  j.BeginObject();
  j.Key("by_communicator");
  j.BeginArray();
  for (const CollectiveReport& c : r.collectives) {
    j.BeginObject();
    j.String("comm", CommId(c.comm));
    j.String("op", NcclOpName(c.op));
    j.Int("ranks", c.nranks);
    j.Uint("collectives", c.collectives);
    j.Uint("size_bytes", c.size_bytes);
    j.Uint("timed", c.timed);
    j.Int("transfer_ns", c.transfer_ns);
    j.Ratio("algbw_bytes_per_ns", c.algbw);
    j.Ratio("busbw_bytes_per_ns", c.busbw);
    j.Int("waited_ns", c.waited_ns);
    if (c.most_last_rank >= 0) {
      j.Int("most_last_rank", c.most_last_rank);
    } else {
      j.Null("most_last_rank");
    }
    j.Uint("most_last_count", c.most_last_count);
    j.EndObject();
  }
  j.EndArray();
  j.Key("slowest");
  j.BeginArray();
  for (const CollectiveDetail& d : r.slowest_collectives) {
    j.BeginObject();
    j.String("comm", CommId(d.comm));
    j.Uint("seq", d.seq);
    j.String("op", NcclOpName(d.op));
    j.Int("ranks", d.nranks);
    j.Uint("size_bytes", d.size_bytes);
    j.Int("last_rank", d.last_rank);
    j.Int("waited_ns", d.waited_ns);
    if (d.transfer_ns >= 0) {
      j.Int("transfer_ns", d.transfer_ns);
    } else {
      j.Null("transfer_ns");
    }
    j.Key("arrivals");
    j.BeginArray();
    for (const CollectiveDetail::Rank& rank : d.ranks) {
      j.BeginObject();
      j.Int("rank", rank.rank);
      j.Int("call_ns", rank.arrival);
      if (rank.kernel_start >= 0) {
        j.Int("kernel_start_ns", rank.kernel_start);
        j.Int("kernel_ns", rank.kernel_ns);
      } else {
        j.Null("kernel_start_ns");
        j.Null("kernel_ns");
      }
      j.Int("waited_ns", rank.waited_ns);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

void WriteHostActivity(JsonWriter& j, const JobReport& r) {
  const HostActivityReport& host = r.host_activity;
  j.Key("host_activity");
  j.BeginObject();
  j.Key("groups");
  j.BeginArray();
  for (const HostActivityGroup& g : host.groups) {
    j.BeginObject();
    j.String("kind", HostActivityKindName(g.kind));
    j.Int("blocked_ns", g.ns);
    j.Uint("bytes", g.bytes);
    j.Uint("calls", g.count);
    j.Int("main_thread_ns", g.main_thread_ns);
    j.Bool("approximate", g.approximate);
    j.Key("items");
    j.BeginArray();
    for (const HostActivityItem& item : g.items) {
      j.BeginObject();
      OptionalString(j, "what", r.symbols.String(item.what));
      j.Int("blocked_ns", item.ns);
      j.Uint("bytes", item.bytes);
      j.Uint("calls", item.count);
      j.Uint("processes", item.processes);
      j.Uint("pid", item.pid);
      j.Uint("tid", item.tid);
      j.Bool("main_thread", item.main_thread);
      j.Int("main_thread_ns", item.main_thread_ns);
      OptionalString(j, "fs_type", FsTypeName(item.fs_type));
      OptionalStack(j, "stack_id", item.stack);
      j.Bool("installer", item.installer);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("workers");
  j.BeginObject();
  j.Uint("count", host.workers.size());
  j.Uint("with_reads", host.workers_with_reads);
  j.Key("processes");
  j.BeginArray();
  for (const WorkerProcess& w : host.workers) {
    j.BeginObject();
    j.Uint("pid", w.pid);
    j.Uint("ppid", w.ppid);
    j.Int("lifetime_ns", w.lifetime_ns);
    j.Uint("reads", w.reads);
    j.Uint("read_bytes", w.read_bytes);
    j.Int("read_ns", w.read_ns);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.EndObject();
}

void WriteWarnings(JsonWriter& j, const JobReport& r) {
  j.Key("warnings");
  j.BeginArray();
  for (const ReportWarning& w : r.warnings) {
    j.BeginObject();
    j.String("kind", WarningKindName(w.kind));
    switch (w.kind) {
      case WarningKind::kTraceCut:
        j.String("file", w.subject);
        j.String("problem", TailProblemName(w.tail));
        j.Uint("dropped_bytes", w.count);
        j.Uint("good_end_offset", w.other_count);
        OptionalString(j, "detail", w.tail_detail);
        break;
      case WarningKind::kNoFooter:
        j.String("file", w.subject);
        break;
      case WarningKind::kUndefinedCommIds:
        j.String("file", w.subject);
        j.Uint("events", w.count);
        break;
      case WarningKind::kUnknownFields:
        j.String("file", w.subject);
        j.Uint("fields", w.count);
        break;
      case WarningKind::kDroppedRecords:
        j.String("file", w.subject);
        j.Uint("host_events", w.count);
        j.Uint("gpu_records", w.other_count);
        break;
      case WarningKind::kRecorderNotice:
        j.String("file", w.subject);
        j.String("code", w.code);
        j.String("text", w.text);
        break;
      case WarningKind::kSkippedFile:
        j.String("file", w.subject);
        j.String("reason", w.text);
        break;
      case WarningKind::kLaunchesWithoutGpuRecords:
        j.String("device", w.subject);
        j.Uint("launches", w.count);
        break;
      case WarningKind::kLateGpuRecords:
        j.String("device", w.subject);
        j.Uint("records", w.count);
        j.Int("dropped_busy_ns", w.ns);
        break;
      case WarningKind::kIncompleteCollectives:
        j.Uint("collectives", w.count);
        j.Uint("processes_died", w.other_count);
        break;
      case WarningKind::kForgottenCandidates:
      case WarningKind::kLateCandidates:
        j.Uint("events", w.count);
        break;
    }
    j.EndObject();
  }
  j.EndArray();
}

// The stacks the report refers to, by id.
std::vector<StackId> ReferencedStacks(const JobReport& r) {
  std::vector<StackId> ids;
  for (const CauseReport& c : r.causes) {
    for (const EvidenceItem& e : c.stacks) {
      if (e.kind == EvidenceKind::kStack) ids.push_back(e.id);
    }
  }
  for (const GapReport& g : r.top_gaps) {
    if (g.has_evidence && g.evidence.stack != 0) ids.push_back(g.evidence.stack);
  }
  for (const HostActivityGroup& g : r.host_activity.groups) {
    for (const HostActivityItem& item : g.items) {
      if (item.stack != 0) ids.push_back(item.stack);
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void OptionalLine(JsonWriter& j, uint32_t line) {
  if (line == 0) {
    j.Null("line");
  } else {
    j.Uint("line", line);
  }
}

void WriteFrame(JsonWriter& j, const ReportFrame& f, const ReportSymbols& symbols) {
  j.BeginObject();
  j.String("kind", f.kind == FRAME_PYTHON ? "python" : "native");
  OptionalString(j, "function", symbols.String(f.function));
  OptionalString(j, "module", symbols.String(f.module));
  j.Uint("rel_pc", f.rel_pc);
  OptionalString(j, "file", symbols.String(f.file));
  OptionalLine(j, f.line);
  j.EndObject();
}

void WriteStacks(JsonWriter& j, const JobReport& r) {
  const ReportSymbols& symbols = r.symbols;
  j.Key("stacks");
  j.BeginArray();
  for (StackId id : ReferencedStacks(r)) {
    j.BeginObject();
    j.Uint("id", id);
    j.Key("frames");
    j.BeginArray();
    for (const ReportFrame& f : symbols.Stack(id)) WriteFrame(j, f, symbols);
    j.EndArray();
    if (const FirstUserFrame* first_user = symbols.FirstUser(id)) {
      j.Key("first_user");
      j.BeginObject();
      OptionalString(j, "file", symbols.String(first_user->frame.file));
      OptionalLine(j, first_user->frame.line);
      OptionalString(j, "function", symbols.String(first_user->frame.function));
      j.Uint("depth", first_user->depth);
      j.Bool("user_code", first_user->user_code);
      j.EndObject();
    } else {
      j.Null("first_user");
    }
    j.EndObject();
  }
  j.EndArray();
}

}  // namespace

std::string FormatJsonReport(const JobReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Int("schema_version", kReportSchemaVersion);
  j.String("tool", r.tool_version);
  j.Int("min_gap_ns", r.min_gap);

  j.Key("job");
  j.BeginObject();
  j.Uint("processes", r.processes);
  j.Key("ranks");
  j.BeginArray();
  for (int32_t rank : r.ranks) j.Int(rank);
  j.EndArray();
  j.Key("hosts");
  j.BeginArray();
  for (const std::string& host : r.hosts) j.String(host);
  j.EndArray();
  j.Int("span_ns", r.span);
  j.Uint("devices", r.devices.size());
  j.Int("gpu_time_ns", r.gpu_time);
  j.Int("idle_ns", r.idle_ns);
  j.Uint("host_events", r.events);
  j.Uint("gpu_activities", r.gpu_activities);
  j.EndObject();

  j.Key("utilization");
  j.BeginObject();
  j.Ratio("compute_fraction", r.compute_util);
  j.Ratio("kernel_active_fraction", r.kernel_active_util);
  j.EndObject();

  WriteDevices(j, r);
  WriteSteps(j, r.steps);
  WriteCauses(j, r);
  WriteTopGaps(j, r);
  WriteCollectives(j, r);
  WriteHostActivity(j, r);

  j.Key("files");
  j.BeginArray();
  for (const FileReport& f : r.files) {
    j.BeginObject();
    j.String("path", f.path);
    j.Uint("pid", f.pid);
    j.Int("rank", f.rank);
    j.String("host", f.host);
    j.Uint("host_events", f.events);
    j.Uint("gpu_activities", f.gpu_activities);
    j.Bool("footer", f.footer);
    j.Key("end");
    j.BeginObject();
    j.String("how", ProcessEndHow(f.ending));
    j.Int("status", f.ending.status);
    j.Int("at_ns", f.ending.at);
    j.Bool("clean", !f.EndedAbnormally());
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();

  j.Key("clocks");
  j.BeginArray();
  for (const HostClock& c : r.clocks) {
    j.BeginObject();
    j.String("host", c.host);
    j.String("method", ClockMethodName(c.method));
    j.String("via", c.via);
    j.Int("correction_ns", c.correction_ns);
    j.Uint("collectives", c.collectives);
    j.Int("residual_ns", c.residual_ns);
    j.EndObject();
  }
  j.EndArray();

  WriteWarnings(j, r);
  WriteStacks(j, r);
  j.EndObject();
  return j.Finish();
}

}  // namespace idlescope
