#include "analyzer/analysis/crediting.h"

#include <algorithm>
#include <utility>

#include "analyzer/analysis/snapshots.h"

namespace idlescope {
namespace {

// The same event (or GPU activity) as a candidate: a run of its slices continues.
bool SameCandidate(const Candidate& a, const Candidate& b) {
  return a.when == b.when && a.process == b.process && a.tid == b.tid && a.cause == b.cause &&
         a.gpu_side == b.gpu_side && a.device == b.device && a.stack == b.stack &&
         a.object == b.object && a.event_class == b.event_class && a.snapshot == b.snapshot &&
         a.bytes == b.bytes;
}

// The time of a tail gap is also counted per cause as the tail's (savings: a checkpoint after the
// last kernel cannot be hidden behind training).
void CountTail(GapKind kind, const std::array<Ns, kCauseCount>& gap_ns,
               std::array<CauseTotals, kCauseCount>& totals) {
  if (kind != GapKind::kTail) return;
  for (int c = 0; c < kCauseCount; ++c) totals[c].tail_ns += gap_ns[c];
}

}  // namespace

Cause ResidualCause(GapKind kind) {
  switch (kind) {
    case GapKind::kStartup:
      return Cause::kStartup;
    case GapKind::kTail:
      return Cause::kTail;
    default:
      return Cause::kUnknown;
  }
}

void ExtendClosedGap(ClosedGap& gap, Ns end, std::array<CauseTotals, kCauseCount>& totals) {
  const Ns added = end - gap.gap.end;
  if (added <= 0) return;
  const Cause residual = ResidualCause(gap.kind);
  std::array<Ns, kCauseCount> added_ns{};
  added_ns[Index(residual)] = added;
  gap.gap.end = end;
  gap.cause_ns[Index(residual)] += added;
  gap.residual_ns += added;
  gap.has_main = gap.MainShown();
  totals[Index(residual)].ns += added;
  CountTail(gap.kind, added_ns, totals);
}

void CauseTotals::Add(const CauseTotals& from) {
  ns += from.ns;
  pageable_ns += from.pageable_ns;
  pageable_bytes += from.pageable_bytes;
  remote_ns += from.remote_ns;
  worker_wait_ns += from.worker_wait_ns;
  worker_cpu_ns += from.worker_cpu_ns;
  worker_read_ns += from.worker_read_ns;
  worker_cpu_wait_ns += from.worker_cpu_wait_ns;
  gpu_side_ns += from.gpu_side_ns;
  snapshot_ns += from.snapshot_ns;
  preprocess_ns += from.preprocess_ns;
  exposed_ns += from.exposed_ns;
  stdin_ns += from.stdin_ns;
  socket_ns += from.socket_ns;
  tail_ns += from.tail_ns;
  outlast_ns += from.outlast_ns;
  writer_behind_ns += from.writer_behind_ns;
  bytes += from.bytes;
  for (size_t op = 0; op < nccl_op_ns.size(); ++op) nccl_op_ns[op] += from.nccl_op_ns[op];
  stacks.Merge(from.stacks);
  objects.Merge(from.objects);
  directories.Merge(from.directories);
}

bool Crediting::IsStretchedLaunchGap(const OpenGap& open, Interval gap) {
  Ns sampled = 0;
  for (Cause c : kAllCauses) {
    const Ns ns = open.cause_ns[Index(c)];
    if (c == Cause::kCpuWork || c == Cause::kCpuStarvation) {
      sampled += ns;
    } else if (c != ResidualCause(GapKind::kMiddle) && ns > 0) {
      return false;  // a traced call explains part of it
    }
  }
  return open.sampled_wait > 0 && 2 * sampled >= gap.length();
}

void Crediting::Credit(uint32_t device, const Candidate* c, Interval slice,
                       bool may_become_snapshot) {
  Device& d = devices_[device];
  OpenGap& gap = d.open;
  gap.began = true;
  Ns length = slice.length();
  if (c == nullptr) {
    gap.residual += length;
    if (!d.residual_log.empty() && d.residual_log.back().open &&
        !d.residual_log.back().has_cpu_work && d.residual_log.back().when.end == slice.start) {
      d.residual_log.back().when.end = slice.end;
    } else {
      d.residual_log.push_back({slice, true, Cause::kUnknown, false, {}, d.gap_serial});
    }
    return;
  }
  gap.cause_ns[Index(c->cause)] += length;
  gap.NoteSampled(*c, slice);
  const Ns run = CreditCause(d, *c, slice, d.gap_serial, may_become_snapshot);
  Observe(device, slice, c->cause, c);
  if (run > gap.main_ns) {
    gap.main = *c;
    gap.main_ns = run;
    gap.has_main = true;
  }
}

void Crediting::CreditCpuWork(uint32_t device, const Candidate& c, Interval slice) {
  Device& d = devices_[device];
  d.open.began = true;
  d.open.residual += slice.length();
  d.open.NoteSampled(c, slice);
  if (!d.residual_log.empty()) {
    ResidualSlice& last = d.residual_log.back();
    if (last.open && last.has_cpu_work && last.when.end == slice.start &&
        SameCandidate(last.cpu_work, c)) {
      last.when.end = slice.end;
      return;
    }
  }
  d.residual_log.push_back({slice, true, Cause::kUnknown, true, c, d.gap_serial});
}

template <typename Take>
void Crediting::SplitResidualLog(Device& d, Interval when, Take&& take) {
  // The log is in time order: only the slices from the first one ending after `when` starts to
  // the last one starting before it ends are touched.
  auto& log = d.residual_log;
  auto first = std::partition_point(
      log.begin(), log.end(), [&](const auto& slice) { return slice.when.end <= when.start; });
  auto last = first;
  std::vector<ResidualSlice> pieces;
  for (; last != log.end() && last->when.start < when.end; ++last) {
    const ResidualSlice& slice = *last;
    ResidualSlice inside = slice;
    inside.when = {std::max(slice.when.start, when.start), std::min(slice.when.end, when.end)};
    auto keep = [&](Ns from, Ns to) {
      ResidualSlice piece = slice;
      piece.when = {from, to};
      pieces.push_back(piece);
    };
    if (slice.when.start < inside.when.start) keep(slice.when.start, inside.when.start);
    if (take(inside)) pieces.push_back(inside);
    if (inside.when.end < slice.when.end) keep(inside.when.end, slice.when.end);
  }
  if (first == last) return;
  auto at = log.erase(first, last);
  log.insert(at, pieces.begin(), pieces.end());
}

void Crediting::ReclaimCpuWork(uint32_t device, const Candidate& c, Ns attributed_until) {
  Device& d = devices_[device];
  if (c.when.start < attributed_until - kResidualHorizon) ++late_candidates_;
  const Run run = d.run;  // a late run's slices are no part of the forward run
  SplitResidualLog(d, c.when, [&](ResidualSlice& part) {
    if (part.open && !part.has_cpu_work) {
      part.has_cpu_work = true;
      part.cpu_work = c;
    } else if (!part.open && part.cause == Cause::kUnknown) {
      d.causes[Index(Cause::kUnknown)].ns -= part.when.length();
      CreditCause(d, c, part.when, part.gap_serial, false);
      Observe(device, part.when, c.cause, &c, true, Cause::kUnknown);
      reclaimed_ns_ += part.when.length();
      part.cause = c.cause;
    }
    return true;
  });
  d.run = run;
}

Ns Crediting::CreditCause(Device& d, const Candidate& c, Interval when, uint64_t gap_serial,
                          bool may_become_snapshot) {
  const Ns length = when.length();
  CauseTotals& acc = d.causes[Index(c.cause)];
  acc.ns += length;
  if (c.cause == Cause::kCheckpointing && gap_serial != kNoGap) {
    auto [it, added] = d.saves.try_emplace(gap_serial, Save{.first = when.start, .last = when.end});
    Save& save = it->second;
    save.first = std::min(save.first, when.start);
    save.last = std::max(save.last, when.end);
    save.ns += length;
    if (c.snapshot) {
      save.snapshot_ns += length;
      save.first_snapshot = std::min(save.first_snapshot, when.start);
    } else {
      save.last_write = std::max(save.last_write, when.end);
    }
  }
  Ns event_length = std::max<Ns>(c.when.length(), 1);
  double bytes = static_cast<double>(c.bytes) * static_cast<double>(length) /
                 static_cast<double>(event_length);
  // The run of this candidate's contiguous slices (Run): its bytes rounded once, one slice.
  Run& run = d.run;
  const bool continued = run.valid && run.end == when.start && SameCandidate(run.candidate, c);
  if (!continued) run = {.valid = true, .candidate = c, .end = when.start};
  run.end = when.end;
  run.length += length;
  const uint64_t run_bytes =
      static_cast<uint64_t>(static_cast<double>(c.bytes) * static_cast<double>(run.length) /
                                static_cast<double>(event_length) +
                            0.5);
  const uint64_t whole_bytes = run_bytes - std::min(run_bytes, run.whole_bytes);
  run.whole_bytes = run_bytes;
  // Snapshot bytes are copied, not written: the checkpointing estimate counts written bytes.
  if (c.snapshot) {
    acc.snapshot_ns += length;
  } else {
    acc.bytes += bytes;
  }
  if (may_become_snapshot) {
    if (d.copy_credits.size() >= kMaxCopyCredits) d.copy_credits.pop_front();
    d.copy_credits.push_back({c, when, gap_serial, continued, whole_bytes});
  }
  if (c.event_class == EventClass::kUploadWrite && !c.gpu_side && c.object != 0) {
    if (d.write_credits.size() >= kMaxCopyCredits) d.write_credits.pop_front();
    d.write_credits.push_back({c, when, gap_serial, continued, whole_bytes});
  }
  const uint64_t slices = continued ? 0 : 1;
  if (c.stack != 0) acc.stacks.Add({c.process, c.stack}, length, whole_bytes, slices);
  if (c.object != 0) acc.objects.Add({c.process, c.object}, length, whole_bytes, slices);
  if (c.directory != 0) acc.directories.Add({0, c.directory}, length, whole_bytes, slices);
  if (c.pageable) {
    acc.pageable_ns += length;
    acc.pageable_bytes += bytes;
  }
  if (c.event_class == EventClass::kReadRemote) acc.remote_ns += length;
  if (c.event_class == EventClass::kReadWorkerQueue) acc.worker_wait_ns += length;
  if (c.event_class == EventClass::kWorkerCpuWork) acc.worker_cpu_ns += length;
  if (c.event_class == EventClass::kWorkerRead) acc.worker_read_ns += length;
  if (c.event_class == EventClass::kWorkerCpuWait) acc.worker_cpu_wait_ns += length;
  if (c.event_class == EventClass::kStdinPipe) acc.stdin_ns += length;
  if (c.event_class == EventClass::kPeerRecv || c.event_class == EventClass::kPeerSend) {
    acc.socket_ns += length;
  }
  if (c.gpu_side) acc.gpu_side_ns += length;
  if (c.nccl_op > 0 && c.nccl_op < static_cast<int>(acc.nccl_op_ns.size())) {
    acc.nccl_op_ns[c.nccl_op] += length;
  }
  return run.length;
}

void Crediting::Reclaim(uint32_t device, const Candidate& c, Ns attributed_until,
                        bool may_become_snapshot) {
  Device& d0 = devices_[device];
  const Run run = d0.run;  // a late event's slices are no part of the forward run
  ReclaimSlices(device, c, attributed_until, may_become_snapshot);
  d0.run = run;
}

void Crediting::ReclaimSlices(uint32_t device, const Candidate& c, Ns attributed_until,
                              bool may_become_snapshot) {
  Device& d = devices_[device];
  if (c.when.start < attributed_until - kResidualHorizon) ++late_candidates_;
  SplitResidualLog(d, c.when, [&](const ResidualSlice& part) {
    const Ns taken = part.when.length();
    if (part.open) {
      d.open.residual -= taken;
      d.open.cause_ns[Index(c.cause)] += taken;
    } else {
      d.causes[Index(part.cause)].ns -= taken;
    }
    CreditCause(d, c, part.when, part.gap_serial, may_become_snapshot);
    // An open slice was not handed out yet (its cause waits for the gap's end).
    Observe(device, part.when, c.cause, &c, !part.open, part.cause);
    reclaimed_ns_ += taken;
    return false;  // the candidate has it now
  });
}

template <typename Make, typename IsSame>
void Crediting::MoveToCheckpointing(uint32_t device, Device& d, const CopyCredit& credit,
                                    Make&& make, IsSame&& is_same) {
  const Candidate& old = credit.candidate;
  const Ns length = credit.when.length();
  CauseTotals& from = d.causes[Index(old.cause)];
  Ns event_length = std::max<Ns>(old.when.length(), 1);
  double bytes = static_cast<double>(old.bytes) * static_cast<double>(length) /
                 static_cast<double>(event_length);
  const uint64_t whole_bytes = credit.whole_bytes;
  const uint64_t slices = credit.continued ? 0 : 1;
  from.ns -= length;
  from.bytes -= bytes;
  if (old.pageable) from.pageable_ns -= length;
  if (old.stack != 0) from.stacks.Remove({old.process, old.stack}, length, whole_bytes, slices);
  if (old.object != 0) {
    from.objects.Remove({old.process, old.object}, length, whole_bytes, slices);
  }
  if (old.directory != 0) from.directories.Remove({0, old.directory}, length, whole_bytes, slices);
  bool open = credit.gap_serial == d.gap_serial;
  if (open) {
    d.open.cause_ns[Index(old.cause)] -= length;
    d.open.cause_ns[Index(Cause::kCheckpointing)] += length;
    if (d.open.has_main && is_same(d.open.main)) make(d.open.main);
  }
  Candidate moved = old;
  make(moved);
  CreditCause(d, moved, credit.when, credit.gap_serial, false);
  Observe(device, credit.when, Cause::kCheckpointing, &moved, true, old.cause);
}

void Crediting::ReclassifySnapshot(uint32_t device, uint32_t process, uint32_t tid, Interval copy) {
  Device& d = devices_[device];
  const Run run = d.run;  // moved credits are no part of the forward run
  auto same = [&](const Candidate& c) { return IsSnapshotCopy(c, process, tid, copy); };
  std::erase_if(d.copy_credits, [&](CopyCredit& credit) {
    if (!same(credit.candidate)) return false;
    MoveToCheckpointing(
        device, d, credit, [](Candidate& c) { MakeSnapshot(c); }, same);
    return true;
  });
  d.run = run;
}

void Crediting::ReclassifyWrites(uint32_t device, std::span<const EvidenceKey> writes) {
  Device& d = devices_[device];
  if (d.write_credits.empty()) return;
  const Run run = d.run;  // moved credits are no part of the forward run
  auto same = [&](const Candidate& c) {
    if (c.event_class != EventClass::kUploadWrite) return false;
    for (const EvidenceKey& w : writes) {
      if (c.process == w.process && c.object == w.id) return true;
    }
    return false;
  };
  auto make = [](Candidate& c) {
    c.event_class = EventClass::kCheckpointWrite;
    c.cause = Cause::kCheckpointing;
  };
  std::erase_if(d.write_credits, [&](CopyCredit& credit) {
    if (!same(credit.candidate)) return false;
    MoveToCheckpointing(device, d, credit, make, same);
    return true;
  });
  d.run = run;
}

void Crediting::CountOutlastingWrites(uint32_t device, Ns work_end) {
  Device& d = devices_[device];
  Ns outlast = 0, behind = 0;
  for (auto it = d.saves.begin(); work_end > 0 && it != d.saves.end(); ++it) {
    const Save& save = it->second;
    if (save.first >= work_end) break;  // in the tail gap: tail_ns
    const Ns writes = save.ns - save.snapshot_ns;
    if (save.snapshot_ns > 0 && writes > 0 && save.last_write <= save.first_snapshot) {
      behind += writes;
      continue;
    }
    const auto next = std::next(it);
    const Ns until = next != d.saves.end() ? std::min(next->second.first, work_end) : work_end;
    outlast += std::max<Ns>(0, writes - std::max<Ns>(0, until - save.last));
  }
  CauseTotals& checkpointing = d.causes[Index(Cause::kCheckpointing)];
  checkpointing.outlast_ns = outlast;
  checkpointing.writer_behind_ns = behind;
}

void Crediting::CloseGap(uint32_t device, Interval gap, GapKind kind) {
  Device& d = devices_[device];
  OpenGap& open = d.open;
  Cause residual = ResidualCause(kind);
  // The open gap's slices are the newest: a suffix of the log, handed out now in time order.
  auto suffix = d.residual_log.end();
  while (suffix != d.residual_log.begin() && std::prev(suffix)->open) --suffix;
  // Between kernels, after the blocking call that opened the gap, the launching thread's
  // unexplained time is host work that call exposed (NoteLauncherBlocked), unless the thread read
  // data files in the gap: then it is that data's preparation (below).
  if (kind == GapKind::kMiddle && open.has_exposing && !open.launcher_read) {
    Candidate& sync = open.exposing;
    // A device-to-host copy's bytes and memory kind are its transfer's, not this host work's.
    sync.cause = Cause::kSynchronization;
    sync.bytes = 0;
    sync.pageable = false;
    CauseTotals& acc = d.causes[Index(Cause::kSynchronization)];
    // Sampled CPU work hides behind the GPU's work only as far as there is GPU work to hide it
    // behind: at most as long as the call waited for the device (the work the thread could have
    // queued before reading back). The sampled CPU work beyond that is CPU work (below).
    Ns budget = sync.when.length();
    const ptrdiff_t first = suffix - d.residual_log.begin();
    for (size_t i = static_cast<size_t>(first); i < d.residual_log.size(); ++i) {
      auto it = d.residual_log.begin() + static_cast<ptrdiff_t>(i);
      if (it->when.start < sync.when.end) continue;
      if (it->has_cpu_work) {
        if (budget <= 0) continue;
        if (it->when.length() > budget) {  // the rest stays the thread's CPU work
          ResidualSlice rest = *it;
          rest.when.start = it->when.start + budget;
          it->when.end = rest.when.start;
          d.residual_log.insert(it + 1, rest);
          it = d.residual_log.begin() + static_cast<ptrdiff_t>(i);
        }
        budget -= it->when.length();
      }
      Ns length = it->when.length();
      open.residual -= length;
      open.cause_ns[Index(Cause::kSynchronization)] += length;
      acc.exposed_ns += length;
      CreditCause(d, sync, it->when, d.gap_serial, false);
      it->open = false;
      it->cause = Cause::kSynchronization;
      Observe(device, it->when, Cause::kSynchronization, &sync);
    }
    suffix = d.residual_log.begin() + first;  // the insertions moved the deque's iterators
  }
  // Between kernels, a launching thread that read data files in the gap spent the rest of it
  // preparing that data (decoding, augmenting, collating: DataLoader(num_workers=0)).
  if (kind == GapKind::kMiddle && open.launcher_read) {
    residual = Cause::kDataLoading;
    d.causes[Index(residual)].preprocess_ns += open.residual;
  }
  // Between kernels, what the rules above left that a sampled run of CPU work covers is that
  // thread's CPU work (docs/attribution.md, "Samples"); in startup and the tail it stays theirs.
  if (kind == GapKind::kMiddle && !open.launcher_read) {
    const Cause cpu = Cause::kCpuWork;
    Ns cpu_ns = 0;
    for (auto it = suffix; it != d.residual_log.end(); ++it) {
      if (!it->open || !it->has_cpu_work) continue;
      const Ns length = it->when.length();
      open.residual -= length;
      open.cause_ns[Index(cpu)] += length;
      cpu_ns += length;
      CreditCause(d, it->cpu_work, it->when, d.gap_serial, false);
      it->open = false;
      it->cause = cpu;
      Observe(device, it->when, cpu, &it->cpu_work);
      if (cpu_ns > open.main_ns) {
        open.main = it->cpu_work;
        open.main_ns = cpu_ns;
        open.has_main = true;
      }
    }
  }
  if (open.residual > 0) {
    d.causes[Index(residual)].ns += open.residual;
    open.cause_ns[Index(residual)] += open.residual;
  }
  for (auto it = suffix; it != d.residual_log.end(); ++it) {
    if (!it->open) continue;  // given to the exposing call above
    it->open = false;
    it->cause = residual;
    Observe(device, it->when, residual, nullptr);
  }
  Ns horizon = gap.end - kResidualHorizon;
  while (!d.residual_log.empty() && !d.residual_log.front().open &&
         d.residual_log.front().when.end < horizon) {
    d.residual_log.pop_front();
  }
  ClosedGap record;
  record.device = device;
  record.gap = gap;
  record.kind = kind;
  record.cause_ns = open.cause_ns;
  record.main = open.main;
  record.main_found = open.has_main;
  record.main_ns = open.main_ns;
  record.residual_ns = open.residual;
  record.has_main = record.MainShown();
  d.last_gap = record;
  d.has_last_gap = true;
  auto shorter = [](const ClosedGap& a, const ClosedGap& b) {
    return a.gap.length() > b.gap.length();
  };
  if (top_gaps_limit_ > 0) {
    if (top_gaps_.size() < top_gaps_limit_) {
      top_gaps_.push_back(std::move(record));
      std::push_heap(top_gaps_.begin(), top_gaps_.end(), shorter);
    } else if (gap.length() > top_gaps_.front().gap.length()) {
      std::pop_heap(top_gaps_.begin(), top_gaps_.end(), shorter);
      top_gaps_.back() = std::move(record);
      std::push_heap(top_gaps_.begin(), top_gaps_.end(), shorter);
    }
  }
  if (kind == GapKind::kMiddle && IsStretchedLaunchGap(open, gap)) {
    d.stretched_ns += gap.length();
    ++d.stretched_gaps;
  }
  CountTail(kind, open.cause_ns, d.causes);
  open = OpenGap{};
  ++d.gap_serial;
}

}  // namespace idlescope
