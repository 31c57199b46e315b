#include "interpose/python/pystacks.h"

#include <dlfcn.h>
#include <elf.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "interpose/python/code_cache.h"
#include "interpose/python/layout.h"
#include "interpose/python/line_table.h"
#include "interpose/python/own_memory.h"
#include "interpose/real_symbol.h"
#include "interpose/recorder.h"
#include "interpose/redact.h"

namespace idlescope::python {

namespace {

// ---------------------------------------------------------------------------------------------
// Detection (Init, in the library constructor: the interpreter's symbols are bound by then, its
// state not yet initialized).

using ThreadStateFn = void* (*)();
using FinalizingFn = int (*)();
using VersionFn = const char* (*)();

Layout g_layout;
CodeCache* g_cache = nullptr;
// PyGILState_GetThisThreadState: the thread's own PyThreadState from the GIL-state TSS key,
// whether or not the thread holds the GIL (a thread in a blocking read released it, and then 3.12+
// clear the "current" thread state, but not this key). It takes no lock and needs no GIL: a
// NULL check and pthread_getspecific (disassembled: 3.10-3.13).
ThreadStateFn g_this_thread_state = nullptr;
// _Py_IsFinalizing / Py_IsFinalizing: during finalization other threads' states are freed.
FinalizingFn g_is_finalizing = nullptr;
std::atomic<bool> g_active{false};
char g_version[32] = "";
std::atomic<uint64_t> g_unreadable{0}, g_foreign_tstate{0}, g_in_signal_handler{0};
std::atomic<uint64_t> g_sampled_walks{0}, g_sampled_torn{0}, g_sampled_gone{0};

void* Symbol(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// "3.10.13 (main, ...)" -> 3, 10, 13.
bool ParseVersionString(const char* s, uint32_t* major, uint32_t* minor, uint32_t* micro) {
  unsigned a = 0, b = 0, c = 0;
  if (s == nullptr || sscanf(s, "%u.%u.%u", &a, &b, &c) < 2) return false;
  *major = a;
  *minor = b;
  *micro = c;
  return true;
}

// The signal return trampolines (see InSignalHandler): 16-byte aligned occurrences of
// __restore_rt's code in the executable segment of libc (found through a libc function no hook
// replaces). Usually exactly one.
constexpr unsigned char kSigreturnCode[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
constexpr int kMaxTrampolines = 4;
uintptr_t g_trampoline[kMaxTrampolines];
int g_trampolines = 0;

// glibc's sigaction installs every handler with its __restore_rt as the restorer (SA_RESTORER),
// and the kernel keeps it: the recorder's own handlers, installed by the time Start runs
// (lifecycle.cc), give the trampoline without the scan below (libc's executable segment, 1.4 MB
// in 16-byte steps: 870k instructions and ~20 page faults at every start of a Python process).
bool TrampolineOfOurHandlers() {
  constexpr int kSaRestorer = 0x04000000;  // the kernel's flag, which glibc's headers do not name
  using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
  auto real_sigaction = reinterpret_cast<SigactionFn>(FindRealSymbol("sigaction"));
  if (real_sigaction == nullptr) return false;
  for (int sig : {SIGSEGV, SIGTERM, SIGINT}) {
    struct sigaction current;
    if (real_sigaction(sig, nullptr, &current) != 0 || (current.sa_flags & kSaRestorer) == 0) {
      continue;
    }
    const uintptr_t at = reinterpret_cast<uintptr_t>(current.sa_restorer);
    if (at == 0 || (at & 15) != 0 ||
        memcmp(reinterpret_cast<const void*>(at), kSigreturnCode, sizeof(kSigreturnCode)) != 0) {
      continue;
    }
    g_trampoline[0] = at;
    g_trampolines = 1;
    return true;
  }
  return false;
}

void FindSignalTrampolines() {
  if (TrampolineOfOurHandlers()) return;
  struct Search {
    uintptr_t probe;
  } search{reinterpret_cast<uintptr_t>(&gnu_get_libc_version)};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* arg) -> int {
        const uintptr_t probe = static_cast<Search*>(arg)->probe;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
          if (probe < lo || probe >= hi) continue;
          for (uintptr_t at = (lo + 15) & ~uintptr_t{15};
               at + sizeof(kSigreturnCode) <= hi && g_trampolines < kMaxTrampolines; at += 16) {
            if (memcmp(reinterpret_cast<const void*>(at), kSigreturnCode, sizeof(kSigreturnCode)) ==
                0) {
              g_trampoline[g_trampolines++] = at;
            }
          }
          return 1;
        }
        return 0;
      },
      &search);
}

void SayUnsupported(const std::string& why) {
  RecordNotice(NoticeSeverity::kInfo, "python_stacks_unsupported",
               "Python stacks are off: " + why + "; native stacks go on", true);
}

}  // namespace

void Init(bool wanted) {
  // Every CPython 3 exports these (libpythonX.Y.so, or an interpreter binary linked with
  // -export-dynamic, as Debian's /usr/bin/python3.11 is, so that extension modules bind to it).
  auto this_thread_state = reinterpret_cast<ThreadStateFn>(Symbol("PyGILState_GetThisThreadState"));
  if (this_thread_state == nullptr || !wanted) return;  // not a CPython process, or not asked

  // Py_Version (3.11+) is PY_VERSION_HEX as data; 3.10 only has Py_GetVersion(), which formats
  // PY_VERSION into a static buffer (no GIL, no allocation).
  uint32_t major = 0, minor = 0, micro = 0;
  uint64_t hex = 0;
  if (auto* v = static_cast<const unsigned long*>(Symbol("Py_Version")); v != nullptr) {
    hex = *v;
    major = static_cast<uint32_t>(hex >> 24);
    minor = static_cast<uint32_t>((hex >> 16) & 0xff);
    micro = static_cast<uint32_t>((hex >> 8) & 0xff);
  } else if (auto get = reinterpret_cast<VersionFn>(Symbol("Py_GetVersion")); get != nullptr) {
    if (!ParseVersionString(get(), &major, &minor, &micro)) {
      SayUnsupported("the CPython version could not be read");
      return;
    }
  } else {
    SayUnsupported("the CPython version could not be read");
    return;
  }
  const std::string name = "CPython " + std::to_string(major) + "." + std::to_string(minor) + "." +
                           std::to_string(micro);
  Layout layout;
  if (major == 3 && minor == 13) {
    const char* why = "";
    const auto* runtime = static_cast<const uint8_t*>(Symbol("_PyRuntime"));
    // _PyRuntime is far larger than the debug offsets read (71 words) in every 3.13.
    if (runtime == nullptr || !DebugOffsetsLayout(runtime, 4096, hex, &layout, &why)) {
      SayUnsupported(name + ": " + (runtime == nullptr ? "no _PyRuntime" : why));
      return;
    }
  } else if (major != 3 || !TableLayout(minor, &layout)) {
    SayUnsupported(name + " is not a version idlescope reads (3.10-3.13)");
    return;
  }
  // Builds whose objects carry more than refcount and type (Py_TRACE_REFS) have other offsets.
  if (Symbol("_Py_PrintReferences") != nullptr || Symbol("_Py_ForgetReference") != nullptr) {
    SayUnsupported(name + " built with Py_TRACE_REFS");
    return;
  }
  ObjectTypes types;
  types.code = reinterpret_cast<uintptr_t>(Symbol("PyCode_Type"));
  types.unicode = reinterpret_cast<uintptr_t>(Symbol("PyUnicode_Type"));
  types.bytes = reinterpret_cast<uintptr_t>(Symbol("PyBytes_Type"));
  if (types.code == 0 || types.unicode == 0 || types.bytes == 0) {
    SayUnsupported(name + ": its type objects are not exported");
    return;
  }
  auto* cache = new CodeCache();  // never freed: hooks may use it until the process ends
  if (!cache->Init(layout, types)) return;
  g_layout = layout;
  g_cache = cache;
  g_this_thread_state = this_thread_state;
  g_is_finalizing = reinterpret_cast<FinalizingFn>(Symbol("Py_IsFinalizing"));
  if (g_is_finalizing == nullptr) {
    g_is_finalizing = reinterpret_cast<FinalizingFn>(Symbol("_Py_IsFinalizing"));
  }
  snprintf(g_version, sizeof(g_version), "%u.%u.%u", major, minor, micro);
}

void Start() {
  if (g_cache == nullptr || g_active.load(std::memory_order_relaxed)) return;
  FindSignalTrampolines();
  if (g_trampolines == 0) {
    // Without it a hook in a signal handler could walk a frame being pushed.
    SayUnsupported(std::string("CPython ") + g_version +
                   ": the signal return trampoline was not found in libc");
    return;
  }
  g_active.store(true, std::memory_order_release);
}

// From Init on: the header, written before Start, names the interpreter whose stacks it will have.
const char* Version() { return g_cache != nullptr ? g_version : ""; }

// ---------------------------------------------------------------------------------------------
// Capture (the hooked thread).

namespace {

// Trie key of a Python frame: bit 63 set (never a user-space pc), bit 62 = an evaluation loop
// started here, bits 32-61 the code id, bits 0-31 the instruction's code unit (kNotStarted: the
// frame has not executed an instruction yet).
constexpr uint64_t kKeyBit = 1ull << 63;
constexpr uint64_t kEntryBit = 1ull << 62;
constexpr uint32_t kNotStarted = 0xFFFFFFFFu;
constexpr uint64_t kCodeIdMask = (1ull << 30) - 1;

uint64_t MakeKey(uint32_t code_id, int64_t unit, bool entry) {
  const uint32_t u = unit < 0 || unit >= kNotStarted ? kNotStarted : static_cast<uint32_t>(unit);
  return kKeyBit | (entry ? kEntryBit : 0) | (uint64_t{code_id} << 32) | u;
}

// Frames visited per walk at most (shims and incomplete frames included): a guard against a
// cyclic chain, which a live interpreter never has.
constexpr int kMaxVisited = 4 * kMaxFrames;

template <typename T>
T Load(uintptr_t addr) {
  return CodeCache::Load<T>(addr);
}

// Why the frames can be read as they are: the thread is inside our hook, called (through C code)
// by its innermost Python frame, so every frame of its chain is complete and linked, and holds its
// code object, which holds its name, file and line table. No other thread changes them, GIL or not:
// frames belong to their thread (a generator's frame runs on one thread at a time).
//
// The exception is a hook reached from a signal handler: CPython's own C handler writes to the
// wakeup fd (asyncio sets one), and the interrupted interpreter may be half-way through pushing a
// frame, whose code and previous pointers are then whatever the stack memory held. Such a hook is
// recognized by the kernel's signal return trampoline among its native frames (the unwinders walk
// through signal frames, and the handler returns to it): on x86-64 glibc's __restore_rt,
// "mov $15, %rax; syscall" (the bytes libgcc's unwinder itself looks for). Init finds it in libc's
// code once, so a capture compares addresses and reads no memory.
bool InSignalHandler(const uintptr_t* pcs, int n) {
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < g_trampolines; ++t) {
      if (pcs[i] == g_trampoline[t]) return true;
    }
  }
  return false;
}

}  // namespace

int CaptureFrames(const uintptr_t* native_pcs, int native_count, uint64_t* keys, int max) {
  if (!g_active.load(std::memory_order_relaxed)) return 0;
  if (InSignalHandler(native_pcs, native_count)) {
    g_in_signal_handler.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  if (g_is_finalizing != nullptr && g_is_finalizing() != 0) return 0;
  const uintptr_t tstate = reinterpret_cast<uintptr_t>(g_this_thread_state());
  if (tstate == 0 || (tstate & 7) != 0) return 0;
  const Layout& l = g_layout;
  // The key names this thread's state (its creator's pthread_self): anything else would be the
  // state of another thread, whose frames move while we read.
  if (Load<unsigned long>(tstate + l.tstate_thread_id) !=
      static_cast<unsigned long>(pthread_self())) {
    g_foreign_tstate.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  uintptr_t frame = Load<uintptr_t>(tstate + l.tstate_frame);
  if (l.cframe_current_frame >= 0 && frame != 0) {
    frame = Load<uintptr_t>(frame + static_cast<uint32_t>(l.cframe_current_frame));
  }
  int n = 0;
  for (int visited = 0; frame != 0 && (frame & 7) == 0 && n < max && visited < kMaxVisited;
       ++visited) {
    const uintptr_t previous = Load<uintptr_t>(frame + l.frame_previous);
    uintptr_t code;
    int64_t unit;
    bool entry;
    char owner = 0;
    if (l.model == FrameModel::kFrameObjects) {
      code = Load<uintptr_t>(frame + l.frame_code);
      unit = Load<int32_t>(frame + l.frame_instr);  // f_lasti: -1 before the first instruction
      entry = true;
    } else {
      owner = Load<char>(frame + static_cast<uint32_t>(l.frame_owner));
      if (owner == kOwnedByCStack) {
        // 3.12+: the shim below the first frame of a native evaluation loop.
        if (n > 0) keys[n - 1] |= kEntryBit;
        frame = previous;
        continue;
      }
      code = Load<uintptr_t>(frame + l.frame_code);
      const uintptr_t instr = Load<uintptr_t>(frame + l.frame_instr);
      unit = (static_cast<int64_t>(instr) -
              static_cast<int64_t>(code + static_cast<uint32_t>(l.code_adaptive))) /
             2;
      entry = l.frame_is_entry >= 0 &&
              Load<uint8_t>(frame + static_cast<uint32_t>(l.frame_is_entry)) != 0;
    }
    const uint32_t id = g_cache->Id(code);
    if (id == 0) {
      g_unreadable.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    // A frame pushed but not started ("incomplete": before its first traceable instruction) is
    // not shown by CPython's own tracebacks either; nor is 3.13's cleanup frame under an
    // __init__ (_Py_InitCleanup, never past its first instructions). Its entry flag moves to the
    // frame above, which then starts the loop's run of frames.
    if (l.code_firsttraceable >= 0 && owner != kOwnedByGenerator &&
        unit < Load<int32_t>(code + static_cast<uint32_t>(l.code_firsttraceable))) {
      if (entry && n > 0) keys[n - 1] |= kEntryBit;
      frame = previous;
      continue;
    }
    keys[n++] = MakeKey(id, unit, entry);
    frame = previous;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Another thread's frames (the sampler, on the writer thread).

bool ThisThreadState(ThreadStateRef* out) {
  if (!g_active.load(std::memory_order_relaxed)) return false;
  const uintptr_t tstate = reinterpret_cast<uintptr_t>(g_this_thread_state());
  if (tstate == 0 || (tstate & 7) != 0) return false;
  const unsigned long id = Load<unsigned long>(tstate + g_layout.tstate_thread_id);
  if (id != static_cast<unsigned long>(pthread_self())) return false;
  out->tstate = tstate;
  out->thread_id = id;
  return true;
}

namespace {

// A field of bytes read from the interpreter's memory.
template <typename T>
T Get(const uint8_t* bytes, uint32_t offset) {
  T v;
  memcpy(&v, bytes + offset, sizeof(v));
  return v;
}

// The bytes of a frame that hold what a walk reads of it.
uint32_t FrameBytes(const Layout& l) {
  uint32_t end = std::max({l.frame_previous, l.frame_code, l.frame_instr}) + 8;
  if (l.frame_owner >= 0) end = std::max(end, static_cast<uint32_t>(l.frame_owner) + 1);
  if (l.frame_is_entry >= 0) end = std::max(end, static_cast<uint32_t>(l.frame_is_entry) + 1);
  return end;
}

constexpr size_t kMaxObjectBytes = 512;  // more than any layout's frame or code prefix

}  // namespace

int ReadThreadFrames(int pid, uint32_t tid, const ThreadStateRef& ref, uint64_t* keys, int max) {
  if (!g_active.load(std::memory_order_relaxed) || ref.tstate == 0) return 0;
  if (g_is_finalizing != nullptr && g_is_finalizing() != 0) return 0;
  const Layout& l = g_layout;
  uint32_t state_bytes = std::max(l.tstate_thread_id, l.tstate_frame) + 8;
  if (l.tstate_native_thread_id >= 0) {
    state_bytes = std::max(state_bytes, static_cast<uint32_t>(l.tstate_native_thread_id) + 8);
  }
  const uint32_t frame_bytes = FrameBytes(l);
  if (state_bytes > kMaxObjectBytes || frame_bytes > kMaxObjectBytes ||
      l.code_bytes > kMaxObjectBytes) {
    return 0;
  }
  uint8_t state[kMaxObjectBytes];
  // The state must still be the thread's: a thread that ended frees it (its memory may then hold
  // anything, another thread's state included).
  const auto native = [&] {
    return Get<unsigned long>(state, static_cast<uint32_t>(l.tstate_native_thread_id));
  };
  if (!ReadOwnMemory(pid, ref.tstate, state, state_bytes) ||
      Get<unsigned long>(state, l.tstate_thread_id) != ref.thread_id ||
      (l.tstate_native_thread_id >= 0 && native() != tid &&
       (ref.forked_from == 0 || native() != ref.forked_from))) {
    g_sampled_gone.fetch_add(1, std::memory_order_relaxed);
    return kStateGone;
  }
  g_sampled_walks.fetch_add(1, std::memory_order_relaxed);
  uintptr_t frame = Get<uintptr_t>(state, l.tstate_frame);
  if (l.cframe_current_frame >= 0 && frame != 0) {
    uintptr_t current = 0;
    if ((frame & 7) != 0 ||
        !ReadOwnMemory(pid, frame + static_cast<uint32_t>(l.cframe_current_frame), &current,
                       sizeof(current))) {
      g_sampled_torn.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    frame = current;
  }
  // `bytes`: the frame at `frame`, read; each step reads the frame's code object and the frame
  // before it in one system call.
  uint8_t bytes[kMaxObjectBytes], previous_bytes[kMaxObjectBytes], code_bytes[kMaxObjectBytes];
  if (frame == 0) return 0;
  if ((frame & 7) != 0 || !ReadOwnMemory(pid, frame, bytes, frame_bytes)) {
    g_sampled_torn.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  int n = 0;
  bool torn = false;
  for (int visited = 0; n < max && visited < 4 * max; ++visited) {
    uintptr_t previous = Get<uintptr_t>(bytes, l.frame_previous);
    if ((previous & 7) != 0) {
      torn = true;
      previous = 0;
    }
    char owner = 0;
    if (l.model == FrameModel::kInterpreterFrames) {
      owner = Get<char>(bytes, static_cast<uint32_t>(l.frame_owner));
      if (owner < 0 || owner > kOwnedByCStack) {
        torn = true;
        break;
      }
    }
    bool have_previous = false;
    if (owner == kOwnedByCStack) {
      if (n > 0) keys[n - 1] |= kEntryBit;
      have_previous = previous != 0 && ReadOwnMemory(pid, previous, previous_bytes, frame_bytes);
    } else {
      const uintptr_t code = Get<uintptr_t>(bytes, l.frame_code);
      if (code == 0 || (code & 7) != 0) {
        torn = true;
        break;
      }
      const int got = ReadOwnMemory2(pid, code, code_bytes, l.code_bytes, previous, previous_bytes,
                                     frame_bytes);
      if (got == 0) {
        torn = true;
        break;
      }
      have_previous = got == 2;
      int64_t unit;
      bool entry;
      if (l.model == FrameModel::kFrameObjects) {
        unit = Get<int32_t>(bytes, l.frame_instr);  // f_lasti: -1 before the first instruction
        entry = true;
        if (unit < -1) {
          torn = true;
          break;
        }
      } else {
        const uintptr_t instr = Get<uintptr_t>(bytes, l.frame_instr);
        unit = (static_cast<int64_t>(instr) -
                static_cast<int64_t>(code + static_cast<uint32_t>(l.code_adaptive))) /
               2;
        // Py_SIZE of a code object: its bytecode's length in code units (3.11+). An instruction
        // outside it is a frame read half-way through a change.
        const int64_t units = Get<int64_t>(code_bytes, 16);
        if (unit < -1 || unit > units) {
          torn = true;
          break;
        }
        entry = l.frame_is_entry >= 0 &&
                Get<uint8_t>(bytes, static_cast<uint32_t>(l.frame_is_entry)) != 0;
      }
      const uint32_t id = g_cache->IdFromPrefix(code, code_bytes, pid);
      if (id == 0) {
        torn = true;
        break;
      }
      if (l.code_firsttraceable >= 0 && owner != kOwnedByGenerator &&
          unit < Get<int32_t>(code_bytes, static_cast<uint32_t>(l.code_firsttraceable))) {
        if (entry && n > 0) keys[n - 1] |= kEntryBit;
      } else {
        keys[n++] = MakeKey(id, unit, entry);
      }
    }
    if (previous == 0) break;
    if (!have_previous) {
      torn = true;
      break;
    }
    memcpy(bytes, previous_bytes, frame_bytes);
  }
  if (torn) g_sampled_torn.fetch_add(1, std::memory_order_relaxed);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Frames (writer thread).

namespace {

// (code id, line, entry) -> Frame id of the current file. Writer thread only.
std::unordered_map<uint64_t, uint64_t>& FrameIds() {
  static auto* ids = new std::unordered_map<uint64_t, uint64_t>();  // never destroyed
  return *ids;
}

}  // namespace

uint64_t FrameFor(uint64_t key, uint64_t* next_frame_id, trace::Interned* out) {
  const uint32_t code_id = static_cast<uint32_t>((key >> 32) & kCodeIdMask);
  const uint32_t unit = static_cast<uint32_t>(key);
  const bool entry = (key & kEntryBit) != 0;
  const CodeInfo* info = g_cache != nullptr ? g_cache->Info(code_id) : nullptr;
  int line = 0;
  if (info != nullptr) {
    line = LineForOffset(g_layout.line_format, info->table(), info->table_size, info->first_line,
                         unit == kNotStarted ? -1 : int64_t{unit});
    // An instruction with no line of its own (3.10's GEN_START, the sampler's read of a generator
    // that just started) names the code's first line, as a frame that has not run a line does.
    if (line < 0) line = info->first_line > 0 ? info->first_line : 0;
  }
  const uint64_t frame_key =
      (uint64_t{code_id} << 33) | (uint64_t{entry} << 32) | static_cast<uint32_t>(line);
  auto [it, inserted] = FrameIds().try_emplace(frame_key, 0);
  if (!inserted) return it->second;
  trace::Frame f;
  f.id = (*next_frame_id)++;
  f.kind = trace::kFramePython;
  f.line = static_cast<uint32_t>(line);
  f.python_entry = entry;
  if (info != nullptr) {
    f.function = InternString(std::string_view(info->name(), info->name_size));
    // A file the program ran (redacted like its other files under IDLESCOPE_REDACT=paths), or a
    // pseudo-file that names no file of the user's: "<frozen importlib._bootstrap>", "<string>".
    const std::string_view file(info->file(), info->file_size);
    f.file = !file.empty() && file[0] == '<' ? InternString(file)
                                             : InternPath(file, redact::PathKind::kFile);
    f.first_line = info->first_line > 0 ? static_cast<uint32_t>(info->first_line) : 0;
  }
  it->second = f.id;
  out->frames.push_back(f);
  return f.id;
}

void ResetFrames() { FrameIds().clear(); }

void LockForFork() {
  if (g_cache != nullptr) g_cache->LockForFork();
}

void UnlockAfterFork() {
  if (g_cache != nullptr) g_cache->UnlockAfterFork();
}

Stats GetStats() {
  Stats s;
  s.codes = g_cache != nullptr ? g_cache->size() : 0;
  s.unreadable = g_unreadable.load(std::memory_order_relaxed);
  s.foreign_tstate = g_foreign_tstate.load(std::memory_order_relaxed);
  s.in_signal_handler = g_in_signal_handler.load(std::memory_order_relaxed);
  s.sampled_walks = g_sampled_walks.load(std::memory_order_relaxed);
  s.sampled_torn = g_sampled_torn.load(std::memory_order_relaxed);
  s.sampled_gone = g_sampled_gone.load(std::memory_order_relaxed);
  return s;
}

void SetActiveForTesting(bool active) {
  g_active.store(active && g_cache != nullptr, std::memory_order_release);
}

}  // namespace idlescope::python
