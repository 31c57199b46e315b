// How a trace file ends, learnt without reading the whole file: the packets' framing is walked
// with one small read each (tag, length and the packet's first tag), and only the last packets are
// decoded. What the analysis needs to know of every process before it reads any record: whether
// it ended cleanly, of what, and when (a rank that died: analysis/deaths.h), whatever part of
// the job an analysis reads (a shard learns it from the plan, analyzer/shard/plan.h).
#pragma once

#include <string>

#include "analyzer/model/job_model.h"

namespace idlescope {

// The end of trace file `path`, its times on the file's own clock. A file that cannot be read or
// framed ends as it can (nothing known: a reason of EXIT_UNSPECIFIED and no time).
ProcessEnd ReadFileEnd(const std::string& path);

// `end` with its time moved onto the job clock by the file's `offset`.
inline ProcessEnd OnJobClock(ProcessEnd end, Ns offset) {
  if (end.at != 0) end.at += offset;
  return end;
}

}  // namespace idlescope
