// NCCL hooks: collectives, point-to-point, groups and communicator life.
//
// NCCL 2.x exports every public function twice, PMPI style: a strong `pncclX` and a weak `ncclX`.
// The program's calls bind to our `ncclX` (we are preloaded); we call the real strong `pncclX`
// (interpose/real_symbol.h: RTLD_NEXT, then `ncclX`, then libnccl.so.2 if a plugin loaded it
// RTLD_LOCAL). libnccl is never a link dependency of the preload library: a process
// without NCCL never loads it.
//
// Every collective records: op, element count, datatype, bytes this rank sends (nccl_comms.h),
// reduction op, root/peer, stream, the communicator id (hash of the ncclUniqueId: the same on
// every rank), rank and size, the per-communicator sequence number of collectives (the n-th
// collective on a communicator is the same operation on every rank, which is how the analyzer
// matches one AllReduce across the per-rank files and finds who waited for whom), the group
// nesting, and the time the host spent in the call (inside a group: enqueue only; the launch
// happens at ncclGroupEnd).
#if __has_include(<nccl.h>)

#include <errno.h>
#include <nccl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <string_view>

#include "interpose/hooks/nccl_comms.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder.h"

using idlescope::Family;
using idlescope::HookGuard;
using idlescope::NowNs;
using idlescope::RawEvent;
namespace ev = idlescope::ev;
namespace nccl = idlescope::nccl;

namespace {

// Loaded RTLD_LOCAL by a framework plugin, libnccl is invisible to RTLD_NEXT (real_symbol.h).
constinit idlescope::RealLibrary g_libnccl{{"libnccl.so.2", nullptr, nullptr}};

// One accessor per function in nccl.def: RealAllReduce() etc., resolved on first use.
#define IDLESCOPE_NCCL(name, params)                                                     \
  using name##Fn = ncclResult_t(*) params;                                               \
  constinit idlescope::RealFunction<name##Fn> g_real_##name{"pnccl" #name, "nccl" #name, \
                                                            &g_libnccl};                 \
  name##Fn Real##name() { return g_real_##name.Get(); }
#include "interpose/hooks/nccl.def"
#undef IDLESCOPE_NCCL

nccl::CommTable g_comms;

// fork: the child must not find the table's mutex held by a thread that does not exist there.
__attribute__((constructor)) void KeepCommsAcrossFork() {
  pthread_atfork([] { g_comms.LockForFork(); }, [] { g_comms.UnlockAfterFork(); },
                 [] { g_comms.UnlockAfterFork(); });
}
std::atomic<uint64_t> g_init_all_seq{0};
__thread uint32_t t_group_depth __attribute__((tls_model("initial-exec"))) = 0;

// NCCL's answer when the real function cannot be found (cannot happen for a program linked
// against libnccl; possible for a hand-written dlsym mix-up): reported once.
ncclResult_t Missing(const char* name) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    idlescope::RecordNotice(idlescope::NoticeSeverity::kError, "nccl_unresolved",
                            std::string("cannot find the real ") + name + " (pnccl/nccl)", true);
  }
  return ncclSystemError;
}

bool Accepted(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

// A communicator we did not see being created (ncclCommShrink, or created before tracing
// started): rank and size from NCCL, id unknown (0), its own sequence from now on.
nccl::CommTable::Entry* LearnComm(ncclComm_t comm) {
  nccl::CommInfo info;
  if (auto count = RealCommCount()) count(comm, &info.nranks);
  if (auto rank = RealCommUserRank()) rank(comm, &info.rank);
  g_comms.Insert(comm, info);
  return g_comms.Find(comm);
}

void FillComm(RawEvent& e, const nccl::CommInfo& info) {
  e.u.nccl.comm = info.id;
  e.u.nccl.parent_comm = info.parent;
  e.u.nccl.rank = info.rank;
  e.u.nccl.nranks = info.nranks;
}

template <typename Call>
ncclResult_t CollectiveHook(nccl::Op op, uint32_t (*api)(), size_t count, ncclDataType_t dtype,
                            int redop, int root_or_peer, ncclComm_t comm, cudaStream_t stream,
                            Call&& call) {
  HookGuard guard(Family::kNccl);
  if (!guard.active()) return call();
  uint64_t t0 = NowNs();
  ncclResult_t r = call();
  int err = errno;
  uint64_t t1 = NowNs();
  nccl::CommTable::Entry* entry = g_comms.Find(comm);
  if (entry == nullptr && comm != nullptr) entry = LearnComm(comm);
  RawEvent e;
  e.ts = t0;
  e.dur = t1 - t0;
  e.count = count;
  e.api = api();
  e.stack = idlescope::CaptureStack(2);
  e.result = r;
  e.type = ev::kNcclCollective;
  if (entry != nullptr) {
    FillComm(e, entry->info);
    // Point-to-point calls are not in the collective order (a send is matched by its peer's
    // recv, in order per pair): they get no sequence number.
    bool collective = op != nccl::kSend && op != nccl::kRecv;
    if (collective && Accepted(r)) {
      e.u.nccl.seq = entry->seq.fetch_add(1, std::memory_order_relaxed) + 1;
    }
  }
  e.bytes = nccl::BytesPerRank(op, count, dtype, e.u.nccl.nranks, e.u.nccl.rank, root_or_peer);
  // A NULL stream is the legacy default stream (libnccl is built without per-thread default
  // streams); the recorder's raw 0 means "no stream".
  e.u.nccl.stream = stream == nullptr ? 1 : reinterpret_cast<uint64_t>(stream);
  e.u.nccl.peer = root_or_peer;
  e.u.nccl.op = op;
  e.u.nccl.dtype = static_cast<uint8_t>(dtype);
  // Built-in ops are 0-4; ncclRedOpCreatePreMulSum ops are larger (kept, saturated to 255).
  e.u.nccl.redop = static_cast<uint8_t>(redop < 0 ? 0 : (redop > 255 ? 255 : redop));
  e.u.nccl.group_depth = static_cast<uint8_t>(t_group_depth > 255 ? 255 : t_group_depth);
  idlescope::Record(e);
  errno = err;
  return r;
}

void RecordComm(uint8_t type, uint32_t api, uint64_t t0, uint64_t t1, ncclResult_t r,
                const nccl::CommInfo& info) {
  RawEvent e;
  e.ts = t0;
  e.dur = t1 - t0;
  e.api = api;
  e.stack = idlescope::CaptureStack(2);
  e.result = r;
  e.type = type;
  FillComm(e, info);
  idlescope::Record(e);
}

// The end of every communicator-creating hook: register `comm` and record NCCL_COMM_INIT.
void RegisterComm(uint32_t api, uint64_t t0, ncclResult_t r, ncclComm_t comm,
                  const nccl::CommInfo& info) {
  if (Accepted(r) && comm != nullptr) g_comms.Insert(comm, info);
  RecordComm(ev::kNcclCommInit, api, t0, NowNs(), r, info);
}

template <typename Call>
ncclResult_t DestroyHook(uint32_t (*api)(), ncclComm_t comm, Call&& call) {
  HookGuard guard(Family::kNccl);
  if (!guard.active()) {
    g_comms.Erase(comm);
    return call();
  }
  nccl::CommInfo info;
  if (nccl::CommTable::Entry* entry = g_comms.Find(comm)) info = entry->info;
  uint64_t t0 = NowNs();
  ncclResult_t r = call();
  int err = errno;
  g_comms.Erase(comm);
  RecordComm(ev::kNcclCommDestroy, api(), t0, NowNs(), r, info);
  errno = err;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Collectives and point-to-point.

#define NCCL_REAL(name)     \
  auto real = Real##name(); \
  if (real == nullptr) return Missing("nccl" #name)

// Generated from nccl.def: the collective and point-to-point hooks.
#define IDLESCOPE_NCCL(name, params)
#define IDLESCOPE_NCCL_COLLECTIVE(name, params, args, op, count, redop, root_or_peer)    \
  IDLESCOPE_EXPORT ncclResult_t nccl##name params {                                      \
    NCCL_REAL(name);                                                                     \
    return CollectiveHook(nccl::op, IDLESCOPE_API("nccl" #name), count, datatype, redop, \
                          root_or_peer, comm, stream, [&] { return real args; });        \
  }
#include "interpose/hooks/nccl.def"
#undef IDLESCOPE_NCCL_COLLECTIVE
#undef IDLESCOPE_NCCL

// ---------------------------------------------------------------------------------------------
// Groups: group_depth after the call.

IDLESCOPE_EXPORT ncclResult_t ncclGroupStart() {
  NCCL_REAL(GroupStart);
  HookGuard guard(Family::kNccl);
  if (!guard.active()) {
    ncclResult_t r = real();
    if (r == ncclSuccess) ++t_group_depth;
    return r;
  }
  uint64_t t0 = NowNs();
  ncclResult_t r = real();
  int err = errno;
  if (r == ncclSuccess) ++t_group_depth;
  RawEvent e;
  e.ts = t0;
  e.dur = NowNs() - t0;
  e.api = IDLESCOPE_API("ncclGroupStart")();
  e.result = r;
  e.type = ev::kNcclGroup;
  e.u.nccl.group_depth = static_cast<uint8_t>(t_group_depth > 255 ? 255 : t_group_depth);
  idlescope::Record(e);
  errno = err;
  return r;
}

IDLESCOPE_EXPORT ncclResult_t ncclGroupEnd() {
  NCCL_REAL(GroupEnd);
  HookGuard guard(Family::kNccl);
  if (!guard.active()) {
    ncclResult_t r = real();
    if (t_group_depth > 0) --t_group_depth;
    return r;
  }
  uint64_t t0 = NowNs();
  ncclResult_t r = real();  // the outermost GroupEnd launches everything enqueued
  int err = errno;
  if (t_group_depth > 0) --t_group_depth;  // the group is over even when it failed
  RawEvent e;
  e.ts = t0;
  e.dur = NowNs() - t0;
  e.api = IDLESCOPE_API("ncclGroupEnd")();
  e.stack = idlescope::CaptureStack(1);
  e.result = r;
  e.type = ev::kNcclGroup;
  e.u.nccl.group_depth = static_cast<uint8_t>(t_group_depth > 255 ? 255 : t_group_depth);
  idlescope::Record(e);
  errno = err;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Communicators.

IDLESCOPE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id,
                                               int rank) {
  NCCL_REAL(CommInitRank);
  HookGuard guard(Family::kNccl);
  uint64_t t0 = NowNs();
  ncclResult_t r = real(comm, nranks, comm_id, rank);
  int err = errno;
  nccl::CommInfo info{nccl::CommIdFromUniqueId(&comm_id, sizeof(comm_id)), 0, rank, nranks};
  // Registered even when not recording: later collectives need the id.
  if (!guard.active()) {
    if (Accepted(r) && comm != nullptr && *comm != nullptr) g_comms.Insert(*comm, info);
  } else {
    RegisterComm(IDLESCOPE_API("ncclCommInitRank")(), t0, r, comm != nullptr ? *comm : nullptr,
                 info);
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                     ncclUniqueId comm_id, int rank,
                                                     ncclConfig_t* config) {
  NCCL_REAL(CommInitRankConfig);
  HookGuard guard(Family::kNccl);
  uint64_t t0 = NowNs();
  ncclResult_t r = real(comm, nranks, comm_id, rank, config);
  int err = errno;
  nccl::CommInfo info{nccl::CommIdFromUniqueId(&comm_id, sizeof(comm_id)), 0, rank, nranks};
  if (!guard.active()) {
    if (Accepted(r) && comm != nullptr && *comm != nullptr) g_comms.Insert(*comm, info);
  } else {
    RegisterComm(IDLESCOPE_API("ncclCommInitRankConfig")(), t0, r,
                 comm != nullptr ? *comm : nullptr, info);
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank,
                                                       int n_ids, ncclUniqueId* comm_ids,
                                                       ncclConfig_t* config) {
  NCCL_REAL(CommInitRankScalable);
  HookGuard guard(Family::kNccl);
  uint64_t t0 = NowNs();
  ncclResult_t r = real(comm, nranks, rank, n_ids, comm_ids, config);
  int err = errno;
  // Every rank passes the same n_ids unique ids: hash them all.
  uint64_t id = n_ids > 0 && comm_ids != nullptr
                    ? nccl::CommIdFromUniqueId(comm_ids, sizeof(ncclUniqueId) * n_ids)
                    : 0;
  nccl::CommInfo info{id, 0, rank, nranks};
  if (!guard.active()) {
    if (Accepted(r) && comm != nullptr && *comm != nullptr) g_comms.Insert(*comm, info);
  } else {
    RegisterComm(IDLESCOPE_API("ncclCommInitRankScalable")(), t0, r,
                 comm != nullptr ? *comm : nullptr, info);
  }
  errno = err;
  return r;
}

// One process, ndev communicators forming one clique: one id for all, rank = index.
IDLESCOPE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  NCCL_REAL(CommInitAll);
  HookGuard guard(Family::kNccl);
  uint64_t t0 = NowNs();
  ncclResult_t r = real(comms, ndev, devlist);
  int err = errno;
  uint64_t id =
      nccl::CommIdFromInitAll(static_cast<uint32_t>(getpid()), g_init_all_seq.fetch_add(1) + 1);
  for (int i = 0; comms != nullptr && i < ndev; ++i) {
    nccl::CommInfo info{id, 0, i, ndev};
    if (!guard.active()) {
      if (Accepted(r) && comms[i] != nullptr) g_comms.Insert(comms[i], info);
    } else {
      RegisterComm(IDLESCOPE_API("ncclCommInitAll")(), t0, r, comms[i], info);
    }
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                            ncclComm_t* newcomm, ncclConfig_t* config) {
  NCCL_REAL(CommSplit);
  HookGuard guard(Family::kNccl);
  nccl::CommTable::Entry* parent = g_comms.Find(comm);
  if (parent == nullptr && comm != nullptr) parent = LearnComm(comm);
  // Every member of the parent calls ncclCommSplit in the same order (it is collective over the
  // parent), so the n-th split of a parent is the same split on every rank.
  uint64_t split_seq = parent != nullptr ? parent->splits.fetch_add(1) + 1 : 0;
  uint64_t parent_id = parent != nullptr ? parent->info.id : 0;
  uint64_t t0 = NowNs();
  ncclResult_t r = real(comm, color, key, newcomm, config);
  int err = errno;
  ncclComm_t child = newcomm != nullptr ? *newcomm : nullptr;
  // NCCL_SPLIT_NOCOLOR: this rank is in no new communicator (child stays NULL).
  nccl::CommInfo info;
  info.parent = parent_id;
  if (child != nullptr && Accepted(r)) {
    info.id = parent_id != 0 ? nccl::CommIdFromSplit(parent_id, color, split_seq) : 0;
    if (auto count = RealCommCount()) count(child, &info.nranks);
    if (auto rank = RealCommUserRank()) rank(child, &info.rank);
  }
  if (!guard.active()) {
    if (Accepted(r) && child != nullptr) g_comms.Insert(child, info);
  } else {
    RegisterComm(IDLESCOPE_API("ncclCommSplit")(), t0, r, child, info);
  }
  errno = err;
  return r;
}

IDLESCOPE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NCCL_REAL(CommDestroy);
  return DestroyHook(IDLESCOPE_API("ncclCommDestroy"), comm, [&] { return real(comm); });
}

IDLESCOPE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NCCL_REAL(CommAbort);
  return DestroyHook(IDLESCOPE_API("ncclCommAbort"), comm, [&] { return real(comm); });
}

#endif  // __has_include(<nccl.h>)
