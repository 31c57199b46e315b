// Trace format versions (proto/trace.proto, "Versions"): what differs between v1, v2 and v3, in
// one place. v2 stores the same events as v1, more compactly: runs of kernel launches as LaunchRun
// columns and of kernel records as KernelRun columns, correlation ids as deltas, `async` implied
// by the type, NCCL communicators as per-file ids. v3 stores interned data more compactly: stack
// nodes as chains, strings as an earlier string's directory and a tail. The reader expands every
// v2 and v3 packet back into v1's one-Event-per-call, whole-string, one-StackNode-per-node shape
// (FormatExpander), so that the analysis, `dump` and `diff` see the same events from all three and
// never branch on the version. FormatCompactor does the reverse for tools
// that write traces with libprotobuf (tools/gen_trace, tools/trace_convert, tests); it forms the
// same runs as the recorder's hand encoder (interpose/trace_encoder.h), which a test checks byte
// for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "proto/format_rules.h"
#include "trace.pb.h"

namespace idlescope {

// The oldest and the newest format version this idlescope reads; it writes the newest.
inline constexpr uint32_t kTraceFormatV1 = 1;
inline constexpr uint32_t kTraceFormatVersion = 4;
// v4 is v3 whose packets may be in Compressed packets (analyzer/trace/compressed_packets.h):
// a reader takes those apart, FormatExpander reads what they hold as v3.
inline constexpr uint32_t kTraceFormatV3 = 3;
inline constexpr uint32_t kTraceFormatV4 = 4;

// Event types whose `async` v2 does not write: always true.
bool AsyncByType(int type);

// The most sites one LaunchRun or KernelRun has (its indexes are one-byte varints), as in the
// recorder (trace::EventBatchEncoder::kMaxLaunchSites, GpuBatchEncoder::kMaxKernelSites).
inline constexpr size_t kMaxLaunchSites = 127;
inline constexpr size_t kMaxKernelSites = 127;

// Reads one file's packets, in file order, into the v1 shape.
class FormatExpander {
 public:
  explicit FormatExpander(uint32_t format_version) : version_(format_version) {}

  // v1 packets are left alone. v2: Interned packets define communicator ids (the packet keeps
  // them); an EventBatch gets one Event per launch of each LaunchRun, `correlation` from the
  // deltas, `async` where implied, `comm`/`parent_comm` from the ids, and the v2-only fields
  // cleared; a GpuBatch one GpuActivity per kernel of each KernelRun and `correlation` from the
  // deltas. Returns false, with one line in *error, for a batch whose runs are inconsistent
  // (columns of different lengths, a site index out of range): the packet is then corrupt.
  // v3: an Interned packet's StackChains become StackNodes, its strings whole strings (false for
  // a chain without frames or a prefix that is no earlier string's start).
  bool Expand(Packet* packet, std::string* error);

  // From now on Expand leaves LaunchRuns and KernelRuns as they are stored (checked and counted
  // all the same), for a reader that takes a run's columns directly rather than one message per
  // launch or kernel (read/job_reader.cc): a run holder's `correlation` is then the batch's
  // running correlation id before its first item, to which the run's correlation deltas add; its
  // other fields mean nothing. Everything else is expanded as above.
  void KeepRuns() { keep_runs_ = true; }
  // Whether a run holder's runs are to be read: KeepRuns in a v2 or later file (v1 has no runs:
  // the fields of one in a v1 file mean nothing, as before).
  bool keeps_runs() const { return keep_runs_ && version_ > kTraceFormatV1; }

  uint32_t version() const { return version_; }
  // LaunchRuns / KernelRuns expanded so far and the launches / kernels they held.
  uint64_t launch_runs() const { return launch_runs_; }
  uint64_t run_launches() const { return run_launches_; }
  uint64_t kernel_runs() const { return kernel_runs_; }
  uint64_t run_kernels() const { return run_kernels_; }
  // Communicator ids used before (or without) their InternedComm: their events get comm 0.
  uint64_t undefined_comm_ids() const { return undefined_comm_ids_; }

 private:
  bool ExpandInterned(Interned* interned, std::string* error);
  bool ExpandEvents(EventBatch* batch, std::string* error);
  bool ExpandActivities(GpuBatch* batch, std::string* error);
  // The v1 fields of one plain v2 event; `correlation` is the batch's running correlation id
  // before it.
  void ExpandEvent(Event* e, uint64_t* correlation);
  uint64_t Comm(uint64_t id);

  uint32_t version_;
  bool keep_runs_ = false;
  absl::flat_hash_map<uint64_t, uint64_t> comms_;  // InternedComm id -> communicator hash
  // v3: the strings defined so far that hold a '/' (those a prefix can name), by id.
  absl::flat_hash_map<uint64_t, std::string> prefix_strings_;
  // Reused from batch to batch (see ExpandInPlace): a batch's running correlation ids, and the
  // spare message objects that take a run holder's runs.
  std::vector<uint64_t> correlations_;
  Event scratch_event_;
  GpuActivity scratch_activity_;
  uint64_t launch_runs_ = 0;
  uint64_t run_launches_ = 0;
  uint64_t kernel_runs_ = 0;
  uint64_t run_kernels_ = 0;
  uint64_t undefined_comm_ids_ = 0;
};

// Writes one file's v1-shaped packets, in file order, as v2 or v3.
class FormatCompactor {
 public:
  explicit FormatCompactor(uint32_t version = kTraceFormatVersion) : version_(version) {}

  // Rewrites `packet` in place: the Header's format_version becomes the version; v3: an Interned
  // packet's StackNodes become StackChains and its strings are written against the directories
  // of the file's earlier strings, as the recorder writes them (proto/format_rules.h); an
  // EventBatch's events
  // are encoded as the recorder encodes them (launch runs, correlation deltas, implied `async`,
  // communicator ids; a v1 launch or collective with `async` false reads back true, as v2 has
  // it); a GpuBatch's activities likewise (kernel runs, correlation deltas). Communicators this
  // file has not used before get ids, appended to `new_comms` as Interned.comms: the caller
  // writes them before the packet. Other packets are left alone.
  void Compact(Packet* packet, Interned* new_comms);

 private:
  void CompactInterned(Interned* interned);
  void CompactEvents(EventBatch* batch, Interned* new_comms);
  void CompactActivities(GpuBatch* batch);
  uint64_t CommId(uint64_t comm, Interned* new_comms);

  uint32_t version_;
  absl::flat_hash_map<uint64_t, uint64_t> comm_ids_;  // communicator hash -> InternedComm id
  format::PathPrefixes prefixes_;
};

}  // namespace idlescope
