// A job analyzed in shards (docs/architecture.md, "Analysis in shards"), step 1 and 2: each trace
// file's index, and the plan that splits the job's files into shards (proto/summary.proto).
//
// A shard is a part of the job whose devices can be analyzed without the rest: a rank and its
// family (the workers it forked, its helpers, children without a rank of their own: all carry or
// lack the rank together), because a process's events explain only the devices of its family
// (docs/attribution.md, "Devices"). A rank forked by another rank goes with its outermost ranked
// ancestor. Processes without a rank and without a ranked ancestor form one more shard; the ones
// among them whose events may explain ranks' devices are also read, as guests, by those ranks'
// shards: a launcher (torchrun, mpirun) by the shards of the ranks it started, a package installer
// and everything it runs by every shard. Which device a process drives is only known once its
// events are read, so two shards may turn out to drive one device (ranks crowding onto a GPU): the
// merge sees it and asks for those shards to be analyzed as one (merge.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/analysis/options.h"
#include "analyzer/model/job_model.h"
#include "analyzer/read/inputs.h"
#include "summary.pb.h"

namespace idlescope {

// The format of index, plan and summary messages; a message of another format is refused.
// 2: files end with a checksum, plans carry the files' identities and the job digest
// (integrity.h).
inline constexpr uint32_t kShardFormat = 2;

// The index of one trace file: its header, its footer's end, and with `align` the ends of its first
// collectives (read/clock_alignment.h); with `identify`, first its identity (integrity.h: the
// whole file is read), which the plan carries and every map checks. A file that is no readable
// trace is indexed as such (readable false, why).
shard::FileIndex IndexFile(const TraceInput& input, bool align, bool identify);

// The plan of a job from its files' indexes, in the order the files were named (as
// ExpandInputs lists them). `reorder_window`: ReadOptions'. Errors (one line): a file named by the
// user that is no readable trace, no readable file at all, an index of another format.
absl::StatusOr<shard::Plan> MakePlan(const std::vector<shard::FileIndex>& files,
                                     const AnalysisOptions& options, Ns reorder_window);

// Whether the indexed files come from more than one host (boot id): then the plan needs their
// collective ends (IndexFile with align) to put the hosts on one clock.
bool SpansHosts(const std::vector<shard::FileIndex>& files);

// A plan names files it has, and every shard owns one at least (a plan is a file a user hands
// over: a corrupt one is an error). One line.
absl::Status CheckPlan(const shard::Plan& plan);

// Conversions between the plan's messages and the analysis's types.
ProcessInfo ToProcessInfo(const shard::Process& p, const std::string& path);
AnalysisOptions ToAnalysisOptions(const shard::Options& o);

// Reads a serialized message of kind `what` ("plan", "summary", "index") from `bytes`, checking
// its format. Errors: not that message, another format.
absl::Status ParseShardMessage(const std::string& bytes, const char* what,
                               google::protobuf::Message* out);

}  // namespace idlescope
