// The recorder core: per-thread rings, interning, the writer thread, the trace file.
//
// Threads: any program thread calls Record() (lock-free, its own ring); InternString and
// RecordGpu/RecordNotice/RecordDeviceInfo take short mutexes; the writer thread (all signals
// blocked, hook depth >= 1 so nothing it does is traced) wakes every IDLESCOPE_FLUSH_MS or when a
// ring is half full, encodes and writes. Flush() runs under g_flush_mu, on the writer or on a
// FlushNow() caller.
#include "interpose/recorder.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpose/python/pystacks.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder_internal.h"
#include "interpose/trace_encoder.h"
#include "interpose/wire.h"

#ifndef IDLESCOPE_VERSION
#define IDLESCOPE_VERSION "0.0.0"
#endif

// The CUPTI layer (cupti/, only in builds with CUDA) delivers its pending activity buffers; weak so
// the recorder links without it. The second form runs the flush on the CUPTI layer's own thread
// and waits for it (bounded): for the writer, whose descriptor table lacks the CUDA driver's.
extern "C" __attribute__((weak)) void idlescope_cupti_flush();
extern "C" __attribute__((weak)) void idlescope_cupti_flush_on_cupti_thread();
// Its flush thread leaves with the writer when the program's last thread ends.
extern "C" __attribute__((weak)) void idlescope_cupti_stop_flush_thread();
// Its fork handlers (locks it takes before it interns strings: taken before ours).
extern "C" __attribute__((weak)) void idlescope_cupti_fork_prepare();
extern "C" __attribute__((weak)) void idlescope_cupti_fork_parent();
extern "C" __attribute__((weak)) void idlescope_cupti_fork_child();

namespace idlescope {

namespace detail {
std::atomic<bool> g_recorder_active{false};
std::atomic<int> g_program_trace_fd{-1};
std::atomic<uint32_t> g_family_mask{0};
__thread uint32_t t_hook_depth __attribute__((tls_model("initial-exec"))) = 0;
__thread bool t_pending_open __attribute__((tls_model("initial-exec"))) = false;
__thread PendingSlot* t_pending_slot __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_own_fd_table __attribute__((tls_model("initial-exec"))) = false;
__thread uint32_t t_launch_device __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace detail

namespace internal {
namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers (no stdio anywhere in the recorder: a signal arriving inside stdio's locks, or
// the program's own buffering, must never meet ours).

long Futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

uint32_t GetTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// Whole file into a string (for /proc files, whose size stat does not tell).
bool ReadFile(const char* path, std::string* out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::optional<int32_t> EnvInt(StartVar var) {
  const char* v = StartEnv(var);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < INT32_MIN || n > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(n);
}

// Rank, local rank and world size from the first launcher whose rank variable is set
// (trace.proto, Header.rank). kCount: the launcher does not set that one.
void SetRank(trace::Header* h) {
  struct Launcher {
    StartVar rank, local_rank, size;
  };
  constexpr Launcher kLaunchers[] = {
      {StartVar::kRank, StartVar::kLocalRank, StartVar::kWorldSize},
      {StartVar::kOmpiRank, StartVar::kOmpiLocalRank, StartVar::kOmpiSize},
      {StartVar::kPmixRank, StartVar::kCount, StartVar::kCount},
      {StartVar::kPmiRank, StartVar::kMpiLocalRankId, StartVar::kPmiSize},
      {StartVar::kSlurmProcid, StartVar::kSlurmLocalId, StartVar::kSlurmNtasks},
  };
  for (const Launcher& l : kLaunchers) {
    std::optional<int32_t> rank = EnvInt(l.rank);
    if (!rank) continue;
    h->rank = rank;
    if (l.local_rank != StartVar::kCount) h->local_rank = EnvInt(l.local_rank);
    if (l.size != StartVar::kCount) h->world_size = EnvInt(l.size);
    h->rank_variable = StartVarName(l.rank);
    return;
  }
}

// ---------------------------------------------------------------------------------------------
// Per-thread rings. Ring headers live in a static array (no allocation to find or register one);
// the slots are mmap'd (Record may run in a signal handler of the program: no malloc there).

enum RingState : uint32_t { kUnused = 0, kOwned = 1, kExited = 2, kFree = 3, kClaiming = 4 };

struct Ring {
  // Producer side (the owning thread).
  alignas(64) std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> dropped{0};
  RawEvent* slots = nullptr;
  uint64_t mask = 0;
  std::atomic<bool> wake_pending{false};
  // Consumer side (the flushing thread, under g_flush_mu).
  alignas(64) std::atomic<uint64_t> tail{0};
  std::atomic<uint32_t> state{kUnused};
  uint32_t tid = 0;
  uint64_t dropped_reported = 0;
  uint64_t seq = 0;
  uint64_t snap_head = 0;
  uint32_t name_checks = 0;
  char name[16] = {};
  // The final flush's copy of the pending event (below), written after the ring's events.
  bool final_pending = false;
  RawEvent final_pending_event;
  // The owner's pending event (SetPendingEvent, recorder.h). A reader that sees an even, unchanged
  // `pending.seq` has a (head, pending event) pair of one instant: an open pending event is then
  // not among the slots below that head.
  alignas(64) detail::PendingSlot pending;
};

constexpr uint32_t kMaxRings = 8192;
Ring g_rings[kMaxRings];
std::atomic<uint32_t> g_ring_count{0};
uint64_t g_ring_slots = 0;  // per ring, power of two; 0 until Init
pthread_key_t g_ring_key;

__thread Ring* t_ring __attribute__((tls_model("initial-exec"))) = nullptr;
__thread bool t_thread_dead __attribute__((tls_model("initial-exec"))) = false;
// No ring could be had (all kMaxRings in use, or mmap failed): this thread's events are counted
// as dropped without searching again on every call.
__thread bool t_ring_failed __attribute__((tls_model("initial-exec"))) = false;

std::atomic<uint32_t> g_wake_word{0};
std::atomic<uint64_t> g_rings_unavailable{0};  // events lost because no ring could be had

void WakeWriter() {
  g_wake_word.fetch_add(1, std::memory_order_release);
  Futex(&g_wake_word, FUTEX_WAKE_PRIVATE, 1, nullptr);
}

bool MapSlots(Ring* r) {
  size_t bytes = g_ring_slots * sizeof(RawEvent);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  r->slots = static_cast<RawEvent*>(p);
  r->mask = g_ring_slots - 1;
  return true;
}

void UnmapSlots(Ring* r) {
  if (r->slots != nullptr) munmap(r->slots, (r->mask + 1) * sizeof(RawEvent));
  r->slots = nullptr;
}

void ResetRing(Ring* r, uint32_t tid) {
  r->head.store(0, std::memory_order_relaxed);
  r->tail.store(0, std::memory_order_relaxed);
  r->dropped.store(0, std::memory_order_relaxed);
  r->wake_pending.store(false, std::memory_order_relaxed);
  r->dropped_reported = 0;
  r->seq = 0;
  r->name_checks = 0;
  r->name[0] = '\0';
  r->tid = tid;
  r->final_pending = false;
  r->pending.seq.store(0, std::memory_order_relaxed);
  r->pending.open.store(false, std::memory_order_relaxed);
}

// Puts one event into the owner's ring (owner thread only); counts a drop when it is full.
inline void Push(Ring* r, const RawEvent& event) {
  uint64_t h = r->head.load(std::memory_order_relaxed);
  uint64_t used = h - r->tail.load(std::memory_order_acquire);
  if (__builtin_expect(used > r->mask, 0)) {
    r->dropped.store(r->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  r->slots[h & r->mask] = event;
  r->head.store(h + 1, std::memory_order_release);
  if (__builtin_expect(used >= (r->mask >> 1), 0) &&
      !r->wake_pending.load(std::memory_order_relaxed)) {
    r->wake_pending.store(true, std::memory_order_relaxed);
    int saved = errno;
    WakeWriter();
    errno = saved;
  }
}

// The pending event is copied word by word with relaxed atomics: the owner writes it while a
// final flush may read it (the seqlock tells the reader whether its copy is whole).
using AliasWord = uint64_t __attribute__((may_alias));
constexpr size_t kEventWords = sizeof(RawEvent) / sizeof(uint64_t);
static_assert(sizeof(RawEvent) % sizeof(uint64_t) == 0 && alignof(RawEvent) == alignof(uint64_t));

void StoreEventWords(RawEvent* dst, const RawEvent& src) {
  AliasWord* d = reinterpret_cast<AliasWord*>(dst);
  const AliasWord* s = reinterpret_cast<const AliasWord*>(&src);
  for (size_t i = 0; i < kEventWords; ++i) __atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
}

void LoadEventWords(RawEvent* dst, const RawEvent& src) {
  AliasWord* d = reinterpret_cast<AliasWord*>(dst);
  const AliasWord* s = reinterpret_cast<const AliasWord*>(&src);
  for (size_t i = 0; i < kEventWords; ++i) d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

// Seqlock writer side (Boehm, "Can seqlocks get along with programming language memory models?"):
// the odd count is ordered before the data stores by the release fence, the even one after them
// by its release store.
inline uint32_t PendingWriteBegin(Ring* r) {
  uint32_t seq = r->pending.seq.load(std::memory_order_relaxed);
  r->pending.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  return seq + 2;
}

// Owner thread: the pending event goes into the ring, in the same seqlock section as its closing.
void AppendPending(Ring* r) {
  uint32_t done = PendingWriteBegin(r);
  if (r->pending.open.load(std::memory_order_relaxed)) {
    Push(r, r->pending.event);
    r->pending.open.store(false, std::memory_order_relaxed);
  }
  r->pending.seq.store(done, std::memory_order_release);
  detail::t_pending_open = false;
}

// Final flush, any thread: the owner's (head, pending event) pair of one instant. The owner may be
// preempted inside its section (odd count), or even interrupted there by the signal whose handler
// waits for this flush: bounded retries, then the head alone (that pending event is lost).
void SnapshotWithPending(Ring* r) {
  r->final_pending = false;
  for (int attempt = 0; attempt < 2000; ++attempt) {
    uint32_t seq = r->pending.seq.load(std::memory_order_acquire);
    if (seq & 1u) {
      sched_yield();
      continue;
    }
    uint64_t head = r->head.load(std::memory_order_acquire);
    bool open = r->pending.open.load(std::memory_order_relaxed);
    if (open) LoadEventWords(&r->final_pending_event, r->pending.event);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r->pending.seq.load(std::memory_order_relaxed) != seq) continue;
    r->snap_head = head;
    r->final_pending = open;
    return;
  }
  r->snap_head = r->head.load(std::memory_order_acquire);
}

// Thread exit (pthread key destructor): the writer drains the ring, then frees its slots.
void OnThreadExit(void* arg) {
  Ring* r = static_cast<Ring*>(arg);
  // A burst still open when the thread ends is complete now: it goes in before the ring is handed
  // over (this runs on the owner thread, after its C++ thread_local destructors).
  if (detail::t_pending_open) AppendPending(r);
  t_ring = nullptr;
  t_thread_dead = true;  // events recorded later in this thread's teardown are not kept
  r->state.store(kExited, std::memory_order_release);
}

__attribute__((noinline)) Ring* ClaimRing() {
  if (t_thread_dead || t_ring_failed || g_ring_slots == 0) return nullptr;
  int saved = errno;
  Ring* r = nullptr;
  uint32_t n = g_ring_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n && r == nullptr; ++i) {
    uint32_t expected = kFree;
    if (g_rings[i].state.compare_exchange_strong(expected, kClaiming)) r = &g_rings[i];
  }
  if (r == nullptr) {
    uint32_t i = g_ring_count.load(std::memory_order_relaxed);
    do {
      if (i >= kMaxRings) {
        t_ring_failed = true;
        errno = saved;
        return nullptr;
      }
    } while (!g_ring_count.compare_exchange_weak(i, i + 1));
    r = &g_rings[i];
    r->state.store(kClaiming, std::memory_order_relaxed);
  }
  ResetRing(r, GetTid());
  if (!MapSlots(r)) {
    t_ring_failed = true;
    r->state.store(kFree, std::memory_order_release);
    errno = saved;
    return nullptr;
  }
  r->state.store(kOwned, std::memory_order_release);
  t_ring = r;
  pthread_setspecific(g_ring_key, r);
  errno = saved;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Interned strings: ids from 1, stable for the process (hooks keep their API names' ids, and a
// forked child keeps using them all: its new file defines them all again).
//
// Program threads intern under g_strings_mu (the map finds a string's id). What a flush needs is
// readable without that lock: ids are handed out in order under the mutex, each string's bytes are
// stored in a chunk of StringRefs before the count that publishes its id. So a flush never waits
// for a thread that holds the mutex, which may be the very thread that a signal stopped there (the
// final flush of SIGTERM: docs/architecture.md, "Process life"). The mutex is a constant-
// initialised std::mutex, usable before any constructor ran (another preloaded library's
// constructor may call a hook first); the map is created under it at the first use.

struct StringRef {
  const char* data;
  uint32_t size;
};
constexpr uint32_t kStringChunkBits = 12;
constexpr uint32_t kStringChunk = 1u << kStringChunkBits;
constexpr uint32_t kMaxStringChunks = 4096;  // 16M strings; beyond that InternString gives 0

// std::string keys (nodes do not move), found by string_view without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
std::mutex g_strings_mu;
// Never freed (hooks may run after static destructors).
std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>* g_string_ids;
std::atomic<StringRef*> g_string_chunks[kMaxStringChunks];
std::atomic<uint32_t> g_strings_published{0};  // ids 1..published have their StringRef
uint32_t g_strings_emitted = 0;                // written to the current file (under g_flush_mu)
uint64_t g_strings_refused = 0;                // table full (under g_strings_mu)

// Strings interned by a flush (function, module and Python file names of new frames): a table of
// the flush's own, under g_flush_mu, never g_strings_mu, with ids from kFlushStringIds up. The
// thread that holds g_strings_mu may be the one a signal stopped in a hook (every open interns
// its path), and the final flush of that signal runs after the flush under way, on the same
// writer: a periodic flush waiting for that mutex kept the final one from starting for the
// handler's 3 s, and the process died with neither its last events nor its footer. Only frames
// and modules use these ids, and a new file (a forked child's) resolves those again
// (Symbolizer::Reset): the table is emptied with them. `t_flushing`: the calling thread is in
// FlushLocked (hooks do not record meanwhile: t_hook_depth), so InternString uses this table.
constexpr uint32_t kFlushStringIds = 0x7f000000u;
constexpr uint32_t kMaxFlushStrings = 1u << 24;
__thread bool t_flushing __attribute__((tls_model("initial-exec"))) = false;
std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>* g_flush_string_ids;
std::vector<const std::string*>* g_flush_strings;  // by id - kFlushStringIds (the map's keys)
uint32_t g_flush_strings_emitted = 0;              // written to the current file

uint32_t InternFlushString(std::string_view s) {
  auto it = g_flush_string_ids->find(s);
  if (it != g_flush_string_ids->end()) return it->second;
  if (g_flush_strings->size() >= kMaxFlushStrings) return 0;
  uint32_t id = kFlushStringIds + static_cast<uint32_t>(g_flush_strings->size());
  g_flush_strings->push_back(&g_flush_string_ids->emplace(std::string(s), id).first->first);
  return id;
}

// Set on the writer for the final flush of a signal (or of _exit, which signal handlers call),
// which may not wait for a lock the thread the signal stopped can hold: frames are resolved
// without the dynamic loader's locks (Symbolizer::FrameFor), the queues are left out if their
// mutex stays taken (FlushLocked), nothing is freed (alloc.cc).
__thread bool t_final_of_signal __attribute__((tls_model("initial-exec"))) = false;

// The string of a published id (1..g_strings_published).
const StringRef& PublishedString(uint32_t id) {
  uint32_t index = id - 1;
  return g_string_chunks[index >> kStringChunkBits].load(
      std::memory_order_relaxed)[index & (kStringChunk - 1)];
}

// ---------------------------------------------------------------------------------------------
// Queues filled by other threads, drained by Flush.

std::mutex g_queue_mu;
std::vector<RawGpuActivity>* g_gpu_queue;
uint64_t g_gpu_dropped_pending = 0;
uint64_t g_gpu_queue_overflow = 0;
std::vector<RawDeviceInfo>* g_devices_pending;
std::vector<uint32_t>* g_devices_seen;
std::vector<trace::Notice>* g_notices_pending;
std::set<std::string>* g_notice_codes_said;
constexpr size_t kMaxGpuQueue = 1 << 20;

// ---------------------------------------------------------------------------------------------
// The file and the flushing state (under g_flush_mu).

std::mutex g_flush_mu;
Config* g_config;
int g_fd = -1;         // the trace file in the program's descriptor table
int g_writer_fd = -1;  // the same file in the writer's own table (TakeOwnFdTable), or -1
dev_t g_fd_dev = 0;
ino_t g_fd_ino = 0;
std::string* g_path;
uint32_t g_pid = 0;
uint64_t g_file_bytes = 0;
uint64_t g_footer_at = 0;  // file size before the footer (exec support)
bool g_closed = true;      // no file open yet, or footer written: nothing goes into the file
bool g_fd_lost_said = false;
int g_exit_status = 0;
bool g_exit_status_set = false;

// Totals for the footer.
uint64_t g_total_events = 0, g_total_dropped = 0, g_total_gpu = 0, g_total_gpu_dropped = 0,
         g_total_batches = 0;

// Writer-side interning of stream handles.
struct StreamKey {
  uint64_t handle;
  int32_t device;
  bool operator==(const StreamKey&) const = default;
};
struct StreamKeyHash {
  size_t operator()(const StreamKey& k) const {
    return std::hash<uint64_t>()(k.handle * 31 + static_cast<uint64_t>(k.device));
  }
};
std::unordered_map<StreamKey, uint64_t, StreamKeyHash>* g_stream_ids;
// Writer-side interning of NCCL communicators (per file: reset with the header).
trace::CommIds* g_comm_ids;

// Writer thread and shutdown handshake.
pthread_t g_writer;
std::atomic<bool> g_writer_running{false};
std::atomic<bool> g_writer_stop{false};    // the last program thread is ending (StopWriter)
std::atomic<uint32_t> g_final_request{0};  // 0 = none, else 1 + reason
int g_final_status = 0;
bool g_final_flush_cupti = false;  // the requester could not flush CUPTI itself (signal handler)
bool g_final_from_signal = false;  // the requester may be a signal handler (ServeFinalRequest)
std::atomic<uint32_t> g_final_done{0};  // the final flush is over (futex word)
std::atomic<bool> g_shutdown_started{false};
std::atomic<bool> g_writer_started{false};  // g_writer is a thread not joined yet
// Program threads alive (the main thread, and those created through the pthread_create hook).
std::atomic<int32_t> g_program_threads{1};
pthread_key_t g_life_key;
std::atomic<bool> g_initialized{false};
trace::Origin g_origin = trace::kOriginPreload;
uint32_t g_parent_pid = 0;

// The process is ending on a signal or _exit (Shutdown asked for the final flush): the thread that
// asked may be stopped holding any lock.
bool SignalEndingRequested() {
  return g_final_request.load(std::memory_order_acquire) != 0 && g_final_from_signal;
}

// Takes `mu` (held by program threads for a few instructions: the queues) for a flush. It waits
// as long as it takes, except once the process ends on a signal: the holder may be the stopped
// thread, and the flush then goes on without it 100 ms later.
bool LockForFlush(std::mutex& mu) {
  uint64_t give_up_at = 0;
  while (!mu.try_lock()) {
    if (t_final_of_signal || SignalEndingRequested()) {
      uint64_t now = NowNs();
      if (give_up_at == 0) {
        give_up_at = now + 100'000'000;
      } else if (now >= give_up_at) {
        return false;
      }
    }
    // A sleep, not a spin: the holder may be preempted (two cores, loaded). The system call, not
    // libc's nanosleep: that is our hook (hooks/wait.cc), and a program thread may flush here.
    timespec pause{0, 50'000};
    syscall(SYS_nanosleep, &pause, nullptr);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing.
//
// Where the trace file's descriptor lives (docs/architecture.md, "Files"): in the writer's own
// descriptor table only (g_writer_fd; g_fd = -1), where the program can neither see, count, close
// nor reuse it; the writer opens it there itself, after TakeOwnFdTable. Program threads that must
// write (end of main, exec's footer, idlescope_flush) hand the work to the writer (RunOnWriter).
// Only where the table cannot be unshared (Linux < 5.9, seccomp) does the file sit in the
// program's table (g_fd, moved high, protected by the close/dup hooks through IsTraceFd and
// reopened when the program closed it anyway).

// Our own closes of our own descriptors: the raw syscall, since `close` binds to our hook, which
// refuses to close the trace file.
void CloseOwnFd(int fd) { syscall(SYS_close, fd); }

void SetProgramFd(int fd) {
  g_fd = fd;
  detail::g_program_trace_fd.store(fd, std::memory_order_relaxed);
}

// The trace file's descriptor in the calling thread's table: the writer's own once it has one.
int& TraceFd() { return detail::t_own_fd_table ? g_writer_fd : g_fd; }

// The file is in the writer's table: no other thread can write it.
bool FileInWriterTable() { return g_writer_fd >= 0 && g_fd < 0; }

bool FdStillOurs() {
  if (FileInWriterTable()) return detail::t_own_fd_table;
  struct stat st;
  int fd = TraceFd();
  if (fd < 0 || fstat(fd, &st) != 0) return false;
  return st.st_dev == g_fd_dev && st.st_ino == g_fd_ino;
}

// Moves `fd` above the range programs use, so a program that dup2()s onto low numbers or opens
// many files does not meet it (heaptrack and uftrace protect their fd the same way). Only for the
// shared-table fallback: in the writer's own table no number is the program's.
int MoveFdHigh(int fd) {
  struct rlimit rl;
  long floor = 1000;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      static_cast<long>(rl.rlim_cur) <= floor + 16) {
    floor = static_cast<long>(rl.rlim_cur) * 3 / 4;
  }
  if (floor <= fd) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(floor));
  if (high < 0) return fd;
  CloseOwnFd(fd);
  return high;
}

// `fd` becomes the trace file's descriptor in the calling thread's table: the writer's own, or
// (shared table) the program's, moved high.
void AdoptFd(int fd) {
  if (detail::t_own_fd_table) {
    g_writer_fd = fd;
    SetProgramFd(-1);
  } else {
    SetProgramFd(MoveFdHigh(fd));
    g_writer_fd = -1;
  }
  struct stat st;
  if (fstat(TraceFd(), &st) == 0) {
    g_fd_dev = st.st_dev;
    g_fd_ino = st.st_ino;
  }
}

// Stops tracing for good (the file cannot be written): said once.
void StopTracing(const std::string& why) {
  detail::g_recorder_active.store(false, std::memory_order_relaxed);
  g_closed = true;
  if (!g_fd_lost_said) {
    g_fd_lost_said = true;
    Say(why.c_str());
  }
}

// Shared-table fallback: the program closed (or replaced) our fd. Reopen the file (never through a
// symlink, and only if it is still the same file) in append mode and go on, or stop.
bool RecoverFd() {
  if (FileInWriterTable()) {  // a program thread: it has no descriptor of the file to recover
    return false;
  }
  int fd = open(g_path->c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != g_fd_dev || st.st_ino != g_fd_ino)) {
    CloseOwnFd(fd);
    fd = -1;
    errno = ESTALE;
  }
  if (fd < 0) {
    StopTracing("the program closed the trace file descriptor and " + *g_path +
                " cannot be reopened (" + strerror(errno) + "); tracing stopped");
    return false;
  }
  AdoptFd(fd);
  if (!g_fd_lost_said) {
    g_fd_lost_said = true;
    Say(("the program closed the trace file descriptor; reopened " + *g_path + " and went on")
            .c_str());
  }
  return true;
}

// write(2) until done; false (errno set) on an error other than EINTR.
bool WriteFully(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool WriteAll(const uint8_t* p, size_t n) {
  if (!WriteFully(TraceFd(), p, n)) {
    StopTracing("cannot write " + *g_path + ": " + strerror(errno) + "; tracing stopped");
    return false;
  }
  g_file_bytes += n;
  return true;
}

// Writes whole packets; checks first that the fd is still the trace file.
bool WritePackets(const wire::Buffer& b) {
  if (g_closed || b.empty()) return !g_closed;
  if (!FdStillOurs()) {
    bool recovered = RecoverFd();
    if (recovered) {
      trace::Notice n{NowNs(), static_cast<uint32_t>(NoticeSeverity::kWarning), "trace_fd_closed",
                      "the program closed the trace file descriptor; the file was reopened "
                      "(events of the last interval may be missing)"};
      wire::Buffer nb;
      trace::WriteNoticePacket(nb, n);
      if (!WriteAll(nb.data(), nb.size())) return false;
    } else {
      return false;
    }
  }
  return WriteAll(b.data(), b.size());
}

// ---------------------------------------------------------------------------------------------
// Header.

uint64_t ProcessStartNs() {
  std::string stat;
  if (!ReadFile("/proc/self/stat", &stat)) return 0;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  // Fields after the command name start at field 3 (state); starttime is field 22, in clock
  // ticks since boot, measured on CLOCK_BOOTTIME (proc(5)). Map it onto CLOCK_MONOTONIC.
  const char* p = stat.c_str() + paren + 2;
  for (int field = 3; field < 22 && *p; ++field) {
    p = strchr(p, ' ');
    if (p == nullptr) return 0;
    ++p;
  }
  unsigned long long ticks = strtoull(p, nullptr, 10);
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return 0;
  timespec mono, boot;
  ReadClock(CLOCK_MONOTONIC, &mono);
  ReadClock(CLOCK_BOOTTIME, &boot);
  int64_t boot_minus_mono =
      (boot.tv_sec - mono.tv_sec) * 1000000000ll + (boot.tv_nsec - mono.tv_nsec);
  int64_t start_boot = static_cast<int64_t>(ticks) * (1000000000ll / hz);
  int64_t start_mono = start_boot - boot_minus_mono;
  return start_mono > 0 ? static_cast<uint64_t>(start_mono) : 0;
}

trace::Header BuildHeader() {
  trace::Header h;
  h.pid = g_pid;
  h.ppid = g_origin == trace::kOriginFork ? g_parent_pid : static_cast<uint32_t>(getppid());
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) h.host = host;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
  if (n > 0)
    h.exe = redact::Path(std::string_view(exe, static_cast<size_t>(n)), redact::PathKind::kProgram);
  std::string cmdline;
  if (ReadFile("/proc/self/cmdline", &cmdline)) {
    if (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    cmdline = redact::Argv(cmdline);
    size_t pos = 0;
    while (pos < cmdline.size()) {
      size_t end = cmdline.find('\0', pos);
      if (end == std::string::npos) end = cmdline.size();
      h.cmdline.push_back(cmdline.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  SetRank(&h);
  h.slurm_procid = EnvInt(StartVar::kSlurmProcid);
  timespec mono, real;
  ReadClock(CLOCK_MONOTONIC, &mono);
  ReadClock(CLOCK_REALTIME, &real);
  h.clock.monotonic_ns = mono.tv_sec * 1000000000ull + mono.tv_nsec;
  h.clock.realtime_ns = real.tv_sec * 1000000000ull + real.tv_nsec;
  h.origin = g_origin;
  h.tool_version = IDLESCOPE_VERSION;
  if (const char* v = StartEnv(StartVar::kCudaVisibleDevices)) h.cuda_visible_devices = v;
  h.process_start_ns = ProcessStartNs();
  h.main_tid = g_pid;
  std::string boot_id;
  if (ReadFile("/proc/sys/kernel/random/boot_id", &boot_id)) h.boot_id = Trim(boot_id);
  h.config.flush_interval_ms = g_config->flush_ms;
  h.config.buffer_bytes = g_ring_slots * sizeof(RawEvent);
  h.config.stack_depth = g_config->stack_depth;
  h.config.families = g_config->families;
  if (redact::Paths()) h.config.redacted.push_back("paths");
  if (redact::Cmdline()) h.config.redacted.push_back("cmdline");
  h.config.python_version = python::Version();
  return h;
}

// mkdir -p
bool MakeDirs(const std::string& dir) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Creates the first free name of <base>.idlescope, <base>-1.idlescope, ... (exec keeps the pid)
// holding `header`, such that the name never appears without it: a process killed at start, or a
// full disk, leaves no empty file behind. O_TMPFILE (Linux 3.11; ext4, xfs, btrfs, tmpfs) makes an
// unnamed file that linkat() names once the header is in; elsewhere (NFS, FUSE) the name is
// created O_EXCL and the header written at once, and the file removed again if that fails.
// O_EXCL|O_NOFOLLOW: a name someone else made (a symlink planted in a shared /tmp) is never
// opened, only skipped. Mode 0666: the user's umask decides, as for any file the program writes.
// Returns the descriptor, or -1 with errno set.
int CreateTraceFile(const std::string& dir, const std::string& base, const wire::Buffer& header,
                    std::string* path) {
  auto name = [&](int i) { return base + (i == 0 ? "" : "-" + std::to_string(i)) + ".idlescope"; };
  // O_APPEND: in the shared-table fallback the program's descriptor and the writer's may end up
  // two descriptions of the file (RecoverFd); neither may write over the other's packets.
  int fd = open(dir.c_str(), O_TMPFILE | O_WRONLY | O_APPEND | O_CLOEXEC, 0666);
  if (fd >= 0) {
    if (!WriteFully(fd, header.data(), header.size())) {
      int err = errno;
      CloseOwnFd(fd);
      errno = err;
      return -1;
    }
    // The writer's own descriptor: /proc/thread-self/fd names this thread's table (/proc/self is
    // the thread group leader's).
    char link[64];
    snprintf(link, sizeof(link), "/proc/thread-self/fd/%d", fd);
    for (int i = 0; i < 10000; ++i) {
      std::string candidate = name(i);
      if (linkat(AT_FDCWD, link, AT_FDCWD, candidate.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        *path = candidate;
        return fd;
      }
      if (errno != EEXIST) break;
    }
    int err = errno;
    CloseOwnFd(fd);
    if (err == EEXIST) {
      errno = err;
      return -1;
    }
    // No /proc, or a filesystem that refuses the link: the O_EXCL way below.
  }
  for (int i = 0; i < 10000; ++i) {
    std::string candidate = name(i);
    fd = open(candidate.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return -1;
    }
    if (!WriteFully(fd, header.data(), header.size())) {
      int err = errno;
      unlink(candidate.c_str());
      CloseOwnFd(fd);
      errno = err;
      return -1;
    }
    *path = candidate;
    return fd;
  }
  errno = EEXIST;
  return -1;
}

// Creates <out>/<host>-<pid>.idlescope with its header. On the writer thread, after
// TakeOwnFdTable (the descriptor goes into the writer's own table), under g_flush_mu.
bool OpenTraceFile() {
  // Absolute, so that reopening the file (RecoverFd) still finds it after the program's chdir().
  if (g_config->out_dir[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) != nullptr) {
      g_config->out_dir =
          std::string(cwd) + (g_config->out_dir == "." ? "" : "/" + g_config->out_dir);
    }
  }
  const std::string& dir = g_config->out_dir;
  if (!MakeDirs(dir)) {
    Say(("cannot create output directory " + dir + ": " + strerror(errno) + "; not tracing")
            .c_str());
    return false;
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  g_comm_ids->Clear();  // ids are scoped to one file
  wire::Buffer header;
  trace::WriteHeaderPacket(header, BuildHeader());
  std::string path;
  int fd = CreateTraceFile(dir, dir + "/" + host + "-" + std::to_string(g_pid), header, &path);
  if (fd < 0) {
    Say(("cannot create a trace file in " + dir + ": " + strerror(errno) + "; not tracing")
            .c_str());
    return false;
  }
  *g_path = path;
  AdoptFd(fd);
  g_file_bytes = header.size();
  g_closed = false;
  g_fd_lost_said = false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Flush: everything recorded so far becomes packets in the file.

uint64_t StreamId(uint64_t handle, int32_t device, trace::Interned* interned) {
  // Raw 0 is "no stream" (device and event syncs): Event.stream stays 0, nothing is interned. The
  // hooks give the NULL stream as 1 (cudaStreamLegacy) or 2 (cudaStreamPerThread), which exist
  // once per device; a created stream's handle is unique in the process.
  if (handle == 0) return 0;
  StreamKey key{handle, handle <= 2 ? device : 0};
  auto [it, inserted] = g_stream_ids->try_emplace(key, g_stream_ids->size() + 1);
  if (inserted) interned->streams.push_back({it->second, handle, device});
  return it->second;
}

uint64_t EventStreamId(const RawEvent& e, trace::Interned* interned) {
  switch (e.type) {
    case ev::kCudaMemcpy:
    case ev::kCudaMemset:
    case ev::kCudaSync:
    case ev::kCudaLaunch:
    case ev::kCudaGraphLaunch:
    case ev::kCudaLaunchSummary:
      return StreamId(e.u.cuda.stream, static_cast<int32_t>(e.u.cuda.device), interned);
    case ev::kNcclCollective:
      return StreamId(e.u.nccl.stream, 0, interned);
    default:
      return 0;  // allocations and non-CUDA events have no stream
  }
}

void ReadThreadName(Ring* r, trace::Interned* interned) {
  std::string path = "/proc/self/task/" + std::to_string(r->tid) + "/comm";
  std::string name;
  if (!ReadFile(path.c_str(), &name)) return;
  name = Trim(name);
  if (name.empty() || name.size() >= sizeof(r->name) || name == r->name) return;
  memcpy(r->name, name.c_str(), name.size() + 1);
  interned->threads.push_back({r->tid, name});
}

constexpr size_t kMaxEventsPerBatch = 4096;

// The ring's events from tail to the snapshot head, then (final flush) the pending event of a
// thread that is still running, as if it had been appended at the head.
void EncodeRing(Ring* r, wire::Buffer* body, trace::Interned* interned) {
  uint64_t tail = r->tail.load(std::memory_order_relaxed);
  uint64_t head = r->snap_head;
  uint64_t end_all = head + (r->final_pending ? 1 : 0);
  uint64_t dropped = r->dropped.load(std::memory_order_relaxed);
  uint64_t new_dropped = dropped - r->dropped_reported;
  if (tail == end_all && new_dropped == 0) return;
  // Thread names change after start (PyTorch names its workers): look again now and then.
  if (r->name_checks++ % 16 == 0) ReadThreadName(r, interned);
  uint64_t i = tail;
  while (i != end_all || new_dropped != 0) {
    uint64_t end = end_all - i > kMaxEventsPerBatch ? i + kMaxEventsPerBatch : end_all;
    trace::PacketScope p(*body, trace::kEvents);
    trace::EncodeEventBatchHeader(*body, r->tid, r->seq++, new_dropped);
    g_total_dropped += new_dropped;
    r->dropped_reported += new_dropped;
    new_dropped = 0;
    g_total_events += end - i;
    trace::EventBatchEncoder events(*body, *g_comm_ids, *interned);
    for (; i != end; ++i) {
      const RawEvent& e = i == head ? r->final_pending_event : r->slots[i & r->mask];
      events.Add(e, EventStreamId(e, interned));
    }
    events.Finish();
    ++g_total_batches;
  }
  r->final_pending = false;
  r->tail.store(head, std::memory_order_release);
}

void EncodeGpu(std::vector<RawGpuActivity>& gpu, uint64_t dropped, wire::Buffer* body) {
  size_t i = 0;
  while (i < gpu.size() || dropped != 0) {
    size_t end = std::min(gpu.size(), i + kMaxEventsPerBatch);
    trace::PacketScope p(*body, trace::kGpu);
    trace::GpuBatchEncoder activities(*body);
    for (; i < end; ++i) activities.Add(gpu[i]);
    activities.Finish();
    trace::EncodeGpuBatchDropped(*body, dropped);
    g_total_gpu_dropped += dropped;
    dropped = 0;
  }
  g_total_gpu += gpu.size();
}

// Under g_flush_mu. Order matters: snapshot the rings' heads and swap the queues first, then take
// the interned data, so that every id an event uses was published before we look for new ids.
// `final`: the last flush of the file; the pending events of running threads are taken too (an
// exited thread appended its own in OnThreadExit).
void FlushLocked(bool final = false) {
  if (g_closed) return;
  // Names of new frames go into the flush's own strings (InternFlushString); set until the locals
  // below are freed (LeakFrees).
  struct FlushingScope {
    FlushingScope() { t_flushing = true; }
    ~FlushingScope() { t_flushing = false; }
  } flushing;
  uint32_t n = g_ring_count.load(std::memory_order_acquire);
  // What each ring was at the snapshot (0: none of ours to read: free, or being claimed by a thread
  // that is resetting its fields). Kept here, not in the ring: a claiming thread writes those.
  std::vector<uint32_t> snapped(n, kUnused);
  for (uint32_t i = 0; i < n; ++i) {
    Ring* r = &g_rings[i];
    uint32_t st = r->state.load(std::memory_order_acquire);
    if (st != kOwned && st != kExited) continue;
    snapped[i] = st;
    if (final && st == kOwned) {
      SnapshotWithPending(r);
    } else {
      r->snap_head = r->head.load(std::memory_order_acquire);
    }
  }
  std::vector<RawGpuActivity> gpu;
  std::vector<RawDeviceInfo> devices;
  std::vector<trace::Notice> notices;
  uint64_t gpu_dropped = 0;
  // On a signal the queues' mutex may be held by the thread the signal stopped (a notice being
  // queued): their content is then left out rather than waited for.
  if (LockForFlush(g_queue_mu)) {
    gpu.swap(*g_gpu_queue);
    devices.swap(*g_devices_pending);
    notices.swap(*g_notices_pending);
    gpu_dropped = g_gpu_dropped_pending + g_gpu_queue_overflow;
    g_gpu_dropped_pending = g_gpu_queue_overflow = 0;
    g_queue_mu.unlock();
  }

  trace::Interned interned;
  wire::Buffer body;
  for (uint32_t i = 0; i < n; ++i) {
    Ring* r = &g_rings[i];
    if (snapped[i] == kUnused) continue;
    EncodeRing(r, &body, &interned);
    r->wake_pending.store(false, std::memory_order_relaxed);
    if (snapped[i] == kExited) {
      UnmapSlots(r);
      r->state.store(kFree, std::memory_order_release);
    }
  }
  EncodeGpu(gpu, gpu_dropped, &body);

  // New stack nodes, resolved to frames (which intern function and module names).
  std::vector<stacks::NewNode> nodes;
  stacks::TakeNewNodes(&nodes);
  stacks::Symbolizer& sym = stacks::WriterSymbolizer();
  // Without the loader's locks once the process ends on a signal (the stopped thread may be in
  // dlopen), also in a flush that was under way when it came.
  for (const stacks::NewNode& node : nodes) {
    bool loader_free = t_final_of_signal || SignalEndingRequested();
    uint64_t frame = sym.FrameFor(node.pc, &interned, loader_free);
    interned.stack_nodes.push_back({node.id, node.parent, frame});
  }
  std::vector<trace::Module> modules;
  sym.TakeNewModules(&modules, t_final_of_signal || SignalEndingRequested());
  // Every id an event above uses was published before the event was recorded (no lock: see
  // "Interned strings").
  uint32_t published = g_strings_published.load(std::memory_order_acquire);
  for (; g_strings_emitted < published; ++g_strings_emitted) {
    const StringRef& ref = PublishedString(g_strings_emitted + 1);
    interned.strings.push_back({g_strings_emitted + 1, std::string(ref.data, ref.size)});
  }
  for (; g_flush_strings_emitted < g_flush_strings->size(); ++g_flush_strings_emitted) {
    interned.strings.push_back(
        {kFlushStringIds + g_flush_strings_emitted, *(*g_flush_strings)[g_flush_strings_emitted]});
  }

  wire::Buffer out;
  if (!interned.empty()) trace::WriteInternedPacket(out, interned);
  if (!modules.empty()) {
    trace::PacketScope p(out, trace::kModules);
    for (const trace::Module& m : modules) {
      size_t t = out.BeginNested(trace::kModuleMapModuleField);
      trace::EncodeModule(out, m);
      out.EndNested(t);
    }
  }
  for (const RawDeviceInfo& d : devices) trace::WriteDevicePacket(out, d);
  for (const trace::Notice& notice : notices) trace::WriteNoticePacket(out, notice);
  out.Raw(body.data(), body.size());
  WritePackets(out);
}

void WriteFooterLocked(trace::ExitReason reason, int status) {
  if (g_closed) return;
  g_footer_at = g_file_bytes;
  trace::Footer f;
  f.end_ns = NowNs();
  f.events = g_total_events;
  f.events_dropped = g_total_dropped + g_rings_unavailable.load(std::memory_order_relaxed);
  f.gpu_activities = g_total_gpu;
  f.gpu_dropped = g_total_gpu_dropped;
  f.batches = g_total_batches;
  f.bytes = g_file_bytes;
  f.reason = reason;
  f.exit_status = status;
  wire::Buffer b;
  trace::WriteFooterPacket(b, f);
  WritePackets(b);
  g_closed = true;
}

void FinalFlush(trace::ExitReason reason, int status) {
  std::lock_guard<std::mutex> lock(g_flush_mu);
  FlushLocked(/*final=*/true);
  WriteFooterLocked(reason, status);
}

void MarkFinalDone() {
  g_final_done.store(1, std::memory_order_release);
  Futex(&g_final_done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
}

// SIGTERM and SIGINT stay pending while a program thread holds g_flush_mu (FlushNow, exec, the
// final flush of exit): their handler has the writer flush, which needs that mutex, and would
// otherwise wait for the very thread it interrupted. Those calls are rare; the mask costs two
// system calls each.
class TerminationSignalsBlocked {
 public:
  TerminationSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &saved_);
  }
  ~TerminationSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  TerminationSignalsBlocked(const TerminationSignalsBlocked&) = delete;
  TerminationSignalsBlocked& operator=(const TerminationSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

// ---------------------------------------------------------------------------------------------
// The writer thread.

// Gives the writer a descriptor table of its own, empty: the trace file is opened into it next
// (OpenTraceFile), so the program's table never holds a descriptor of ours. Two reasons besides
// that one. While a second thread shares the program's table, the kernel takes a reference on the
// file and its f_pos_lock on every read/write of the program (fdget_pos; ~35 ns per call on the
// build VMs, 5% of a 4 KB tmpfs write): a single-threaded program traced by us would pay that on
// every call, which an untraced one does not. And the copies of the program's descriptors are
// closed at once, so we never hold a pipe or socket open after the program closed it (a reader
// waiting for EOF gets it). close_range (Linux 5.9) unshares and closes in one call; a raw
// syscall, since the close_range hook would clear the program's fd table entries. Without it
// (older kernel, seccomp) the table stays shared: slower, and the trace file sits in the program's
// table (MoveFdHigh, IsTraceFd).
void TakeOwnFdTable() {
  if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0) detail::t_own_fd_table = true;
}

// Work a program thread hands to the writer, because only the writer's table holds the file.
enum class WriterJob : uint32_t { kNone = 0, kFlush, kExecFooter, kExecFailed };
std::mutex g_job_mu;                   // one program thread's job at a time
std::atomic<uint32_t> g_job{0};        // the WriterJob posted, taken by the writer
std::atomic<uint32_t> g_jobs_done{0};  // bumped by the writer after each job

void DoJobLocked(WriterJob job) {
  switch (job) {
    case WriterJob::kFlush:
      FlushLocked();
      break;
    case WriterJob::kExecFooter:
      FlushLocked();
      WriteFooterLocked(trace::kExitExec, 0);
      break;
    case WriterJob::kExecFailed: {
      // Drop the footer: the process goes on, and the file must end with its real footer.
      int fd = TraceFd();
      if (g_closed && fd >= 0 && !g_fd_lost_said && ftruncate(fd, g_footer_at) == 0) {
        g_file_bytes = g_footer_at;
        g_closed = false;
      }
      break;
    }
    case WriterJob::kNone:
      break;
  }
}

// Writer side: runs the posted job, if any (true if there was one).
bool ServeJob() {
  WriterJob job = static_cast<WriterJob>(g_job.exchange(0, std::memory_order_acq_rel));
  if (job == WriterJob::kNone) return false;
  {
    std::lock_guard<std::mutex> lock(g_flush_mu);
    DoJobLocked(job);
  }
  g_jobs_done.fetch_add(1, std::memory_order_release);
  Futex(&g_jobs_done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
  return true;
}

// Program thread: `job` done on the file, by the writer when the file is in its table, else here.
// Bounded wait (a writer stuck on a slow filesystem costs time, never a hang); a job the writer
// has not taken by then is withdrawn.
void RunJob(WriterJob job) {
  // Here where the program's table holds the file (shared-table fallback) or no writer is left
  // (then no file is open, or none this thread can reach: WritePackets finds out).
  if (detail::g_program_trace_fd.load(std::memory_order_relaxed) >= 0 ||
      !g_writer_running.load(std::memory_order_acquire)) {
    TerminationSignalsBlocked blocked;
    std::lock_guard<std::mutex> lock(g_flush_mu);
    DoJobLocked(job);
    return;
  }
  std::lock_guard<std::mutex> lock(g_job_mu);
  uint32_t done = g_jobs_done.load(std::memory_order_acquire);
  g_job.store(static_cast<uint32_t>(job), std::memory_order_release);
  WakeWriter();
  uint64_t deadline = NowNs() + 10'000'000'000ull;
  while (g_jobs_done.load(std::memory_order_acquire) == done) {
    uint64_t now = NowNs();
    if (now >= deadline || !g_writer_running.load(std::memory_order_acquire)) {
      uint32_t posted = static_cast<uint32_t>(job);
      g_job.compare_exchange_strong(posted, 0);
      return;
    }
    uint64_t left = deadline - now;
    timespec ts{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
    Futex(&g_jobs_done, FUTEX_WAIT_PRIVATE, done, &ts);
  }
}

// The final flush asked for by Shutdown: on a signal (or _exit, which signal handlers call) the
// thread that asked may hold any lock of ours or of libc (it was interrupted anywhere), so nothing
// here may wait for one without bound (t_final_of_signal): interned strings are read without their
// mutex (and a flush interns new frame names in its own table), frames are resolved without the
// loader's locks, the GPU and notice queues are skipped if their mutex stays taken, and nothing is
// freed (alloc.cc: malloc's arena locks). The same holds for the rest of a periodic flush that was
// under way when the request came: this one starts only after it.
void ServeFinalRequest(uint32_t request) {
  // SIGTERM is how schedulers end jobs: CUPTI's last buffers matter then too. The handler cannot
  // call into CUPTI, and this thread must not (its descriptor table lacks the CUDA driver's): the
  // CUPTI layer's thread does it (bounded, within the handler's wait).
  if (g_final_flush_cupti && idlescope_cupti_flush_on_cupti_thread != nullptr) {
    idlescope_cupti_flush_on_cupti_thread();
  }
  t_final_of_signal = g_final_from_signal;
  FinalFlush(static_cast<trace::ExitReason>(request - 1), g_final_status);
  MarkFinalDone();
}

void* WriterMain(void*) {
  detail::t_hook_depth = 1;  // nothing this thread does is traced
  t_thread_dead = true;      // and it never records
  // glibc gives a thread its malloc arena at its first allocation: now, while the process has few
  // threads, so that it is an arena of its own (alloc.cc: why the final flush of a signal needs
  // one).
  free(malloc(1));
  TakeOwnFdTable();
  bool opened;
  {
    std::lock_guard<std::mutex> lock(g_flush_mu);
    opened = OpenTraceFile();
  }
  if (!opened) {
    // No file: the hooks stop recording, and nothing waits for a writer. A program thread that
    // already waits (one that flushed or ended before this thread first ran: a short program on
    // a busy machine) has nothing to wait for: its job is withdrawn, and it is woken.
    detail::g_recorder_active.store(false, std::memory_order_relaxed);
    g_writer_running.store(false, std::memory_order_seq_cst);
    g_job.store(0, std::memory_order_release);
    g_jobs_done.fetch_add(1, std::memory_order_release);
    Futex(&g_jobs_done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
    MarkFinalDone();
  }
  // The constructor does not wait for this thread: its start, the time messages may still go to
  // the program's stderr (config.cc, StderrForMessage), lasts until the file was tried.
  StartupDone();
  if (!opened) return nullptr;
  for (;;) {
    // Wait first: a process that ends within its first period is flushed once, at its end.
    uint32_t word = g_wake_word.load(std::memory_order_acquire);
    if (g_final_request.load(std::memory_order_acquire) == 0 &&
        !g_writer_stop.load(std::memory_order_acquire) &&
        g_job.load(std::memory_order_acquire) == 0) {
      timespec timeout{static_cast<time_t>(g_config->flush_ms / 1000),
                       static_cast<long>(g_config->flush_ms % 1000) * 1000000L};
      Futex(&g_wake_word, FUTEX_WAIT_PRIVATE, word, &timeout);
    }
    if (uint32_t request = g_final_request.load(std::memory_order_acquire); request != 0) {
      ServeFinalRequest(request);
      break;
    }
    if (g_writer_stop.load(std::memory_order_acquire)) break;
    // A job's flush is this period's (a second one at once would find little, and compete with
    // the program for the CPU).
    if (ServeJob()) continue;
    // A closed file (exec's footer, a write error) is not the end of the writer: a failed exec
    // reopens the trace, and only a final request ends the thread.
    std::lock_guard<std::mutex> lock(g_flush_mu);
    FlushLocked();
  }
  g_writer_running.store(false, std::memory_order_seq_cst);
  // A final request that came in as we stopped (it saw us running): served all the same.
  if (uint32_t request = g_final_request.load(std::memory_order_seq_cst);
      request != 0 && g_final_done.load(std::memory_order_acquire) == 0) {
    ServeFinalRequest(request);
  }
  return nullptr;
}

// Starts the writer thread without waiting for it: the program runs on at once. Until the new
// thread has its own descriptor table (TakeOwnFdTable, its first action) and the trace file, the
// program's reads and writes pay for a shared table and its events wait in the rings; waiting
// cost every process a thread handoff at start, milliseconds on a loaded machine
// (docs/architecture.md, "Process life"). A writer that cannot create the file turns the recorder
// off itself.
bool StartWriter() {
  // Block every signal in the writer (it inherits the creating thread's mask): a process-directed
  // signal must go to a program thread, never to ours.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  g_writer_stop.store(false, std::memory_order_relaxed);
  g_writer_running.store(true, std::memory_order_release);
  int rc = RealPthreadCreate(&g_writer, &attr, WriterMain, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    g_writer_running.store(false, std::memory_order_release);
    Say("cannot start the writer thread; not tracing");
    return false;
  }
  g_writer_started.store(true, std::memory_order_release);  // joinable (EndOfLastThread)
  pthread_setname_np(g_writer, "idlescope-wr");
  return true;
}

// The last program thread is ending (its key destructor): once its destructors have run, glibc
// calls exit(0) in it, if no thread is left, ours included (glibc counts them). So the trace ends
// here as exit(0) would end it (the writer writes the footer: the file is in its table), then our
// threads leave (joined); what the atexit handlers do after that is not recorded. A writer that
// never ends (a write stuck on a dead file server) would keep the process alive, as any thread
// would.
void EndOfLastThread() {
  Shutdown(trace::kExitNormal, 0, /*from_signal=*/false);
  if (idlescope_cupti_stop_flush_thread != nullptr) idlescope_cupti_stop_flush_thread();
  if (g_writer_started.exchange(false)) {
    g_writer_stop.store(true, std::memory_order_release);
    WakeWriter();
    pthread_join(g_writer, nullptr);
  }
}

void OnProgramThreadEnd(void*) {
  if (g_program_threads.fetch_sub(1, std::memory_order_acq_rel) == 1 && InTracedProcess()) {
    int saved = errno;
    EndOfLastThread();
    errno = saved;
  }
}

// ---------------------------------------------------------------------------------------------
// fork: the child starts a file of its own, with none of the parent's buffered events.

// The recorder's locks are taken in the order code takes them (the CUPTI layer's first, then
// flush, strings, queues, stacks), and released in the child as well: only the forking thread
// exists there, and nothing it needs may stay held by a thread that is gone.
// The forking thread keeps SIGTERM/SIGINT pending meanwhile (TerminationSignalsBlocked says why).
__thread sigset_t t_mask_before_fork;

void ForkPrepare() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, &t_mask_before_fork);
  if (idlescope_cupti_fork_prepare != nullptr) idlescope_cupti_fork_prepare();
  g_flush_mu.lock();
  g_strings_mu.lock();
  g_queue_mu.lock();
  stacks::LockForFork();
}

void ForkParent() {
  stacks::UnlockAfterFork(/*in_child=*/false);
  g_queue_mu.unlock();
  g_strings_mu.unlock();
  g_flush_mu.unlock();
  if (idlescope_cupti_fork_parent != nullptr) idlescope_cupti_fork_parent();
  pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
}

void ForkChild() {
  stacks::UnlockAfterFork(/*in_child=*/true);
  g_queue_mu.unlock();
  g_strings_mu.unlock();
  g_flush_mu.unlock();
  if (idlescope_cupti_fork_child != nullptr) idlescope_cupti_fork_child();
  pthread_sigmask(SIG_SETMASK, &t_mask_before_fork, nullptr);
  uint32_t parent = g_pid;
  g_pid = static_cast<uint32_t>(getpid());
  // The parent may have set RANK and the like for this child before forking it (one thread here:
  // getenv is safe).
  CaptureStartEnv();
  g_closed = true;  // the parent's file is not the child's: nothing is written until its own is
  g_writer_running.store(false, std::memory_order_relaxed);  // threads do not survive fork
  t_ring_failed = false;           // the parent's other threads' rings are freed below
  detail::t_pending_open = false;  // the parent writes this thread's pending event, not the child
  detail::t_launch_device = 0;     // the child has no CUDA context: it feeds no GPU
  bool was_active = detail::g_recorder_active.load(std::memory_order_relaxed);
  detail::g_recorder_active.store(false, std::memory_order_relaxed);
  if (!was_active || g_shutdown_started.load()) return;
  // Only the forking thread exists in the child: every other ring is the parent's business.
  uint32_t n = g_ring_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < n; ++i) {
    Ring* r = &g_rings[i];
    if (r == t_ring) {
      ResetRing(r, GetTid());
    } else if (r->state.load() == kOwned || r->state.load() == kExited) {
      UnmapSlots(r);
      r->state.store(kFree);
    }
  }
  g_strings_emitted = 0;
  stacks::MarkAllUnemitted();
  stacks::WriterSymbolizer().Reset();  // frames and modules are named again: in the flush's strings
  g_flush_string_ids->clear();
  g_flush_strings->clear();
  g_flush_strings_emitted = 0;
  g_stream_ids->clear();
  g_gpu_queue->clear();
  g_devices_pending->clear();
  g_devices_seen->clear();
  g_notices_pending->clear();
  g_gpu_dropped_pending = g_gpu_queue_overflow = 0;
  g_total_events = g_total_dropped = g_total_gpu = g_total_gpu_dropped = g_total_batches = 0;
  g_rings_unavailable.store(0);
  g_final_request.store(0);
  g_final_done.store(0);
  g_writer_stop.store(false);
  g_writer_started.store(false);  // the parent's writer is not the child's to join
  g_program_threads.store(1);     // the forking thread
  g_exit_status_set = false;
  if (g_fd >= 0) CloseOwnFd(g_fd);  // shared-table fallback: the parent's file stays the parent's
  SetProgramFd(-1);
  g_writer_fd = -1;  // the parent writer's table is not the child's
  // A program thread of the parent may have been waiting for its writer (RunJob): that thread,
  // and its job, do not exist here.
  new (&g_job_mu) std::mutex();
  g_job.store(0, std::memory_order_relaxed);
  g_origin = trace::kOriginFork;
  g_parent_pid = parent;
  uint32_t saved_depth = detail::t_hook_depth;
  detail::t_hook_depth = saved_depth + 1;
  bool ok = StartWriter();  // the child's writer creates the child's file
  detail::t_hook_depth = saved_depth;
  if (ok) detail::g_recorder_active.store(true, std::memory_order_relaxed);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Internal API.

// libc's pthread_create: ours (lifecycle.cc) counts the program's threads, and the writer is not
// one of them.
int RealPthreadCreate(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                      void* arg) {
  using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static constinit RealFunction<CreateFn> real{"pthread_create"};
  CreateFn f = real.Get();
  if (f == nullptr) return EAGAIN;
  return f(thread, attr, fn, arg);
}

bool InTracedProcess() { return static_cast<uint32_t>(getpid()) == g_pid; }

bool LeakFrees() { return t_final_of_signal || (t_flushing && SignalEndingRequested()); }

void SetExitStatus(int status) {
  g_exit_status = status;
  g_exit_status_set = true;
}

void FlushSoon() {
  if (g_writer_running.load(std::memory_order_acquire)) WakeWriter();
}

void Init() {
  bool expected = false;
  if (!g_initialized.compare_exchange_strong(expected, true)) return;
  int saved_errno = errno;
  ++detail::t_hook_depth;
  redact::Init();  // before the first path is interned (ParseConfig says what was wrong in it)
  g_config = new Config(ParseConfig());
  g_path = new std::string();
  g_gpu_queue = new std::vector<RawGpuActivity>();
  g_devices_pending = new std::vector<RawDeviceInfo>();
  g_devices_seen = new std::vector<uint32_t>();
  g_notices_pending = new std::vector<trace::Notice>();
  g_notice_codes_said = new std::set<std::string>();
  g_stream_ids = new std::unordered_map<StreamKey, uint64_t, StreamKeyHash>();
  g_comm_ids = new trace::CommIds();
  g_flush_string_ids = new std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>();
  g_flush_strings = new std::vector<const std::string*>();
  // What was wrong with the configuration goes into the trace too (it was said on stderr only
  // where that is allowed).
  for (const std::string& warning : g_config->warnings) {
    g_notices_pending->push_back(
        {NowNs(), static_cast<uint32_t>(NoticeSeverity::kWarning), "bad_config", warning});
  }
  uint64_t slots = 1;
  while (slots * 2 * sizeof(RawEvent) <= uint64_t{g_config->buffer_kb} * 1024) slots *= 2;
  g_pid = static_cast<uint32_t>(getpid());
  // CUDA_INJECTION64_PATH loads us with dlopen, without LD_PRELOAD naming us.
  const char* preload = getenv("LD_PRELOAD");
  g_origin = preload != nullptr && strstr(preload, "idlescope") != nullptr
                 ? trace::kOriginPreload
                 : trace::kOriginInjection;
  pthread_key_create(&g_ring_key, OnThreadExit);
  pthread_key_create(&g_life_key, OnProgramThreadEnd);
  detail::g_family_mask.store(g_config->family_mask, std::memory_order_relaxed);
  stacks::Init(g_config->stack_depth);
  python::Init(g_config->python_stacks && g_config->stack_depth > 0);
  {
    std::lock_guard<std::mutex> lock(g_flush_mu);
    g_ring_slots = slots;
  }
  // The writer creates the file, in its own descriptor table, and ends the start (StartupDone)
  // once it tried; if it cannot, it turns the recorder off itself.
  bool ok = StartWriter();
  if (ok) {
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
    detail::g_recorder_active.store(true, std::memory_order_release);
  } else {
    StartupDone();
  }
  ConstructorDone();
  --detail::t_hook_depth;
  errno = saved_errno;
}

// Waits (futex, async-signal-safe) until the writer wrote the footer, at most `seconds`.
void WaitFinalDone(uint64_t seconds) {
  uint64_t deadline = NowNs() + seconds * 1000000000ull;
  while (g_final_done.load(std::memory_order_acquire) == 0) {
    uint64_t now = NowNs();
    if (now >= deadline) break;
    uint64_t left = deadline - now;
    timespec ts{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
    Futex(&g_final_done, FUTEX_WAIT_PRIVATE, 0, &ts);
  }
}

void Shutdown(trace::ExitReason reason, int status, bool from_signal) {
  if (!g_initialized.load() || !InTracedProcess()) return;
  if (g_shutdown_started.exchange(true)) {
    // Another path is ending the trace (Python's Pool.terminate() sends SIGTERM to workers that
    // are already in _exit): let it finish before this one lets the process die.
    WaitFinalDone(from_signal ? 3 : 10);
    return;
  }
  int saved_errno = errno;
  // Inside a hook (a signal that interrupted one, or _exit called by a hooked function) this
  // thread's ring may be half-way through a Record: no event from here then.
  bool may_record = detail::t_hook_depth == 0;
  ++detail::t_hook_depth;
  if (reason == trace::kExitNormal && g_exit_status_set) status = g_exit_status;
  if (RecorderActive() && may_record) {
    RawEvent e;
    e.ts = NowNs();
    e.type = ev::kProcExit;
    e.result = status;
    Record(e);
  }
  // CUPTI's last buffers before the footer. Not from a signal handler, and not in a forked child:
  // CUDA does not survive fork, and a child's call into it (DataLoader workers end in _exit) can
  // hang.
  bool flush_cupti = g_origin != trace::kOriginFork && idlescope_cupti_flush != nullptr;
  if (flush_cupti && !from_signal) idlescope_cupti_flush();
  g_final_flush_cupti = flush_cupti && from_signal;
  // _exit is called from signal handlers too: its final flush takes the same care.
  g_final_from_signal = from_signal || reason == trace::kExitUnderscore;
  detail::g_recorder_active.store(false, std::memory_order_relaxed);
  // The writer writes the last batches and the footer (the file is in its descriptor table; and
  // a signal handler could not: encoding allocates), a bounded wait, so a stuck writer never hangs
  // the exit. On a signal or _exit (which programs call from signal handlers too) this thread may
  // be inside malloc or hold a lock of ours: that flush takes care (ServeFinalRequest).
  if (g_writer_running.load(std::memory_order_seq_cst)) {
    g_final_status = status;
    g_final_request.store(1 + reason, std::memory_order_seq_cst);
    WakeWriter();
    WaitFinalDone(from_signal ? 3 : 10);
  } else if (!from_signal) {
    {
      TerminationSignalsBlocked blocked;
      FinalFlush(reason, status);
    }
    MarkFinalDone();
  } else {
    MarkFinalDone();  // nothing more can be written: a second ending need not wait
  }
  --detail::t_hook_depth;
  errno = saved_errno;
}

// ---------------------------------------------------------------------------------------------
// Program threads. A process ends when its last thread does (the main thread may pthread_exit
// first: glibc's exit(0) comes from whichever thread is last). The writer counts as a thread to
// glibc, so it must be gone before the program's last thread ends, or the process would never
// exit; threads are counted here (pthread_create hook, lifecycle.cc) and each has a key whose
// destructor runs at its end, however it ends.

void CountNewThread() { g_program_threads.fetch_add(1, std::memory_order_relaxed); }
void UncountThread() { g_program_threads.fetch_sub(1, std::memory_order_relaxed); }

void ThreadStarts() {
  // Any non-null value: the key's destructor runs only for threads that set one.
  pthread_setspecific(g_life_key, &g_life_key);
}

}  // namespace internal

using namespace internal;  // NOLINT: the public API below is the internal one's front

// ---------------------------------------------------------------------------------------------
// Public API (recorder.h).

void Record(const RawEvent& event) {
  if (event.type < 32 && (detail::kDeviceWorkTypes >> event.type & 1u) != 0) {
    detail::t_launch_device = event.u.cuda.device + 1;
  }
  Ring* r = t_ring;
  if (__builtin_expect(r == nullptr, 0)) {
    r = ClaimRing();
    if (r == nullptr) {
      if (!t_thread_dead) g_rings_unavailable.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  // An open pending event (an I/O burst) started before this event: it goes first, and ends.
  if (__builtin_expect(detail::t_pending_open, 0)) AppendPending(r);
  Push(r, event);
}

void SetPendingEvent(const RawEvent& event) {
  Ring* r = t_ring;
  if (__builtin_expect(r == nullptr, 0)) {
    r = ClaimRing();
    if (r == nullptr) {
      if (!t_thread_dead) g_rings_unavailable.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  uint32_t done = PendingWriteBegin(r);
  StoreEventWords(&r->pending.event, event);
  r->pending.open.store(true, std::memory_order_relaxed);
  r->pending.seq.store(done, std::memory_order_release);
  detail::t_pending_slot = &r->pending;
  detail::t_pending_open = true;
}

void RecordPendingEvent() {
  // t_pending_open implies t_ring (OnThreadExit clears both, ForkChild the flag).
  if (detail::t_pending_open && t_ring != nullptr) AppendPending(t_ring);
}

// GPU records are taken until the footer is written, not only while hooks record: the final
// CUPTI flush happens after the hooks were turned off.
void RecordGpu(const RawGpuActivity& activity) {
  if (g_gpu_queue == nullptr) return;
  std::lock_guard<std::mutex> lock(g_queue_mu);
  if (g_gpu_queue->size() >= kMaxGpuQueue) {
    ++g_gpu_queue_overflow;
    return;
  }
  g_gpu_queue->push_back(activity);
}

void RecordGpuDropped(uint64_t records) {
  if (g_gpu_queue == nullptr || records == 0) return;
  std::lock_guard<std::mutex> lock(g_queue_mu);
  g_gpu_dropped_pending += records;
}

uint32_t InternString(std::string_view s) {
  int saved = errno;
  ++detail::t_hook_depth;
  uint32_t id = 0;
  if (t_flushing) {
    id = InternFlushString(s);
    --detail::t_hook_depth;
    errno = saved;
    return id;
  }
  g_strings_mu.lock();
  if (g_string_ids == nullptr) {
    g_string_ids = new std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>();
  }
  auto it = g_string_ids->find(s);
  if (it != g_string_ids->end()) {
    id = it->second;
  } else {
    uint32_t index = g_strings_published.load(std::memory_order_relaxed);
    uint32_t chunk = index >> kStringChunkBits;
    if (chunk < kMaxStringChunks) {
      StringRef* refs = g_string_chunks[chunk].load(std::memory_order_relaxed);
      if (refs == nullptr) {
        refs = new StringRef[kStringChunk];
        g_string_chunks[chunk].store(refs, std::memory_order_relaxed);
      }
      id = index + 1;
      auto inserted = g_string_ids->emplace(std::string(s), id).first;
      refs[index & (kStringChunk - 1)] = {inserted->first.data(),
                                          static_cast<uint32_t>(inserted->first.size())};
      // Publishes the StringRef (and its chunk) to flushes, which read without the mutex.
      g_strings_published.store(id, std::memory_order_release);
    } else {
      ++g_strings_refused;
    }
  }
  g_strings_mu.unlock();
  --detail::t_hook_depth;
  errno = saved;
  return id;
}

uint32_t InternPath(std::string_view path, redact::PathKind kind) {
  if (!redact::Paths()) return InternString(path);
  int saved = errno;
  std::string kept = redact::Path(path, kind);
  errno = saved;
  return InternString(kept);
}

uint32_t InternArgv(std::string_view nul_separated) {
  if (!redact::Paths() && !redact::Cmdline()) return InternString(nul_separated);
  int saved = errno;
  std::string kept = redact::Argv(nul_separated);
  errno = saved;
  return InternString(kept);
}

uint32_t ApiName::Intern() {
  uint32_t id = InternString(name_);
  if (id != 0) id_.store(id, std::memory_order_relaxed);
  return id;
}

void RecordDeviceInfo(const RawDeviceInfo& info) {
  if (g_devices_pending == nullptr) return;
  std::lock_guard<std::mutex> lock(g_queue_mu);
  for (uint32_t d : *g_devices_seen) {
    if (d == info.device) return;
  }
  g_devices_seen->push_back(info.device);
  g_devices_pending->push_back(info);
}

void RecordNotice(NoticeSeverity severity, std::string_view code, std::string_view text,
                  bool print) {
  if (g_notices_pending == nullptr) return;
  int saved = errno;
  ++detail::t_hook_depth;
  bool first_of_code;
  {
    std::lock_guard<std::mutex> lock(g_queue_mu);
    first_of_code = g_notice_codes_said->insert(std::string(code)).second;
    g_notices_pending->push_back(
        {NowNs(), static_cast<uint32_t>(severity), std::string(code), std::string(text)});
  }
  // Said once on stderr per code: a program is not flooded by a condition that repeats.
  if (print && first_of_code) Say(std::string(text).c_str());
  --detail::t_hook_depth;
  errno = saved;
  FlushSoon();
}

void FlushNow() {
  if (!g_initialized.load() || !InTracedProcess()) return;
  int saved = errno;
  ++detail::t_hook_depth;
  RunJob(WriterJob::kFlush);
  --detail::t_hook_depth;
  errno = saved;
}

void BeforeExec() {
  if (!g_initialized.load() || !InTracedProcess()) return;
  int saved = errno;
  // This thread's burst ends here. Other threads' open bursts are not taken: if exec fails they go
  // on growing and would be written twice; if it succeeds they are lost (docs/architecture.md).
  RecordPendingEvent();
  ++detail::t_hook_depth;
  RunJob(WriterJob::kExecFooter);
  --detail::t_hook_depth;
  errno = saved;
}

void AfterExecFailed() {
  if (!g_initialized.load() || !InTracedProcess()) return;
  int saved = errno;
  ++detail::t_hook_depth;
  RunJob(WriterJob::kExecFailed);
  --detail::t_hook_depth;
  errno = saved;
}

int TraceFdIn(unsigned first, unsigned last) {
  int fd = detail::g_program_trace_fd.load(std::memory_order_relaxed);
  return fd >= 0 && static_cast<unsigned>(fd) >= first && static_cast<unsigned>(fd) <= last ? fd
                                                                                            : -1;
}

void MoveTraceFdAwayFrom(int fd) {
  // A thread with a table of its own (a vfork child borrowing this thread) moves nothing of ours.
  if (!IsTraceFd(fd) || OwnFdTable()) return;
  int saved = errno;
  ++detail::t_hook_depth;
  {
    // Under the flush mutex: the writer writes through g_fd, and must never write to the file the
    // program is about to put at this number.
    TerminationSignalsBlocked blocked;
    std::lock_guard<std::mutex> lock(g_flush_mu);
    if (g_fd == fd) {
      int moved = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
      SetProgramFd(moved);  // -1 if no number was free: the next write recovers or stops
      CloseOwnFd(fd);
    }
  }
  --detail::t_hook_depth;
  errno = saved;
}

}  // namespace idlescope
