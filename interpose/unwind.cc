// Stack walking for CaptureStack: a cached DWARF CFI walk (x86-64), libgcc's unwinder elsewhere.
//
// Why not libunwind: its unw_backtrace validates every address it reads by write(2)ing one byte
// of it into a pipe it opens in the program's descriptor table (libunwind >= 1.7), so a traced
// program found fds 3 and 4 taken, lost bytes when it later used those numbers itself, and read a
// zero byte from a closed stdin. Why not libgcc's _Unwind_Backtrace alone: it interprets each
// frame's CFI program on every call (2.5 us for 24 frames on the build VMs), and reads whatever
// address a wrong rule yields. This walk computes a frame rule once per pc, keeps it in a
// lock-free cache, and checks every stack read against the bounds of the stack it walks.
#include "interpose/unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/ucontext.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#if defined(__x86_64__) && defined(DLFO_EH_SEGMENT_TYPE)
#define IDLESCOPE_CFI_WALK 1
#else
#define IDLESCOPE_CFI_WALK 0
#endif

// The main thread's stack top as the kernel set it up (ld.so exports it; glibc's own
// pthread_getattr_np uses it for the main thread).
extern "C" void* __libc_stack_end;

namespace idlescope::unwind {

// What a thread's walk cache holds: its last kCachedWalks walks of at most kWalkFrames frames
// and kWalkLoads words read (CaptureStack asks for its depth, 24 by default, and up to 16 more;
// a frame reads one or two words).
constexpr int kCachedWalks = 2;
constexpr int kWalkFrames = 64;
constexpr int kWalkLoads = 128;

// One recorded walk (unwind.h, WalkCache): its start, the words it read and its result.
struct CachedWalk {
  uintptr_t sp = 0, bp = 0, hi = 0;  // sp 0: empty
  // The walk read the rbp it began with (a frame whose CFA is on rbp before any frame restored
  // rbp): only then must a repeat begin with the same. Otherwise rbp is whatever the callers left
  // in it (without frame pointers, often a loop's counter) and does not count.
  bool bp_read = false;
  int max = 0;  // what it was asked for
  int n = 0;    // what it gave
  int loads = 0;
  uintptr_t at[kWalkLoads];
  uintptr_t value[kWalkLoads];
  uintptr_t pcs[kWalkFrames];
};
struct WalkCache {
  bool busy;  // a walk on this thread uses it now (a signal handler's walk must not)
  uint32_t next;
  CachedWalk walks[kCachedWalks];
};

size_t WalkCacheBytes() { return sizeof(WalkCache); }

namespace {

// ---------------------------------------------------------------------------------------------
// libgcc's unwinder: where the CFI walk is not available.

struct GccTrace {
  uintptr_t* pcs;
  int n, max;
};

_Unwind_Reason_Code GccStep(struct _Unwind_Context* ctx, void* arg) {
  GccTrace* t = static_cast<GccTrace*>(arg);
  if (t->n >= t->max) return _URC_END_OF_STACK;
  uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  t->pcs[t->n++] = ip;
  return _URC_NO_REASON;
}

int GccBacktrace(uintptr_t* pcs, int max) {
  GccTrace t{pcs, 0, max};
  _Unwind_Backtrace(GccStep, &t);
  return t.n;
}

std::atomic<uint64_t> g_rules_computed{0};
std::atomic<uint64_t> g_walks_repeated{0};

#if IDLESCOPE_CFI_WALK

using FindObjectFn = int (*)(void*, struct dl_find_object*);
// glibc >= 2.35: the loaded object of an address and its PT_GNU_EH_FRAME, lock-free and
// async-signal-safe. Found with dlsym so that the library still loads on an older glibc.
FindObjectFn g_find_object = nullptr;

// ---------------------------------------------------------------------------------------------
// Frame rules. A rule says, for one pc, where the frame's CFA (the caller's sp) is, where the
// return address and the caller's rbp were saved relative to it. Packed into 64 bits for the
// cache.

enum Kind : uint64_t {
  kEmpty = 0,      // no rule (cache slot never filled)
  kFrame = 1,      // a normal frame
  kOutermost = 2,  // return address undefined: the thread's first frame (_start, clone)
  kStop = 3,       // no CFI for this pc, or CFI this walk does not follow
  kSignal = 4,     // the kernel's signal return trampoline: the interrupted context is above it
};
// Where the caller's rbp is: unchanged, saved at CFA + offset, unknown, or saved at rbp + offset
// (the frames that realign their stack, below).
enum RbpRule : uint64_t { kRbpSame = 0, kRbpSaved = 1, kRbpUndefined = 2, kRbpAtRbp = 3 };

struct Rule {
  Kind kind = kStop;
  bool cfa_on_rbp = false;
  // CFA = *(rbp + cfa_offset): a function that realigns its stack (GCC's DRAP: AVX kernels,
  // -mstackrealign; 1.3% of libtorch_cpu's FDEs) keeps the incoming sp in memory below rbp.
  bool cfa_deref = false;
  RbpRule rbp = kRbpSame;
  int8_t ra_offset = -8;
  int16_t rbp_offset = 0;
  int32_t cfa_offset = 0;
};

uint64_t Pack(const Rule& r) {
  return static_cast<uint64_t>(r.kind) | (r.cfa_on_rbp ? 8u : 0u) |
         (static_cast<uint64_t>(r.rbp) << 4) | (r.cfa_deref ? 64u : 0u) |
         (static_cast<uint64_t>(static_cast<uint8_t>(r.ra_offset)) << 8) |
         (static_cast<uint64_t>(static_cast<uint16_t>(r.rbp_offset)) << 16) |
         (static_cast<uint64_t>(static_cast<uint32_t>(r.cfa_offset)) << 32);
}

Rule Unpack(uint64_t v) {
  Rule r;
  r.kind = static_cast<Kind>(v & 7);
  r.cfa_on_rbp = (v & 8) != 0;
  r.rbp = static_cast<RbpRule>((v >> 4) & 3);
  r.cfa_deref = (v & 64) != 0;
  r.ra_offset = static_cast<int8_t>(static_cast<uint8_t>(v >> 8));
  r.rbp_offset = static_cast<int16_t>(static_cast<uint16_t>(v >> 16));
  r.cfa_offset = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
  return r;
}

// ---------------------------------------------------------------------------------------------
// The cache: direct-mapped by pc, lock-free. A slot holds (pc ^ rule, rule); a reader accepts it
// when the xor gives its pc back, so a slot torn by two concurrent writers is (almost surely) a
// miss, and at worst a wrong rule, which the bounds checks of the walk make harmless.

struct Slot {
  std::atomic<uint64_t> check;
  std::atomic<uint64_t> rule;
};

// The table starts small and grows, 4x at a time, once the rules put in the current table pass a
// quarter of its slots. A table of 64 Ki rules (1 MiB) from the start had a Python start's ~150 pcs
// scattered by the hash over ~74 of its pages, each faulted twice (a read maps the zero page, the
// first write copies it): ~150 page faults per process. A table is replaced, never unmapped (a
// walk on another thread, or in a signal handler, may still read it); its rules are computed
// again as walks meet their pcs. The word holds the table's address and, in its low bits (the
// table is page-aligned), the number of bits of its index.
constexpr uint32_t kFirstCacheBits = 10;  // 1 Ki rules, 16 KiB
constexpr uint32_t kMaxCacheBits = 16;    // 64 Ki rules, 1 MiB of address space touched on demand
std::atomic<uint64_t> g_cache{0};
std::atomic<uint32_t> g_cache_fills{0};  // rules put in the current table, about
std::atomic<bool> g_cache_growing{false};

uint64_t MapCacheTable(uint32_t bits) {
  void* table = mmap(nullptr, sizeof(Slot) << bits, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return table == MAP_FAILED ? 0 : reinterpret_cast<uint64_t>(table) | bits;
}

inline Slot& SlotOf(uint64_t cache, uintptr_t pc) {
  const uint32_t bits = static_cast<uint32_t>(cache & 63);
  Slot* table = reinterpret_cast<Slot*>(cache & ~uint64_t{4095});
  return table[(pc * 0x9E3779B97F4A7C15ull) >> (64 - bits)];
}

// One more rule in the table `cache`: the table that passed a quarter full is replaced by one 4x
// larger (by one thread; mmap is async-signal-safe).
void CountCacheFill(uint64_t cache) {
  const uint32_t bits = static_cast<uint32_t>(cache & 63);
  if (bits >= kMaxCacheBits ||
      g_cache_fills.fetch_add(1, std::memory_order_relaxed) + 1 < (1u << bits) / 4 ||
      g_cache_growing.exchange(true, std::memory_order_acquire)) {
    return;
  }
  if (g_cache.load(std::memory_order_relaxed) == cache) {
    if (uint64_t bigger = MapCacheTable(std::min(bits + 2, kMaxCacheBits)); bigger != 0) {
      g_cache_fills.store(0, std::memory_order_relaxed);
      g_cache.store(bigger, std::memory_order_release);
    }
  }
  g_cache_growing.store(false, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
// Reading .eh_frame_hdr and .eh_frame (DWARF 4 section 6.4, LSB "Exception Frames"), bounded by
// the object's mapping.

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool Has(size_t n) {
    if (!ok || static_cast<size_t>(end - p) < n) ok = false;
    return ok;
  }
  template <typename T>
  T Fixed() {
    T v{};
    if (!Has(sizeof(T))) return v;
    memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (!Has(1)) return 0;
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  int64_t Sleb() {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b = 0x80;
    while (shift < 64 && (b & 0x80) != 0) {
      if (!Has(1)) return 0;
      b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
    }
    if ((b & 0x80) != 0) {
      ok = false;
      return 0;
    }
    if (shift < 64 && (b & 0x40) != 0) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  // A pointer in DW_EH_PE_* encoding. pcrel is relative to the field's own address, datarel to
  // `data_base` (.eh_frame_hdr's start); indirect, textrel, funcrel and aligned are not used by
  // the fields this walk reads and end it.
  uint64_t Encoded(uint8_t enc, uintptr_t data_base = 0) {
    if (enc == 0xff) return 0;  // DW_EH_PE_omit
    uintptr_t field = reinterpret_cast<uintptr_t>(p);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00:  // absptr
      case 0x04:  // udata8
        v = Fixed<uint64_t>();
        break;
      case 0x01:
        v = Uleb();
        break;
      case 0x02:
        v = Fixed<uint16_t>();
        break;
      case 0x03:
        v = Fixed<uint32_t>();
        break;
      case 0x09:
        v = static_cast<uint64_t>(Sleb());
        break;
      case 0x0a:
        v = static_cast<uint64_t>(static_cast<int64_t>(Fixed<int16_t>()));
        break;
      case 0x0b:
        v = static_cast<uint64_t>(static_cast<int64_t>(Fixed<int32_t>()));
        break;
      case 0x0c:
        v = Fixed<uint64_t>();
        break;
      default:
        ok = false;
        return 0;
    }
    switch (enc & 0xf0) {
      case 0x00:
        break;
      case 0x10:
        v += field;
        break;
      case 0x30:
        if (data_base == 0) ok = false;
        v += data_base;
        break;
      default:
        ok = false;
    }
    return v;
  }
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint8_t fde_enc = 0;
  bool has_z = false;
  const uint8_t* insns = nullptr;
  const uint8_t* insns_end = nullptr;
};

bool ParseCie(const uint8_t* at, const uint8_t* lo, const uint8_t* hi, Cie* cie) {
  if (at < lo || at >= hi) return false;
  Cursor c{at, hi};
  uint32_t length = c.Fixed<uint32_t>();
  if (!c.ok || length == 0 || length == 0xffffffffu || !c.Has(length)) return false;
  const uint8_t* end = c.p + length;
  c.end = end;
  if (c.Fixed<uint32_t>() != 0) return false;  // CIE id in .eh_frame
  uint8_t version = c.Fixed<uint8_t>();
  if (version != 1 && version != 3) return false;
  const char* aug = reinterpret_cast<const char*>(c.p);
  size_t aug_len = strnlen(aug, static_cast<size_t>(end - c.p));
  if (aug_len == static_cast<size_t>(end - c.p)) return false;
  c.p += aug_len + 1;
  if (aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') return false;  // pre-GCC 3 layout
  cie->code_align = c.Uleb();
  cie->data_align = c.Sleb();
  uint64_t ra_reg = version == 1 ? c.Fixed<uint8_t>() : c.Uleb();
  if (ra_reg != 16) return false;  // x86-64: the return address column is 16 (psABI)
  if (aug_len > 0 && aug[0] == 'z') {
    cie->has_z = true;
    uint64_t data_len = c.Uleb();
    if (!c.Has(data_len)) return false;
    const uint8_t* data_end = c.p + data_len;
    for (size_t i = 1; i < aug_len && c.ok; ++i) {
      if (aug[i] == 'R') {
        cie->fde_enc = c.Fixed<uint8_t>();
      } else if (aug[i] == 'L') {
        c.Fixed<uint8_t>();  // LSDA encoding: the FDE's augmentation data is skipped whole
      } else if (aug[i] == 'P') {
        uint8_t enc = c.Fixed<uint8_t>();
        c.Encoded(enc & 0x0f);  // the personality routine: skipped, never dereferenced
      } else if (aug[i] == 'S' || aug[i] == 'B' || aug[i] == 'G') {
        // signal frame (handled by kSignal), AArch64 B key, MTE tagged frame: no data
      } else {
        break;  // unknown: the data length still tells where the instructions start
      }
    }
    c.p = data_end;
  }
  if (!c.ok) return false;
  cie->insns = c.p;
  cie->insns_end = end;
  return true;
}

// The CFA and the rules of the two registers the walk restores, as a CFI program sets them.
struct RegRule {
  // kAtRbp: saved at rbp + offset (DW_CFA_expression DW_OP_breg6 offset).
  enum How : uint8_t { kUnspecified, kOffset, kUndefined, kAtRbp, kOther } how = kUnspecified;
  int64_t offset = 0;
};
struct CfaState {
  uint64_t cfa_reg = 7;  // DWARF register numbers (psABI): 6 = rbp, 7 = rsp, 16 = return address
  int64_t cfa_offset = 8;
  bool cfa_expression = false;  // an expression this walk does not follow
  bool cfa_deref = false;       // CFA = *(cfa_reg + cfa_offset)
  RegRule rbp, ra;
};

constexpr uint8_t kOpBreg6 = 0x76, kOpDeref = 0x06;  // DW_OP_breg6 (rbp + sleb), DW_OP_deref

// The offset of a DW_OP_breg6 expression [breg6 off] (deref = false) or [breg6 off; deref].
bool RbpExpression(const uint8_t* p, uint64_t len, bool deref, int64_t* offset) {
  Cursor e{p, p + len};
  if (e.Fixed<uint8_t>() != kOpBreg6) return false;
  *offset = e.Sleb();
  if (deref && e.Fixed<uint8_t>() != kOpDeref) return false;
  return e.ok && e.p == e.end;
}

constexpr uint64_t kDwarfRbp = 6, kDwarfRa = 16;

RegRule* Track(CfaState* s, uint64_t reg) {
  if (reg == kDwarfRbp) return &s->rbp;
  if (reg == kDwarfRa) return &s->ra;
  return nullptr;
}

// DW_CFA_restore: the register's rule as the CIE's program left it.
void Restore(CfaState* s, const CfaState& initial, uint64_t reg) {
  if (reg == kDwarfRbp) s->rbp = initial.rbp;
  if (reg == kDwarfRa) s->ra = initial.ra;
}

// Runs the CFI program [p, end) from `loc` until the instruction that would move past `target`.
// `initial` is the state after the CIE's program (DW_CFA_restore). False on what it cannot follow.
bool RunCfi(const uint8_t* p, const uint8_t* end, uint64_t loc, uint64_t target, const Cie& cie,
            const CfaState& initial, CfaState* s) {
  constexpr int kMaxRemembered = 16;
  CfaState remembered[kMaxRemembered];
  int depth = 0;
  Cursor c{p, end};
  auto set = [&](uint64_t reg, RegRule::How how, int64_t offset) {
    if (RegRule* r = Track(s, reg)) *r = {how, offset};
  };
  while (c.ok && c.p < c.end) {
    uint8_t op = c.Fixed<uint8_t>();
    uint64_t advance = 0;
    switch (op & 0xc0) {
      case 0x40:
        advance = (op & 0x3f) * cie.code_align;
        break;
      case 0x80:
        set(op & 0x3f, RegRule::kOffset, static_cast<int64_t>(c.Uleb()) * cie.data_align);
        continue;
      case 0xc0:
        Restore(s, initial, op & 0x3f);
        continue;
      default:
        break;
    }
    if ((op & 0xc0) == 0) {
      switch (op) {
        case 0x00:  // nop
          continue;
        case 0x01: {  // set_loc
          uint64_t to = c.Encoded(cie.fde_enc);
          if (to > target) return c.ok;
          loc = to;
          continue;
        }
        case 0x02:
          advance = c.Fixed<uint8_t>() * cie.code_align;
          break;
        case 0x03:
          advance = c.Fixed<uint16_t>() * cie.code_align;
          break;
        case 0x04:
          advance = c.Fixed<uint32_t>() * cie.code_align;
          break;
        case 0x05: {  // offset_extended
          uint64_t reg = c.Uleb();
          set(reg, RegRule::kOffset, static_cast<int64_t>(c.Uleb()) * cie.data_align);
          continue;
        }
        case 0x06:  // restore_extended
          Restore(s, initial, c.Uleb());
          continue;
        case 0x07:  // undefined
          set(c.Uleb(), RegRule::kUndefined, 0);
          continue;
        case 0x08:  // same_value
          set(c.Uleb(), RegRule::kUnspecified, 0);
          continue;
        case 0x09: {  // register
          uint64_t reg = c.Uleb();
          c.Uleb();
          set(reg, RegRule::kOther, 0);
          continue;
        }
        case 0x0a:  // remember_state
          if (depth == kMaxRemembered) return false;
          remembered[depth++] = *s;
          continue;
        case 0x0b: {  // restore_state: the CFA rule is part of the state (DWARF 5 fixed it there)
          if (depth == 0) return false;
          *s = remembered[--depth];
          continue;
        }
        case 0x0c:  // def_cfa
          s->cfa_reg = c.Uleb();
          s->cfa_offset = static_cast<int64_t>(c.Uleb());
          s->cfa_expression = s->cfa_deref = false;
          continue;
        case 0x0d:  // def_cfa_register
          s->cfa_reg = c.Uleb();
          s->cfa_expression = s->cfa_deref = false;
          continue;
        case 0x0e:  // def_cfa_offset
          s->cfa_offset = static_cast<int64_t>(c.Uleb());
          continue;
        case 0x0f: {  // def_cfa_expression (realigned frames; PLT stubs, signal trampolines)
          uint64_t len = c.Uleb();
          if (!c.Has(len)) return false;
          int64_t offset = 0;
          bool drap = RbpExpression(c.p, len, /*deref=*/true, &offset);
          c.p += len;
          s->cfa_expression = !drap;
          s->cfa_deref = drap;
          s->cfa_reg = kDwarfRbp;
          s->cfa_offset = offset;
          continue;
        }
        case 0x10: {  // expression
          uint64_t reg = c.Uleb();
          uint64_t len = c.Uleb();
          if (!c.Has(len)) return false;
          int64_t offset = 0;
          bool at_rbp = RbpExpression(c.p, len, /*deref=*/false, &offset);
          c.p += len;
          set(reg, at_rbp ? RegRule::kAtRbp : RegRule::kOther, offset);
          continue;
        }
        case 0x16: {  // val_expression
          uint64_t reg = c.Uleb();
          uint64_t len = c.Uleb();
          if (!c.Has(len)) return false;
          c.p += len;
          set(reg, RegRule::kOther, 0);
          continue;
        }
        case 0x11: {  // offset_extended_sf
          uint64_t reg = c.Uleb();
          set(reg, RegRule::kOffset, c.Sleb() * cie.data_align);
          continue;
        }
        case 0x12:  // def_cfa_sf
          s->cfa_reg = c.Uleb();
          s->cfa_offset = c.Sleb() * cie.data_align;
          s->cfa_expression = s->cfa_deref = false;
          continue;
        case 0x13:  // def_cfa_offset_sf
          s->cfa_offset = c.Sleb() * cie.data_align;
          continue;
        case 0x14:    // val_offset
        case 0x15: {  // val_offset_sf
          uint64_t reg = c.Uleb();
          if (op == 0x14) {
            c.Uleb();
          } else {
            c.Sleb();
          }
          set(reg, RegRule::kOther, 0);
          continue;
        }
        case 0x2e:  // GNU_args_size
          c.Uleb();
          continue;
        case 0x2f: {  // GNU_negative_offset_extended
          uint64_t reg = c.Uleb();
          set(reg, RegRule::kOffset, -static_cast<int64_t>(c.Uleb()) * cie.data_align);
          continue;
        }
        default:
          return false;
      }
    }
    if (loc + advance > target) return c.ok;
    loc += advance;
  }
  return c.ok;
}

// glibc's __restore_rt (x86-64): mov $SYS_rt_sigreturn, %rax; syscall.
constexpr uint8_t kSigreturn[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

// The rule for `pc` (a return address - 1, or an interrupted instruction) from its object's CFI.
Rule ComputeRule(uintptr_t pc) {
  g_rules_computed.fetch_add(1, std::memory_order_relaxed);
  Rule stop;
  struct dl_find_object object;
  if (g_find_object(reinterpret_cast<void*>(pc), &object) != 0 || object.dlfo_eh_frame == nullptr)
    return stop;
  const uint8_t* lo = static_cast<const uint8_t*>(object.dlfo_map_start);
  const uint8_t* hi = static_cast<const uint8_t*>(object.dlfo_map_end);
  const uint8_t* hdr = static_cast<const uint8_t*>(object.dlfo_eh_frame);
  if (hdr < lo || hdr >= hi) return stop;
  // .eh_frame_hdr: version 1, three encodings, eh_frame_ptr, fde_count, then a table sorted by
  // initial location, (location, FDE address) pairs as datarel sdata4 (what every linker writes).
  Cursor c{hdr, hi};
  uint8_t version = c.Fixed<uint8_t>();
  uint8_t frame_ptr_enc = c.Fixed<uint8_t>();
  uint8_t count_enc = c.Fixed<uint8_t>();
  uint8_t table_enc = c.Fixed<uint8_t>();
  if (version != 1 || table_enc != 0x3b) return stop;
  uintptr_t base = reinterpret_cast<uintptr_t>(hdr);
  c.Encoded(frame_ptr_enc, base);
  uint64_t count = c.Encoded(count_enc, base);
  if (!c.ok || count == 0 || count > static_cast<uint64_t>(hi - c.p) / 8) return stop;
  const uint8_t* table = c.p;
  auto location = [&](uint64_t i) {
    int32_t v;
    memcpy(&v, table + i * 8, 4);
    return base + static_cast<intptr_t>(v);
  };
  if (pc < location(0)) return stop;
  uint64_t left = 0, right = count;  // the last entry whose location <= pc is in [left, right)
  while (right - left > 1) {
    uint64_t mid = left + (right - left) / 2;
    if (location(mid) <= pc) {
      left = mid;
    } else {
      right = mid;
    }
  }
  int32_t fde_rel;
  memcpy(&fde_rel, table + left * 8 + 4, 4);
  const uint8_t* fde = hdr + fde_rel;
  if (fde < lo || fde >= hi) return stop;

  Cursor f{fde, hi};
  uint32_t length = f.Fixed<uint32_t>();
  if (!f.ok || length == 0 || length == 0xffffffffu || !f.Has(length)) return stop;
  const uint8_t* end = f.p + length;
  f.end = end;
  const uint8_t* cie_field = f.p;
  uint32_t cie_offset = f.Fixed<uint32_t>();
  if (!f.ok || cie_offset == 0) return stop;  // 0 would be a CIE, not an FDE
  Cie cie;
  if (!ParseCie(cie_field - cie_offset, lo, hi, &cie)) return stop;
  uint64_t pc_begin = f.Encoded(cie.fde_enc);
  uint64_t pc_range = f.Encoded(cie.fde_enc & 0x0f);
  if (!f.ok || pc < pc_begin || pc - pc_begin >= pc_range) return stop;
  if (cie.has_z) {
    uint64_t aug = f.Uleb();
    if (!f.Has(aug)) return stop;
    f.p += aug;
  }

  CfaState initial;
  if (!RunCfi(cie.insns, cie.insns_end, pc_begin, ~uint64_t{0}, cie, initial, &initial)) {
    return stop;
  }
  CfaState state = initial;
  if (!RunCfi(f.p, end, pc_begin, pc, cie, initial, &state)) return stop;

  Rule r;
  if (state.cfa_expression) {
    // The one expression-CFA frame worth following: the signal return trampoline, whose FDE
    // starts at the nop before it so that a return-address - 1 lookup finds it.
    if (pc + 1 >= pc_begin && pc + 1 - pc_begin + sizeof(kSigreturn) <= pc_range &&
        memcmp(reinterpret_cast<const void*>(pc + 1), kSigreturn, sizeof(kSigreturn)) == 0) {
      r.kind = kSignal;
    }
    return r;
  }
  if (state.ra.how == RegRule::kUndefined) {
    r.kind = kOutermost;
    return r;
  }
  if ((state.cfa_reg != 7 && state.cfa_reg != kDwarfRbp) || state.ra.how != RegRule::kOffset ||
      state.ra.offset < -128 || state.ra.offset > 127 || state.cfa_offset < INT32_MIN ||
      state.cfa_offset > INT32_MAX) {
    return r;
  }
  r.cfa_on_rbp = state.cfa_reg == kDwarfRbp;
  r.cfa_deref = state.cfa_deref;
  r.cfa_offset = static_cast<int32_t>(state.cfa_offset);
  r.ra_offset = static_cast<int8_t>(state.ra.offset);
  bool rbp_offset_fits = state.rbp.offset >= INT16_MIN && state.rbp.offset <= INT16_MAX;
  if (state.rbp.how == RegRule::kOffset && rbp_offset_fits) {
    r.rbp = kRbpSaved;
    r.rbp_offset = static_cast<int16_t>(state.rbp.offset);
  } else if (state.rbp.how == RegRule::kAtRbp && rbp_offset_fits) {
    r.rbp = kRbpAtRbp;
    r.rbp_offset = static_cast<int16_t>(state.rbp.offset);
  } else if (state.rbp.how != RegRule::kUnspecified) {
    r.rbp = kRbpUndefined;  // restored some way this walk does not follow: unknown from here
  }
  r.kind = kFrame;
  return r;
}

inline Rule RuleFor(uintptr_t pc) {
  const uint64_t cache = g_cache.load(std::memory_order_acquire);
  Slot& s = SlotOf(cache, pc);
  uint64_t rule = s.rule.load(std::memory_order_relaxed);
  uint64_t check = s.check.load(std::memory_order_relaxed);
  if ((check ^ rule) == pc && (rule & 7) != kEmpty) return Unpack(rule);
  Rule r = ComputeRule(pc);
  uint64_t packed = Pack(r);
  s.rule.store(packed, std::memory_order_relaxed);
  s.check.store(pc ^ packed, std::memory_order_relaxed);
  CountCacheFill(cache);
  return r;
}

// [sp, *hi) is the mapped part of the stack `sp` is on: up to the thread's TCB for a thread
// glibc created (its descriptor sits at the top of the stack block, TLS_TCB_AT_TP on x86-64), up
// to __libc_stack_end's page for the main thread. Any other stack (a coroutine's, a signal
// handler's alternate one) is not walked: its extent is unknown.
bool StackBounds(uintptr_t sp, uintptr_t* hi) {
  constexpr uintptr_t kMaxStack = uintptr_t{1} << 30;
  uintptr_t self = static_cast<uintptr_t>(pthread_self());
  if (sp < self && self - sp <= kMaxStack) {
    *hi = self;
    return true;
  }
  uintptr_t top = reinterpret_cast<uintptr_t>(__libc_stack_end);
  if (top != 0 && sp < top && top - sp <= kMaxStack) {
    *hi = (top + 4095) & ~uintptr_t{4095};
    return true;
  }
  return false;
}

// A walk of `cache` that fits what is asked: it began at (sp, bp, hi), every word it read is
// unchanged, and it gave what `max` asks (it stopped by itself, or was asked for as many or more).
// Not instrumented by ASan: the words are other frames' slots, read on purpose.
__attribute__((no_sanitize("address"))) int Repeat(const WalkCache& cache, uintptr_t sp,
                                                   uintptr_t bp, uintptr_t hi, uintptr_t* pcs,
                                                   int max) {
  for (const CachedWalk& w : cache.walks) {
    if (w.sp != sp || w.hi != hi || w.sp == 0 || (w.bp_read && w.bp != bp)) continue;
    if (w.max < max && w.n >= w.max) continue;  // cut short then, may go on now
    bool same = true;
    for (int i = 0; i < w.loads && same; ++i) {
      same = *reinterpret_cast<const volatile uintptr_t*>(w.at[i]) == w.value[i];
    }
    if (!same) continue;
    const int n = w.n < max ? w.n : max;
    memcpy(pcs, w.pcs, sizeof(uintptr_t) * static_cast<size_t>(n));
    return n;
  }
  return -1;
}

// Not instrumented by ASan: the walk reads other frames' return-address and rbp slots on purpose.
__attribute__((noinline, no_sanitize("address"))) int CfiBacktrace(uintptr_t* pcs, int max,
                                                                   WalkCache* cache) {
  uintptr_t pc, sp, bp;
  // This function's own pc, sp and rbp at one point: the walk starts with this frame's rule.
  asm volatile(
      "lea 0(%%rip), %0\n\t"
      "mov %%rsp, %1\n\t"
      "mov %%rbp, %2"
      : "=r"(pc), "=r"(sp), "=r"(bp));
  uintptr_t lo = sp, hi;
  if (!StackBounds(sp, &hi)) return 0;
  const uintptr_t start_sp = sp, start_bp = bp;
  // A walk that repeats one of the thread's last ones; else this one is recorded (unless a walk
  // of this thread that a signal interrupted is using the cache).
  CachedWalk* record = nullptr;
  const bool owns_cache = cache != nullptr && !cache->busy;  // false: nested in a walk using it
  if (owns_cache) {
    cache->busy = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const int n = Repeat(*cache, sp, bp, hi, pcs, max);
    if (n >= 0) {
      g_walks_repeated.fetch_add(1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
      cache->busy = false;
      return n;
    }
    if (max <= kWalkFrames) {
      record = &cache->walks[cache->next++ % kCachedWalks];
      record->sp = 0;  // empty until complete
      record->loads = 0;
    }
  }
  auto read = [&](uintptr_t at, uintptr_t* v) {
    if (at < lo || at > hi - sizeof(uintptr_t) || (at & 7) != 0) return false;
    *v = *reinterpret_cast<const uintptr_t*>(at);
    return true;
  };
  // A word the walk's result depends on, for a repeat to check.
  auto note = [&](uintptr_t at, uintptr_t v) {
    if (record == nullptr) return;
    if (record->loads == kWalkLoads) {
      record = nullptr;  // too many words to check: not kept
      return;
    }
    record->at[record->loads] = at;
    record->value[record->loads++] = v;
  };
  auto load = [&](uintptr_t at, uintptr_t* v) {
    if (!read(at, v)) return false;
    note(at, *v);
    return true;
  };
  bool exact = true;  // pc is where execution is (not a return address): look it up as is
  bool bp_known = true;
  // Where bp came from: the walk's start (bp_start), or the stack word at bp_at, noted only once a
  // frame uses bp (a saved rbp that no frame uses, often a caller's loop counter without frame
  // pointers, must not keep a repeat from matching).
  bool bp_start = true;
  bool bp_start_read = false;  // CachedWalk::bp_read
  uintptr_t bp_at = 0;
  int n = 0;
  while (n < max) {
    Rule r = RuleFor(exact ? pc : pc - 1);
    if (r.kind == kSignal) {
      // sp is the handler's CFA: the ucontext the kernel pushed (struct rt_sigframe after
      // pretcode). The interrupted code's registers are in its mcontext.
      constexpr uintptr_t kGregs = offsetof(ucontext_t, uc_mcontext.gregs);
      uintptr_t rip, rsp, rbp;
      if (!load(sp + kGregs + REG_RIP * 8, &rip) || !load(sp + kGregs + REG_RSP * 8, &rsp) ||
          !load(sp + kGregs + REG_RBP * 8, &rbp)) {
        break;
      }
      if (rip == 0) break;
      record = nullptr;             // the interrupted stack may be another one next time: not kept
      if (rsp < lo || rsp >= hi) {  // the handler ran on an alternate stack
        if (!StackBounds(rsp, &hi)) break;
        lo = rsp;
      }
      pc = rip;
      sp = rsp;
      bp = rbp;
      bp_known = true;
      bp_start = false;
      bp_at = 0;
      exact = true;
      pcs[n++] = rip + 1;  // callers treat entries as return addresses (they look up pc - 1)
      continue;
    }
    if (r.kind != kFrame || ((r.cfa_on_rbp || r.rbp == kRbpAtRbp) && !bp_known)) break;
    if (r.cfa_on_rbp || r.rbp == kRbpAtRbp) {  // this frame uses bp
      bp_start_read = bp_start_read || bp_start;
      if (bp_at != 0) note(bp_at, bp);
      bp_at = 0;
    }
    uintptr_t cfa = (r.cfa_on_rbp ? bp : sp) + static_cast<intptr_t>(r.cfa_offset);
    if (r.cfa_deref && !load(cfa, &cfa)) break;
    if (cfa <= sp || cfa > hi) break;
    uintptr_t ra;
    if (!load(cfa + r.ra_offset, &ra) || ra == 0) break;
    if (r.rbp == kRbpSaved || r.rbp == kRbpAtRbp) {
      const uintptr_t at = (r.rbp == kRbpSaved ? cfa : bp) + static_cast<intptr_t>(r.rbp_offset);
      if (!read(at, &bp)) break;
      bp_at = at;
      bp_start = false;
    } else if (r.rbp == kRbpUndefined) {
      bp_known = false;
    }
    sp = cfa;
    pc = ra;
    exact = false;
    pcs[n++] = ra;
  }
  if (owns_cache) {
    if (record != nullptr) {
      memcpy(record->pcs, pcs, sizeof(uintptr_t) * static_cast<size_t>(n));
      record->max = max;
      record->n = n;
      record->hi = hi;
      record->bp = start_bp;
      record->bp_read = bp_start_read;
      record->sp = start_sp;  // complete
    }
    std::atomic_signal_fence(std::memory_order_seq_cst);
    cache->busy = false;
  }
  return n;
}

#endif  // IDLESCOPE_CFI_WALK

std::atomic<bool> g_initialized{false};
bool g_cfi = false;

}  // namespace

void Init() {
  if (g_initialized.exchange(true)) return;
#if IDLESCOPE_CFI_WALK
  g_find_object = reinterpret_cast<FindObjectFn>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
  const uint64_t cache = g_find_object != nullptr ? MapCacheTable(kFirstCacheBits) : 0;
  if (cache != 0) {
    g_cache.store(cache, std::memory_order_release);
    g_cfi = true;
  }
#endif
}

int Backtrace(uintptr_t* pcs, int max, WalkCache* cache) {
#if IDLESCOPE_CFI_WALK
  if (g_cfi) return CfiBacktrace(pcs, max, cache);
#else
  (void)cache;
#endif
  return GccBacktrace(pcs, max);
}

bool UsesCfiWalk() { return g_cfi; }

uint64_t RulesComputed() { return g_rules_computed.load(std::memory_order_relaxed); }

uint64_t WalksRepeated() { return g_walks_repeated.load(std::memory_order_relaxed); }

}  // namespace idlescope::unwind
