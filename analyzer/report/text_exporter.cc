#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/model/labels.h"
#include "analyzer/report/escape.h"
#include "analyzer/report/findings_text.h"
#include "analyzer/report/report_exporters.h"
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

// A line of evidence (a stack, an object, a gap's event, where a host call was made) at most
// kTextEvidenceColumns wide, cut with "..." when longer: a report is read in a terminal or a CI
// log. Bytes are counted, so a line with UTF-8 is narrower still; a cut never splits a character.
// JSON has every frame and name in full.
constexpr size_t kTextEvidenceColumns = 160;

void AppendEvidenceLine(std::string* out, std::string line) {
  if (line.size() > kTextEvidenceColumns) {
    size_t cut = kTextEvidenceColumns - 3;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line.resize(cut);
    line += "...";
  }
  *out += line;
  *out += '\n';
}

// The job's training steps (analysis/steps.h): how they were found, their times, the slowest.
void AppendSteps(std::string* out, const StepsReport& s) {
  if (s.source == StepSource::kNone) return;
  const std::string how = s.source == StepSource::kNvtx
                              ? absl::StrCat("its NVTX ranges ", EscapeControls(s.anchor))
                              : absl::StrCat("its GPU work, ", s.per_step,
                                             " activities a step from ", EscapeControls(s.anchor));
  absl::StrAppendFormat(out, "Steps (pid %d: %d steps, found in %s)\n", s.pid, s.steps, how);
  if (s.steps > s.durations.size()) {
    absl::StrAppendFormat(out, "  the times of the first %d steps:\n", s.durations.size());
  }
  absl::StrAppendFormat(out, "  step time: median %s, p25 %s, p90 %s, max %s; first at +%s\n",
                        AutoTime(s.median), AutoTime(s.p25), AutoTime(s.p90), AutoTime(s.max),
                        Seconds(s.first_start));
  for (const SlowStep& slow : s.slowest) {
    std::string why = "none of the longest idle gaps (below) in it";
    if (slow.gap_ns > 0) {
      why = absl::StrCat("idle gap of ", Seconds(slow.gap_ns), ", ",
                         std::string(InfoOf(slow.cause).name), " ", Seconds(slow.cause_ns));
    }
    absl::StrAppendFormat(out, "  slow: step %d at +%s took %s (%.1fx the median): %s\n",
                          slow.number, Seconds(slow.start), AutoTime(slow.length),
                          static_cast<double>(slow.length) / static_cast<double>(s.median), why);
  }
  *out += '\n';
}

}  // namespace

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

  // How each process ended, where it was not a clean exit (a crash, a kill, an error).
  bool header = false;
  for (const FileReport& f : r.files) {
    if (!f.EndedAbnormally()) continue;
    if (!header) {
      absl::StrAppendFormat(&out,
                            "Processes that did not exit cleanly\n  %-8s %5s %-16s %12s  %s\n",
                            "PID", "RANK", "END", "AT", "FILE");
      header = true;
    }
    absl::StrAppendFormat(&out, "  %-8d %5s %-16s %12s  %s\n", f.pid,
                          f.rank >= 0 ? absl::StrCat(f.rank) : "-", ProcessEndHow(f.ending),
                          absl::StrCat("+", Seconds(f.ending.at)), EscapeControls(f.path));
  }
  if (header) out += "\n";

  absl::StrAppendFormat(&out, "Utilization (mean over GPUs)\n");
  absl::StrAppendFormat(&out, "  compute (paper's time-weighted U):      %6s\n",
                        Percent(r.compute_util));
  absl::StrAppendFormat(&out, "  kernel active (nvidia-smi \"GPU util\"): %6s\n",
                        Percent(r.kernel_active_util));
  absl::StrAppendFormat(&out, "  %s\n\n", kUtilizationExplanation);

  if (!r.devices.empty()) {
    absl::StrAppendFormat(&out, "Devices\n  %-36s %5s %8s %8s %10s %10s %9s %12s\n", "DEVICE",
                          "RANK", "COMPUTE", "ACTIVE", "COMM", "TRANSFER", "KERNELS",
                          "PEAK MEM GiB");
    for (const DeviceReport& d : r.devices) {
      std::string memory = d.total_memory > 0
                               ? absl::StrCat(GiB(d.peak_memory), "/", GiB(d.total_memory))
                               : (d.peak_memory > 0 ? GiB(d.peak_memory) : "-");
      absl::StrAppendFormat(&out, "  %-36s %5s %8s %8s %10s %10s %9d %12s%s\n",
                            EscapeControls(d.id), d.rank >= 0 ? absl::StrCat(d.rank) : "-",
                            Percent(d.compute_util), Percent(d.kernel_active_util),
                            Seconds(d.comm_ns), Seconds(d.transfer_ns), d.kernels, memory,
                            d.used ? "" : "  (no kernels)");
    }
    out += '\n';
  }

  AppendSteps(&out, r.steps);

  if (!r.clocks.empty()) {
    absl::StrAppendFormat(&out, "Host clocks (aligned to %s)\n  %-24s %-12s %12s %12s %10s  %s\n",
                          EscapeControls(r.clocks[0].host), "HOST", "METHOD", "CORRECTION",
                          "COLLECTIVES", "RESIDUAL", "VIA");
    for (const HostClock& c : r.clocks) {
      bool measured = c.method == ClockMethod::kCollectives;
      absl::StrAppendFormat(
          &out, "  %-24s %-12s %12s %12s %10s  %s\n", EscapeControls(c.host),
          ClockMethodName(c.method),
          measured ? absl::StrFormat("%+.3f ms", static_cast<double>(c.correction_ns) / 1e6) : "-",
          measured ? absl::StrCat(c.collectives) : "-",
          measured ? absl::StrFormat("%.1f us", static_cast<double>(c.residual_ns) / 1e3) : "-",
          c.via.empty() ? "-" : EscapeControls(c.via));
    }
    absl::StrAppendFormat(&out,
                          "  correction: how far the host's CLOCK_REALTIME snapshot placed it "
                          "ahead of %s, taken off; residual: the median skew left over the "
                          "collectives it was aligned on; realtime: no collective shared, the "
                          "snapshot alone (NTP: milliseconds)\n\n",
                          EscapeControls(r.clocks[0].host));
  }

  absl::StrAppendFormat(&out, "Idle GPU time by cause (GPU time %s, idle %s)\n",
                        Seconds(r.gpu_time), Seconds(r.idle_ns));
  absl::StrAppendFormat(&out, "  %-22s %12s %7s %12s %12s  %s\n", "CAUSE", "IDLE", "SHARE",
                        "EST. SAVING", "JOB SOONER", "PAPER CATEGORY");
  size_t omitted = 0;
  Ns omitted_ns = 0;
  for (const CauseReport& c : r.causes) {
    if (!ShownInText(c, r.gpu_time)) {
      ++omitted;
      omitted_ns += c.ns;
      continue;
    }
    const CauseInfo& info = InfoOf(c.cause);
    absl::StrAppendFormat(&out, "  %-22s %12s %7s %12s %12s  %s\n", info.name, Seconds(c.ns),
                          Percent(c.share), Seconds(c.saving_ns), Seconds(c.job_saving_ns),
                          info.paper_category);
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
    for (const Finding& f : c.findings) {
      absl::StrAppendFormat(&out, "    - %s\n", EscapeControls(FindingText(f, r)));
    }
    for (const EvidenceItem& e : c.stacks) {
      AppendEvidenceLine(&out, absl::StrFormat("    stack  %s  %s", Seconds(e.ns),
                                               EscapeControls(EvidenceText(e, r.symbols))));
    }
    for (const EvidenceItem& e : c.objects) {
      AppendEvidenceLine(
          &out, absl::StrFormat("    object %s  %s%s", Seconds(e.ns),
                                EscapeControls(EvidenceText(e, r.symbols)),
                                e.bytes > 0 ? absl::StrCat(" (", e.bytes, " bytes)") : ""));
    }
    for (const EvidenceItem& e : c.directories) {
      AppendEvidenceLine(
          &out, absl::StrFormat("    dir    %s  %s/%s", Seconds(e.ns),
                                EscapeControls(EvidenceText(e, r.symbols)),
                                e.bytes > 0 ? absl::StrCat(" (", e.bytes, " bytes)") : ""));
    }
    absl::StrAppendFormat(&out, "    fix: %s\n", info.fix);
    absl::StrAppendFormat(&out, "    estimated saving: %s of GPU time, the job %s sooner (%s)\n",
                          Seconds(c.saving_ns), Seconds(c.job_saving_ns),
                          SavingBasisText(c.cause, c.basis));
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
      absl::StrAppendFormat(&out, "%2d. %s at +%s for %s (%s): %s\n", ++g,
                            EscapeControls(gap.device), Seconds(gap.start), Seconds(gap.length),
                            GapKindName(gap.kind), absl::StrJoin(causes, ", "));
      if (gap.has_evidence) {
        // The stack is cut, not the pid after it (the line's own cut would take the pid).
        AppendEvidenceLine(
            &out, absl::StrCat("    ", EscapeControls(GapEvidenceText(gap.evidence, r.symbols,
                                                                      kTextEvidenceColumns - 4))));
      }
    }
    out += '\n';
  }

  if (!r.collectives.empty()) {
    absl::StrAppendFormat(&out,
                          "Collectives (per communicator and operation; transfer: the shortest of "
                          "the ranks' kernels, which waited for nobody)\n");
    absl::StrAppendFormat(&out, "  %-18s %-15s %5s %7s %10s %10s %11s %11s %10s  %s\n",
                          "COMMUNICATOR", "OP", "RANKS", "CALLS", "SIZE", "TRANSFER", "ALGBW",
                          "BUSBW", "WAITED", "LAST MOST OFTEN");
    for (const CollectiveReport& c : r.collectives) {
      absl::StrAppendFormat(
          &out, "  %-18s %-15s %5d %7d %10s %10s %11s %11s %10s  %s\n",
          absl::StrFormat("0x%016x", c.comm), NcclOpName(c.op), c.nranks, c.collectives,
          DataSize(c.collectives > 0 ? c.size_bytes / c.collectives : 0),
          c.timed > 0 ? Seconds(c.transfer_ns) : "-",
          c.algbw > 0 ? absl::StrFormat("%.1f GB/s", c.algbw) : "-",
          c.busbw > 0 ? absl::StrFormat("%.1f GB/s", c.busbw) : "-", Seconds(c.waited_ns),
          c.most_last_rank >= 0 ? absl::StrFormat("rank %d (%d of %d)", c.most_last_rank,
                                                  c.most_last_count, c.collectives)
                                : "-");
    }
    absl::StrAppendFormat(&out,
                          "  size: nccl-tests' S per collective (mean); transfer: over the %s "
                          "collectives whose kernels were paired with their calls; busbw: algbw "
                          "times nccl-tests' bus factor\n",
                          "timed");
    if (!r.slowest_collectives.empty()) {
      absl::StrAppendFormat(&out, "  waited at longest:\n");
      int k = 0;
      for (const CollectiveDetail& d : r.slowest_collectives) {
        absl::StrAppendFormat(&out,
                              "  %2d. %s #%d of 0x%016x (%s): the ranks waited %s for rank %d; "
                              "transfer %s\n",
                              ++k, NcclOpName(d.op), d.seq, d.comm, DataSize(d.size_bytes),
                              Seconds(d.waited_ns), d.last_rank,
                              d.transfer_ns >= 0 ? AutoTime(d.transfer_ns) : "unknown");
        for (const CollectiveDetail::Rank& rank : d.ranks) {
          absl::StrAppendFormat(
              &out, "      rank %-4d called at +%s, kernel %s, waited %s%s\n", rank.rank,
              Seconds(rank.arrival),
              rank.kernel_start >= 0
                  ? absl::StrCat("+", Seconds(rank.kernel_start), " for ", AutoTime(rank.kernel_ns))
                  : std::string("not paired"),
              Seconds(rank.waited_ns), rank.rank == d.last_rank ? " (last)" : "");
        }
      }
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
        std::string fs = FsTypeName(item.fs_type);
        if (!fs.empty()) details.push_back(fs);
        if (item.installer) details.push_back("installer");
        AppendEvidenceLine(&out, absl::StrFormat("    %s  %s (%s)", Seconds(item.ns),
                                                 EscapeControls(ItemLabel(item.what, r.symbols)),
                                                 absl::StrJoin(details, ", ")));
        if (item.stack != 0) {
          AppendEvidenceLine(
              &out,
              absl::StrCat("      at ", EscapeControls(ShortStackText(item.stack, r.symbols))));
        }
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
    for (const ReportWarning& w : r.warnings)
      absl::StrAppendFormat(&out, "  - %s\n", EscapeControls(WarningText(w)));
  }
  return out;
}

}  // namespace idlescope
