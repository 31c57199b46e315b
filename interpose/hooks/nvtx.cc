// NVTX ranges and marks of the program (nvtxRangePushA/Pop, nvtxRangeStartA/End, nvtxMarkA, their
// Ex and domain forms), recorded as NVTX_RANGE events: the job's own step markers
// (`idlescope diff`'s steps: analyzer/diff/step_census.h), as nsys reads them. NVTX calls go
// through a table of function pointers in the program (NVTX3 is header-only); at the first call
// NVTX loads the injection library that NVTX_INJECTION64_PATH names (`idlescope run` sets it to
// this library, unless the job sets its own) and calls its InitializeInjectionNvtx2, which fills
// the table's entries through NVTX's export table. The ABI below (the export table, the callback
// ids, nvtxEventAttributes_v2) is NVTX's documented, versioned one (nvtx3/nvtxDetail/
// nvtxTypes.h); declared here so that no NVTX implementation is compiled into this library.
// A range is recorded when it ends, on the thread that ends it: its start, its length, its
// message (ASCII messages; a registered or wide one records no name) and its nesting depth on the
// thread (`count`: 1 for an outermost push). A mark is a range of length 0.
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <atomic>

#include "interpose/recorder.h"

namespace {

namespace nvtx_abi {
using FunctionPointer = void (*)();
using FunctionTable = FunctionPointer**;
struct ExportTableCallbacks {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, FunctionTable* out_table, unsigned int* out_size);
};
using GetExportTable = const void* (*)(uint32_t export_table_id);
constexpr uint32_t kExportTableCallbacks = 1;  // NVTX_ETID_CALLBACKS
constexpr int kModuleCore = 1;                 // NVTX_CB_MODULE_CORE
constexpr int kModuleCore2 = 5;                // NVTX_CB_MODULE_CORE2
// NvtxCallbackIdCore
constexpr unsigned kMarkEx = 1, kMarkA = 2, kRangeStartEx = 4, kRangeStartA = 5, kRangeEnd = 7,
                   kRangePushEx = 8, kRangePushA = 9, kRangePop = 11;
// NvtxCallbackIdCore2
constexpr unsigned kDomainMarkEx = 1, kDomainRangeStartEx = 2, kDomainRangeEnd = 3,
                   kDomainRangePushEx = 4, kDomainRangePop = 5;
struct EventAttributes {  // nvtxEventAttributes_v2
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type;
  int32_t reserved0;
  uint64_t payload;
  int32_t message_type;
  const void* message;
};
constexpr int32_t kMessageAscii = 1;  // NVTX_MESSAGE_TYPE_ASCII
}  // namespace nvtx_abi

using idlescope::RawEvent;

// Pushed ranges of this thread: their starts and names (deeper ones are counted, not kept).
constexpr int kMaxDepth = 32;
struct Pushed {
  uint64_t start;
  uint32_t name;
};
// initial-exec TLS, as the recorder's: no __tls_get_addr (which may allocate) in a hook.
__thread Pushed t_pushed[kMaxDepth] __attribute__((tls_model("initial-exec")));
__thread int t_depth __attribute__((tls_model("initial-exec"))) = 0;

// Started ranges (nvtxRangeStart/End may end on another thread): a small table of slots; the id
// handed back is the slot + 1 with a generation above, 0 when the table is full (End ignores it).
constexpr uint32_t kStartSlots = 256;
struct Started {
  std::atomic<uint64_t> id{0};  // 0: free
  uint64_t start;
  uint32_t name;
};
Started g_started[kStartSlots];
std::atomic<uint64_t> g_next_generation{1};

uint32_t NameOf(const char* message) {
  return message != nullptr ? idlescope::InternString(message) : 0;
}

uint32_t NameOf(const nvtx_abi::EventAttributes* a) {
  if (a == nullptr || a->size < sizeof(nvtx_abi::EventAttributes) ||
      a->message_type != nvtx_abi::kMessageAscii) {
    return 0;
  }
  return NameOf(static_cast<const char*>(a->message));
}

bool Recording() {
  return idlescope::RecorderActive() && idlescope::detail::t_hook_depth == 0 &&
         idlescope::FamilyEnabled(idlescope::Family::kCuda);
}

void RecordRange(uint64_t start, uint64_t end, uint32_t name, int depth) {
  const int saved = errno;
  RawEvent e;
  e.ts = start;
  e.dur = end > start ? end - start : 0;
  e.type = idlescope::ev::kNvtxRange;
  e.api = IDLESCOPE_API("nvtx")();
  e.count = static_cast<uint64_t>(depth);
  e.u.io.path = name;
  idlescope::Record(e);
  errno = saved;
}

int Push(uint32_t name) {
  const int depth = t_depth++;
  if (depth < kMaxDepth) t_pushed[depth] = {idlescope::NowNs(), name};
  return depth;  // NVTX: the zero-based level of the range just started
}

int Pop() {
  if (t_depth == 0) return -2;  // NVTX: an error, no range was open
  const int depth = --t_depth;
  if (depth < kMaxDepth && Recording()) {
    RecordRange(t_pushed[depth].start, idlescope::NowNs(), t_pushed[depth].name, depth + 1);
  }
  return depth;
}

uint64_t Start(uint32_t name) {
  const uint64_t now = idlescope::NowNs();
  const uint64_t generation = g_next_generation.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t k = 0; k < kStartSlots; ++k) {
    Started& s = g_started[(generation + k) % kStartSlots];
    uint64_t free = 0;
    const uint64_t id = (generation << 8) | ((generation + k) % kStartSlots);
    if (s.id.compare_exchange_strong(free, id + 1, std::memory_order_acquire)) {
      s.start = now;
      s.name = name;
      return id + 1;
    }
  }
  return 0;
}

void End(uint64_t id) {
  if (id == 0) return;
  Started& s = g_started[(id - 1) & 0xff];
  const uint64_t start = s.start;
  const uint32_t name = s.name;
  uint64_t expected = id;
  if (!s.id.compare_exchange_strong(expected, 0, std::memory_order_release)) return;
  if (Recording()) RecordRange(start, idlescope::NowNs(), name, 0);
}

void Mark(uint32_t name) {
  if (!Recording()) return;
  const uint64_t now = idlescope::NowNs();
  RecordRange(now, now, name, 0);
}

// The table's entries: NVTX's signatures (nvtxDetail/nvtxTypes.h).
void MarkA(const char* message) {
  if (Recording()) Mark(NameOf(message));
}
void MarkEx(const nvtx_abi::EventAttributes* a) {
  if (Recording()) Mark(NameOf(a));
}
uint64_t RangeStartA(const char* message) { return Start(Recording() ? NameOf(message) : 0); }
uint64_t RangeStartEx(const nvtx_abi::EventAttributes* a) {
  return Start(Recording() ? NameOf(a) : 0);
}
void RangeEnd(uint64_t id) { End(id); }
int RangePushA(const char* message) { return Push(Recording() ? NameOf(message) : 0); }
int RangePushEx(const nvtx_abi::EventAttributes* a) { return Push(Recording() ? NameOf(a) : 0); }
int RangePop() { return Pop(); }
void DomainMarkEx(void*, const nvtx_abi::EventAttributes* a) { MarkEx(a); }
uint64_t DomainRangeStartEx(void*, const nvtx_abi::EventAttributes* a) { return RangeStartEx(a); }
void DomainRangeEnd(void*, uint64_t id) { End(id); }
int DomainRangePushEx(void*, const nvtx_abi::EventAttributes* a) { return RangePushEx(a); }
int DomainRangePop(void*) { return Pop(); }

template <typename F>
void Set(nvtx_abi::FunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id] != nullptr)
    *table[id] = reinterpret_cast<nvtx_abi::FunctionPointer>(f);
}

}  // namespace

// NVTX's injection entry point (NVTX_INJECTION64_PATH names this library). Returns 1 (attached)
// when the core table could be filled.
IDLESCOPE_EXPORT int InitializeInjectionNvtx2(nvtx_abi::GetExportTable get_export_table) {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks = static_cast<const nvtx_abi::ExportTableCallbacks*>(
      get_export_table(nvtx_abi::kExportTableCallbacks));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(nvtx_abi::ExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  nvtx_abi::FunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(nvtx_abi::kModuleCore, &table, &size) ||
      table == nullptr) {
    return 0;
  }
  Set(table, size, nvtx_abi::kMarkEx, MarkEx);
  Set(table, size, nvtx_abi::kMarkA, MarkA);
  Set(table, size, nvtx_abi::kRangeStartEx, RangeStartEx);
  Set(table, size, nvtx_abi::kRangeStartA, RangeStartA);
  Set(table, size, nvtx_abi::kRangeEnd, RangeEnd);
  Set(table, size, nvtx_abi::kRangePushEx, RangePushEx);
  Set(table, size, nvtx_abi::kRangePushA, RangePushA);
  Set(table, size, nvtx_abi::kRangePop, RangePop);
  if (callbacks->GetModuleFunctionTable(nvtx_abi::kModuleCore2, &table, &size) &&
      table != nullptr) {
    Set(table, size, nvtx_abi::kDomainMarkEx, DomainMarkEx);
    Set(table, size, nvtx_abi::kDomainRangeStartEx, DomainRangeStartEx);
    Set(table, size, nvtx_abi::kDomainRangeEnd, DomainRangeEnd);
    Set(table, size, nvtx_abi::kDomainRangePushEx, DomainRangePushEx);
    Set(table, size, nvtx_abi::kDomainRangePop, DomainRangePop);
  }
  return 1;
}
