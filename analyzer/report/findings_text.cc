#include "analyzer/report/findings_text.h"

#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analyzer/model/labels.h"
#include "analyzer/report/units.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {
namespace {

const HostActivityGroup* GroupOf(const JobReport& report, HostActivityKind kind) {
  for (const HostActivityGroup& g : report.host_activity.groups) {
    if (g.kind == kind) return &g;
  }
  return nullptr;
}

std::string HostActivityText(const Finding& f, const JobReport& report) {
  std::string text =
      absl::StrFormat("%s: %s blocked in %d calls, %d bytes", HostActivityKindName(f.activity),
                      Seconds(f.ns), f.count, f.bytes);
  const HostActivityGroup* g = GroupOf(report, f.activity);
  if (g != nullptr && !g->items.empty()) {
    const HostActivityItem& first = g->items[0];
    absl::StrAppendFormat(&text, "; most: %s (%s, pid %d%s)", ItemLabel(first.what, report.symbols),
                          Seconds(first.ns), first.pid,
                          first.tid == 0      ? ""
                          : first.main_thread ? ", main thread"
                                              : absl::StrCat(", thread ", first.tid));
  }
  return text;
}

std::string WorkersText(const Finding& f, const JobReport& report) {
  std::vector<std::string> pids;
  for (const WorkerProcess& w : report.host_activity.workers) {
    if (pids.size() < 16) pids.push_back(absl::StrCat(w.pid));
  }
  return absl::StrFormat(
      "%d worker processes (fork()ed children, e.g. DataLoader workers; pids %s%s), %d of them "
      "reading files: %d reads, %d bytes",
      f.count, absl::StrJoin(pids, ", "), f.count > pids.size() ? ", ..." : "", f.other_count,
      f.calls, f.bytes);
}

}  // namespace

std::string FindingText(const Finding& f, const JobReport& report) {
  switch (f.kind) {
    case FindingKind::kPageableCopies:
      return absl::StrFormat("%s in pageable copies, %s in pinned or device copies", Seconds(f.ns),
                             Seconds(f.other_ns));
    case FindingKind::kGpuOnlyCopies:
      return absl::StrFormat(
          "%s of it only visible on the GPU (copies from libraries such as cuBLAS/NCCL or "
          "untraced threads)",
          Seconds(f.ns));
    case FindingKind::kSnapshotCopies:
      return absl::StrFormat("%s in device-to-host copies that snapshot the model before its write",
                             Seconds(f.ns));
    case FindingKind::kCheckpointBytes:
      return absl::StrFormat("%d bytes of model files written while the GPU idled", f.bytes);
    case FindingKind::kCheckpointWriterBehind:
      return absl::StrFormat(
          "%s waiting for the previous save's writes before a snapshot: the checkpoint is "
          "asynchronous already and its writer falls behind the saves (save less often, or write "
          "faster: more writer threads, faster storage)",
          Seconds(f.ns));
    case FindingKind::kNcclOpBlocked:
      return absl::StrFormat("%s blocked in %s", Seconds(f.ns), NcclOpName(f.nccl_op));
    case FindingKind::kExposedNcclKernels:
      return absl::StrFormat("%s of exposed NCCL kernels (no compute running)", Seconds(f.ns));
    case FindingKind::kStragglerRank:
      return absl::StrFormat(
          "rank %d arrived last at %d of %d matched collectives; the other ranks waited %s for "
          "it (longest %s)",
          f.rank, f.count, f.of_count, Seconds(f.ns), Seconds(f.other_ns));
    case FindingKind::kBlamedActivity:
    case FindingKind::kBlamedCompute: {
      std::string waiters =
          f.count == 1 ? absl::StrFormat("rank %d's GPU", f.first_rank)
          : static_cast<int64_t>(f.count) == f.last_rank - f.first_rank + 1
              ? absl::StrFormat("ranks %d-%d's GPUs", f.first_rank, f.last_rank)
              : absl::StrFormat("%d ranks' GPUs (%d to %d)", f.count, f.first_rank, f.last_rank);
      if (f.kind == FindingKind::kBlamedCompute) {
        return absl::StrFormat(
            "%s waited %s in NCCL kernels for rank %d while it ran no traced host call (its own "
            "GPU work, or untraced CPU work, made it late)",
            waiters, Seconds(f.ns), f.rank);
      }
      std::string text =
          absl::StrFormat("%s waited %s in NCCL kernels for rank %d, which was in %s", waiters,
                          Seconds(f.ns), f.rank, InfoOf(f.cause).name);
      if (f.stack != 0) {
        absl::StrAppend(
            &text, " at ",
            EvidenceText({.kind = EvidenceKind::kStack, .id = f.stack}, report.symbols));
      }
      if (f.object != 0) {
        absl::StrAppend(&text, " (", std::string(report.symbols.String(f.object)), ")");
      }
      return text;
    }
    case FindingKind::kRemoteReads:
      return absl::StrFormat("%s reading remote filesystems (NFS, FUSE, ...)", Seconds(f.ns));
    case FindingKind::kWorkerQueueWaits:
      return absl::StrFormat("%s waiting on worker processes or sockets", Seconds(f.ns));
    case FindingKind::kWorkersComputing:
      return absl::StrFormat(
          "%s waiting for worker processes that were computing (CPU-bound workers: more "
          "workers, or cheaper transforms)",
          Seconds(f.ns));
    case FindingKind::kWorkersReading:
      return absl::StrFormat(
          "%s waiting for worker processes blocked reading data files (I/O-bound workers: "
          "faster or local storage, more prefetching)",
          Seconds(f.ns));
    case FindingKind::kWorkersWaitingForCpu:
      return absl::StrFormat(
          "%s waiting for worker processes that waited for a CPU (fewer workers per core)",
          Seconds(f.ns));
    case FindingKind::kStdinPipeWaits:
      return absl::StrFormat(
          "%s reading stdin from a pipe: the program writing it is slower than training",
          Seconds(f.ns));
    case FindingKind::kPeerSocketTransfers:
      return absl::StrFormat(
          "%s in receives and sends over sockets with other processes of the job (Gloo, "
          "Horovod, a parameter server or store over TCP)",
          Seconds(f.ns));
    case FindingKind::kLauncherPreprocessing:
      return absl::StrFormat(
          "%s preprocessing on the launching thread (CPU work in gaps where it read data files "
          "itself)",
          Seconds(f.ns));
    case FindingKind::kHostWorkAfterSync:
      return absl::StrFormat(
          "%s of host work after the synchronizing call that let the GPU run dry (a per-step "
          "read-back such as loss.item(), then CPU work before the next launch): queue the next "
          "step's kernels before reading back",
          Seconds(f.ns));
    case FindingKind::kComputeKernels:
      return absl::StrFormat("%d compute kernels, mean %.1f us", f.count,
                             static_cast<double>(f.ns) / static_cast<double>(f.count) / 1e3);
    case FindingKind::kKernelsBelowSmCount:
      return absl::StrFormat(
          "%.0f%% of compute kernels launch fewer blocks than the GPU has SMs",
          100.0 * static_cast<double>(f.count) / static_cast<double>(f.of_count));
    case FindingKind::kStretchedLaunchGaps:
      return absl::StrFormat(
          "%s in %d launch gaps stretched past --min-gap by waits for a CPU (named cpu_starvation "
          "and cpu_work): fewer launches remove them too, and the saving counts them",
          Seconds(f.ns), f.count);
    case FindingKind::kStartupFirstKernel: {
      std::string who = absl::StrCat("pid ", f.pid);
      if (f.rank >= 0) absl::StrAppend(&who, " (rank ", f.rank, ")");
      return absl::StrFormat("%s launched its first kernel %s after it started", who,
                             Seconds(f.ns));
    }
    case FindingKind::kStartupBeforeCuda: {
      std::string imports;
      if (f.count > 0) {
        imports = absl::StrFormat("; %d reads of code files (.py/.so: %.1f MB, %s blocked)",
                                  f.count, static_cast<double>(f.bytes) / 1e6, Seconds(f.other_ns));
      }
      return absl::StrFormat("%s before its first CUDA call (imports, setup%s)", Seconds(f.ns),
                             imports);
    }
    case FindingKind::kStartupCudaToKernel: {
      std::string model;
      if (f.bytes >= 1000000) {
        model =
            absl::StrFormat("; %.1f MB of model files read", static_cast<double>(f.bytes) / 1e6);
      }
      std::string api(report.symbols.String(f.api));
      if (!api.empty()) api += " ";
      return absl::StrFormat(
          "%s from its first CUDA call to its first kernel (CUDA context, model construction%s); "
          "longest CUDA call: %s%s",
          Seconds(f.ns), model, api, Seconds(f.other_ns));
    }
    case FindingKind::kHostActivity:
      return HostActivityText(f, report);
    case FindingKind::kWorkerProcesses:
      return WorkersText(f, report);
    case FindingKind::kRanksShareDevice:
      return absl::StrFormat(
          "%d ranks (from rank %d) drive %s while %d visible GPU%s of its host stayed unused: "
          "each rank should select its own (torch.cuda.set_device(local_rank), or one "
          "CUDA_VISIBLE_DEVICES entry per rank)",
          f.count, f.rank, report.symbols.String(f.api), f.other_count,
          f.other_count == 1 ? "" : "s");
    case FindingKind::kProcessDied: {
      const std::string who = f.rank >= 0 ? absl::StrFormat("rank %d (pid %u)", f.rank, f.pid)
                                          : absl::StrFormat("pid %u", f.pid);
      const std::string_view how = report.symbols.String(f.api);
      if (how == "no trace end") {
        return absl::StrFormat(
            "%s ended at +%s without its trace's end (killed with SIGKILL: the OOM killer, a "
            "scheduler, a launcher?)",
            who, Seconds(f.ns));
      }
      if (how.starts_with("exit status")) {
        return absl::StrFormat("%s failed at +%s: %s", who, Seconds(f.ns), how);
      }
      return absl::StrFormat("%s died of %s at +%s", who, how, Seconds(f.ns));
    }
    case FindingKind::kEvidenceApproximate:
      return "evidence lists are approximate (too many distinct stacks or objects)";
  }
  return "";
}

std::string SavingBasisText(Cause cause, const SavingBasis& b) {
  switch (b.method) {
    case SavingMethod::kPageableAtPinnedRate:
      return absl::StrFormat(
          "the copies from pinned memory at %.2f GB/s (%s), overlapped with compute: what "
          "compute cannot hide stays",
          b.rate_bytes_per_ns,
          b.rate_source == RateSource::kAssumed ? "assumed: no large pinned copy in the trace"
                                                : "measured on the GPU");
    case SavingMethod::kCheckpointMinusSnapshot: {
      std::string_view source = b.rate_source == RateSource::kPinnedDeviceToHostCopies
                                    ? "measured from pinned device-to-host copies on the GPU"
                                : b.rate_source == RateSource::kDeviceToHostCopies
                                    ? "measured from device-to-host copies on the GPU"
                                    : "assumed: no device-to-host copy measured";
      std::string text = absl::StrFormat(
          "blocked checkpoint time minus the device-to-host snapshot copy of %d bytes at %.1f "
          "GB/s; %s",
          b.bytes, b.rate_bytes_per_ns, source);
      if (b.snapshot_ns > 0) {
        absl::StrAppendFormat(&text, " (snapshot copies measured: %s)", Seconds(b.snapshot_ns));
      }
      if (b.tail_ns > 0) {
        absl::StrAppendFormat(&text, "; not the %s after the last kernel, which the job waits for",
                              Seconds(b.tail_ns));
      }
      if (b.outlast_ns > 0) {
        absl::StrAppendFormat(&text,
                              "; not the %s of writes outlasting the training until the next save "
                              "(a writer with one save in flight makes that save wait for them)",
                              Seconds(b.outlast_ns));
      }
      return text;
    }
    case SavingMethod::kHalf:
      return cause == Cause::kLaunchBound
                 ? "half of the launch gaps, with fewer launches (fused kernels, CUDA graphs): "
                   "a heuristic"
                 : "doubling the work per kernel halves the launch gaps per sample (heuristic)";
    case SavingMethod::kOverlapWithCompute: {
      std::string text =
          "the communication hidden by overlapping it with compute (gradients all-reduced in "
          "buckets during the backward pass), up to the compute time";
      if (b.wait_ns > 0) {
        absl::StrAppendFormat(&text, "; not the %s waiting for slower ranks", Seconds(b.wait_ns));
      }
      return text;
    }
    case SavingMethod::kFillTheDevice:
      return absl::StrFormat(
          "a %.1fx larger batch (as device memory allows): %.1fx fewer launch gaps per sample, "
          "and kernels that fill the SMs",
          b.batch_growth, b.batch_growth);
    case SavingMethod::kSpreadOverDevices:
      return absl::StrFormat(
          "GPU time: the unused GPUs released; the job's time: its work spread over all %d "
          "visible GPUs instead of %d",
          b.visible_devices, b.used_devices);
    case SavingMethod::kAll:
      switch (cause) {
        case Cause::kDataLoading:
          return "all of it, if loading runs ahead of compute (enough workers, prefetching)";
        case Cause::kIntermediateUpload:
          return "all of it, moved to a background thread";
        case Cause::kExternalDownload:
          return "all of it, downloaded before the job";
        case Cause::kLibraryInstallation:
          return "all of it, with a prebuilt environment";
        case Cause::kInteractive:
          return "all of it, run as a batch job";
        case Cause::kSynchronization:
          return "all of it, if the synchronization is not needed";
        case Cause::kTail:
          return "all of it, by releasing the GPU after the last kernel";
        case Cause::kUnusedGpus:
        case Cause::kNoGpuWork:
          return "all of it: the GPUs are not needed";
        default:
          return "all of it";
      }
    case SavingMethod::kNone:
      return "no estimate: no specific fix";
  }
  return "";
}

std::string GapEvidenceText(const GapEvidence& m, const ReportSymbols& symbols, size_t width) {
  std::string_view object = symbols.String(m.object);
  std::string stack = ShortStackText(m.stack, symbols);
  std::string head = absl::StrCat(std::string(InfoOf(m.cause).name), m.gpu_side ? " (GPU)" : "",
                                  object.empty() ? "" : ": ", std::string(object),
                                  m.bytes > 0 ? absl::StrCat(", ", m.bytes, " bytes") : "");
  std::string tail = m.gpu_side   ? ""
                     : m.tid == 0 ? absl::StrCat(" (pid ", m.pid, ")")
                                  : absl::StrCat(" (pid ", m.pid, " tid ", m.tid, ")");
  const std::string kAt = " at ";
  const size_t fixed = head.size() + kAt.size() + tail.size();
  if (width > 0 && !stack.empty() && fixed + stack.size() > width) {
    // Room for a few characters of the stack and "...", else none of it.
    size_t room = width > fixed + 8 ? width - fixed - 3 : 0;
    while (room > 0 && (static_cast<unsigned char>(stack[room]) & 0xC0) == 0x80) --room;
    stack = room > 0 ? absl::StrCat(stack.substr(0, room), "...") : "";
  }
  return absl::StrCat(head, stack.empty() ? "" : absl::StrCat(kAt, stack), tail);
}

std::string WarningText(const ReportWarning& w) {
  switch (w.kind) {
    case WarningKind::kTraceCut: {
      // The reader's own description of a cut or corrupt tail (what `idlescope dump` says too).
      TraceReadStats tail;
      tail.tail = static_cast<TailProblem>(w.tail);
      tail.tail_detail = w.tail_detail;
      tail.dropped_bytes = w.count;
      tail.good_end_offset = w.other_count;
      return absl::StrCat(w.subject, ": ", tail.TailDescription());
    }
    case WarningKind::kNoFooter:
      return absl::StrCat(w.subject,
                          ": no footer (the process was killed, crashed, or is still running)");
    case WarningKind::kUndefinedCommIds:
      return absl::StrFormat(
          "%s: %d NCCL events name a communicator id the file never defines: their collectives "
          "cannot be matched across ranks",
          w.subject, w.count);
    case WarningKind::kUnknownFields:
      return absl::StrFormat("%s: %d unknown fields ignored (written by a newer idlescope?)",
                             w.subject, w.count);
    case WarningKind::kDroppedRecords:
      return absl::StrFormat(
          "%s: %d host events and %d GPU records were dropped while recording (buffers full): "
          "idle time near them may be misattributed",
          w.subject, w.count, w.other_count);
    case WarningKind::kRecorderNotice:
      return absl::StrCat(w.subject, ": recorder notice ", w.code, ": ", w.text);
    case WarningKind::kSkippedFile:
      // The reader's one-line error names the file already.
      return absl::StrCat("skipped ", w.text);
    case WarningKind::kLaunchesWithoutGpuRecords:
      return absl::StrFormat(
          "%s: %d kernel launches but no GPU activity recorded (CUPTI disabled or unavailable?): "
          "its busy time is unknown and it is counted as idle",
          w.subject, w.count);
    case WarningKind::kLateGpuRecords:
      return absl::StrFormat(
          "%s: %d GPU records arrived after their time was analyzed (%s dropped from busy time)",
          w.subject, w.count, Seconds(w.ns));
    case WarningKind::kIncompleteCollectives:
      if (w.other_count > 0) {
        return absl::StrFormat("%d NCCL collectives were missing ranks: a rank died (rank_died)",
                               w.count);
      }
      return absl::StrFormat(
          "%d NCCL collectives were missing ranks (trace files of some ranks not given?)", w.count);
    case WarningKind::kForgottenCandidates:
      return absl::StrFormat(
          "%d events of processes that never used a GPU were forgotten to bound memory; a GPU "
          "first used late may show part of its startup as residual",
          w.count);
    case WarningKind::kLateCandidates:
      return absl::StrFormat(
          "%d events arrived more than 10 min after their time was attributed and were only "
          "partly used",
          w.count);
  }
  return "";
}

}  // namespace idlescope
