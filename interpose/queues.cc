// The queues and the queued half of the public API (RecordGpu, RecordGpuDropped,
// RecordDeviceInfo, RecordNotice).
#include "interpose/queues.h"

#include <cerrno>
#include <set>
#include <string>
#include <type_traits>

#include "interpose/recorder_internal.h"

namespace idlescope {
namespace queues {
namespace {

constexpr size_t kMaxGpuQueue = 1 << 20;

// Never destroyed (hooks and CUPTI's threads may record after static destructors); the vectors are
// made at Init, and a record that comes sooner is not kept.
struct Queues {
  std::mutex mu;
  std::vector<RawGpuActivity>* gpu = nullptr;
  uint64_t gpu_dropped = 0;   // CUPTI's count (RecordGpuDropped)
  uint64_t gpu_overflow = 0;  // refused: the queue held kMaxGpuQueue
  std::vector<RawDeviceInfo>* devices = nullptr;
  std::vector<uint32_t>* devices_seen = nullptr;  // each device is described once per process
  std::vector<trace::Notice>* notices = nullptr;
  std::set<std::string>* codes_said = nullptr;  // each notice code is said on stderr once
};
static_assert(std::is_trivially_destructible_v<Queues>);
constinit Queues g_queues;

}  // namespace

void Init() {
  g_queues.gpu = new std::vector<RawGpuActivity>();
  g_queues.devices = new std::vector<RawDeviceInfo>();
  g_queues.devices_seen = new std::vector<uint32_t>();
  g_queues.notices = new std::vector<trace::Notice>();
  g_queues.codes_said = new std::set<std::string>();
}

void Add(const trace::Notice& notice) {
  std::lock_guard<std::mutex> lock(g_queues.mu);
  g_queues.notices->push_back(notice);
}

std::mutex& Mutex() { return g_queues.mu; }

void TakeLocked(Taken* out) {
  out->gpu.swap(*g_queues.gpu);
  out->devices.swap(*g_queues.devices);
  out->notices.swap(*g_queues.notices);
  out->gpu_dropped = g_queues.gpu_dropped + g_queues.gpu_overflow;
  g_queues.gpu_dropped = g_queues.gpu_overflow = 0;
}

void LockForFork() { g_queues.mu.lock(); }
void UnlockInParent() { g_queues.mu.unlock(); }

void ResetInChild() {
  g_queues.mu.unlock();
  g_queues.gpu->clear();
  g_queues.devices->clear();
  g_queues.devices_seen->clear();
  g_queues.notices->clear();
  g_queues.gpu_dropped = g_queues.gpu_overflow = 0;
}

}  // namespace queues

// ---------------------------------------------------------------------------------------------
// Public API (recorder.h).

using queues::g_queues;

// GPU records are taken until the footer is written, not only while hooks record: the final
// CUPTI flush happens after the hooks were turned off.
void RecordGpu(const RawGpuActivity& activity) {
  if (g_queues.gpu == nullptr) return;
  std::lock_guard<std::mutex> lock(g_queues.mu);
  if (g_queues.gpu->size() >= queues::kMaxGpuQueue) {
    ++g_queues.gpu_overflow;
    return;
  }
  g_queues.gpu->push_back(activity);
}

void RecordGpuDropped(uint64_t records) {
  if (g_queues.gpu == nullptr || records == 0) return;
  std::lock_guard<std::mutex> lock(g_queues.mu);
  g_queues.gpu_dropped += records;
}

void RecordDeviceInfo(const RawDeviceInfo& info) {
  if (g_queues.devices == nullptr) return;
  std::lock_guard<std::mutex> lock(g_queues.mu);
  for (uint32_t d : *g_queues.devices_seen) {
    if (d == info.device) return;
  }
  g_queues.devices_seen->push_back(info.device);
  g_queues.devices->push_back(info);
}

void RecordNotice(NoticeSeverity severity, std::string_view code, std::string_view text,
                  bool print) {
  if (g_queues.notices == nullptr) return;
  int saved = errno;
  ++detail::t_hook_depth;
  bool first_of_code;
  {
    std::lock_guard<std::mutex> lock(g_queues.mu);
    first_of_code = g_queues.codes_said->insert(std::string(code)).second;
    g_queues.notices->push_back(
        {NowNs(), static_cast<uint32_t>(severity), std::string(code), std::string(text)});
  }
  // Said once on stderr per code: a program is not flooded by a condition that repeats.
  if (print && first_of_code) internal::Say(std::string(text).c_str());
  --detail::t_hook_depth;
  errno = saved;
  internal::FlushSoon();
}

}  // namespace idlescope
