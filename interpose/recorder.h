// The recorder: the one API every hook (interpose/hooks/*, interpose/cuda/cudart.cc) and the CUPTI
// layer (interpose/cuda/cupti_*) use to put events into the trace. Hooks stay thin: take a
// timestamp, call the real function, fill a RawEvent, Record() it, return the real result with
// errno preserved.
//
// Hot path (Record, NowNs, the guard) touches only thread-local state: a fixed-size single-
// producer ring per thread that the writer thread drains. Everything slow (interning new
// streams, resolving stack frames to symbols, encoding protobuf, write(2)) happens on the writer
// thread. See docs/architecture.md, "Recorder": each function here is implemented by the part of
// the recorder whose state it touches.
#pragma once

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "interpose/redact.h"

namespace idlescope {

// Values mirror the enums of proto/trace.proto (EventType, CopyKind, MemKind, FsType, NcclOp,
// NetScope, GpuActivityKind); the recorder writes them through unchanged.
namespace ev {
enum Type : uint8_t {
  kCudaMemcpy = 1,
  kCudaMemset = 2,
  kCudaSync = 3,
  kCudaLaunch = 4,
  kCudaGraphLaunch = 5,
  kCudaHostAlloc = 6,
  kCudaHostFree = 7,
  kCudaMalloc = 8,
  kCudaFree = 9,
  kCudaLaunchSummary = 10,
  kNcclCollective = 20,
  kNcclGroup = 21,
  kNcclCommInit = 22,
  kNcclCommDestroy = 23,
  kFileOpen = 30,
  kFileWrite = 31,
  kFileRead = 32,
  kFileSync = 33,
  kFileRename = 34,
  kFileClose = 35,
  kWait = 36,
  kFileMmap = 37,
  kFileMunmap = 38,
  kFileCopy = 39,
  kNetConnect = 40,
  kNetRecv = 41,
  kNetSend = 42,
  kNetSocket = 43,
  kProcFork = 50,
  kProcExec = 51,
  kProcSpawn = 52,
  kProcExit = 53,
  kThreadStart = 54,
  kProcWait = 55,
  kSignalHandler = 56,
  kThreadSample = 57,
  kMark = 60,
  kNvtxRange = 61,
};
enum CopyKind : uint8_t { kH2D = 1, kD2H = 2, kD2D = 3, kH2H = 4, kPeer = 5 };
enum MemKind : uint8_t { kPageable = 1, kPinned = 2, kDevice = 3, kManaged = 4, kArray = 5 };
}  // namespace ev

// One host event, fixed size (96 bytes) so the hot path is a copy into a ring slot. Field
// meanings are those of the same-named fields of idlescope.Event in proto/trace.proto; ids
// (api, stack, path, argv) come from InternString/CaptureStack. Zero means "not set".
struct RawEvent {
  uint64_t ts = 0;     // start, absolute ns on the trace clock (NowNs)
  uint64_t dur = 0;    // ns the thread spent in the call
  uint64_t bytes = 0;  // bytes moved
  uint64_t count = 0;  // I/O burst: calls merged; NCCL: elements; launch summary: launches
  uint32_t api = 0;    // InternString id of the API name
  uint32_t stack = 0;  // CaptureStack id
  int32_t result = 0;  // cudaError_t / ncclResult_t / -errno
  uint8_t type = 0;    // ev::Type
  uint8_t pad_[3] = {};
  union Payload {
    struct Cuda {
      uint64_t stream;       // 0 = no stream (device/event syncs); 1 = the legacy default
                             // stream (NULL or cudaStreamLegacy), 2 = cudaStreamPerThread, else
                             // the cudaStream_t value; the writer interns all but 0
      uint64_t correlation;  // CUPTI correlation id when known
      uint64_t ptr;          // alloc/free/register address
      uint32_t device;
      uint8_t copy_kind;  // ev::CopyKind
      uint8_t host_mem;   // ev::MemKind
      uint8_t async;
    } cuda;
    struct Nccl {
      uint64_t comm;  // communicator id (hash of the unique id)
      uint64_t parent_comm;
      uint64_t seq;
      uint64_t stream;  // as Cuda::stream (NULL given as 1, the legacy default stream)
      int32_t peer;
      int32_t rank;
      int32_t nranks;
      uint8_t op;  // NcclOp
      uint8_t dtype;
      uint8_t redop;
      uint8_t group_depth;
    } nccl;
    struct Io {
      uint64_t offset;
      uint32_t path;  // InternString id
      int32_t fd;
      uint8_t fs_type;         // FsType
      uint8_t net_scope;       // NetScope
      uint8_t writable;        // FILE_MMAP: shared and writable
      uint32_t launch_device;  // WAIT: Event.launch_device + 1 (0: absent), see LaunchDevice()
      uint32_t source;         // FILE_RENAME, FILE_COPY: InternString id of the source
      uint32_t local;          // NET_SOCKET: InternString id of the local address
      uint64_t addr;           // FILE_MMAP, FILE_MUNMAP: the mapping's address
      uint32_t peer_pid;       // NET_SOCKET: SO_PEERCRED's pid (unix sockets)
    } io;
    struct Sample {      // kThreadSample (interpose/sampler.cc)
      uint64_t cpu_ns;   // ran on a CPU during the run
      uint64_t wait_ns;  // runnable, waiting for a CPU
      uint32_t tid;      // the thread sampled
      uint32_t pid;      // its process when it is a forked worker's (0: this process)
      uint32_t path;     // InternString id of the descriptor's target (blocked on one)
      int32_t fd;        // the blocking call's descriptor, or -1
      int32_t syscall;   // the call it was blocked in (-1: none); kNotBlocked: not blocked
      uint8_t state;     // proc(5) stat's state letter at the last look
    } sample;
    struct Proc {
      uint32_t child_pid;
      uint32_t path;  // InternString id of the program
      uint32_t argv;  // InternString id of the NUL-separated arguments
    } proc;
    uint8_t raw[48];
  } u = {};
};
// RawEvent::Sample::syscall of a thread that was not blocked (proto: Event.syscall absent).
inline constexpr int32_t kSampleNotBlocked = INT32_MIN;

static_assert(sizeof(RawEvent) == 96, "RawEvent must stay one fixed 96-byte slot");

// One GPU activity record (from CUPTI), same meanings as idlescope.GpuActivity.
struct RawGpuActivity {
  uint64_t start = 0;  // trace clock
  uint64_t dur = 0;
  uint64_t correlation = 0;
  uint64_t bytes = 0;
  uint64_t grid = 0;   // blocks
  uint32_t name = 0;   // InternString id
  uint32_t block = 0;  // threads per block
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t graph = 0;
  uint32_t dst_device = 0;
  uint32_t shared_mem = 0;
  uint32_t registers = 0;
  uint8_t kind = 0;  // GpuActivityKind
  uint8_t copy_kind = 0;
  uint8_t src_kind = 0;
  uint8_t dst_kind = 0;
  uint8_t nccl = 0;
};

namespace detail {
// Set by the recorder once its file is open and its writer runs; cleared at shutdown or when
// the trace cannot go on. Read on every hook call, hence inline below.
extern std::atomic<bool> g_recorder_active;
// The trace file's descriptor in the program's table, or -1 (where it is: IsTraceFd below).
extern std::atomic<int> g_program_trace_fd;
}  // namespace detail

namespace detail {
// Set once a thread of the program disabled the TSC (prctl(PR_SET_TSC, PR_TSC_SIGSEGV): see
// call_clock.h): clock_gettime's vDSO reads the TSC and would fault in that thread, so our
// time comes from the system call from then on (~0.1-0.2 us instead of ~20 ns).
inline std::atomic<bool> g_clock_by_syscall{false};
}  // namespace detail

// clock_gettime(clock), through the system call once the TSC may be disabled.
inline void ReadClock(clockid_t clock, timespec* ts) {
  if (__builtin_expect(detail::g_clock_by_syscall.load(std::memory_order_relaxed), 0)) {
    syscall(SYS_clock_gettime, clock, ts);
  } else {
    clock_gettime(clock, ts);
  }
}

// Monotonic nanoseconds (CLOCK_MONOTONIC): the trace clock. Cheap (vDSO, ~20 ns), inline so a
// hook pays no call.
inline uint64_t NowNs() {
  timespec ts;
  ReadClock(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// True once the recorder is running in this process (and not shut down). Hooks that find it
// false just call the real function.
inline bool RecorderActive() { return detail::g_recorder_active.load(std::memory_order_relaxed); }

// Which event families are enabled (IDLESCOPE_DISABLE / IDLESCOPE_ENABLE).
enum class Family : uint8_t { kCuda, kCupti, kNccl, kIo, kNet, kProc, kCount };

namespace detail {
// Bit i set = Family i enabled. Written once at init.
extern std::atomic<uint32_t> g_family_mask;
// Hook nesting depth of this thread; the writer thread keeps it >= 1 so nothing it does (its own
// write(2), /proc reads, symbolization) is recorded. initial-exec TLS: one %fs-relative load,
// no __tls_get_addr call on the hot path.
extern __thread uint32_t t_hook_depth __attribute__((tls_model("initial-exec")));
}  // namespace detail

inline bool FamilyEnabled(Family family) {
  return (detail::g_family_mask.load(std::memory_order_relaxed) >> static_cast<uint32_t>(family)) &
         1u;
}

// Per-thread recursion guard, one per hook invocation. A hook records only when active();
// calls made by the recorder itself (writer thread, interning, stack capture) and hooks nested
// inside another hook are not recorded.
namespace detail {
// What the outermost guard does once the hook is done with the recorder's state (AfterHook):
// - kAfterHookHandlers: a handler of the program's ran inside a hook on this thread; it is recorded
//   through the function the signal hooks (interpose/hooks/signals.cc) set before they set the
//   flag. A pointer, not a call: the recorder is built and tested without any hook family.
// - kAfterHookFlush: a flush is due and no writer thread runs: this thread flushes
//   (writer.h, "Threadless processes").
constexpr uint8_t kAfterHookHandlers = 1;
constexpr uint8_t kAfterHookFlush = 2;
extern __thread uint8_t t_after_hook __attribute__((tls_model("initial-exec")));
extern std::atomic<void (*)()> g_record_handlers_in_call;
// Handlers of the program's that our signal handlers are running on this thread (signals.cc,
// lifecycle.cc): no flush starts inside one.
extern __thread uint32_t t_in_program_handler __attribute__((tls_model("initial-exec")));
}  // namespace detail

namespace internal {
void AfterHook();
}  // namespace internal

class HookGuard {
 public:
  explicit HookGuard(Family family)
      : active_(detail::t_hook_depth++ == 0 && RecorderActive() && FamilyEnabled(family)) {}
  ~HookGuard() {
    if (--detail::t_hook_depth == 0 && __builtin_expect(detail::t_after_hook != 0, 0)) {
      internal::AfterHook();
    }
  }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
  // Whether this call should be recorded (recorder active, not nested, family enabled).
  bool active() const { return active_; }

 private:
  bool active_;
};

namespace detail {
// This thread has a pending event (SetPendingEvent) not yet in its ring. initial-exec TLS: Record()
// tests it with one %fs-relative load and a branch.
extern __thread bool t_pending_open __attribute__((tls_model("initial-exec")));

// A thread's pending event where the final flush of another thread can read it: in the thread's
// ring header (rings.h). Only the owner writes it, inside the seqlock `seq` (odd while it
// writes); the head store that appends it to the ring is inside the same seqlock.
struct PendingSlot {
  std::atomic<uint32_t> seq{0};
  std::atomic<bool> open{false};
  RawEvent event;
};
// The calling thread's slot; valid while t_pending_open (set by SetPendingEvent).
extern __thread PendingSlot* t_pending_slot __attribute__((tls_model("initial-exec")));
}  // namespace detail

// Appends one event to the calling thread's buffer. Never blocks: when the buffer is full the
// event is counted as dropped. Never changes errno. This thread's pending event, if any, is
// appended first (it started earlier) and thereby closed.
void Record(const RawEvent& event);

namespace detail {
// The device of this thread's last recorded call that issued or waited for device work, plus 1
// (0: none yet). Set by Record(); cleared in a fork()ed child (its thread has no CUDA context).
extern __thread uint32_t t_launch_device __attribute__((tls_model("initial-exec")));
// The event types whose calls issue or wait for device work on their RawEvent::Cuda::device (the
// analyzer's launching threads are the threads that make them; NCCL calls carry no device).
constexpr uint32_t kDeviceWorkTypes = 1u << ev::kCudaMemcpy | 1u << ev::kCudaMemset |
                                      1u << ev::kCudaSync | 1u << ev::kCudaLaunch |
                                      1u << ev::kCudaGraphLaunch | 1u << ev::kCudaLaunchSummary;
}  // namespace detail

// The calling thread is about to issue or wait for device work (a hook, before the real call;
// Record does it too): the first time, the thread gets its sampling and the process its writer
// thread (writer.h). Before the call, so that the sampler sees what the thread does inside its
// first one (a first launch that starts the driver's threads waits for a CPU beside CPU hogs).
void NoteDeviceWork();

// What a WAIT event says of its thread (proto Event.launch_device): the device of the thread's
// last call that issued or waited for device work, plus 1; 0 when it made none (a helper thread, a
// DataLoader worker, a launcher: its waits never explain a GPU's idle time by themselves).
inline uint32_t LaunchDevice() { return detail::t_launch_device; }

// Pending event: one event per thread that a hook keeps growing before it is complete (the I/O
// bursts of hooks/io_record.cc merge thousands of write() calls into one event). The recorder
// holds it, so it is neither out of order nor lost whatever happens next on the thread:
//   - Record() on the same thread appends it before the new event (start order in the thread's
//     batch) and closes it; so do RecordPendingEvent() and exec (BeforeExec);
//   - the thread's exit (pthread key destructor), the end of main, exit(), _exit()/_Exit() and
//     SIGTERM/SIGINT append it before the final flush;
//   - the final flush also takes the pending events of the other threads, still running, from a
//     seqlock-published copy (docs/architecture.md, "Pending events").
// SetPendingEvent() opens it or replaces its content (a 96-byte copy between two counter
// stores); UpdatePendingEvent() replaces only the three counters a growing burst changes at each
// merged call (dur, bytes, count: three word stores between the counter stores). Call them from a
// hook (an active HookGuard): hooks never record when nested, so a signal handler's Record never
// meets a half-written copy. A hook checks PendingEventOpen() before extending its own state: the
// recorder may have closed the event behind its back.
void SetPendingEvent(const RawEvent& event);
// Requires PendingEventOpen() (checked by the caller, which has just tested it). Inline: it runs
// on every merged write/read, where each page the hook touches after the syscall costs a TLB miss
// (~20 ns on the build VMs), so it writes the ring header's slot with no call.
inline void UpdatePendingEvent(uint64_t dur, uint64_t bytes, uint64_t count) {
  detail::PendingSlot* slot = detail::t_pending_slot;
  // Seqlock writer side, as in rings.cc (Boehm, "Can seqlocks get along with programming
  // language memory models?"): the odd count is ordered before the data stores by the release
  // fence, the even one after them by its release store.
  uint32_t seq = slot->seq.load(std::memory_order_relaxed);
  slot->seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&slot->event.dur, dur, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->event.bytes, bytes, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->event.count, count, __ATOMIC_RELAXED);
  slot->seq.store(seq + 2, std::memory_order_release);
}
// Appends this thread's pending event now, if any (the hook ended it: other fd, close, fsync...).
void RecordPendingEvent();
inline bool PendingEventOpen() { return detail::t_pending_open; }

// Appends one GPU activity record (any thread; CUPTI's completion thread in practice).
void RecordGpu(const RawGpuActivity& activity);
// Adds CUPTI records lost (cuptiActivityGetNumDroppedRecords) to the next GpuBatch.dropped.
void RecordGpuDropped(uint64_t records);

// Interns a string (API name, path, kernel name); returns its id (>= 1), stable for the process
// (a forked child's file defines them all again). Thread-safe; costs a hash lookup. Hooks intern
// their API name once per call site (ApiName). Inside a flush (names of new frames) the id comes
// from the flush's own table instead, without the mutex hooks take, valid in the current file.
uint32_t InternString(std::string_view s);

// Interns a path (a file, a program or module, a socket address): InternString of what the trace
// keeps of it, the path itself unless IDLESCOPE_REDACT has "paths" (redact.h).
uint32_t InternPath(std::string_view path, redact::PathKind kind);
// Interns a NUL-separated command line as IDLESCOPE_REDACT keeps it.
uint32_t InternArgv(std::string_view nul_separated);

// The id of a hook's API name, interned by the first event that needs it. One per call site, as a
// constant-initialised static (IDLESCOPE_API): a function-local static with a dynamic initialiser
// runs it under __cxa_guard_acquire, and a thread that fork() caught inside it (waiting for the
// strings mutex, which the fork handlers hold) leaves that guard taken in the child, whose first
// call of the hook then waits forever. Two threads that intern the name at once get the same id.
class ApiName {
 public:
  explicit constexpr ApiName(const char* name) : name_(name) {}
  uint32_t id() {
    uint32_t id = id_.load(std::memory_order_relaxed);
    return __builtin_expect(id != 0, 1) ? id : Intern();
  }

 private:
  uint32_t Intern();
  const char* const name_;
  std::atomic<uint32_t> id_{0};
};

}  // namespace idlescope

// A `uint32_t (*)()` giving the id of API name `name` (a string literal): hooks pass their API so.
#define IDLESCOPE_API(name)                                         \
  +[]() -> uint32_t {                                               \
    static constinit ::idlescope::ApiName idlescope_api_name(name); \
    return idlescope_api_name.id();                                 \
  }

// An exported C function: a hook (it interposes the program's call of the same name) or the
// annotation API (lifecycle.cc). The library is built with hidden visibility: nothing else of it
// is exported.
#define IDLESCOPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace idlescope {

// Captures the caller's call stack (skipping `skip` innermost frames) and returns its trie id,
// or 0 when stacks are disabled (IDLESCOPE_STACK_DEPTH=0). Symbolization happens later, on the
// writer thread.
uint32_t CaptureStack(int skip = 1);
// The trie id of a stack of Python frames only (python::ReadThreadFrames' keys, innermost first):
// the sampler's stacks of another thread, which has no native frames to give. 0 when stacks are
// disabled or `n` is 0.
uint32_t InternPythonStack(const uint64_t* keys, int n);

// Device properties, written once per device.
struct RawDeviceInfo {
  uint32_t device = 0;
  uint32_t sm_count = 0;
  uint64_t total_memory = 0;
  uint32_t visible_devices = 0;
  uint32_t pci_bus = 0;
  char name[96] = {};
  char uuid[40] = {};
};
void RecordDeviceInfo(const RawDeviceInfo& info);

// The environment variables read after start, as they were when the library started, or when
// this process forked (its one thread then runs the recorder's atfork handler). getenv later, on
// our threads, would race with the program's setenv/putenv, which free the array getenv walks: a
// traced gcc driver's writer thread crashed so in getenv, building the header while the driver
// set COLLECT_GCC_OPTIONS (docs/architecture.md, "Process life"). nullptr when unset or empty.
enum class StartVar : uint8_t {
  // Rank, local rank and size by launcher, in the order BuildHeader tries them (trace.proto,
  // Header.rank).
  kRank,
  kLocalRank,
  kWorldSize,
  kOmpiRank,
  kOmpiLocalRank,
  kOmpiSize,
  kPmixRank,
  kPmiRank,
  kMpiLocalRankId,
  kPmiSize,
  kSlurmProcid,
  kSlurmLocalId,
  kSlurmNtasks,
  kCudaVisibleDevices,
  kCuptiLib,       // IDLESCOPE_CUPTI_LIB
  kCuptiFlushMs,   // IDLESCOPE_CUPTI_FLUSH_MS
  kCuptiBufferMb,  // IDLESCOPE_CUPTI_BUFFER_MB
  kCount
};
const char* StartEnv(StartVar var);
const char* StartVarName(StartVar var);  // "RANK", ...

// A notice for the reader ("cupti_unavailable", ...). Also printed once on stderr, prefixed
// "idlescope: ", when `print` is true.
enum class NoticeSeverity : uint8_t { kInfo = 1, kWarning = 2, kError = 3 };
void RecordNotice(NoticeSeverity severity, std::string_view code, std::string_view text,
                  bool print);

// Flush everything buffered so far to the file (blocking; used at exit and by tests).
void FlushNow();

// A layer that buffers records of its own and hands them over through RecordGpu, RecordNotice and
// RecordDeviceInfo (the CUPTI layer: its activity buffers). The recorder has it deliver them before
// the footer, stops its thread with ours, and runs its fork handlers around its own: first in
// prepare (the layer interns names under locks of its own, so they are taken before the
// recorder's), last in parent and child. Every member is set; none is called with a lock of the
// recorder held.
struct FlushParticipant {
  void (*flush)();                // delivers everything now (a program thread, at the end)
  void (*flush_on_own_thread)();  // the same, run on the layer's own thread and waited for
                                  // (bounded): asked by the writer at the end on a signal, since
                                  // the signal handler cannot flush and the writer's descriptor
                                  // table lacks what the layer may need (the CUDA driver's)
  void (*stop)();                 // the program's last thread is ending: the layer's threads leave
  void (*fork_prepare)();
  void (*fork_parent)();
  void (*fork_child)();
};
// `participant` (static storage) is the one flush participant. Register at load (a library
// constructor), before any of its locks can be taken: a fork whose prepare handler found none
// registered leaves the layer's locks as they are in the child.
void RegisterFlushParticipant(const FlushParticipant* participant);

// exec support for the process hooks: BeforeExec() flushes and writes the footer (EXIT_EXEC: the
// new image writes its own file with the same pid); AfterExecFailed() removes that footer again
// when execve returned, and tracing goes on in the same file.
void BeforeExec();
void AfterExecFailed();

// True when `fd`, a descriptor of the program's table, is the trace file. Only where the writer
// could not get a descriptor table of its own (docs/architecture.md, "The trace file"); elsewhere
// the program's table holds nothing of ours and this is false for every fd. The close/dup hooks
// protect it with the two functions below.
inline bool IsTraceFd(int fd) {
  return fd >= 0 && fd == detail::g_program_trace_fd.load(std::memory_order_relaxed);
}
// The trace file's fd if it is in [first, last] of the program's table, else -1.
int TraceFdIn(unsigned first, unsigned last);
// Before the program dup2()s onto `fd`: if that is the trace file's number, the file moves to
// another one first.
void MoveTraceFdAwayFrom(int fd);

namespace detail {
// Set on the writer thread once it has a descriptor table of its own (docs/architecture.md,
// "Writer thread").
extern __thread bool t_own_fd_table __attribute__((tls_model("initial-exec")));
}  // namespace detail

// True on a thread whose file descriptor table is not the program's (the recorder's writer): the
// descriptor numbers it opens, closes or duplicates name other files than the program's, so hooks
// that keep per-fd state must not update it from there.
inline bool OwnFdTable() { return detail::t_own_fd_table; }

}  // namespace idlescope
