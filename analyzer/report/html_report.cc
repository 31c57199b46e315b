#include "analyzer/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/model/labels.h"
#include "analyzer/report/findings_text.h"
#include "analyzer/report/html_assets.h"
#include "analyzer/report/html_page.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/report_exporters.h"
#include "analyzer/report/text_cat.h"
#include "analyzer/report/units.h"

namespace idlescope {
namespace {

// The strip's shares, one character per bucket and state (html/strips.js decodes them).
constexpr std::string_view kLevels =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
static_assert(kLevels.size() == kTopStripLevel + 1);

std::string DeviceLabel(const DeviceReport& d) {
  return d.rank >= 0 ? Cat("rank ", d.rank, " \xc2\xb7 ", d.id) : d.id;
}

std::string RankList(const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return "none";
  if (ranks.size() > 2 && ranks.back() - ranks.front() + 1 == static_cast<int32_t>(ranks.size())) {
    return Cat(ranks.front(), "-", ranks.back());
  }
  return absl::StrJoin(ranks, ", ");
}

// The devices in the order the page lists them: by rank (numerically: rank 2 before rank 10),
// devices without a rank last, then by id.
std::vector<size_t> DeviceOrder(const JobReport& r) {
  std::vector<size_t> order(r.devices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const DeviceReport& x = r.devices[a];
    const DeviceReport& y = r.devices[b];
    if ((x.rank < 0) != (y.rank < 0)) return y.rank < 0;
    return x.rank != y.rank ? x.rank < y.rank : x.id < y.id;
  });
  return order;
}

// The cause a device's time went to when it ran no kernel (its whole row is that cause).
Cause WholeDeviceCause(const DeviceReport& d) {
  int best = 0;
  for (int c = 1; c < kCauseCount; ++c) {
    if (d.cause_ns[c] > d.cause_ns[best]) best = c;
  }
  return static_cast<Cause>(best);
}

// The strip's data: states (0: busy, 1 + cause), rows in the report's device order, the gaps.
std::string StripData(const JobReport& r, const JobStrips& strips) {
  absl::flat_hash_map<std::string_view, const DeviceStrip*> strip_of;
  for (const DeviceStrip& s : strips.devices) strip_of[s.device] = &s;
  absl::flat_hash_map<std::string_view, size_t> row_of;

  // Inside a <script> element: no "</script>" may end it early.
  JsonWriter j(JsonLayout::kCompact, /*in_script=*/true);
  j.BeginObject();
  j.Int("bucket_ns", strips.bucket_ns);
  j.Uint("buckets", strips.buckets);
  j.Int("span_ns", r.span);
  j.Key("states");
  j.BeginArray();
  auto state = [&](std::string_view name, std::string_view color) {
    j.BeginObject();
    j.String("name", name);
    j.String("color", color);
    j.EndObject();
  };
  // Gaps shorter than min_gap are their short-gap cause's on the strip, not busy time.
  state("busy (kernels)", kBusyColor);
  for (Cause c : kAllCauses) state(InfoOf(c).name, CauseColor(c));
  j.EndArray();
  j.Key("rows");
  j.BeginArray();
  const std::vector<size_t> order = DeviceOrder(r);
  for (size_t i = 0; i < order.size(); ++i) {
    const DeviceReport& d = r.devices[order[i]];
    row_of[d.id] = i;
    j.BeginObject();
    j.String("label", DeviceLabel(d));
    auto it = strip_of.find(d.id);
    if (!d.used || it == strip_of.end()) {
      j.Int("whole", 1 + Index(WholeDeviceCause(d)));
      j.EndObject();
      continue;
    }
    j.Int("whole", -1);
    j.Key("levels");
    j.BeginObject();
    const DeviceStrip& s = *it->second;
    // The short gaps' time goes to the cause the report gave it (as in DeviceReports).
    const int short_cause = Index(ShortGapCause(d.compute_util, d.peak_memory, d.total_memory));
    std::vector<Ns> idle(strips.buckets, 0);
    for (int c = 0; c < kCauseCount; ++c) {
      for (size_t b = 0; b < strips.buckets; ++b) {
        idle[b] = b < s.idle.size() ? s.idle[b][c] : 0;
        if (c == short_cause && b < s.short_gap.size()) idle[b] += s.short_gap[b];
      }
      std::string levels(strips.buckets, kLevels[0]);
      bool any = false;
      std::vector<int> level = ShareLevels(idle, strips.bucket_ns, r.span);
      for (size_t b = 0; b < strips.buckets; ++b) {
        levels[b] = kLevels[level[b]];
        any = any || level[b] > 0;
      }
      if (any) j.String(Cat(1 + c), levels);
    }
    j.EndObject();
    j.EndObject();
  }
  j.EndArray();
  j.Key("gaps");
  j.BeginArray();
  for (const GapReport& g : r.top_gaps) {
    auto row = row_of.find(g.device);
    j.BeginObject();
    j.Uint("row", row == row_of.end() ? 0 : row->second);
    j.Int("start_ns", g.start);
    j.Int("length_ns", g.length);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  std::string data = j.Finish();
  data.pop_back();  // the document's final newline: the element's text ends at the data
  return data;
}

std::string Card(std::string_view value, std::string_view key) {
  return Cat("<div class=\"card\"><div class=\"v\">", HtmlEscape(value), "</div><div class=\"k\">",
             HtmlEscape(key), "</div></div>\n");
}

void Summary(const JobReport& r, std::string& out) {
  size_t used = 0;
  for (const DeviceReport& d : r.devices) used += d.used;
  CatTo(&out, "<h1>idlescope report</h1>\n<p class=\"sub\">",
        HtmlEscape(
            absl::StrFormat("%d process%s, ranks %s, %d GPU%s (%d used) on %d host%s, job span %s",
                            r.processes, r.processes == 1 ? "" : "es", RankList(r.ranks),
                            r.devices.size(), r.devices.size() == 1 ? "" : "s", used,
                            r.hosts.size(), r.hosts.size() == 1 ? "" : "s", Seconds(r.span))),
        "</p>\n<div class=\"cards\">\n");
  out += Card(Percent(r.compute_util), "compute utilization (the paper's U)");
  out += Card(Percent(r.kernel_active_util), "kernel active (nvidia-smi \"GPU util\")");
  // GPU time is device-seconds (the span times the devices): GPU-s, never the job's seconds.
  out += Card(GpuSeconds(r.idle_ns), Cat("idle GPU time of ", GpuSeconds(r.gpu_time)));
  if (!r.causes.empty()) {
    const CauseReport& top = r.causes.front();
    out += Card(GpuSeconds(top.ns), Cat("largest cause: ", InfoOf(top.cause).name));
    Ns saving = 0;
    for (const CauseReport& c : r.causes) saving += c.saving_ns;
    out += Card(GpuSeconds(saving), "estimated saving of all fixes");
  }
  CatTo(&out, "</div>\n<p class=\"sub\" style=\"margin-top:8px\">",
        HtmlEscape(kUtilizationExplanation), "</p>\n");
}

void Timeline(const JobReport& r, std::string& out) {
  out += "<h2 id=\"timeline\">Timeline</h2>\n<div class=\"legend\">";
  CatTo(&out, "<span><span class=\"swatch\" style=\"background:", kBusyColor,
        "\"></span>busy (kernels)</span>");
  std::vector<bool> shown(kCauseCount, false);
  for (const CauseReport& c : r.causes) shown[Index(c.cause)] = true;
  for (int c = 0; c < kCauseCount; ++c) {
    if (!shown[c]) continue;
    CatTo(&out,
          "<span><span class=\"swatch\" style=\"background:", CauseColor(static_cast<Cause>(c)),
          "\"></span>", InfoOf(static_cast<Cause>(c)).name, "</span>");
  }
  out +=
      "<span><span class=\"swatch\" style=\"border:1.5px solid #1d2430\"></span>longest "
      "gaps</span></div>\n"
      "<div class=\"controls\"><button id=\"zoom-in\">zoom in</button>"
      "<button id=\"zoom-out\">zoom out</button><button id=\"zoom-reset\">whole job</button>"
      "<span id=\"range\"></span><span>wheel: zoom, drag: pan, click a gap below: go to "
      "it</span></div>\n<div id=\"strips\"></div>\n";
}

void CauseChart(const JobReport& r, std::string& out) {
  CatTo(&out, "<h2 id=\"causes\">Idle GPU time by cause</h2>\n<p class=\"sub\">GPU time ",
        GpuSeconds(r.gpu_time), " (job span x devices), idle ", GpuSeconds(r.idle_ns),
        "</p>\n<div class=\"scroll\"><table>\n<tr><th>cause</th><th></th><th class=\"n\">idle</th>"
        "<th class=\"n\">share</th><th class=\"n\">est. saving</th><th class=\"n\">job "
        "sooner</th><th>paper category</th></tr>\n");
  Ns largest = r.causes.empty() ? 1 : std::max<Ns>(1, r.causes.front().ns);
  for (const CauseReport& c : r.causes) {
    const CauseInfo& info = InfoOf(c.cause);
    CatTo(&out,
          "<tr><td class=\"cause\"><span class=\"swatch\" style=\"background:", CauseColor(c.cause),
          "\"></span><a href=\"#cause-", info.name, "\">", info.name,
          "</a></td><td class=\"barcell\">",
          HtmlBar(static_cast<double>(c.ns) / static_cast<double>(largest), CauseColor(c.cause)),
          "</td><td class=\"n\">", GpuSeconds(c.ns), "</td><td class=\"n\">", Percent(c.share),
          "</td><td class=\"n\">", GpuSeconds(c.saving_ns), "</td><td class=\"n\">",
          Seconds(c.job_saving_ns), "</td><td>", HtmlEscape(info.paper_category), "</td></tr>\n");
  }
  out += "</table></div>\n";
}

std::string StackHtml(StackId id, const ReportSymbols& symbols) {
  std::vector<std::string> frames;
  for (const ReportFrame& f : symbols.Stack(id)) {
    std::string where;
    if (f.file != 0) {
      where = Cat(symbols.String(f.file), f.line > 0 ? Cat(":", f.line) : "");
    } else if (f.module != 0) {
      where = absl::StrFormat("%s+0x%x", symbols.String(f.module), f.rel_pc);
    }
    std::string function = f.function != 0 ? std::string(symbols.String(f.function)) : "?";
    frames.push_back(
        Cat(HtmlEscape(function),
            where.empty() ? "" : Cat("  <span class=\"sub\">", HtmlEscape(where), "</span>")));
  }
  // A Python job's stack is read by the line of the job's own code it came from, first. The
  // short form as the text report prints it; the full one on hover, every frame when opened.
  const std::string& first_user = symbols.FirstUserLabel(id);
  std::string summary = HtmlEscape(symbols.ShortStackLabel(id));
  if (!first_user.empty()) {
    summary = Cat("<b class=\"user-frame\">", HtmlEscape(first_user), "</b> ", summary);
  }
  return Cat("<details><summary class=\"mono\" title=\"", HtmlEscape(symbols.StackLabel(id)), "\">",
             summary, "</summary><div class=\"mono\">", absl::StrJoin(frames, "<br>"),
             "</div></details>");
}

void EvidenceRows(std::string_view kind, const std::vector<EvidenceItem>& items, const JobReport& r,
                  std::string& out) {
  for (const EvidenceItem& e : items) {
    std::string what = e.kind == EvidenceKind::kStack && e.id != 0
                           ? StackHtml(e.id, r.symbols)
                           : Cat("<span class=\"mono\">", HtmlEscape(EvidenceLabel(e, r.symbols)),
                                 e.kind == EvidenceKind::kDirectory ? "/" : "", "</span>");
    CatTo(&out, "<tr><td>", kind, "</td><td class=\"n\">", GpuSeconds(e.ns),
          "</td><td class=\"n\">", e.bytes > 0 ? Cat(e.bytes) : "", "</td><td class=\"n\">",
          e.count > 0 ? Cat(e.count) : "", "</td><td>", what, "</td></tr>\n");
  }
}

void Findings(const JobReport& r, std::string& out) {
  out += "<h2 id=\"findings\">Findings and fixes</h2>\n";
  int n = 0;
  for (const CauseReport& c : r.causes) {
    if (!ShownInText(c, r.gpu_time)) continue;
    const CauseInfo& info = InfoOf(c.cause);
    CatTo(&out, "<div class=\"finding\" id=\"cause-", info.name,
          "\" style=\"border-left-color:", CauseColor(c.cause), "\">\n<h3>", ++n, ". ", info.name,
          ": ", GpuSeconds(c.ns), " idle (", Percent(c.share),
          " of GPU time)</h3>\n<div class=\"meta\">paper category: ",
          HtmlEscape(info.paper_category), " (dimension: ", info.dimension, ")</div>\n");
    if (!c.findings.empty()) {
      out += "<ul>\n";
      for (const Finding& f : c.findings) {
        CatTo(&out, "<li>", HtmlEscape(FindingText(f, r)), "</li>\n");
      }
      out += "</ul>\n";
    }
    if (!c.stacks.empty() || !c.objects.empty() || !c.directories.empty()) {
      out +=
          "<div class=\"scroll\"><table class=\"ev\"><tr><th>evidence</th><th "
          "class=\"n\">idle</th><th "
          "class=\"n\">bytes</th><th class=\"n\">calls</th><th>what</th></tr>\n";
      EvidenceRows("stack", c.stacks, r, out);
      EvidenceRows("object", c.objects, r, out);
      EvidenceRows("directory", c.directories, r, out);
      out += "</table></div>\n";
    }
    CatTo(&out, "<div class=\"fix\"><b>fix:</b> ", HtmlEscape(info.fix),
          "<br><b>estimated saving:</b> ", GpuSeconds(c.saving_ns), " of GPU time, the job ",
          Seconds(c.job_saving_ns), " sooner (", HtmlEscape(SavingBasisText(c.cause, c.basis)),
          ")</div>\n</div>\n");
  }
}

void Gaps(const JobReport& r, std::string& out) {
  if (r.top_gaps.empty()) return;
  CatTo(
      &out, "<h2 id=\"gaps\">Longest idle gaps (&ge; ", Seconds(r.min_gap),
      ")</h2>\n<div class=\"scroll\"><table>\n<tr><th>#</th><th>device</th><th class=\"n\">at</th>"
      "<th class=\"n\">length</th><th>kind</th><th>causes</th><th>evidence</th></tr>\n");
  for (size_t i = 0; i < r.top_gaps.size(); ++i) {
    const GapReport& g = r.top_gaps[i];
    std::vector<std::string> causes;
    for (const auto& [cause, ns] : g.causes) {
      if (ns < kTextMinCauseNs) continue;
      causes.push_back(Cat("<span class=\"swatch\" style=\"background:", CauseColor(cause),
                           "\"></span>", InfoOf(cause).name, " ", Seconds(ns)));
    }
    CatTo(&out, "<tr class=\"gap\" data-gap=\"", i, "\"><td>", i + 1, "</td><td class=\"mono id\">",
          HtmlEscape(g.device), "</td><td class=\"n\">+", Seconds(g.start), "</td><td class=\"n\">",
          Seconds(g.length), "</td><td>", GapKindName(g.kind), "</td><td>",
          absl::StrJoin(causes, "<br>"), "</td><td class=\"mono\">",
          g.has_evidence ? HtmlEscape(GapEvidenceText(g.evidence, r.symbols)) : "", "</td></tr>\n");
  }
  out += "</table></div>\n";
}

// The job's training steps (analysis/steps.h) and the slowest, as the text report has them.
void Steps(const JobReport& r, std::string& out) {
  const StepsReport& s = r.steps;
  if (s.source == StepSource::kNone) return;
  const std::string how =
      s.source == StepSource::kNvtx
          ? Cat("its NVTX ranges <span class=\"mono\">", HtmlEscape(s.anchor), "</span>")
          : Cat("its GPU work, ", s.per_step, " activities a step from <span class=\"mono\">",
                HtmlEscape(s.anchor), "</span>");
  CatTo(&out, "<h2 id=\"steps\">Steps</h2>\n<p class=\"sub\">pid ", s.pid, ": ", s.steps,
        " steps, found in ", how, "; step time median ", AutoTime(s.median), ", p25 ",
        AutoTime(s.p25), ", p90 ", AutoTime(s.p90), ", max ", AutoTime(s.max), "; first at +",
        Seconds(s.first_start), "</p>\n");
  if (s.slowest.empty()) return;
  out +=
      "<div class=\"scroll\"><table>\n<tr><th>slowest step</th><th class=\"n\">at</th>"
      "<th class=\"n\">took</th><th class=\"n\">x median</th><th class=\"n\">idle gap in it</th>"
      "<th>its largest cause</th></tr>\n";
  for (const SlowStep& slow : s.slowest) {
    CatTo(&out, "<tr><td>", slow.number, "</td><td class=\"n\">+", Seconds(slow.start),
          "</td><td class=\"n\">", AutoTime(slow.length), "</td><td class=\"n\">",
          absl::StrFormat("%.1f", static_cast<double>(slow.length) / static_cast<double>(s.median)),
          "</td><td class=\"n\">", slow.gap_ns > 0 ? Seconds(slow.gap_ns) : "-", "</td><td>",
          slow.gap_ns > 0
              ? Cat("<span class=\"swatch\" style=\"background:", CauseColor(slow.cause),
                    "\"></span>", InfoOf(slow.cause).name, " ", Seconds(slow.cause_ns))
              : std::string("none of the longest gaps"),
          "</td></tr>\n");
  }
  out += "</table></div>\n";
}

void Devices(const JobReport& r, std::string& out) {
  if (r.devices.empty()) return;
  out +=
      "<h2 id=\"devices\">Devices and ranks</h2>\n<div "
      "class=\"scroll\"><table>\n<tr><th>rank</th><th>device</th>"
      "<th>name</th><th class=\"n\">compute</th><th class=\"n\">kernel active</th>"
      "<th class=\"n\">comm</th><th class=\"n\">transfer</th><th class=\"n\">idle</th>"
      "<th>largest idle cause</th><th class=\"n\">kernels</th><th class=\"n\">peak mem "
      "GiB</th></tr>\n";
  for (size_t index : DeviceOrder(r)) {
    const DeviceReport& d = r.devices[index];
    int top = 0;
    for (int c = 1; c < kCauseCount; ++c) {
      if (d.cause_ns[c] > d.cause_ns[top]) top = c;
    }
    Cause cause = static_cast<Cause>(top);
    std::string memory = d.total_memory > 0 ? Cat(GiB(d.peak_memory), "/", GiB(d.total_memory))
                                            : (d.peak_memory > 0 ? GiB(d.peak_memory) : "-");
    CatTo(&out, "<tr><td>", d.rank >= 0 ? Cat(d.rank) : "-", "</td><td class=\"mono id\">",
          HtmlEscape(d.id), "</td><td>", HtmlEscape(d.name), d.used ? "" : " (no kernels)",
          "</td><td class=\"n\">", Percent(d.compute_util), "</td><td class=\"n\">",
          Percent(d.kernel_active_util), "</td><td class=\"n\">", Seconds(d.comm_ns),
          "</td><td class=\"n\">", Seconds(d.transfer_ns), "</td><td class=\"n\">",
          Seconds(d.idle_ns), "</td><td>",
          d.cause_ns[top] > 0 ? Cat("<span class=\"swatch\" style=\"background:", CauseColor(cause),
                                    "\"></span>", InfoOf(cause).name, " ", Seconds(d.cause_ns[top]))
                              : "",
          "</td><td class=\"n\">", d.kernels, "</td><td class=\"n\">", memory, "</td></tr>\n");
  }
  out += "</table></div>\n";
}

// Multi-rank jobs: the collectives per communicator and operation, and the ones waited at
// longest with each rank's call and kernel.
void Collectives(const JobReport& r, std::string& out) {
  if (r.collectives.empty()) return;
  out +=
      "<h2 id=\"collectives\">Collectives</h2>\n<p class=\"sub\">per communicator and operation; "
      "transfer: the shortest of the ranks' kernels, which waited for nobody; bus bandwidth as "
      "nccl-tests defines it</p>\n<div "
      "class=\"scroll\"><table>\n<tr><th>communicator</th><th>op</th>"
      "<th class=\"n\">ranks</th><th class=\"n\">collectives</th><th class=\"n\">size</th>"
      "<th class=\"n\">transfer</th><th class=\"n\">algbw</th><th class=\"n\">busbw</th>"
      "<th class=\"n\">waited</th><th>last most often</th></tr>\n";
  for (const CollectiveReport& c : r.collectives) {
    CatTo(&out, "<tr><td class=\"mono\">", absl::StrFormat("0x%016x", c.comm), "</td><td>",
          NcclOpName(c.op), "</td><td class=\"n\">", c.nranks, "</td><td class=\"n\">",
          c.collectives, "</td><td class=\"n\">",
          DataSize(c.collectives > 0 ? c.size_bytes / c.collectives : 0), "</td><td class=\"n\">",
          c.timed > 0 ? Seconds(c.transfer_ns) : "-", "</td><td class=\"n\">",
          c.algbw > 0 ? absl::StrFormat("%.1f GB/s", c.algbw) : "-", "</td><td class=\"n\">",
          c.busbw > 0 ? absl::StrFormat("%.1f GB/s", c.busbw) : "-", "</td><td class=\"n\">",
          Seconds(c.waited_ns), "</td><td>",
          c.most_last_rank >= 0
              ? Cat("rank ", c.most_last_rank, " (", c.most_last_count, " of ", c.collectives, ")")
              : "-",
          "</td></tr>\n");
  }
  out += "</table></div>\n";
  for (const CollectiveDetail& d : r.slowest_collectives) {
    CatTo(&out, "<details><summary>", NcclOpName(d.op), " #", d.seq, ", ", DataSize(d.size_bytes),
          ": the ranks waited ", Seconds(d.waited_ns), " for rank ", d.last_rank,
          "</summary>\n<div class=\"scroll\"><table>\n<tr><th class=\"n\">rank</th><th "
          "class=\"n\">called at</th>"
          "<th class=\"n\">kernel at</th><th class=\"n\">kernel</th><th class=\"n\">waited"
          "</th></tr>\n");
    for (const CollectiveDetail::Rank& rank : d.ranks) {
      CatTo(&out, "<tr><td class=\"n\">", rank.rank, rank.rank == d.last_rank ? " (last)" : "",
            "</td><td class=\"n\">+", Seconds(rank.arrival), "</td><td class=\"n\">",
            rank.kernel_start >= 0 ? Cat("+", Seconds(rank.kernel_start)) : "-",
            "</td><td class=\"n\">", rank.kernel_start >= 0 ? AutoTime(rank.kernel_ns) : "-",
            "</td><td class=\"n\">", Seconds(rank.waited_ns), "</td></tr>\n");
    }
    out += "</table></div>\n</details>\n";
  }
}

void HostActivitySection(const JobReport& r, std::string& out) {
  const HostActivityReport& host = r.host_activity;
  if (host.groups.empty()) return;
  out +=
      "<h2 id=\"host\">Host activity</h2>\n<p class=\"sub\">time blocked in traced calls, all "
      "threads</p>\n<div class=\"scroll\"><table>\n<tr><th>kind</th><th "
      "class=\"n\">blocked</th><th "
      "class=\"n\">calls</th><th class=\"n\">bytes</th><th class=\"n\">main thread</th><th>heaviest"
      "</th></tr>\n";
  for (const HostActivityGroup& g : host.groups) {
    std::vector<std::string> items;
    for (const HostActivityItem& item : g.items) {
      if (items.size() == 3) break;
      items.push_back(Cat(Seconds(item.ns), " ", HtmlEscape(ItemLabel(item.what, r.symbols))));
    }
    CatTo(&out, "<tr><td>", HostActivityKindName(g.kind), "</td><td class=\"n\">", Seconds(g.ns),
          "</td><td class=\"n\">", g.count, "</td><td class=\"n\">", g.bytes,
          "</td><td class=\"n\">", Seconds(g.main_thread_ns), "</td><td class=\"mono\">",
          absl::StrJoin(items, "<br>"), "</td></tr>\n");
  }
  out += "</table></div>\n";
  if (!host.workers.empty()) {
    absl::StrAppendFormat(&out,
                          "<p class=\"sub\">%d worker processes (fork()ed children), %d of "
                          "them reading files</p>\n",
                          host.workers.size(), host.workers_with_reads);
  }
}

void WarningsAndFiles(const JobReport& r, std::string& out) {
  if (!r.warnings.empty()) {
    out += "<h2 id=\"warnings\">Warnings</h2>\n<ul class=\"warn\">\n";
    for (const ReportWarning& w : r.warnings) {
      CatTo(&out, "<li>", HtmlEscape(WarningText(w)), "</li>\n");
    }
    out += "</ul>\n";
  }
  CatTo(&out, "<h2 id=\"files\">Trace files</h2>\n<details><summary>", r.files.size(), " file",
        r.files.size() == 1 ? "" : "s", ", ", r.events, " host events, ", r.gpu_activities,
        " GPU activities</summary>\n<div class=\"scroll\"><table>\n<tr><th>file</th><th "
        "class=\"n\">pid</th>"
        "<th class=\"n\">rank</th><th>host</th><th class=\"n\">events</th>"
        "<th class=\"n\">GPU activities</th><th>footer</th></tr>\n");
  for (const FileReport& f : r.files) {
    CatTo(&out, "<tr><td class=\"mono\">", HtmlEscape(f.path), "</td><td class=\"n\">", f.pid,
          "</td><td class=\"n\">", f.rank >= 0 ? Cat(f.rank) : "-", "</td><td>", HtmlEscape(f.host),
          "</td><td class=\"n\">", f.events, "</td><td class=\"n\">", f.gpu_activities, "</td><td>",
          f.footer ? "yes" : "no", "</td></tr>\n");
  }
  out += "</table></div>\n</details>\n";
}

// The page's export: the strips watch the read (the processes' starts give the job's start, the
// credited slices the idle time in time).
class HtmlExport : public Export<ReportedJob> {
 public:
  Watch watch() override { return {.records = &strips_, .slices = &strips_}; }
  void Write(const ReportedJob& job, Output& out) override {
    out.Write(FormatHtmlReport(job.report, strips_.Finish(job.report.span, job.device_ids)));
  }

 private:
  DeviceStripRecorder strips_;
};

class HtmlExporter : public Exporter<ReportedJob> {
 public:
  std::string_view name() const override { return "html"; }
  std::unique_ptr<Export<ReportedJob>> Start() const override {
    return std::make_unique<HtmlExport>();
  }
};

}  // namespace

const Exporter<ReportedJob>& HtmlReportExporter() {
  static const HtmlExporter exporter;
  return exporter;
}

std::string FormatHtmlReport(const JobReport& report, const JobStrips& strips) {
  std::string out = HtmlPageStart("idlescope report");
  Summary(report, out);
  Timeline(report, out);
  CauseChart(report, out);
  Findings(report, out);
  Gaps(report, out);
  Steps(report, out);
  Devices(report, out);
  Collectives(report, out);
  HostActivitySection(report, out);
  WarningsAndFiles(report, out);
  CatTo(&out, "<footer>", HtmlEscape(report.tool_version), "</footer>\n");
  std::string scripts =
      Cat("<script id=\"strip-data\" type=\"application/json\">", StripData(report, strips),
          "</script>\n<script>\n", kHtmlStripsJs, "</script>\n");
  out += HtmlPageEnd(scripts);
  return out;
}

}  // namespace idlescope
