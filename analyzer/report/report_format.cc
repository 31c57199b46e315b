#include "analyzer/report/report_format.h"

#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/units.h"

namespace idlescope {
namespace {

std::string RankList(const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return "none";
  if (ranks.size() > 2 && ranks.back() - ranks.front() + 1 == static_cast<int32_t>(ranks.size())) {
    return absl::StrCat(ranks.front(), "-", ranks.back());
  }
  return absl::StrJoin(ranks, ",");
}

const char* const kUtilExplanation =
    "compute = the paper's U (non-NCCL kernels over the whole job span); kernel active = what "
    "nvidia-smi reports (any kernel, NCCL included, which may only be waiting for other ranks; "
    "neither says how much of the GPU a kernel uses)";

void Evidence(JsonWriter& j, std::string_view key, const std::vector<EvidenceItem>& items) {
  j.Key(key);
  j.BeginArray();
  for (const EvidenceItem& e : items) {
    j.BeginObject();
    j.Key("what");
    j.String(e.what);
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
  j.String(kUtilExplanation);
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
    j.String(c.saving_basis);
    j.Key("fix");
    j.String(info.fix);
    j.Key("notes");
    j.BeginArray();
    for (const std::string& note : c.notes) j.String(note);
    j.EndArray();
    Evidence(j, "stacks", c.stacks);
    Evidence(j, "objects", c.objects);
    Evidence(j, "directories", c.directories);
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
    j.String(g.evidence);
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
      j.String(item.what);
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
      j.String(item.fs_type);
      j.Key("stack");
      j.String(item.stack);
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
  for (const std::string& w : r.warnings) j.String(w);
  j.EndArray();
  j.EndObject();
  return j.Finish();
}

bool ShownInText(const CauseReport& cause, Ns gpu_time) {
  return cause.ns >= kTextMinCauseNs &&
         static_cast<double>(cause.ns) >= kTextMinCauseShare * static_cast<double>(gpu_time);
}

std::string FormatTextReport(const JobReport& r) {
  std::string out;
  size_t used = 0;
  for (const DeviceReport& d : r.devices) used += d.used;
  absl::StrAppendFormat(&out,
                        "idlescope report: %d process%s, ranks %s, %d GPU%s (%d used) on %d "
                        "host%s, job span %s\n\n",
                        r.processes, r.processes == 1 ? "" : "es", RankList(r.ranks),
                        r.devices.size(), r.devices.size() == 1 ? "" : "s", used, r.hosts.size(),
                        r.hosts.size() == 1 ? "" : "s", Seconds(r.span));

  absl::StrAppendFormat(&out, "Utilization (mean over GPUs)\n");
  absl::StrAppendFormat(&out, "  compute (paper's time-weighted U):      %6s\n",
                        Percent(r.compute_util));
  absl::StrAppendFormat(&out, "  kernel active (nvidia-smi \"GPU util\"): %6s\n",
                        Percent(r.kernel_active_util));
  absl::StrAppendFormat(&out, "  %s\n\n", kUtilExplanation);

  if (!r.devices.empty()) {
    absl::StrAppendFormat(&out, "Devices\n  %-36s %5s %8s %8s %10s %10s %9s %12s\n", "DEVICE",
                          "RANK", "COMPUTE", "ACTIVE", "COMM", "TRANSFER", "KERNELS",
                          "PEAK MEM GiB");
    for (const DeviceReport& d : r.devices) {
      std::string memory = d.total_memory > 0
                               ? absl::StrCat(GiB(d.peak_memory), "/", GiB(d.total_memory))
                               : (d.peak_memory > 0 ? GiB(d.peak_memory) : "-");
      absl::StrAppendFormat(&out, "  %-36s %5s %8s %8s %10s %10s %9d %12s%s\n", d.id,
                            d.rank >= 0 ? absl::StrCat(d.rank) : "-", Percent(d.compute_util),
                            Percent(d.kernel_active_util), Seconds(d.comm_ns),
                            Seconds(d.transfer_ns), d.kernels, memory,
                            d.used ? "" : "  (no kernels)");
    }
    out += '\n';
  }

  absl::StrAppendFormat(&out, "Idle GPU time by cause (GPU time %s, idle %s)\n",
                        Seconds(r.gpu_time), Seconds(r.idle_ns));
  absl::StrAppendFormat(&out, "  %-22s %12s %7s %12s  %s\n", "CAUSE", "IDLE", "SHARE",
                        "EST. SAVING", "PAPER CATEGORY");
  size_t omitted = 0;
  Ns omitted_ns = 0;
  for (const CauseReport& c : r.causes) {
    if (!ShownInText(c, r.gpu_time)) {
      ++omitted;
      omitted_ns += c.ns;
      continue;
    }
    const CauseInfo& info = InfoOf(c.cause);
    absl::StrAppendFormat(&out, "  %-22s %12s %7s %12s  %s\n", info.name, Seconds(c.ns),
                          Percent(c.share), Seconds(c.saving_ns), info.paper_category);
  }
  if (omitted > 0) {
    absl::StrAppendFormat(&out,
                          "  (%d more cause%s under 0.5 ms or 0.05%% of GPU time, %s in all: "
                          "see --json)\n",
                          omitted, omitted == 1 ? "" : "s", Seconds(omitted_ns));
  }
  out += '\n';

  absl::StrAppendFormat(&out, "Findings and fixes\n");
  int n = 0;
  for (const CauseReport& c : r.causes) {
    if (!ShownInText(c, r.gpu_time)) continue;
    const CauseInfo& info = InfoOf(c.cause);
    absl::StrAppendFormat(&out, "%2d. %s: %s idle (%s of GPU time)\n", ++n, info.name,
                          Seconds(c.ns), Percent(c.share));
    for (const std::string& note : c.notes) absl::StrAppendFormat(&out, "    - %s\n", note);
    for (const EvidenceItem& e : c.stacks) {
      absl::StrAppendFormat(&out, "    stack  %s  %s\n", Seconds(e.ns), e.what);
    }
    for (const EvidenceItem& e : c.objects) {
      absl::StrAppendFormat(&out, "    object %s  %s%s\n", Seconds(e.ns), e.what,
                            e.bytes > 0 ? absl::StrCat(" (", e.bytes, " bytes)") : "");
    }
    for (const EvidenceItem& e : c.directories) {
      absl::StrAppendFormat(&out, "    dir    %s  %s/%s\n", Seconds(e.ns), e.what,
                            e.bytes > 0 ? absl::StrCat(" (", e.bytes, " bytes)") : "");
    }
    absl::StrAppendFormat(&out, "    fix: %s\n", info.fix);
    absl::StrAppendFormat(&out, "    estimated saving: %s (%s)\n", Seconds(c.saving_ns),
                          c.saving_basis);
  }
  out += '\n';

  if (!r.top_gaps.empty()) {
    absl::StrAppendFormat(&out, "Longest idle gaps (>= %s)\n", Seconds(r.min_gap));
    int g = 0;
    for (const GapReport& gap : r.top_gaps) {
      std::vector<std::string> causes;
      for (const auto& [cause, ns] : gap.causes) {
        if (ns < kTextMinCauseNs) continue;  // would print as 0.000 s
        causes.push_back(absl::StrCat(std::string(InfoOf(cause).name), " ", Seconds(ns)));
      }
      absl::StrAppendFormat(&out, "%2d. %s at +%s for %s (%s): %s\n", ++g, gap.device,
                            Seconds(gap.start), Seconds(gap.length), GapKindName(gap.kind),
                            absl::StrJoin(causes, ", "));
      if (!gap.evidence.empty()) absl::StrAppendFormat(&out, "    %s\n", gap.evidence);
    }
    out += '\n';
  }

  const HostActivityReport& host = r.host_activity;
  if (!host.groups.empty() || !host.workers.empty()) {
    absl::StrAppendFormat(&out, "Host activity (time blocked in traced calls, all threads)\n");
    absl::StrAppendFormat(&out, "  %-18s %10s %9s %14s %10s\n", "KIND", "BLOCKED", "CALLS", "BYTES",
                          "MAIN THR");
    for (const HostActivityGroup& g : host.groups) {
      absl::StrAppendFormat(&out, "  %-18s %10s %9d %14d %10s\n", HostActivityKindName(g.kind),
                            Seconds(g.ns), g.count, g.bytes, Seconds(g.main_thread_ns));
    }
    for (const HostActivityGroup& g : host.groups) {
      if (g.items.empty()) continue;
      absl::StrAppendFormat(&out, "  %s%s\n", HostActivityKindName(g.kind),
                            g.approximate ? " (approximate: many distinct items)" : "");
      for (const HostActivityItem& item : g.items) {
        std::vector<std::string> details;
        if (item.bytes > 0) details.push_back(absl::StrCat(item.bytes, " bytes"));
        details.push_back(absl::StrCat(item.count, item.count == 1 ? " call" : " calls"));
        if (item.processes > 1) details.push_back(absl::StrCat(item.processes, " processes"));
        if (item.pid != 0) {
          details.push_back(absl::StrCat("pid ", item.pid,
                                         item.tid == 0      ? ""
                                         : item.main_thread ? " main thread"
                                                            : absl::StrCat(" thread ", item.tid)));
        }
        if (!item.fs_type.empty()) details.push_back(item.fs_type);
        if (item.installer) details.push_back("installer");
        absl::StrAppendFormat(&out, "    %s  %s (%s)\n", Seconds(item.ns), item.what,
                              absl::StrJoin(details, ", "));
        if (!item.stack.empty()) absl::StrAppendFormat(&out, "      at %s\n", item.stack);
      }
    }
    if (!host.workers.empty()) {
      uint64_t reads = 0, bytes = 0;
      Ns read_ns = 0;
      std::vector<std::string> pids;
      for (const WorkerProcess& w : host.workers) {
        reads += w.reads;
        bytes += w.read_bytes;
        read_ns += w.read_ns;
        if (pids.size() < 16) pids.push_back(absl::StrCat(w.pid));
      }
      absl::StrAppendFormat(
          &out,
          "  worker processes: %d fork()ed children of job processes (DataLoader workers, "
          "multiprocessing), %d reading files: %d reads, %d bytes, %s blocked\n",
          host.workers.size(), host.workers_with_reads, reads, bytes, Seconds(read_ns));
      absl::StrAppendFormat(&out, "    pids %s%s\n", absl::StrJoin(pids, ", "),
                            host.workers.size() > pids.size() ? ", ..." : "");
    }
    out += '\n';
  }

  if (!r.warnings.empty()) {
    absl::StrAppendFormat(&out, "Warnings\n");
    for (const std::string& w : r.warnings) absl::StrAppendFormat(&out, "  - %s\n", w);
  }
  return out;
}

}  // namespace idlescope
