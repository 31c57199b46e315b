#include "analyzer/analysis/cross_rank.h"

#include <limits>

namespace idlescope {

void CrossRank::Arrival(const CollectiveArrival& a) {
  blame_.NoteCaller(a.process, a.tid);
  if (a.nranks >= 2 && a.nccl_rank >= 0) {
    stats_.Call(a.job_rank >= 0 ? a.job_rank : a.nccl_rank, a.comm, a.seq, a.op, a.bytes,
                a.grouped);
  }
  collectives_.Note(a.comm, a.seq, a.nranks, a.nccl_rank, a.job_rank, a.arrival, a.process, a.tid);
  for (const CollectiveWait& wait : collectives_.waits()) blame_.Wait(wait);
  collectives_.waits().clear();
  for (const ResolvedCollective& r : collectives_.resolved()) stats_.Resolved(r);
  collectives_.resolved().clear();
}

void CrossRank::Finish() {
  collectives_.Finish();
  blame_.Resolve(std::numeric_limits<Ns>::max());
  stats_.Finish();
}

}  // namespace idlescope
