// The writer thread, its jobs, and the end of the file.
#include "interpose/writer.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <new>
#include <type_traits>

#include "interpose/care_heap.h"
#include "interpose/flush.h"
#include "interpose/own_stack.h"
#include "interpose/recorder_internal.h"
#include "interpose/rings.h"
#include "interpose/sampler.h"
#include "interpose/trace_file.h"

namespace idlescope {
namespace writer {

std::atomic<uint64_t> g_next_flush_ns{UINT64_MAX};

namespace {

// Never destroyed: the process may end while the thread runs.
struct Writer {
  uint32_t flush_ms = 500;
  bool thread_at_start = false;            // IDLESCOPE_WRITER=thread
  std::atomic<bool> start_claimed{false};  // StartThread was called (once per process)
  pthread_t thread = 0;
  std::atomic<uint32_t> wake_word{0};  // futex word: bumped by Wake
  std::atomic<bool> running{false};    // the thread runs and has not given up on the file
  std::atomic<bool> stop{false};       // the last program thread is ending (Stop)
  std::atomic<bool> started{false};    // `thread` is a thread not joined yet
  // The end of the file asked for by EndTrace.
  std::atomic<uint32_t> final_request{0};  // 0 = none, else 1 + reason
  int final_status = 0;
  bool final_signal_care = false;
  void (*final_participant_flush)() = nullptr;
  std::atomic<uint32_t> final_done{0};  // the end is over (futex word)
  // Program threads' jobs: one at a time.
  std::mutex job_mu;
  std::atomic<uint32_t> job{0};        // the Job posted, taken by the writer
  std::atomic<uint32_t> jobs_done{0};  // bumped by the writer after each job (futex word)
};
static_assert(std::is_trivially_destructible_v<Writer>);
constinit Writer g_writer;

long Futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

// Waits on `word` while it holds `value`, until `deadline_ns` (NowNs).
void WaitWhile(std::atomic<uint32_t>* word, uint32_t value, uint64_t deadline_ns) {
  uint64_t now = NowNs();
  if (now >= deadline_ns) return;
  uint64_t left = deadline_ns - now;
  timespec ts{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
  Futex(word, FUTEX_WAIT_PRIVATE, value, &ts);
}

void MarkFinalDone() {
  g_writer.final_done.store(1, std::memory_order_release);
  Futex(&g_writer.final_done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
}

// Flushes on a program thread. In a threadless process (and the shared-table fallback) a program
// thread runs the flush, under the flush lock. On a stack of ours (own_stack.h): a flush takes tens
// of KB, and the thread's own stack may be small or nearly used up. With cancellation off:
// write(2) is a cancellation point, and our frames have no cleanup (-fno-exceptions), so a thread
// cancelled there would leave the flush lock taken.

constexpr size_t kFlushStackBytes = size_t{512} << 10;
char* g_flush_stack_top = nullptr;  // mapped at the first such flush (under the flush lock)

template <typename F>
void CallThunk(void* f) {
  (*static_cast<F*>(f))();
}

// Under the flush lock, on a program thread: f().
template <typename F>
void FlushHere(F f) {
  int cancel_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  if (kCallsOnOwnStack && g_flush_stack_top == nullptr) {
    g_flush_stack_top = MapOwnStack(kFlushStackBytes);
  }
  if (g_flush_stack_top != nullptr) {
    CallOnStack(&CallThunk<F>, &f, g_flush_stack_top);
  } else {
    f();
  }
  pthread_setcancelstate(cancel_state, nullptr);
}

void DoJobLocked(Job job) {
  switch (job) {
    case Job::kFlush:
      flush::FlushLocked();
      break;
    case Job::kExecFooter:
      flush::FlushLocked();
      flush::WriteFooterLocked(trace::kExitExec, 0);
      break;
    case Job::kExecFailed:
      // Drop the footer: the process goes on, and the file must end with its real footer.
      trace_file::RemoveFooter();
      break;
    case Job::kNone:
      break;
  }
}

// Writer side: runs the posted job, if any (true if there was one).
bool ServeJob() {
  Job job = static_cast<Job>(g_writer.job.exchange(0, std::memory_order_acq_rel));
  if (job == Job::kNone) return false;
  {
    std::lock_guard<std::mutex> lock(flush::Mutex());
    DoJobLocked(job);
  }
  g_writer.jobs_done.fetch_add(1, std::memory_order_release);
  Futex(&g_writer.jobs_done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
  return true;
}

// The final flush asked for by EndTrace: on a signal (or _exit, which signal handlers call) the
// thread that asked may hold any lock of ours or of libc (it was interrupted anywhere), so nothing
// here may wait for one without bound (flush.h, AnnounceEndOnSignal). The same holds for the rest
// of a periodic flush that was under way when the request came: this one starts only after it.
void ServeFinalRequest(uint32_t request) {
  // SIGTERM is how schedulers end jobs: CUPTI's last buffers matter then too. The handler cannot
  // call into CUPTI, and this thread must not (its descriptor table lacks the CUDA driver's): the
  // participant's own thread does it (bounded, within the handler's wait).
  if (g_writer.final_participant_flush != nullptr) g_writer.final_participant_flush();
  if (g_writer.final_signal_care) flush::TakeSignalCareOnThisThread();
  sampler::EndRuns(/*careful=*/g_writer.final_signal_care);
  {
    std::lock_guard<std::mutex> lock(flush::Mutex());
    flush::FinalFlushLocked(static_cast<trace::ExitReason>(request - 1), g_writer.final_status);
  }
  MarkFinalDone();
}

void* WriterMain(void*) {
  detail::t_hook_depth = 1;          // nothing this thread does is traced
  rings::NeverRecordOnThisThread();  // and it never records
  // glibc gives a thread its malloc arena at its first allocation: now, while the process has few
  // threads, so that it is an arena of its own (alloc.cc: why the final flush of a signal needs
  // one).
  free(malloc(1));
  trace_file::TakeOwnFdTable();
  // A forked child samples itself from now on: its parent stops looking at it.
  sampler::MarkOwnWriter();
  // The sampler opens files: only in a table of our own.
  if (detail::t_own_fd_table) sampler::StartOnWriter(static_cast<uint32_t>(syscall(SYS_gettid)));
  bool opened;
  {
    std::lock_guard<std::mutex> lock(flush::Mutex());
    opened = trace_file::AdoptForWriter();
    // From now on the program threads leave the flushes to this thread. Under the flush lock: a
    // program thread that flushed before this thread ran (it found the writer not yet running)
    // sets the next flush's time under it too, and a time left set would have every later hooked
    // call wake this thread (hundreds of wakes a second, each 15-20 us of our CPU).
    g_next_flush_ns.store(UINT64_MAX, std::memory_order_relaxed);
  }
  if (!opened) {
    // No file: the hooks stop recording, and nothing waits for a writer. A program thread that
    // already waits (one that flushed or ended before this thread first ran: a busy machine) has
    // nothing to wait for: its job is withdrawn, and it is woken.
    detail::g_recorder_active.store(false, std::memory_order_relaxed);
    g_writer.running.store(false, std::memory_order_seq_cst);
    g_writer.job.store(0, std::memory_order_release);
    g_writer.jobs_done.fetch_add(1, std::memory_order_release);
    Futex(&g_writer.jobs_done, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
    MarkFinalDone();
  }
  if (!opened) return nullptr;
  const uint64_t flush_ns = uint64_t{g_writer.flush_ms} * 1'000'000;
  uint64_t next_flush = NowNs() + flush_ns;
  for (;;) {
    // Wait first: a process that ends within its first period is flushed once, at its end. The
    // sampler's looks come in between (sampler.h).
    uint32_t word = g_writer.wake_word.load(std::memory_order_acquire);
    bool woken = true;
    if (g_writer.final_request.load(std::memory_order_acquire) == 0 &&
        !g_writer.stop.load(std::memory_order_acquire) &&
        g_writer.job.load(std::memory_order_acquire) == 0) {
      uint64_t now = NowNs();
      uint64_t until = next_flush;
      if (uint64_t look = sampler::NextLookNs(); look != 0 && look < until) until = look;
      if (until > now) {
        uint64_t left = until - now;
        timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                         static_cast<long>(left % 1'000'000'000)};
        Futex(&g_writer.wake_word, FUTEX_WAIT_PRIVATE, word, &timeout);
      }
      woken = g_writer.wake_word.load(std::memory_order_acquire) != word;
    }
    if (uint32_t request = g_writer.final_request.load(std::memory_order_acquire); request != 0) {
      ServeFinalRequest(request);
      break;
    }
    if (g_writer.stop.load(std::memory_order_acquire)) break;
    // A job's flush is this period's (a second one at once would find little, and compete with
    // the program for the CPU).
    if (ServeJob()) {
      next_flush = NowNs() + flush_ns;
      continue;
    }
    const uint64_t now = NowNs();
    sampler::Look(now);
    if (!woken && now < next_flush) continue;  // a look, not yet a flush
    next_flush = now + flush_ns;
    // A closed file (exec's footer, a write error) is not the end of the writer: a failed exec
    // reopens the trace, and only a final request ends the thread.
    std::lock_guard<std::mutex> lock(flush::Mutex());
    flush::FlushLocked();
  }
  g_writer.running.store(false, std::memory_order_seq_cst);
  // A final request that came in as we stopped (it saw us running): served all the same.
  if (uint32_t request = g_writer.final_request.load(std::memory_order_seq_cst);
      request != 0 && g_writer.final_done.load(std::memory_order_acquire) == 0) {
    ServeFinalRequest(request);
  }
  return nullptr;
}

// The handler of a signal may be running on this thread: a program's handler we call
// (signals.cc and lifecycle.cc count them), one on an alternate signal stack (crash handlers, such
// as CPython's faulthandler), or one that blocks a fatal signal while it runs. A flush there could
// wait for a lock of libc's that the interrupted code holds (malloc's).
bool MayBeInSignalHandler() {
  if (detail::t_in_program_handler != 0) return true;
  stack_t ss;
  if (syscall(SYS_sigaltstack, nullptr, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) != 0) return true;
  sigset_t blocked;
  sigemptyset(&blocked);
  if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &blocked, _NSIG / 8) != 0) return true;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    if (sigismember(&blocked, sig)) return true;
  }
  return false;
}

// Starts the writer thread without waiting for it: the program runs on at once. Until the new
// thread has its own descriptor table (TakeOwnFdTable, its first action) and the trace file, the
// program's events wait in the rings; waiting would cost the calling thread a thread handoff,
// milliseconds on a loaded machine (docs/architecture.md, "Process life").
bool Start() {
  // Block every signal in the writer (it inherits the creating thread's mask): a process-directed
  // signal must go to a program thread, never to ours.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  g_writer.stop.store(false, std::memory_order_relaxed);
  g_writer.running.store(true, std::memory_order_release);
  int rc = internal::RealPthreadCreate(&g_writer.thread, &attr, WriterMain, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    g_writer.running.store(false, std::memory_order_release);
    internal::Say("cannot start the writer thread; the process flushes its own events");
    return false;
  }
  g_writer.started.store(true, std::memory_order_release);  // joinable (Stop)
  pthread_setname_np(g_writer.thread, "idlescope-wr");
  return true;
}

void WakeThread() {
  g_writer.wake_word.fetch_add(1, std::memory_order_release);
  Futex(&g_writer.wake_word, FUTEX_WAKE_PRIVATE, 1, nullptr);
}

// A process without a writer thread ends on this thread, from a signal handler or _exit: the
// flush allocates from the care heap, frees nothing, and gives up on the flush lock after a
// bounded wait (this thread may be a flush's, stopped by a fatal signal in it).
void EndWithCare(trace::ExitReason reason, int status) {
  care_heap::Enter();
  flush::TakeSignalCareOnThisThread();
  flush::AnnounceEndOnSignal();
  if (!flush::LockForEnd()) return;
  // No descriptor to be had: nothing can be written (no thread can be started here).
  if (trace_file::BeginWrites() == trace_file::WritesBegin::kReady) {
    FlushHere([=] { flush::FinalFlushLocked(reason, status); });
    trace_file::EndWrites();
  }
  flush::Mutex().unlock();
}

}  // namespace

void Init(uint32_t flush_ms, bool thread_at_start) {
  g_writer.flush_ms = flush_ms;
  g_writer.thread_at_start = thread_at_start;
}

void FileCreated() {
  g_next_flush_ns.store(NowNs() + uint64_t{g_writer.flush_ms} * 1'000'000,
                        std::memory_order_relaxed);
  if (g_writer.thread_at_start) StartThread();
}

bool StartThread() {
  if (g_writer.start_claimed.exchange(true, std::memory_order_acq_rel)) {
    return g_writer.running.load(std::memory_order_acquire);
  }
  return Start();
}

void Wake() {
  if (g_writer.running.load(std::memory_order_acquire)) {
    WakeThread();
  } else {
    detail::t_after_hook |= detail::kAfterHookFlush;
  }
}

void MaybeFlushHere() {
  detail::t_after_hook &= static_cast<uint8_t>(~detail::kAfterHookFlush);
  if (g_writer.running.load(std::memory_order_acquire)) {
    WakeThread();
    return;
  }
  if (!RecorderActive() || !internal::InTracedProcess()) return;
  const int saved = errno;
  ++detail::t_hook_depth;
  if (!MayBeInSignalHandler()) {
    internal::TerminationSignalsBlocked blocked;
    // Another thread flushing has it all in hand.
    if (flush::Mutex().try_lock()) {
      bool no_descriptor = false;
      if (!g_writer.running.load(std::memory_order_acquire)) {
        no_descriptor = trace_file::BeginWrites() == trace_file::WritesBegin::kNoDescriptor;
        if (!no_descriptor) {
          FlushHere([] { flush::FlushLocked(); });
          trace_file::EndWrites();
          g_next_flush_ns.store(NowNs() + uint64_t{g_writer.flush_ms} * 1'000'000,
                                std::memory_order_relaxed);
        }
      }
      flush::Mutex().unlock();
      // Every descriptor the program may have is taken: the writer thread flushes from now on.
      if (no_descriptor && StartThread()) WakeThread();
    }
  }
  --detail::t_hook_depth;
  errno = saved;
}

void RunJob(Job job) {
  // Here where the program's table holds the file (shared-table fallback) or no writer is left
  // (then no file is open, or none this thread can reach: trace_file::Write finds out).
  if (detail::g_program_trace_fd.load(std::memory_order_relaxed) >= 0 ||
      !g_writer.running.load(std::memory_order_acquire)) {
    bool no_descriptor = false;
    {
      flush::ProgramThreadLock lock;
      no_descriptor = trace_file::BeginWrites() == trace_file::WritesBegin::kNoDescriptor;
      if (!no_descriptor) {
        FlushHere([=] { DoJobLocked(job); });
        trace_file::EndWrites();
      }
    }
    // Every descriptor the program may have is taken: the job goes to a writer thread.
    if (!no_descriptor || !StartThread()) return;
  }
  std::lock_guard<std::mutex> lock(g_writer.job_mu);
  uint32_t done = g_writer.jobs_done.load(std::memory_order_acquire);
  g_writer.job.store(static_cast<uint32_t>(job), std::memory_order_release);
  WakeThread();
  uint64_t deadline = NowNs() + 10'000'000'000ull;
  while (g_writer.jobs_done.load(std::memory_order_acquire) == done) {
    if (NowNs() >= deadline || !g_writer.running.load(std::memory_order_acquire)) {
      uint32_t posted = static_cast<uint32_t>(job);
      g_writer.job.compare_exchange_strong(posted, 0);
      return;
    }
    WaitWhile(&g_writer.jobs_done, done, deadline);
  }
}

bool EndTrace(trace::ExitReason reason, int status, bool from_signal, bool signal_care,
              void (*participant_flush)()) {
  auto hand_over = [&] {
    g_writer.final_status = status;
    g_writer.final_signal_care = signal_care;
    g_writer.final_participant_flush = participant_flush;
    if (signal_care) flush::AnnounceEndOnSignal();
    g_writer.final_request.store(1 + reason, std::memory_order_seq_cst);
    WakeThread();
    return true;
  };
  if (g_writer.running.load(std::memory_order_seq_cst)) return hand_over();
  // _exit takes care only where it may be called from a handler (it is how most worker processes
  // end, outside any).
  if (from_signal || (signal_care && MayBeInSignalHandler())) {
    EndWithCare(reason, status);
  } else {
    bool no_descriptor = false;
    {
      flush::ProgramThreadLock lock;
      no_descriptor = trace_file::BeginWrites() == trace_file::WritesBegin::kNoDescriptor;
      if (!no_descriptor) {
        FlushHere([=] { flush::FinalFlushLocked(reason, status); });
        trace_file::EndWrites();
      }
    }
    // Every descriptor the program may have is taken: the writer thread, with a table of its own,
    // writes the end.
    if (no_descriptor && StartThread()) return hand_over();
  }
  // Done: a second ending need not wait.
  MarkFinalDone();
  return false;
}

void WaitTraceEnded(uint64_t seconds) {
  uint64_t deadline = NowNs() + seconds * 1000000000ull;
  while (g_writer.final_done.load(std::memory_order_acquire) == 0 && NowNs() < deadline) {
    WaitWhile(&g_writer.final_done, 0, deadline);
  }
}

void Stop() {
  if (g_writer.started.exchange(false)) {
    g_writer.stop.store(true, std::memory_order_release);
    WakeThread();
    pthread_join(g_writer.thread, nullptr);
  }
}

void ResetInChild() {
  g_writer.running.store(false, std::memory_order_relaxed);
  g_writer.start_claimed.store(false, std::memory_order_relaxed);
  g_next_flush_ns.store(UINT64_MAX, std::memory_order_relaxed);
  g_writer.stop.store(false);
  g_writer.started.store(false);  // the parent's writer is not the child's to join
  g_writer.final_request.store(0);
  g_writer.final_done.store(0);
  // A program thread of the parent may have been waiting for its writer (RunJob): that thread,
  // and its job, do not exist here.
  new (&g_writer.job_mu) std::mutex();
  g_writer.job.store(0, std::memory_order_relaxed);
}

}  // namespace writer

namespace internal {
void FlushSoon() { writer::Wake(); }
}  // namespace internal

}  // namespace idlescope
