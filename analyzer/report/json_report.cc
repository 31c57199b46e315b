#include <string>
#include <string_view>

#include "analyzer/model/labels.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/report/report_text.h"
#include "analyzer/report/units.h"

namespace idlescope {
namespace {

void Evidence(JsonWriter& j, std::string_view key, const std::vector<EvidenceItem>& items,
              const ReportSymbols& symbols) {
  j.Key(key);
  j.BeginArray();
  for (const EvidenceItem& e : items) {
    j.BeginObject();
    j.Key("what");
    j.String(EvidenceLabel(e, symbols));
    j.Key("ns");
    j.Int(e.ns);
    j.Key("bytes");
    j.Uint(e.bytes);
    j.Key("count");
    j.Uint(e.count);
    j.EndObject();
  }
  j.EndArray();
}

}  // namespace

std::string FormatJsonReport(const JobReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Key("schema_version");
  j.Int(kReportSchemaVersion);
  j.Key("tool");
  j.String(r.tool_version);
  j.Key("min_gap_ns");
  j.Int(r.min_gap);

  j.Key("job");
  j.BeginObject();
  j.Key("processes");
  j.Uint(r.processes);
  j.Key("ranks");
  j.BeginArray();
  for (int32_t rank : r.ranks) j.Int(rank);
  j.EndArray();
  j.Key("hosts");
  j.BeginArray();
  for (const std::string& host : r.hosts) j.String(host);
  j.EndArray();
  j.Key("span_ns");
  j.Int(r.span);
  j.Key("devices");
  j.Uint(r.devices.size());
  j.Key("gpu_time_ns");
  j.Int(r.gpu_time);
  j.Key("idle_ns");
  j.Int(r.idle_ns);
  j.Key("host_events");
  j.Uint(r.events);
  j.Key("gpu_activities");
  j.Uint(r.gpu_activities);
  j.EndObject();

  j.Key("utilization");
  j.BeginObject();
  j.Key("compute");
  j.Ratio(r.compute_util);
  j.Key("kernel_active");
  j.Ratio(r.kernel_active_util);
  j.Key("explanation");
  j.String(kUtilizationExplanation);
  j.EndObject();

  j.Key("devices");
  j.BeginArray();
  for (const DeviceReport& d : r.devices) {
    j.BeginObject();
    j.Key("id");
    j.String(d.id);
    j.Key("host");
    j.String(d.host);
    j.Key("name");
    j.String(d.name);
    j.Key("rank");
    j.Int(d.rank);
    j.Key("used");
    j.Bool(d.used);
    j.Key("compute_util");
    j.Ratio(d.compute_util);
    j.Key("kernel_active_util");
    j.Ratio(d.kernel_active_util);
    j.Key("compute_ns");
    j.Int(d.compute_ns);
    j.Key("comm_ns");
    j.Int(d.comm_ns);
    j.Key("transfer_ns");
    j.Int(d.transfer_ns);
    j.Key("kernel_active_ns");
    j.Int(d.any_kernel_ns);
    j.Key("idle_ns");
    j.Int(d.idle_ns);
    j.Key("kernels");
    j.Uint(d.kernels);
    j.Key("nccl_kernels");
    j.Uint(d.nccl_kernels);
    j.Key("median_kernel_ns");
    j.Int(d.median_kernel_ns);
    j.Key("below_sm_fraction");
    j.Ratio(d.below_sm_fraction);
    j.Key("long_gaps");
    j.Uint(d.long_gaps);
    j.Key("short_gaps");
    j.Uint(d.short_gaps);
    j.Key("short_gap_ns");
    j.Int(d.short_gap_ns);
    j.Key("peak_memory_bytes");
    j.Int(d.peak_memory);
    j.Key("total_memory_bytes");
    j.Uint(d.total_memory);
    j.Key("idle_by_cause_ns");
    j.BeginObject();
    for (int c = 0; c < kCauseCount; ++c) {
      if (d.cause_ns[c] == 0) continue;
      j.Key(InfoOf(static_cast<Cause>(c)).name);
      j.Int(d.cause_ns[c]);
    }
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();

  j.Key("causes");
  j.BeginArray();
  for (const CauseReport& c : r.causes) {
    const CauseInfo& info = InfoOf(c.cause);
    j.BeginObject();
    j.Key("cause");
    j.String(info.name);
    j.Key("dimension");
    j.String(info.dimension);
    j.Key("paper_category");
    j.String(info.paper_category);
    j.Key("idle_ns");
    j.Int(c.ns);
    j.Key("share");
    j.Ratio(c.share);
    j.Key("saving_ns");
    j.Int(c.saving_ns);
    j.Key("saving_basis");
    j.String(SavingBasisText(c.cause, c.basis));
    j.Key("fix");
    j.String(info.fix);
    j.Key("notes");
    j.BeginArray();
    for (const Finding& f : c.findings) j.String(FindingText(f, r));
    j.EndArray();
    Evidence(j, "stacks", c.stacks, r.symbols);
    Evidence(j, "objects", c.objects, r.symbols);
    Evidence(j, "directories", c.directories, r.symbols);
    j.EndObject();
  }
  j.EndArray();

  j.Key("top_gaps");
  j.BeginArray();
  for (const GapReport& g : r.top_gaps) {
    j.BeginObject();
    j.Key("device");
    j.String(g.device);
    j.Key("start_ns");
    j.Int(g.start);
    j.Key("length_ns");
    j.Int(g.length);
    j.Key("kind");
    j.String(GapKindName(g.kind));
    j.Key("causes");
    j.BeginObject();
    for (const auto& [cause, ns] : g.causes) {
      j.Key(InfoOf(cause).name);
      j.Int(ns);
    }
    j.EndObject();
    j.Key("evidence");
    j.String(g.has_evidence ? GapEvidenceText(g.evidence, r.symbols) : "");
    j.EndObject();
  }
  j.EndArray();

  const HostActivityReport& host = r.host_activity;
  j.Key("host_activity");
  j.BeginObject();
  j.Key("groups");
  j.BeginArray();
  for (const HostActivityGroup& g : host.groups) {
    j.BeginObject();
    j.Key("kind");
    j.String(HostActivityKindName(g.kind));
    j.Key("ns");
    j.Int(g.ns);
    j.Key("bytes");
    j.Uint(g.bytes);
    j.Key("count");
    j.Uint(g.count);
    j.Key("main_thread_ns");
    j.Int(g.main_thread_ns);
    j.Key("approximate");
    j.Bool(g.approximate);
    j.Key("items");
    j.BeginArray();
    for (const HostActivityItem& item : g.items) {
      j.BeginObject();
      j.Key("what");
      j.String(ItemLabel(item.what, r.symbols));
      j.Key("ns");
      j.Int(item.ns);
      j.Key("bytes");
      j.Uint(item.bytes);
      j.Key("count");
      j.Uint(item.count);
      j.Key("processes");
      j.Uint(item.processes);
      j.Key("pid");
      j.Uint(item.pid);
      j.Key("tid");
      j.Uint(item.tid);
      j.Key("main_thread");
      j.Bool(item.main_thread);
      j.Key("main_thread_ns");
      j.Int(item.main_thread_ns);
      j.Key("fs_type");
      j.String(FsTypeName(item.fs_type));
      j.Key("stack");
      j.String(r.symbols.StackLabel(item.stack));
      j.Key("installer");
      j.Bool(item.installer);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
  }
  j.EndArray();
  j.Key("workers");
  j.BeginObject();
  j.Key("count");
  j.Uint(host.workers.size());
  j.Key("with_reads");
  j.Uint(host.workers_with_reads);
  j.Key("processes");
  j.BeginArray();
  for (const WorkerProcess& w : host.workers) {
    j.BeginObject();
    j.Key("pid");
    j.Uint(w.pid);
    j.Key("ppid");
    j.Uint(w.ppid);
    j.Key("lifetime_ns");
    j.Int(w.lifetime_ns);
    j.Key("reads");
    j.Uint(w.reads);
    j.Key("read_bytes");
    j.Uint(w.read_bytes);
    j.Key("read_ns");
    j.Int(w.read_ns);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  j.EndObject();

  j.Key("files");
  j.BeginArray();
  for (const FileReport& f : r.files) {
    j.BeginObject();
    j.Key("path");
    j.String(f.path);
    j.Key("pid");
    j.Uint(f.pid);
    j.Key("rank");
    j.Int(f.rank);
    j.Key("host");
    j.String(f.host);
    j.Key("host_events");
    j.Uint(f.events);
    j.Key("gpu_activities");
    j.Uint(f.gpu_activities);
    j.Key("footer");
    j.Bool(f.footer);
    j.EndObject();
  }
  j.EndArray();

  j.Key("warnings");
  j.BeginArray();
  for (const ReportWarning& w : r.warnings) j.String(WarningText(w));
  j.EndArray();
  j.EndObject();
  return j.Finish();
}

}  // namespace idlescope
