// Crediting: the idle slices of every device's gaps, as attribution hands them out (one winning
// candidate per slice, or none), credited to causes (docs/attribution.md, "Attribution of a gap,
// slice by slice"). Per device and cause it keeps the totals and the heaviest evidence
// (CauseTotals); per gap its split by cause and the event that explains most of it (the longest
// gaps are kept); and two ways for what comes later to change what was credited:
//   - late events: a blocking call is recorded when it returns, so a long one reaches the
//     analysis after its time was attributed. Residual slices (no candidate) are kept for
//     kResidualHorizon, and a late event takes back the part it covers (Reclaim);
//   - checkpoint snapshots: the newest kMaxCopyCredits slices credited to device-to-host copies
//     (and syncs of a copy run) are remembered, and move to checkpointing when a checkpoint write
//     shows they were its snapshot (ReclassifySnapshot).
// An optional SliceObserver (model/credited_slice.h) sees every slice as it is credited, and every
// later correction, with its candidate as a value (SliceEvidence): the input of the outputs that
// place idle time in time (the HTML strip, the timeline exports).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <span>
#include <vector>

#include "analyzer/analysis/attribution.h"
#include "analyzer/model/causes.h"
#include "analyzer/model/credited_slice.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/vocabulary.h"

namespace idlescope {

// Residual slices are kept this long for events that arrive late.
inline constexpr Ns kResidualHorizon = 600'000'000'000;  // 10 min
// Credits of device-to-host copies remembered per device, for snapshots found later.
inline constexpr size_t kMaxCopyCredits = 1024;

// What a device's (or the job's) idle time of one cause was spent in.
struct CauseTotals {
  Ns ns = 0;
  Ns pageable_ns = 0;         // host_gpu_transfer: in pageable copies
  double pageable_bytes = 0;  // host_gpu_transfer: bytes of pageable copies, as `bytes` below
  Ns remote_ns = 0;           // data_loading: reading remote filesystems
  Ns worker_wait_ns = 0;      // data_loading: waiting on worker pipes/sockets
  // Waiting for workers whose sampled threads were (kWorkerCpuWork, kWorkerRead, kWorkerCpuWait):
  Ns worker_cpu_ns = 0;       // data_loading: computing
  Ns worker_read_ns = 0;      // data_loading: blocked reading data files
  Ns worker_cpu_wait_ns = 0;  // cpu_starvation: waiting for a CPU
  Ns gpu_side_ns = 0;         // explained by the device's own activity only
  Ns snapshot_ns = 0;         // checkpointing: device-to-host snapshot copies before the write
  Ns preprocess_ns = 0;       // data_loading: launching-thread CPU time in gaps with its data reads
  Ns exposed_ns = 0;  // synchronization: launching-thread CPU time after the sync that opened a gap
  Ns stdin_ns = 0;    // data_loading: reading stdin from a pipe (the program before in a pipeline)
  Ns socket_ns = 0;   // communication: receives and sends with other processes of the job
  Ns tail_ns = 0;     // in the device's tail gap (after its last kernel)
  // checkpointing: writes of a save that outlast the time until the next save (or until the
  // device's last kernel ends), outside the tail gap (Crediting::CountOutlastingWrites)
  Ns outlast_ns = 0;
  // checkpointing: writes before a save's snapshot, in its gap: the previous save's, which an
  // asynchronous writer had not finished (Crediting::CountOutlastingWrites)
  Ns writer_behind_ns = 0;
  double bytes = 0;  // bytes of the credited events, in proportion to the time credited
  std::array<Ns, NcclOp_ARRAYSIZE> nccl_op_ns{};  // by NcclOp
  TopEvidence stacks;
  TopEvidence objects;
  TopEvidence directories;  // key id: hash of the directory

  void Add(const CauseTotals& other);
};

// Residual time of a gap that no event explains, by where the gap lies: startup, tail, or
// unknown between kernels.
Cause ResidualCause(GapKind kind);

// A gap, once it closed: the report's longest gaps come from these.
struct ClosedGap {
  uint32_t device = 0;
  Interval gap;
  GapKind kind = GapKind::kMiddle;
  std::array<Ns, kCauseCount> cause_ns{};
  Candidate main;           // the candidate with the longest slice
  bool has_main = false;    // and that slice is at least the gap's unexplained time (MainShown)
  bool main_found = false;  // a candidate explains part of it (main)
  Ns main_ns = 0;           // main's slice
  Ns residual_ns = 0;       // the time no candidate explained

  // A gap mostly unexplained is not illustrated by the event that covers a sliver of it.
  bool MainShown() const { return main_found && main_ns >= residual_ns; }
};

// The device's last gap `gap`, closed at the end of what was known of the job, runs on to `end`:
// what is added is its residual time (no candidate was left to explain it: every process that
// could had ended), credited to the residual cause of the gap's kind in `gap` and in the device's
// `totals` as Crediting::CloseGap would have. For a job whose end is learnt after its devices
// were finished (a job analyzed in shards: analysis/job_merge.h).
void ExtendClosedGap(ClosedGap& gap, Ns end, std::array<CauseTotals, kCauseCount>& totals);

class Crediting {
  static constexpr uint64_t kNoGap = ~uint64_t{0};

 public:
  explicit Crediting(size_t top_gaps) : top_gaps_limit_(top_gaps) {}
  void SetObserver(SliceObserver* observer) { observer_ = observer; }
  // Devices are numbered as the analysis finds them; each gets its state here first.
  void AddDevice() { devices_.emplace_back(); }
  size_t devices() const { return devices_.size(); }

  // A slice of `device`'s open gap; `candidate` explains it (nullptr: nothing did).
  // `may_become_snapshot`: the candidate's credit is remembered for ReclassifySnapshot.
  void Credit(uint32_t device, const Candidate* candidate, Interval slice,
              bool may_become_snapshot);
  // Candidate `c` explains `slice` of a gap of `device` shorter than min_gap (no open gap: the
  // totals and the observer see it, the longest gaps do not).
  void CreditShortGap(uint32_t device, const Candidate& c, Interval slice,
                      bool may_become_snapshot) {
    CreditCause(devices_[device], c, slice, kNoGap, may_become_snapshot);
    Observe(device, slice, c.cause, &c, /*correction=*/false, Cause::kUnknown,
            /*in_short_gap=*/true);
  }
  // `device`'s work ended at `work_end` (its last kernel's end; 0: it ran none). A save is the
  // checkpointing credited in one gap (the holes in the compute band: a save's copies and writes
  // run no kernel); an asynchronous writer with one save in flight hides a save's writes (its
  // time less its snapshot) behind the time until the next save, or until `work_end` for the
  // last: what is longer is counted as checkpointing's `outlast_ns` (savings.cc). Saves in the
  // tail gap are tail_ns's. A save whose writes all came before its snapshot copies was waiting
  // for the previous save's writes (the checkpoint is asynchronous already, its writer behind):
  // they count as `writer_behind_ns`, and outlast nothing (saving less often removes them). Sets
  // the counts (may be called again).
  void CountOutlastingWrites(uint32_t device, Ns work_end);
  // A gap of `device` shorter than min_gap closed (before its slices, if any, are credited).
  void ObserveShortGap(uint32_t device, Interval gap) {
    if (observer_ != nullptr) observer_->OnShortGap(device, gap);
  }
  // A launching thread of `device` read a data file in its open gap: between kernels, the rest
  // of that gap is the thread's preprocessing of its data (DataLoader(num_workers=0)).
  void NoteLauncherRead(uint32_t device) { devices_[device].open.launcher_read = true; }
  // A launching thread of `device` was in blocking call `c` (a sync, a synchronous
  // device-to-host copy) that wins the next slice of its open gap. When that is the gap's first
  // slice (the GPU ran dry while the thread waited: a per-step read-back such as loss.item()),
  // the gap's unexplained time after the call returned, between kernels, is host work the
  // synchronization exposed: the host could have queued the next kernels before it.
  void NoteLauncherBlocked(uint32_t device, const Candidate& c) {
    OpenGap& open = devices_[device].open;
    if (open.began) return;
    open.exposing = c;
    open.has_exposing = true;
  }
  // A slice of `device`'s open gap where a launching thread computed on the CPU (a sampled run,
  // `c`, won it): residual time still, which the gap's residual rules claim first (CloseGap); what
  // they leave of a gap between kernels is `c`'s CPU work (docs/attribution.md, "Samples").
  void CreditCpuWork(uint32_t device, const Candidate& c, Interval slice);
  // A sampled run of CPU work `c` that arrived after `device` was attributed up to
  // `attributed_until`: the open residual slices it covers become CPU work slices (as
  // CreditCpuWork), the closed ones that went to `unknown` become CPU work.
  void ReclaimCpuWork(uint32_t device, const Candidate& c, Ns attributed_until);
  // Candidate `c` arrived after `device` was attributed up to `attributed_until`: it takes back
  // the residual slices it covers (they had no candidate at all, so it wins them whatever its
  // rank). Counted as late when more than kResidualHorizon late.
  void Reclaim(uint32_t device, const Candidate& c, Ns attributed_until, bool may_become_snapshot);
  // The copy (or sync) `copy` of thread (process, tid) was a checkpoint snapshot: its
  // remembered credits on `device` move to checkpointing.
  void ReclassifySnapshot(uint32_t device, uint32_t process, uint32_t tid, Interval copy);
  // The writes of the files `writes` names by (process, path id), credited as uploads, were a
  // model file's (a rename to a model file's name showed it): their remembered credits on
  // `device` (the newest kMaxCopyCredits upload writes) move to checkpointing.
  void ReclassifyWrites(uint32_t device, std::span<const EvidenceKey> writes);
  // `device`'s gap ended: its residual time gets the cause of the gap's kind.
  void CloseGap(uint32_t device, Interval gap, GapKind kind);

  const std::array<CauseTotals, kCauseCount>& totals(uint32_t device) const {
    return devices_[device].causes;
  }
  // The longest closed gaps, at most `top_gaps`, in no particular order.
  const std::vector<ClosedGap>& top_gaps() const { return top_gaps_; }
  // The last gap `device` closed (has: false when none was long enough to be attributed).
  // `device`'s gaps IsStretchedLaunchGap found, and their idle time.
  uint64_t stretched_gaps(uint32_t device) const { return devices_[device].stretched_gaps; }
  Ns stretched_ns(uint32_t device) const { return devices_[device].stretched_ns; }
  const ClosedGap* last_gap(uint32_t device) const {
    const Device& d = devices_[device];
    return d.has_last_gap ? &d.last_gap : nullptr;
  }
  uint64_t late_candidates() const { return late_candidates_; }
  Ns reclaimed_ns() const { return reclaimed_ns_; }

 private:
  struct OpenGap {
    std::array<Ns, kCauseCount> cause_ns{};
    Ns residual = 0;
    Candidate main;
    Ns main_ns = 0;
    bool has_main = false;
    bool launcher_read = false;  // a launching thread read a data file in this gap
    bool began = false;          // a slice of it was credited
    Candidate exposing;          // NoteLauncherBlocked's call (has_exposing)
    bool has_exposing = false;
    // The sampled runs that won its slices (cpu_work, cpu_starvation): their thread's time
    // runnable waiting for a CPU in those slices, in proportion to each run's.
    Ns sampled_wait = 0;
    void NoteSampled(const Candidate& c, Interval slice) {
      if (c.event_class != EventClass::kCpuWork && c.event_class != EventClass::kCpuWait) return;
      const Ns run = c.when.length();
      if (run <= 0) return;
      sampled_wait += static_cast<Ns>(static_cast<double>(slice.length()) * c.wait_ns /
                                      static_cast<double>(run));
    }
  };
  // Recent idle slices no event explained, in time order.
  struct ResidualSlice {
    Interval when;
    bool open;    // in the gap still open: its cause is decided when the gap closes
    Cause cause;  // when closed: the residual cause it was given
    // Open: a sampled run of CPU work covers it (CreditCpuWork); `cpu_work` is that run.
    bool has_cpu_work = false;
    Candidate cpu_work;
    uint64_t gap_serial = kNoGap;  // the gap it lies in (Device::gap_serial then)
  };
  // A slice credited to a device-to-host copy (or a sync of a copy run).
  struct CopyCredit {
    Candidate candidate;
    Interval when;
    uint64_t gap_serial;   // the gap it was credited in (the open gap while equal to gap_serial;
                           // kNoGap: a short gap)
    bool continued;        // it continued the run before it (Run): no slice of its own
    uint64_t whole_bytes;  // the bytes its evidence was given
  };
  // The newest credited slice's candidate and how far its run of contiguous slices goes. The
  // analysis window cuts a gap into pieces wherever it stands when it moves on; a candidate
  // winning both sides of a cut is one slice of its evidence (count, bytes rounded once, the
  // gap's main candidate by the whole run), so that the report does not depend on where the
  // window stood (one process or a job in shards).
  struct Run {
    bool valid = false;
    Candidate candidate;
    Ns end = 0;
    Ns length = 0;
    uint64_t whole_bytes = 0;
  };
  // The checkpointing credited in one long gap: a save (CountOutlastingWrites).
  struct Save {
    Ns first = 0;  // its first slice's start
    Ns last = 0;   // its last slice's end
    Ns ns = 0;
    Ns snapshot_ns = 0;
    Ns last_write = 0;                                   // the end of its last write slice
    Ns first_snapshot = std::numeric_limits<Ns>::max();  // the start of its first snapshot slice
  };
  struct Device {
    std::array<CauseTotals, kCauseCount> causes;
    std::map<uint64_t, Save> saves;  // by gap serial: in time order
    OpenGap open;
    std::deque<ResidualSlice> residual_log;
    std::deque<CopyCredit> copy_credits;
    std::deque<CopyCredit> write_credits;  // upload writes: a rename may show them checkpoints
    uint64_t gap_serial = 0;
    Ns stretched_ns = 0;  // IsStretchedLaunchGap's gaps
    uint64_t stretched_gaps = 0;
    ClosedGap last_gap;
    bool has_last_gap = false;
    Run run;
  };
  void ReclaimSlices(uint32_t device, const Candidate& c, Ns attributed_until,
                     bool may_become_snapshot);
  // Splits `d`'s residual slices that `when` overlaps where it starts and ends: the parts outside
  // stay as they were, and `take(ResidualSlice& part)` decides each part inside (it may change it;
  // it returns whether the part stays in the log).
  template <typename Take>
  void SplitResidualLog(Device& d, Interval when, Take&& take);
  // A gap between kernels that no traced call explains, at least half of it won by sampled runs
  // of CPU work or waits for a CPU, some of them waits (docs/attribution.md, "Launch gaps
  // stretched by waits for a CPU").
  static bool IsStretchedLaunchGap(const OpenGap& open, Interval gap);
  // Moves a remembered credit of `d` to checkpointing, its candidate changed by `make` (a
  // snapshot, a checkpoint write); `in_main(open gap's main)` says whether the open gap's main
  // candidate is the same event.
  template <typename Make, typename IsSame>
  void MoveToCheckpointing(uint32_t device, Device& d, const CopyCredit& credit, Make&& make,
                           IsSame&& is_same);
  // Returns the length of the run `when` ends (the slice itself, or with the contiguous slices of
  // the same candidate before it). `gap_serial`: the long gap `when` lies in (kNoGap: a short one).
  Ns CreditCause(Device& d, const Candidate& c, Interval when, uint64_t gap_serial,
                 bool may_become_snapshot);
  void Observe(uint32_t device, Interval when, Cause cause, const Candidate* c,
               bool correction = false, Cause replaces = Cause::kUnknown,
               bool in_short_gap = false) {
    if (observer_ == nullptr) return;
    CreditedSlice slice{.device = device, .when = when, .cause = cause};
    if (c != nullptr) {
      slice.evidence = SliceEvidence{.event_class = c->event_class,
                                     .gpu_side = c->gpu_side,
                                     .process = c->process,
                                     .tid = c->tid,
                                     .stack = c->stack,
                                     .object = c->object,
                                     .bytes = c->bytes};
    }
    slice.correction = correction;
    slice.replaces = replaces;
    slice.in_short_gap = in_short_gap;
    observer_->OnSlice(slice);
  }

  size_t top_gaps_limit_;
  SliceObserver* observer_ = nullptr;
  std::deque<Device> devices_;
  std::vector<ClosedGap> top_gaps_;  // min-heap by length
  uint64_t late_candidates_ = 0;
  Ns reclaimed_ns_ = 0;
};

}  // namespace idlescope
