// The queues of what does not come from a thread's ring: GPU activities (RecordGpu, from CUPTI's
// threads), device properties (RecordDeviceInfo) and notices (RecordNotice). Any thread appends
// under one mutex, held for a few instructions; the flush swaps the queues out (TakeLocked).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "interpose/recorder.h"
#include "interpose/trace_encoder.h"

namespace idlescope::queues {

// At start (Init), before the first record is queued (records that come sooner are not kept).
void Init();

// Queues a notice without saying it on stderr (the configuration's warnings at start).
void Add(const trace::Notice& notice);

// What a flush takes.
struct Taken {
  std::vector<RawGpuActivity> gpu;
  std::vector<RawDeviceInfo> devices;
  std::vector<trace::Notice> notices;
  uint64_t gpu_dropped = 0;  // CUPTI's dropped records, and activities the full queue refused
};
// The mutex a flush takes (flush.cc, LockForFlush: it may give up on a signal), then TakeLocked.
std::mutex& Mutex();
void TakeLocked(Taken* out);

// fork: the mutex is taken before the process is copied and released in the parent. In the
// child, released too, and the queues emptied: what they held is the parent's to write.
void LockForFork();
void UnlockInParent();
void ResetInChild();

}  // namespace idlescope::queues
