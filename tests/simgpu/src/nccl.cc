// Fake libnccl.so.2 (NCCL 2.28.9 API): communicators across processes through POSIX shared
// memory, collectives that really move and reduce the data, and a collective "kernel" on the
// caller's stream that ends only after every rank reached it.
//
// Like real NCCL, each public function is a strong pnccl* symbol with a weak nccl* alias, and
// the library never calls the exported cudart API (the real one links cudart statically): it
// reaches the device model through the driver's export table.
#include <fcntl.h>
#include <linux/futex.h>
#include <nccl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "api_frame.h"
#include "cbid.h"
#include "config.h"
#include "engine.h"

namespace {

constexpr int kMaxRanks = 64;
constexpr size_t kSlotBytes = 1 << 20;    // per-rank staging slot for collectives
constexpr size_t kChanBytes = 256 << 10;  // per (src, dst) channel for send/recv

using Word = std::atomic<uint32_t>;

struct Channel {
  Word full;
  uint32_t len;
  char data[kChanBytes];
};

struct Shared {
  Word joined;
  Word barrier;       // arrivals at device-side (collective) barriers, a futex word
  Word ctrl_barrier;  // arrivals at host-side barriers (init, split)
  Word aborted;
  uint32_t nranks;
  int32_t ctrl[kMaxRanks][4];
  // When each rank's kernel of a collective started on its device's timeline, by the parity of
  // the collective's sequence number on the communicator: a rank reads the others' after the
  // collective's first barrier, and none can write the slot again before all have passed the
  // next collective's first barrier.
  std::atomic<uint64_t> started[2][kMaxRanks];
  // followed by nranks slots of kSlotBytes, then nranks * nranks channels
};

size_t SharedBytes(int n) {
  return sizeof(Shared) + static_cast<size_t>(n) * kSlotBytes +
         static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(Channel);
}

long Futex(Word* w, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), op, val, ts, nullptr, 0);
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

struct ncclComm {
  std::string name;
  int rank = 0, nranks = 1, dev = 0;
  Shared* sh = nullptr;
  size_t map_bytes = 0;
  uint32_t barrier_epoch = 0, ctrl_epoch = 0, split_seq = 0, coll_seq = 0, chunk_seq = 0;
  bool failed = false;

  char* Slot(int r) const {
    return reinterpret_cast<char*>(sh) + sizeof(Shared) + static_cast<size_t>(r) * kSlotBytes;
  }
  Channel* Chan(int src, int dst) const {
    char* base =
        reinterpret_cast<char*>(sh) + sizeof(Shared) + static_cast<size_t>(nranks) * kSlotBytes;
    return reinterpret_cast<Channel*>(base) + (src * nranks + dst);
  }

  // Waits until every rank has arrived `epoch` times on `word`; false on timeout or abort.
  bool Wait(Word* word, uint32_t* epoch) {
    uint32_t target = ++*epoch * static_cast<uint32_t>(nranks);
    uint32_t now = word->fetch_add(1) + 1;
    if (static_cast<int32_t>(now - target) >= 0) {
      Futex(word, FUTEX_WAKE, INT32_MAX, nullptr);
      return true;
    }
    uint64_t deadline = NowNs() + static_cast<uint64_t>(simgpu::GetConfig().nccl_timeout_s * 1e9);
    for (;;) {
      uint32_t cur = word->load();
      if (static_cast<int32_t>(cur - target) >= 0) return true;
      if (sh->aborted.load() || NowNs() > deadline) {
        if (!failed) {
          fprintf(stderr, "simgpu: NCCL rank %d of %d: peers did not arrive (%s)\n", rank, nranks,
                  sh->aborted.load() ? "aborted" : "timeout");
        }
        failed = true;
        return false;
      }
      timespec ts{0, 2000000};  // re-check the deadline every 2 ms
      Futex(word, FUTEX_WAIT, cur, &ts);
    }
  }
  bool Barrier() { return !failed && Wait(&sh->barrier, &barrier_epoch); }
  bool CtrlBarrier() { return !failed && Wait(&sh->ctrl_barrier, &ctrl_epoch); }
};

namespace {

simgpu::Engine* Eng() { return simgpu::GetEngine(); }

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* TypeName(ncclDataType_t t) {
  static const char* const kNames[] = {"i8",  "u8",  "i32", "u32",  "i64",    "u64",
                                       "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
  return (t >= 0 && t < ncclNumTypes) ? kNames[t] : "unknown";
}

const char* OpName(ncclRedOp_t op) {
  static const char* const kNames[] = {"Sum", "Prod", "Max", "Min", "Avg"};
  return (op >= 0 && op < ncclNumOps) ? kNames[op] : "Sum";
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v = exp == 0    ? std::ldexp(static_cast<float>(man), -24)
            : exp == 31 ? (man ? NAN : INFINITY)
                        : std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);
  if (a < 6.103515625e-05f) {
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  int e;
  float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  uint32_t man = static_cast<uint32_t>(std::nearbyint((m * 2 - 1) * 1024));
  uint32_t exp = static_cast<uint32_t>(e - 1 + 15);
  if (man == 1024) {
    man = 0;
    ++exp;
  }
  return static_cast<uint16_t>(sign | (exp << 10) | man);
}

float Bf16ToFloat(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(x >> 16);
}

// out = in[0] op in[1] op ... (left to right, as before), one rank at a time with the operation
// fixed per loop, so the compiler vectorizes it: the element-wise form with the operation chosen
// per element took 12% of a bucketed all-reduce job's CPU, on the device threads that the host
// must not wait for (engine.cc, RunAsDeviceThread). `out` is the caller's buffer, never a slot.
template <typename T, typename Op>
void ReduceWith(char* out, const std::vector<const char*>& in, size_t n, Op combine) {
  memmove(out, in[0], n * sizeof(T));
  for (size_t r = 1; r < in.size(); ++r) {
    const char* src = in[r];
    for (size_t i = 0; i < n; ++i) {
      T a, b;
      memcpy(&a, out + i * sizeof(T), sizeof(T));
      memcpy(&b, src + i * sizeof(T), sizeof(T));
      a = combine(a, b);
      memcpy(out + i * sizeof(T), &a, sizeof(T));
    }
  }
}

template <typename T>
void ReduceT(char* out, const std::vector<const char*>& in, size_t n, ncclRedOp_t op, int nranks) {
  switch (op) {
    case ncclProd:
      ReduceWith<T>(out, in, n, [](T a, T b) { return static_cast<T>(a * b); });
      break;
    case ncclMax:
      ReduceWith<T>(out, in, n, [](T a, T b) { return std::max(a, b); });
      break;
    case ncclMin:
      ReduceWith<T>(out, in, n, [](T a, T b) { return std::min(a, b); });
      break;
    default:  // Sum, Avg
      ReduceWith<T>(out, in, n, [](T a, T b) { return static_cast<T>(a + b); });
      break;
  }
  if (op != ncclAvg) return;
  for (size_t i = 0; i < n; ++i) {
    T a;
    memcpy(&a, out + i * sizeof(T), sizeof(T));
    a = static_cast<T>(a / static_cast<T>(nranks));
    memcpy(out + i * sizeof(T), &a, sizeof(T));
  }
}

template <typename T>
T Combine(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      return static_cast<T>(a * b);
    case ncclMax:
      return std::max(a, b);
    case ncclMin:
      return std::min(a, b);
    default:
      return static_cast<T>(a + b);  // Sum, Avg
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void Reduce16(char* out, const std::vector<const char*>& in, size_t n, ncclRedOp_t op, int nranks) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    memcpy(&h, in[0] + i * 2, 2);
    float acc = ToF(h);
    for (size_t r = 1; r < in.size(); ++r) {
      memcpy(&h, in[r] + i * 2, 2);
      acc = Combine(acc, ToF(h), op);
    }
    if (op == ncclAvg) acc /= static_cast<float>(nranks);
    h = FromF(acc);
    memcpy(out + i * 2, &h, 2);
  }
}

void Reduce(char* out, const std::vector<const char*>& in, size_t n, ncclDataType_t t,
            ncclRedOp_t op, int nranks) {
  switch (t) {
    case ncclInt8:
      ReduceT<int8_t>(out, in, n, op, nranks);
      break;
    case ncclUint8:
      ReduceT<uint8_t>(out, in, n, op, nranks);
      break;
    case ncclInt32:
      ReduceT<int32_t>(out, in, n, op, nranks);
      break;
    case ncclUint32:
      ReduceT<uint32_t>(out, in, n, op, nranks);
      break;
    case ncclInt64:
      ReduceT<int64_t>(out, in, n, op, nranks);
      break;
    case ncclUint64:
      ReduceT<uint64_t>(out, in, n, op, nranks);
      break;
    case ncclFloat32:
      ReduceT<float>(out, in, n, op, nranks);
      break;
    case ncclFloat64:
      ReduceT<double>(out, in, n, op, nranks);
      break;
    case ncclFloat16:
      Reduce16<HalfToFloat, FloatToHalf>(out, in, n, op, nranks);
      break;
    case ncclBfloat16:
      Reduce16<Bf16ToFloat, FloatToBf16>(out, in, n, op, nranks);
      break;
    default:
      ReduceT<uint8_t>(out, in, n, ncclMax, nranks);
      break;  // fp8: not modelled
  }
}

enum class Coll {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv
};

const char* CollName(Coll c) {
  static const char* const kNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                       "Reduce",    "AlltoAll",  "Gather",        "Scatter",
                                       "Send",      "Recv"};
  return kNames[static_cast<int>(c)];
}

struct Task {
  Coll coll;
  const char* send;
  char* recv;
  size_t count;  // elements per rank (see each collective's definition)
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;  // or peer
  ncclComm* comm;
  cudaStream_t stream;
};

// One collective, run on the device worker thread. Chunked through the ranks' staging slots,
// one barrier per chunk, so no rank finishes before the slowest has arrived. Each slot has two
// halves used by turns (the parity of the communicator's chunk count): a rank writes a half again
// only after passing the next chunk's barrier, which every rank reaches after reading it.
// `start_ns` is when this rank's kernel started on its device's timeline; returns when the last
// rank's did (the data moves from then on).
uint64_t RunCollective(const Task& t, uint64_t start_ns) {
  ncclComm& c = *t.comm;
  const int n = c.nranks, me = c.rank;
  constexpr size_t kHalf = kSlotBytes / 2;
  size_t half = 0;
  auto slot = [&](int r) { return c.Slot(r) + half; };
  std::atomic<uint64_t>* started = c.sh->started[c.coll_seq++ & 1];
  started[me].store(start_ns);
  uint64_t last = start_ns;
  auto all_started = [&] {
    for (int r = 0; r < n; ++r) last = std::max(last, started[r].load());
  };
  const size_t es = TypeSize(t.type);
  const size_t bytes = t.count * es;
  // Per-destination sub-slots for the collectives that route different data to each rank.
  const size_t sub = (kHalf / static_cast<size_t>(n)) / es * es;
  const bool routed =
      t.coll == Coll::kReduceScatter || t.coll == Coll::kAlltoAll || t.coll == Coll::kScatter;
  const size_t step = routed ? sub : kHalf / es * es;
  if (bytes == 0) {
    if (c.Barrier()) all_started();
    return last;
  }
  for (size_t off = 0; off < bytes; off += step) {
    size_t len = std::min(step, bytes - off);
    half = (c.chunk_seq++ & 1) * kHalf;
    char* mine = slot(me);
    switch (t.coll) {
      case Coll::kAllReduce:
      case Coll::kReduce:
      case Coll::kAllGather:
      case Coll::kGather:
        memcpy(mine, t.send + off, len);
        break;
      case Coll::kBroadcast:
        if (me == t.root) memcpy(mine, t.send + off, len);
        break;
      case Coll::kReduceScatter:
      case Coll::kAlltoAll:
        for (int d = 0; d < n; ++d) {
          memcpy(mine + static_cast<size_t>(d) * sub, t.send + static_cast<size_t>(d) * bytes + off,
                 len);
        }
        break;
      case Coll::kScatter:
        if (me == t.root) {
          for (int d = 0; d < n; ++d) {
            memcpy(mine + static_cast<size_t>(d) * sub,
                   t.send + static_cast<size_t>(d) * bytes + off, len);
          }
        }
        break;
      default:
        break;
    }
    if (!c.Barrier()) return last;
    if (off == 0) all_started();
    std::vector<const char*> in;
    switch (t.coll) {
      case Coll::kAllReduce:
      case Coll::kReduce:
        if (t.coll == Coll::kAllReduce || me == t.root) {
          for (int r = 0; r < n; ++r) in.push_back(slot(r));
          Reduce(t.recv + off, in, len / es, t.type, t.op, n);
        }
        break;
      case Coll::kReduceScatter:
        for (int r = 0; r < n; ++r) in.push_back(slot(r) + static_cast<size_t>(me) * sub);
        Reduce(t.recv + off, in, len / es, t.type, t.op, n);
        break;
      case Coll::kAllGather:
      case Coll::kGather:
        if (t.coll == Coll::kAllGather || me == t.root) {
          for (int r = 0; r < n; ++r) {
            memcpy(t.recv + static_cast<size_t>(r) * bytes + off, slot(r), len);
          }
        }
        break;
      case Coll::kAlltoAll:
        for (int r = 0; r < n; ++r) {
          memcpy(t.recv + static_cast<size_t>(r) * bytes + off,
                 slot(r) + static_cast<size_t>(me) * sub, len);
        }
        break;
      case Coll::kBroadcast:
        memmove(t.recv + off, slot(t.root), len);
        break;
      case Coll::kScatter:
        memmove(t.recv + off, slot(t.root) + static_cast<size_t>(me) * sub, len);
        break;
      default:
        break;
    }
  }
  return last;
}

// Send/recv ops of one group on one comm progress together, so paired sends and receives
// between two ranks cannot deadlock, as in NCCL's fused p2p kernel.
void RunP2P(const std::vector<Task>& ops) {
  struct Progress {
    size_t done = 0;
  };
  std::vector<Progress> prog(ops.size());
  uint64_t deadline = NowNs() + static_cast<uint64_t>(simgpu::GetConfig().nccl_timeout_s * 1e9);
  for (;;) {
    bool all = true, moved = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Task& t = ops[i];
      size_t bytes = t.count * TypeSize(t.type);
      if (prog[i].done >= bytes && !(bytes == 0 && prog[i].done == 0 && false)) continue;
      all = false;
      ncclComm& c = *t.comm;
      Channel* ch = t.coll == Coll::kSend ? c.Chan(c.rank, t.root) : c.Chan(t.root, c.rank);
      if (t.coll == Coll::kSend && ch->full.load(std::memory_order_acquire) == 0) {
        uint32_t len = static_cast<uint32_t>(std::min(kChanBytes, bytes - prog[i].done));
        memcpy(ch->data, t.send + prog[i].done, len);
        ch->len = len;
        ch->full.store(1, std::memory_order_release);
        prog[i].done += len;
        moved = true;
      } else if (t.coll == Coll::kRecv && ch->full.load(std::memory_order_acquire) == 1) {
        memcpy(t.recv + prog[i].done, ch->data, ch->len);
        prog[i].done += ch->len;
        ch->full.store(0, std::memory_order_release);
        moved = true;
      }
    }
    if (all) return;
    if (!moved) {
      if (NowNs() > deadline || ops[0].comm->sh->aborted.load()) {
        fprintf(stderr, "simgpu: NCCL send/recv timed out\n");
        return;
      }
      timespec ts{0, 20000};
      nanosleep(&ts, nullptr);
    }
  }
}

// Modelled link time of a collective after all ranks arrived (ring algorithm bytes).
uint64_t LinkNs(const Task& t) {
  const simgpu::Config& cfg = simgpu::GetConfig();
  double n = t.comm->nranks, s = static_cast<double>(t.count * TypeSize(t.type));
  double moved = 0;
  switch (t.coll) {
    case Coll::kAllReduce:
      moved = 2 * (n - 1) / n * s;
      break;
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAlltoAll:
    case Coll::kGather:
    case Coll::kScatter:
      moved = (n - 1) * s;
      break;
    default:
      moved = s;
      break;
  }
  if (n <= 1 && t.coll != Coll::kSend && t.coll != Coll::kRecv) moved = 0;
  return static_cast<uint64_t>(cfg.nccl_latency_us * 1e3 + moved / cfg.nccl_gbps);
}

struct Kernel {
  std::vector<Task> tasks;  // one collective, or a group's send/recv ops
  bool p2p;
};

// A collective ends its link time after the last rank's kernel started, on the devices'
// timelines: a host that wakes a device thread late (host time) does not stretch it, a rank that
// enqueued late (a straggler) does. Send/recv pairs exchange no start times: they end their link
// time after the transfer, as the host saw it.
uint64_t KernelBody(void* arg, uint64_t start_ns) {
  auto* k = static_cast<Kernel*>(arg);
  uint64_t end = 0;
  if (k->p2p) {
    RunP2P(k->tasks);
    uint64_t link = 0;
    for (const Task& t : k->tasks) link = std::max(link, LinkNs(t));
    end = std::max(start_ns, NowNs()) + link;
  } else {
    end = RunCollective(k->tasks[0], start_ns) + LinkNs(k->tasks[0]);
  }
  delete k;
  return end;
}

std::string KernelName(const Task& t, bool p2p) {
  std::string base = p2p ? "ncclDevKernel_SendRecv"
                         : std::string("ncclDevKernel_") + CollName(t.coll) + "_" + OpName(t.op) +
                               "_" + TypeName(t.type) + "_RING_LL";
  return "_Z" + std::to_string(base.size()) + base + "24ncclDevKernelArgsStorageILm4096EE";
}

ncclResult_t Launch(Kernel* k) {
  simgpu::Engine* e = Eng();
  const Task& t = k->tasks[0];
  // Real NCCL launches through the driver (cuLaunchKernelEx): a driver-domain API call.
  static const uint32_t kCbid = simgpu::DriverCbid("cuLaunchKernelEx");
  simgpu::ApiScope scope(e, 1, kCbid, "cuLaunchKernelEx");
  std::string name = KernelName(t, k->p2p);
  simgpu::Stream* s = e->Resolve(reinterpret_cast<simgpu::Stream*>(t.stream), false);
  if (s == nullptr) {
    delete k;
    return scope.Ret(ncclInvalidArgument);
  }
  uint32_t channels = static_cast<uint32_t>(std::min(2 * t.comm->nranks, 32));
  CUresult r = e->LaunchCustomKernel(s, name.c_str(), simgpu::Dim3{channels, 1, 1},
                                     simgpu::Dim3{512, 1, 1}, KernelBody, k);
  if (r != CUDA_SUCCESS) {
    delete k;
    return scope.Ret(ncclUnhandledCudaError);
  }
  return scope.Ret(ncclSuccess);
}

// ---------------------------------------------------------------- groups

// Communicators are never freed (queued collectives may still use them); kept reachable.
std::mutex g_comms_mu;
std::vector<ncclComm*>* g_comms = new std::vector<ncclComm*>();

thread_local int tls_group_depth = 0;
thread_local std::vector<Task> tls_group_tasks;
thread_local std::vector<ncclComm*> tls_pending_joins;

ncclResult_t FlushGroup() {
  std::vector<Task> tasks;
  tasks.swap(tls_group_tasks);
  ncclResult_t result = ncclSuccess;
  // Collectives in issue order; then, per (comm, stream), one fused send/recv kernel.
  std::vector<Task> p2p;
  for (const Task& t : tasks) {
    if (t.coll == Coll::kSend || t.coll == Coll::kRecv) {
      p2p.push_back(t);
      continue;
    }
    if (ncclResult_t r = Launch(new Kernel{{t}, false}); r != ncclSuccess) result = r;
  }
  while (!p2p.empty()) {
    auto* k = new Kernel{{}, true};
    std::vector<Task> rest;
    for (const Task& t : p2p) {
      bool same = t.comm == p2p[0].comm && t.stream == p2p[0].stream;
      (same ? k->tasks : rest).push_back(t);
    }
    p2p.swap(rest);
    if (ncclResult_t r = Launch(k); r != ncclSuccess) result = r;
  }
  return result;
}

ncclResult_t Enqueue(Task t) {
  if (t.comm == nullptr || t.comm->sh == nullptr) return ncclInvalidArgument;
  if (TypeSize(t.type) == 0) return ncclInvalidArgument;
  if (t.count > 0 && (t.recv == nullptr && t.coll != Coll::kSend)) return ncclInvalidArgument;
  if (Eng() == nullptr) return ncclUnhandledCudaError;
  tls_group_tasks.push_back(t);
  return tls_group_depth > 0 ? ncclSuccess : FlushGroup();
}

// ---------------------------------------------------------------- communicators

ncclResult_t Join(ncclComm* c) {
  if (!c->CtrlBarrier()) return ncclSystemError;
  return ncclSuccess;
}

ncclResult_t Attach(ncclComm** out, const std::string& name, int nranks, int rank, int dev,
                    bool defer_join) {
  if (out == nullptr || nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    return ncclInvalidArgument;
  }
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) return ncclSystemError;
  size_t bytes = SharedBytes(nranks);
  struct stat st;
  if (fstat(fd, &st) != 0 ||
      (static_cast<size_t>(st.st_size) < bytes && ftruncate(fd, static_cast<off_t>(bytes)) != 0)) {
    close(fd);
    return ncclSystemError;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ncclSystemError;
  auto* c = new ncclComm();
  c->name = name;
  c->rank = rank;
  c->nranks = nranks;
  c->dev = dev;
  c->sh = static_cast<Shared*>(p);
  c->map_bytes = bytes;
  {
    std::lock_guard<std::mutex> lk(g_comms_mu);
    g_comms->push_back(c);
  }
  // The last rank to arrive removes the name; the mappings stay valid.
  if (c->sh->joined.fetch_add(1) + 1 == static_cast<uint32_t>(nranks)) shm_unlink(name.c_str());
  *out = c;
  if (defer_join) {
    tls_pending_joins.push_back(c);
    return ncclSuccess;
  }
  return Join(c);
}

ncclResult_t InitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  simgpu::Engine* e = Eng();
  if (e == nullptr) return ncclUnhandledCudaError;
  id.internal[NCCL_UNIQUE_ID_BYTES - 1] = '\0';
  if (id.internal[0] != '/') return ncclInvalidArgument;
  // Inside a group the join completes at ncclGroupEnd (one thread may init several ranks).
  return Attach(comm, id.internal, nranks, rank, e->CurrentDevice(), tls_group_depth > 0);
}

}  // namespace

#define NCCL_EXPORT extern "C" __attribute__((visibility("default")))
// Declares the weak public alias of a strong pnccl* definition, as real NCCL does.
#define NCCL_WEAK(ret, fn, params) NCCL_EXPORT __attribute__((weak, alias("p" #fn))) ret fn params;

NCCL_EXPORT ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclGetVersion, (int* version))

NCCL_EXPORT const char* pncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}
NCCL_WEAK(const char*, ncclGetErrorString, (ncclResult_t r))

NCCL_EXPORT const char* pncclGetLastError(ncclComm_t) { return ""; }
NCCL_WEAK(const char*, ncclGetLastError, (ncclComm_t comm))

NCCL_EXPORT ncclResult_t pncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  static std::atomic<uint32_t> counter{0};
  std::random_device rd;
  memset(id->internal, 0, sizeof id->internal);
  snprintf(id->internal, sizeof id->internal, "/simgpu-nccl-%d-%u-%08x", static_cast<int>(getpid()),
           counter.fetch_add(1), rd());
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id))

NCCL_EXPORT ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                           int rank) {
  return InitRank(comm, nranks, id, rank);
}
NCCL_WEAK(ncclResult_t, ncclCommInitRank,
          (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank))

NCCL_EXPORT ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                 int rank, ncclConfig_t*) {
  return InitRank(comm, nranks, id, rank);
}
NCCL_WEAK(ncclResult_t, ncclCommInitRankConfig,
          (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config))

NCCL_EXPORT ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  simgpu::Engine* e = Eng();
  if (e == nullptr) return ncclUnhandledCudaError;
  if (comms == nullptr || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  pncclGetUniqueId(&id);
  for (int i = 0; i < ndev; ++i) {
    int dev = devlist ? devlist[i] : i;
    if (e->Device(dev) == nullptr) return ncclInvalidArgument;
    if (ncclResult_t r = Attach(&comms[i], id.internal, ndev, i, dev, true); r != ncclSuccess) {
      return r;
    }
  }
  std::vector<ncclComm*> joins;
  joins.swap(tls_pending_joins);
  // One thread holds every rank: arrive for each without waiting, then all have arrived.
  for (ncclComm* c : joins) {
    c->ctrl_epoch++;
    c->sh->ctrl_barrier.fetch_add(1);
  }
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclCommInitAll, (ncclComm_t * comms, int ndev, const int* devlist))

NCCL_EXPORT ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t*) {
  if (comm == nullptr || newcomm == nullptr) return ncclInvalidArgument;
  comm->sh->ctrl[comm->rank][0] = color;
  comm->sh->ctrl[comm->rank][1] = key;
  if (!comm->CtrlBarrier()) return ncclSystemError;
  std::vector<std::pair<int, int>> members;  // (key, old rank) of my color
  for (int r = 0; r < comm->nranks; ++r) {
    if (comm->sh->ctrl[r][0] == color) members.push_back({comm->sh->ctrl[r][1], r});
  }
  if (!comm->CtrlBarrier()) return ncclSystemError;  // everyone has read the table
  uint32_t seq = comm->split_seq++;
  *newcomm = nullptr;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == comm->rank) new_rank = static_cast<int>(i);
  }
  std::string name = comm->name + "-s" + std::to_string(seq) + "c" + std::to_string(color);
  return Attach(newcomm, name, static_cast<int>(members.size()), new_rank, comm->dev, false);
}
NCCL_WEAK(ncclResult_t, ncclCommSplit,
          (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config))

NCCL_EXPORT ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  return comm ? ncclSuccess : ncclInvalidArgument;
}
NCCL_WEAK(ncclResult_t, ncclCommFinalize, (ncclComm_t comm))

// The mapping is kept: collectives already queued on a stream may still use it.
NCCL_EXPORT ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  return comm ? ncclSuccess : ncclInvalidArgument;
}
NCCL_WEAK(ncclResult_t, ncclCommDestroy, (ncclComm_t comm))

NCCL_EXPORT ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  comm->sh->aborted.store(1);
  Futex(&comm->sh->barrier, FUTEX_WAKE, INT32_MAX, nullptr);
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclCommAbort, (ncclComm_t comm))

NCCL_EXPORT ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* err) {
  if (comm == nullptr || err == nullptr) return ncclInvalidArgument;
  *err = comm->failed ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* err))

NCCL_EXPORT ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count))

NCCL_EXPORT ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* dev) {
  if (comm == nullptr || dev == nullptr) return ncclInvalidArgument;
  *dev = comm->dev;
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* dev))

NCCL_EXPORT ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank))

NCCL_EXPORT ncclResult_t pncclGroupStart() {
  ++tls_group_depth;
  return ncclSuccess;
}
NCCL_WEAK(ncclResult_t, ncclGroupStart, ())

NCCL_EXPORT ncclResult_t pncclGroupEnd() {
  if (tls_group_depth == 0) return ncclInvalidUsage;
  if (--tls_group_depth > 0) return ncclSuccess;
  // Ranks initialised inside the group (one thread, several devices): arrive for all of them,
  // then wait for the peers.
  std::vector<ncclComm*> joins;
  joins.swap(tls_pending_joins);
  std::vector<uint32_t> targets;
  for (ncclComm* c : joins) {
    c->ctrl_epoch++;
    targets.push_back(c->ctrl_epoch * static_cast<uint32_t>(c->nranks));
    c->sh->ctrl_barrier.fetch_add(1);
    Futex(&c->sh->ctrl_barrier, FUTEX_WAKE, INT32_MAX, nullptr);
  }
  for (size_t i = 0; i < joins.size(); ++i) {
    Word* w = &joins[i]->sh->ctrl_barrier;
    for (uint32_t cur; static_cast<int32_t>((cur = w->load()) - targets[i]) < 0;) {
      timespec ts{0, 2000000};
      Futex(w, FUTEX_WAIT, cur, &ts);
    }
  }
  return FlushGroup();
}
NCCL_WEAK(ncclResult_t, ncclGroupEnd, ())

NCCL_EXPORT ncclResult_t pncclAllReduce(const void* send, void* recv, size_t count,
                                        ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream) {
  return Enqueue(Task{Coll::kAllReduce, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, op, 0, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclAllReduce,
          (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
           ncclComm_t comm, cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclReduce(const void* send, void* recv, size_t count,
                                     ncclDataType_t type, ncclRedOp_t op, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  return Enqueue(Task{Coll::kReduce, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, op, root, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclReduce,
          (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
           int root, ncclComm_t comm, cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclBroadcast(const void* send, void* recv, size_t count,
                                        ncclDataType_t type, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  return Enqueue(Task{Coll::kBroadcast, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, ncclSum, root, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclBroadcast,
          (const void* send, void* recv, size_t count, ncclDataType_t type, int root,
           ncclComm_t comm, cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t type, int root,
                                    ncclComm_t comm, cudaStream_t stream) {
  return pncclBroadcast(buff, buff, count, type, root, comm, stream);
}
NCCL_WEAK(ncclResult_t, ncclBcast,
          (void* buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
           cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclAllGather(const void* send, void* recv, size_t count,
                                        ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue(Task{Coll::kAllGather, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, ncclSum, 0, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclAllGather,
          (const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
           cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclReduceScatter(const void* send, void* recv, size_t count,
                                            ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  return Enqueue(Task{Coll::kReduceScatter, static_cast<const char*>(send),
                      static_cast<char*>(recv), count, type, op, 0, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclReduceScatter,
          (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
           ncclComm_t comm, cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclAlltoAll(const void* send, void* recv, size_t count,
                                       ncclDataType_t type, ncclComm_t comm, cudaStream_t stream) {
  return Enqueue(Task{Coll::kAlltoAll, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, ncclSum, 0, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclAlltoAll,
          (const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
           cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclGather(const void* send, void* recv, size_t count,
                                     ncclDataType_t type, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  return Enqueue(Task{Coll::kGather, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, ncclSum, root, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclGather,
          (const void* send, void* recv, size_t count, ncclDataType_t type, int root,
           ncclComm_t comm, cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclScatter(const void* send, void* recv, size_t count,
                                      ncclDataType_t type, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  return Enqueue(Task{Coll::kScatter, static_cast<const char*>(send), static_cast<char*>(recv),
                      count, type, ncclSum, root, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclScatter,
          (const void* send, void* recv, size_t count, ncclDataType_t type, int root,
           ncclComm_t comm, cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  if (comm && (peer < 0 || peer >= comm->nranks)) return ncclInvalidArgument;
  return Enqueue(Task{Coll::kSend, static_cast<const char*>(send), nullptr, count, type, ncclSum,
                      peer, comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclSend,
          (const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
           cudaStream_t stream))

NCCL_EXPORT ncclResult_t pncclRecv(void* recv, size_t count, ncclDataType_t type, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  if (comm && (peer < 0 || peer >= comm->nranks)) return ncclInvalidArgument;
  return Enqueue(Task{Coll::kRecv, nullptr, static_cast<char*>(recv), count, type, ncclSum, peer,
                      comm, stream});
}
NCCL_WEAK(ncclResult_t, ncclRecv,
          (void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
           cudaStream_t stream))
