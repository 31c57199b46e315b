// The stack walk of CaptureStack (interpose/unwind.cc): the same frames as libgcc's unwinder,
// through signal frames, on every thread, and no fault on a frame whose rules point nowhere.
#include "interpose/unwind.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <unwind.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

// Not in an anonymous namespace: the test is linked -rdynamic so that dladdr names these.
namespace idlescope::unwind::test {

struct Walks {
  std::vector<uintptr_t> ours, gcc;
};

std::string FunctionOf(uintptr_t return_address) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(return_address - 1), &info) == 0 || info.dli_sname == nullptr)
    return "";
  return info.dli_sname;
}

_Unwind_Reason_Code GccStep(_Unwind_Context* ctx, void* arg) {
  auto* pcs = static_cast<std::vector<uintptr_t>*>(arg);
  if (pcs->size() >= 64) return _URC_END_OF_STACK;
  pcs->push_back(_Unwind_GetIP(ctx));
  return _URC_NO_REASON;
}

__attribute__((noinline)) void WalkBoth(Walks* w) {
  uintptr_t pcs[64];
  int n = Backtrace(pcs, 64);
  w->ours.assign(pcs, pcs + n);
  _Unwind_Backtrace(GccStep, &w->gcc);
  asm volatile("" ::: "memory");
}

// Both walks from the first frame they share (each starts inside its own unwinder) to the end.
void ExpectSameFrames(const Walks& w, size_t at_least) {
  auto ours = w.ours.begin();
  auto gcc = w.gcc.end();
  for (; ours != w.ours.end() && gcc == w.gcc.end(); ++ours) {
    gcc = std::find(w.gcc.begin(), w.gcc.end(), *ours);
  }
  ASSERT_NE(gcc, w.gcc.end()) << "no frame in common";
  std::vector<uintptr_t> our_tail(ours - 1, w.ours.end()), gcc_tail(gcc, w.gcc.end());
  while (!gcc_tail.empty() && gcc_tail.back() == 0) gcc_tail.pop_back();  // libgcc's end marker
  EXPECT_GE(our_tail.size(), at_least);
  ASSERT_EQ(our_tail.size(), gcc_tail.size());
  for (size_t i = 0; i < our_tail.size(); ++i) {
    // An interrupted pc (beyond a signal frame) is given as pc + 1, like a return address.
    EXPECT_LE(our_tail[i] - gcc_tail[i], 1u) << "frame " << i;
  }
}

__attribute__((noinline)) int Recurse(int depth, Walks* w) {
  if (depth == 0) {
    WalkBoth(w);
    return 0;
  }
  int r = Recurse(depth - 1, w) + 1;
  asm volatile("" ::: "memory");  // not a tail call
  return r;
}

TEST(Unwind, SameFramesAsLibgcc) {
  Init();
  ASSERT_TRUE(UsesCfiWalk()) << "glibc without _dl_find_object: the libgcc walk is used";
  Walks w;
  Recurse(30, &w);
  ExpectSameFrames(w, 30);
}

// The rule cache is direct-mapped and grows 4x once its fills pass a quarter of its slots: two pcs
// of the stack that share a slot (about 1 stack of ~15 pcs in 10 at 1 Ki slots, by where ASLR put
// the code) evict each other at every walk until the fills grow the table, ~128 walks later. So
// repeated walks must stop computing rules within a bounded number of walks, and then for good.
TEST(Unwind, RepeatedWalksUseTheCachedRules) {
  Init();
  std::vector<uintptr_t> first;
  uint64_t before = 0;
  int quiet = 0, walks = 0;
  for (; walks < 3000 && quiet < 200; ++walks) {  // one call site: the same stack every time
    Walks w;
    Recurse(10, &w);
    // The frames up to Recurse's caller (the loop's call may be peeled into two sites).
    std::vector<uintptr_t> inner(w.ours.begin(),
                                 w.ours.begin() + std::min<size_t>(12, w.ours.size()));
    if (walks == 0) first = inner;
    ASSERT_EQ(inner, first);
    const uint64_t now = RulesComputed();
    quiet = walks > 0 && now == before ? quiet + 1 : 0;
    before = now;
  }
  EXPECT_EQ(quiet, 200) << "rules still computed after " << walks << " walks of one stack";
  EXPECT_LE(walks, 1000) << "walks of one stack before they computed no rule";
}

// Call paths whose walks begin at the same sp and rbp (the same caller, frames of the same
// size): a thread's walk cache must give each its own frames.
__attribute__((noinline)) std::vector<uintptr_t> WalkWith(WalkCache* cache) {
  uintptr_t pcs[48];
  int n = Backtrace(pcs, 48, cache);
  std::vector<uintptr_t> v(pcs, pcs + n);
  asm volatile("" ::: "memory");
  return v;
}
__attribute__((noinline)) std::vector<uintptr_t> WalkUpTo(WalkCache* cache, int max) {
  uintptr_t pcs[48];
  int n = Backtrace(pcs, max, cache);
  std::vector<uintptr_t> v(pcs, pcs + n);
  asm volatile("" ::: "memory");
  return v;
}
template <int kPath>  // a function of its own per path (the constant keeps their code apart)
__attribute__((noinline)) std::vector<uintptr_t> Path(WalkCache* cache) {
  std::vector<uintptr_t> v = WalkWith(cache);
  asm volatile("" ::"i"(kPath) : "memory");
  return v;
}

TEST(Unwind, AWalkCacheRepeatsAWalkOnlyOnTheSameStack) {
  Init();
  ASSERT_TRUE(UsesCfiWalk());
  std::vector<char> memory(WalkCacheBytes(), 0);
  WalkCache* cache = reinterpret_cast<WalkCache*>(memory.data());
  std::vector<uintptr_t> (*paths[])(WalkCache*) = {Path<0>, Path<1>, Path<0>, Path<2>, Path<1>};
  const uint64_t repeated = WalksRepeated();
  for (int round = 0; round < 20; ++round) {
    for (auto* path : paths) {
      std::vector<uintptr_t> walks[2];  // from one call site (not unrolled): cached, then not
      int twice = 2;
      asm volatile("" : "+r"(twice));  // a trip count the compiler cannot unroll
#pragma GCC unroll 1
      for (int k = 0; k < twice; ++k) walks[k] = path(k == 0 ? cache : nullptr);
      ASSERT_EQ(walks[0], walks[1]) << "round " << round;
      ASSERT_GE(walks[0].size(), 3u);
    }
  }
  // Two walks kept: A and B alternate and repeat; C evicts one of them now and then.
  EXPECT_GT(WalksRepeated() - repeated, 20u);
  // One call site asking for 3 frames, then 48 (more than the cut-short walk gave), then 3 (what
  // the 48-frame walk gave, cut).
  std::vector<uintptr_t> asked[3];
  int i = 0;
  int thrice = 3;
  asm volatile("" : "+r"(thrice));
#pragma GCC unroll 1
  for (int k = 0; k < thrice; ++k) asked[i++] = WalkUpTo(cache, k == 1 ? 48 : 3);
  EXPECT_EQ(asked[0].size(), 3u);
  EXPECT_GT(asked[1].size(), 3u);
  EXPECT_EQ(asked[2], asked[0]);
  EXPECT_TRUE(std::equal(asked[0].begin(), asked[0].end(), asked[1].begin()));
}

// Walks into arrays (a signal handler may not allocate), one function per path.
template <int kPath>
__attribute__((noinline)) int ArrayWalk(WalkCache* cache, uintptr_t* pcs) {
  const int n = Backtrace(pcs, 48, cache);
  asm volatile("" ::"i"(kPath) : "memory");
  return n;
}
// The same path walked with `cache`, then without, from one call site: whether they agree.
template <int kPath>
__attribute__((noinline)) bool CachedWalkAgrees(WalkCache* cache) {
  uintptr_t walks[2][48];
  int n[2];
  int twice = 2;
  asm volatile("" : "+r"(twice));
#pragma GCC unroll 1
  for (int k = 0; k < twice; ++k) n[k] = ArrayWalk<kPath>(k == 0 ? cache : nullptr, walks[k]);
  return n[0] == n[1] && n[0] > 2 && std::equal(walks[0], walks[0] + n[0], walks[1]);
}

WalkCache* g_shared_cache = nullptr;
volatile sig_atomic_t g_handler_walks = 0, g_handler_disagreements = 0;
void OnProfSignal(int) {
  g_handler_walks = g_handler_walks + 1;
  if (!CachedWalkAgrees<9>(g_shared_cache)) g_handler_disagreements = g_handler_disagreements + 1;
}

TEST(Unwind, HandlersThatInterruptCachedWalksShareTheCache) {
  // A profiling timer interrupts the thread's cached walks thousands of times; its handler walks
  // with the same cache (it must not use it while the interrupted walk does, nor end that walk's
  // hold on it). Every walk, in the handler or not, gives what an uncached one gives.
  Init();
  ASSERT_TRUE(UsesCfiWalk());
  std::vector<char> memory(WalkCacheBytes(), 0);
  g_shared_cache = reinterpret_cast<WalkCache*>(memory.data());
  struct sigaction sa = {}, old;
  sa.sa_handler = OnProfSignal;
  sa.sa_flags = SA_RESTART;
  ASSERT_EQ(sigaction(SIGPROF, &sa, &old), 0);
  struct itimerval every = {{0, 50}, {0, 50}}, off = {};
  ASSERT_EQ(setitimer(ITIMER_PROF, &every, nullptr), 0);
  const uint64_t repeated = WalksRepeated();
  int disagreements = 0;
  for (int i = 0; i < 30000 || g_handler_walks < 50; ++i) {
    disagreements += !CachedWalkAgrees<0>(g_shared_cache);
    disagreements += !CachedWalkAgrees<1>(g_shared_cache);
    if (i > 3'000'000) break;
  }
  setitimer(ITIMER_PROF, &off, nullptr);
  sigaction(SIGPROF, &old, nullptr);
  EXPECT_EQ(disagreements, 0);
  EXPECT_EQ(g_handler_disagreements, 0);
  EXPECT_GE(g_handler_walks, 50);
  EXPECT_GT(WalksRepeated() - repeated, 30000u);  // the cache kept working between signals
}

void* ThreadWalk(void* arg) {
  Recurse(12, static_cast<Walks*>(arg));
  return nullptr;
}

TEST(Unwind, OtherThreadsToo) {
  Init();
  Walks w;
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, ThreadWalk, &w), 0);
  pthread_join(t, nullptr);
  ExpectSameFrames(w, 12);
}

// A function that realigns its stack and passes arguments on the stack (GCC's DRAP, as AVX kernels
// do: force_align_arg_pointer here) gives its CFA as *(rbp - 8) and its rbp as saved at rbp.
__attribute__((noinline)) int ManyArguments(Walks* w, int a, int b, int c, int d, int e, int f,
                                            int g) {
  int r = Recurse(6, w) + a + b + c + d + e + f + g;
  asm volatile("" ::: "memory");
  return r;
}

__attribute__((noinline, force_align_arg_pointer)) int Realigned(Walks* w, int a, int b, int c,
                                                                 int d, int e, int f, int g) {
  alignas(64) volatile char buf[128];
  buf[0] = static_cast<char>(a);
  int r = ManyArguments(w, a, b, c, d, e, f, g);
  buf[1] = static_cast<char>(r + g);
  return r + buf[1];
}

TEST(Unwind, ThroughFramesThatRealignTheirStack) {
  Init();
  Walks w;
  Realigned(&w, 1, 2, 3, 4, 5, 6, 7);
  ExpectSameFrames(w, 10);
  int realigned = 0;
  for (uintptr_t pc : w.ours) realigned += FunctionOf(pc).find("Realigned") != std::string::npos;
  EXPECT_EQ(realigned, 1);
}

// A hook may run in a signal handler: the walk goes on past the kernel's signal frame into the
// interrupted code, as libgcc's does.
Walks* g_in_handler = nullptr;
void OnSignal(int) { WalkBoth(g_in_handler); }

__attribute__((noinline)) int RaiseHere(int depth) {
  if (depth == 0) {
    raise(SIGUSR1);
    return 0;
  }
  int r = RaiseHere(depth - 1) + 1;
  asm volatile("" ::: "memory");
  return r;
}

TEST(Unwind, ThroughSignalFrames) {
  Init();
  Walks w;
  g_in_handler = &w;
  struct sigaction sa = {}, old;
  sa.sa_handler = OnSignal;
  sigaction(SIGUSR1, &sa, &old);
  RaiseHere(8);
  sigaction(SIGUSR1, &old, nullptr);
  ExpectSameFrames(w, 12);
  // RaiseHere's frames are there, beyond the signal frame.
  int raise_here = 0;
  for (uintptr_t pc : w.ours) raise_here += FunctionOf(pc).find("RaiseHere") != std::string::npos;
  EXPECT_GE(raise_here, 8);
}

// A frame whose CFI says its caller's frame is at rbp + 16 while rbp holds garbage: libgcc would
// read address 0x20 and fault; the walk checks every address against the stack and ends there.
extern "C" void idlescope_test_bad_frame(void (*callback)(Walks*), Walks* w);
asm(R"(
    .text
    .globl idlescope_test_bad_frame
    .type idlescope_test_bad_frame, @function
idlescope_test_bad_frame:
    .cfi_startproc
    pushq %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset %rbp, 0
    movq %rdi, %rax
    movq %rsi, %rdi
    movq $0x10, %rbp
    .cfi_def_cfa %rbp, 16
    call *%rax
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size idlescope_test_bad_frame, .-idlescope_test_bad_frame
)");

__attribute__((noinline)) void WalkOursOnly(Walks* w) {
  uintptr_t pcs[64];
  int n = Backtrace(pcs, 64);
  w->ours.assign(pcs, pcs + n);
  asm volatile("" ::: "memory");
}

TEST(Unwind, AFrameThatPointsNowhereEndsTheWalk) {
  Init();
  Walks w;
  idlescope_test_bad_frame(WalkOursOnly, &w);
  // WalkOursOnly's caller is the bad frame: its return address is the last one there is.
  ASSERT_FALSE(w.ours.empty());
  ASSERT_LE(w.ours.size(), 3u);
  EXPECT_EQ(FunctionOf(w.ours.back()), "idlescope_test_bad_frame");
}

}  // namespace idlescope::unwind::test
