#include "analyzer/analysis/cross_rank.h"

#include <limits>

namespace idlescope {

void CrossRank::Arrival(const CollectiveArrival& a) {
  blame_.NoteCaller(a.process, a.tid);
  collectives_.Note(a.comm, a.seq, a.nranks, a.nccl_rank, a.job_rank, a.arrival, a.process, a.tid);
  for (const CollectiveWait& wait : collectives_.waits()) blame_.Wait(wait);
  collectives_.waits().clear();
}

void CrossRank::Finish() {
  collectives_.Finish();
  blame_.Resolve(std::numeric_limits<Ns>::max());
}

}  // namespace idlescope
