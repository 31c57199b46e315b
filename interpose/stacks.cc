// Call stacks: capture on the calling thread (unwind.h: a cached CFI walk of the thread's own
// stack), interning into a lock-free trie, and symbolization on the writer thread only (dladdr,
// the module's ELF .symtab, demangling).
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpose/python/pystacks.h"
#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"
#include "interpose/rings.h"
#include "interpose/sampler.h"
#include "interpose/unwind.h"

namespace idlescope::stacks {

namespace {

constexpr int kMaxDepth = 128;

// ---------------------------------------------------------------------------------------------
// Unwinding (unwind.h).

uint32_t g_depth = 0;

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
#define IDLESCOPE_HAS_DL_FIND_OBJECT 1
// glibc >= 2.35's _dl_find_object, looked up at Init (not linked: the library loads on an older
// glibc too, README.md). Without it no module is found without the loader's locks (the final
// flush of a signal leaves such frames unnamed).
using FindObjectFn = int (*)(void*, struct dl_find_object*);
FindObjectFn g_find_object = nullptr;
#else
#define IDLESCOPE_HAS_DL_FIND_OBJECT 0
#endif

// Our own code's address range: frames inside it (the hook that called CaptureStack) are not
// part of the program's stack.
uintptr_t g_self_lo = 0, g_self_hi = 0;

// fork and libgcc's unwinder (unwind::Backtrace's walk where glibc lacks _dl_find_object): it may
// hold a lock of its own in the middle of a walk (its object list; the loader's, through
// dl_iterate_phdr), and a fork then leaves it held in the child, whose first stack capture waits
// for it forever (children of a threaded process hung so in libunwind's lock, which the CFI walk
// replaced). So a fork waits until no thread is inside such a walk, and none starts while a fork
// is under way (that event gets no stack). The CFI walk takes no lock and needs none of this.
// Threads count themselves in one of a few stripes, so that captures on different threads rarely
// share a cache line.
struct alignas(64) WalkStripe {
  std::atomic<uint32_t> inside{0};
};
constexpr uint32_t kWalkStripes = 16;
WalkStripe g_walkers[kWalkStripes];
std::atomic<bool> g_fork_pending{false};

// The calling thread's stripe: its TLS block's address (one per thread, pages apart).
WalkStripe& OwnStripe() {
  uintptr_t tls = reinterpret_cast<uintptr_t>(&detail::t_hook_depth);
  return g_walkers[(tls >> 12) % kWalkStripes];
}

// unwind::Backtrace, unless a fork is under way (then 0 frames).
int BacktraceUnlessForking(uintptr_t* pcs, int max) {
  if (g_fork_pending.load(std::memory_order_acquire)) return 0;
  WalkStripe& stripe = OwnStripe();
  // Dekker with the fork: our count is visible before we look at the flag, the flag before the
  // fork looks at the counts (both seq_cst), so one of the two sees the other.
  stripe.inside.fetch_add(1, std::memory_order_seq_cst);
  int n = g_fork_pending.load(std::memory_order_seq_cst) ? 0 : unwind::Backtrace(pcs, max);
  stripe.inside.fetch_sub(1, std::memory_order_release);
  return n;
}

int FindSelf(struct dl_phdr_info* info, size_t, void* arg) {
  uintptr_t probe = reinterpret_cast<uintptr_t>(arg);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (probe >= lo && probe < hi) {
      // The whole module, not just this segment.
      uintptr_t mlo = UINTPTR_MAX, mhi = 0;
      for (int j = 0; j < info->dlpi_phnum; ++j) {
        const ElfW(Phdr)& p = info->dlpi_phdr[j];
        if (p.p_type != PT_LOAD) continue;
        mlo = std::min<uintptr_t>(mlo, info->dlpi_addr + p.p_vaddr);
        mhi = std::max<uintptr_t>(mhi, info->dlpi_addr + p.p_vaddr + p.p_memsz);
      }
      // Only a shared object: when the recorder is linked into an executable (tests, benchmarks)
      // that executable is the program.
      if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
        g_self_lo = mlo;
        g_self_hi = mhi;
      }
      return 1;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The trie: open addressing over (parent id, pc), lock-free. A slot is claimed by CAS on its id
// (0 -> kBusy), filled, then published with the node's id; lookups that meet kBusy wait for it.
// Node ids are dense; node i's definition lives in g_nodes[i].

constexpr uint32_t kBusy = UINT32_MAX;
constexpr uint32_t kFull = UINT32_MAX - 1;  // slot filled, but no id was left for it
constexpr uint32_t kTrieBits = 19;
constexpr uint32_t kTrieSlots = 1u << kTrieBits;
constexpr uint32_t kMaxNodes = kTrieSlots / 2;  // keeps probe sequences short

struct TrieSlot {
  std::atomic<uint32_t> id;
  uint32_t parent;
  uint64_t pc;
};
struct Node {
  uint64_t pc;
  uint32_t parent;
  std::atomic<uint8_t> ready;
  uint8_t emitted;  // writer only
};

TrieSlot* g_slots = nullptr;
Node* g_nodes = nullptr;
std::atomic<uint32_t> g_next_node{1};
uint32_t g_low_unemitted = 1;  // writer only

inline uint64_t Mix(uint64_t parent, uint64_t pc) {
  uint64_t h =
      pc * 0x9E3779B97F4A7C15ull ^ (parent + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
  return h ^ (h >> 29);
}

// Inserts (new stacks: rare) are serialized, lookups are not. The mutex also keeps fork() from
// copying a slot left kBusy by a thread that does not exist in the child, where every later
// lookup of that slot would wait forever (the fork handlers take it, see recorder.cc).
std::mutex g_insert_mu;

// Where (parent, pc)'s probe starts: in a window of 256 slots (a page of them) from parent * 2.
// Node ids are dense and a stack's nodes are made in a row, so the children of nodes made together
// share pages: a short process's few thousand nodes touch tens of the table's 2,048 pages instead
// of nearly all of them (python3 -c pass: 2,950 page faults in here, ~5 ms, with a slot anywhere).
// The window spreads a parent's children (a dispatch frame may have hundreds); 2 slots per id keep
// the table's load at most a half, as kMaxNodes does.
inline uint32_t FirstSlot(uint32_t parent, uint64_t pc) {
  return (parent * 2 + (static_cast<uint32_t>(Mix(parent, pc)) & 255)) & (kTrieSlots - 1);
}

uint32_t Child(uint32_t parent, uint64_t pc) {
  uint32_t i = FirstSlot(parent, pc);
  for (uint32_t probes = 0; probes < kTrieSlots; ++probes) {
    TrieSlot& s = g_slots[i];
    uint32_t id = s.id.load(std::memory_order_acquire);
    if (id == 0) {
      std::lock_guard<std::mutex> lock(g_insert_mu);
      if (!s.id.compare_exchange_strong(id, kBusy, std::memory_order_acquire)) continue;
      s.parent = parent;
      s.pc = pc;
      uint32_t nid = g_next_node.fetch_add(1, std::memory_order_relaxed);
      if (nid >= kMaxNodes) {
        s.id.store(kFull, std::memory_order_release);
        return 0;
      }
      g_nodes[nid].pc = pc;
      g_nodes[nid].parent = parent;
      g_nodes[nid].ready.store(1, std::memory_order_release);
      s.id.store(nid, std::memory_order_release);
      return nid;
    }
    if (id == kBusy) {
      __builtin_ia32_pause();
      continue;  // same slot again
    }
    if (s.parent == parent && s.pc == pc) return id == kFull ? 0 : id;
    i = (i + 1) & (kTrieSlots - 1);
  }
  return 0;
}

void* MapZeroed(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

void Init(uint32_t depth) {
#if IDLESCOPE_HAS_DL_FIND_OBJECT
  g_find_object = reinterpret_cast<FindObjectFn>(dlsym(RTLD_DEFAULT, "_dl_find_object"));
#endif
  if (depth == 0) return;
  g_slots = static_cast<TrieSlot*>(MapZeroed(sizeof(TrieSlot) * kTrieSlots));
  g_nodes = static_cast<Node*>(MapZeroed(sizeof(Node) * kMaxNodes));
  if (g_slots == nullptr || g_nodes == nullptr) return;
  unwind::Init();
  dl_iterate_phdr(FindSelf, reinterpret_cast<void*>(&Init));
  g_depth = std::min<uint32_t>(depth, kMaxDepth);
}

void LockForFork() {
  g_insert_mu.lock();
  python::LockForFork();
  g_fork_pending.store(true, std::memory_order_seq_cst);
  // Walks take microseconds. Bounded: a fork from a signal handler that interrupted a walk on
  // this very thread would wait for itself (that child may then hang in the unwinder, as before).
  for (int spins = 0; spins < 100000; ++spins) {
    uint32_t inside = 0;
    for (const WalkStripe& s : g_walkers) inside += s.inside.load(std::memory_order_seq_cst);
    if (inside == 0) break;
    sched_yield();
  }
}

void UnlockAfterFork(bool in_child) {
  // In the child only the forking thread exists: no other thread is inside a walk.
  if (in_child) {
    for (WalkStripe& s : g_walkers) s.inside.store(0, std::memory_order_relaxed);
  }
  g_fork_pending.store(false, std::memory_order_release);
  python::UnlockAfterFork();
  g_insert_mu.unlock();
}

void TakeNewNodes(std::vector<NewNode>* out) {
  if (g_nodes == nullptr) return;
  uint32_t end = std::min(g_next_node.load(std::memory_order_acquire), kMaxNodes);
  bool contiguous = true;
  for (uint32_t id = g_low_unemitted; id < end; ++id) {
    Node& n = g_nodes[id];
    if (n.emitted) continue;
    // A node still being published is skipped; no event can use it yet (nor any of its
    // children: a child is published after its parent).
    if (!n.ready.load(std::memory_order_acquire)) {
      contiguous = false;
      continue;
    }
    n.emitted = 1;
    out->push_back({id, n.parent, n.pc});
    if (contiguous) g_low_unemitted = id + 1;
  }
}

void MarkAllUnemitted() {
  if (g_nodes == nullptr) return;
  uint32_t end = std::min(g_next_node.load(), kMaxNodes);
  for (uint32_t id = 1; id < end; ++id) g_nodes[id].emitted = 0;
  g_low_unemitted = 1;
}

// ---------------------------------------------------------------------------------------------
// Symbolization (writer thread).

namespace {

// A FUNC symbol: its module-relative address and size, its name's offset in a string table.
struct SymbolEntry {
  uint64_t addr, size;
  uint32_t name;
};

// The function of `entries` (by address) whose [addr, addr + size) holds `rel`, or "".
std::string SymbolNameAt(const std::vector<SymbolEntry>& entries, const char* strs,
                         size_t strs_size, uint64_t rel) {
  auto it = std::upper_bound(entries.begin(), entries.end(), rel,
                             [](uint64_t v, const SymbolEntry& e) { return v < e.addr; });
  if (it == entries.begin()) return {};
  --it;
  if (rel >= it->addr + std::max<uint64_t>(it->size, 1)) return {};
  return std::string(strs + it->name, strnlen(strs + it->name, strs_size - it->name));
}

// A module's FUNC symbols by address, their names in a copy of the symbol table's string table
// (one allocation: a symbol table of 15,000 names, libpython's, costs a copy and a sort of
// 24-byte entries, not 15,000 strings).
struct ElfSymbols {
  std::vector<SymbolEntry> entries;
  std::string strings;

  std::string NameAt(uint64_t rel) const {
    return SymbolNameAt(entries, strings.data(), strings.size(), rel);
  }
};

// FUNC symbols of a module's file: .symtab when present (static functions, executables not
// linked with -rdynamic: dladdr only sees .dynsym), else .dynsym if `dynsym` (when dladdr, which
// searches .dynsym, is not used: FindWithoutLoader). Sorted by address. Without .symtab and
// `dynsym` nothing is read: a stripped library's .dynsym (libc's: 3000 names to copy and sort, a
// third of a short process's traced cost) cannot name what dladdr did not.
ElfSymbols LoadElfSymbols(const std::string& path, bool dynsym) {
  ElfSymbols out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return out;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return out;
  const uint8_t* base = static_cast<const uint8_t*>(map);
  const Elf64_Ehdr* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto in_file = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shentsize == sizeof(Elf64_Shdr) &&
      in_file(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    const Elf64_Shdr* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    const Elf64_Shdr* table = nullptr;
    for (int pass = 0; pass < (dynsym ? 2 : 1) && table == nullptr; ++pass) {
      uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
      for (int i = 0; i < eh->e_shnum; ++i) {
        if (sh[i].sh_type == want && sh[i].sh_link < eh->e_shnum) table = &sh[i];
      }
    }
    if (table != nullptr && in_file(table->sh_offset, table->sh_size)) {
      const Elf64_Shdr& strtab = sh[table->sh_link];
      if (in_file(strtab.sh_offset, strtab.sh_size) && strtab.sh_size <= UINT32_MAX) {
        const Elf64_Sym* syms = reinterpret_cast<const Elf64_Sym*>(base + table->sh_offset);
        size_t count = table->sh_size / sizeof(Elf64_Sym);
        out.strings.assign(reinterpret_cast<const char*>(base + strtab.sh_offset), strtab.sh_size);
        for (size_t i = 0; i < count; ++i) {
          const Elf64_Sym& s = syms[i];
          if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value == 0 ||
              s.st_name >= strtab.sh_size) {
            continue;
          }
          out.entries.push_back({s.st_value, s.st_size, s.st_name});
        }
      }
    }
  }
  munmap(map, size);
  std::sort(out.entries.begin(), out.entries.end(),
            [](const SymbolEntry& a, const SymbolEntry& b) { return a.addr < b.addr; });
  return out;
}

// A big module's .dynsym, sorted, for the lookups dladdr would do. glibc's dladdr scans every
// dynamic symbol of the module on each call: ~200 us per frame in gcc's cc1 (28,902 symbols,
// linked -rdynamic for plugins), a quarter of a traced `make -j2`'s CPU; libtorch has several
// times more. The names stay in our own read-only mapping of the file (valid whatever the
// program unloads), used only when the file's build id is the loaded image's.
class DynsymIndex {
 public:
  // Modules smaller than this, or with fewer dynamic symbols, keep dladdr: opening and sorting
  // would cost more than their few lookups. So do the first kLookupsFirst names of any module
  // (dladdr scans a module's 2,000 symbols, libpython's, in ~54k instructions; the index sorts them
  // in ~200k, then finds a name in a few hundred).
  static constexpr off_t kMinFileBytes = 1 << 20;
  static constexpr size_t kMinSymbols = 512;
  static constexpr uint32_t kLookupsFirst = 4;

  // The index of `path` if it is big and its build id is `build_id`; null otherwise.
  static std::unique_ptr<DynsymIndex> Load(const std::string& path, const std::string& build_id);
  ~DynsymIndex() { munmap(const_cast<uint8_t*>(map_), size_); }

  // The function whose [start, start + size) holds `rel` (module-relative), or "".
  std::string NameAt(uint64_t rel) const { return SymbolNameAt(entries_, strs_, strs_size_, rel); }

 private:
  DynsymIndex(const uint8_t* map, size_t size) : map_(map), size_(size) {}
  const uint8_t* map_;
  size_t size_;
  const char* strs_ = nullptr;
  size_t strs_size_ = 0;
  std::vector<SymbolEntry> entries_;
};

// The GNU build id among the ELF notes in [p, end), or "": of a loaded image's PT_NOTE segments
// (ReadBuildId) and of a file's (FileBuildId).
std::string BuildIdInNotes(const uint8_t* p, const uint8_t* end) {
  while (p + sizeof(Elf64_Nhdr) <= end) {
    const auto* nh = reinterpret_cast<const Elf64_Nhdr*>(p);
    const uint8_t* name = p + sizeof(Elf64_Nhdr);
    const uint64_t name_bytes = (uint64_t{nh->n_namesz} + 3) & ~uint64_t{3};
    const uint64_t desc_bytes = (uint64_t{nh->n_descsz} + 3) & ~uint64_t{3};
    if (name_bytes > static_cast<uint64_t>(end - name) ||
        nh->n_descsz > static_cast<uint64_t>(end - name) - name_bytes) {
      break;
    }
    const uint8_t* desc = name + name_bytes;
    if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
      return std::string(reinterpret_cast<const char*>(desc), nh->n_descsz);
    }
    if (desc_bytes > static_cast<uint64_t>(end - desc)) break;
    p = desc + desc_bytes;
  }
  return {};
}

// The GNU build id among the notes of an ELF file's program headers, or "".
std::string FileBuildId(const uint8_t* base, size_t size) {
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > size ||
      uint64_t{eh->e_phnum} * sizeof(Elf64_Phdr) > size - eh->e_phoff) {
    return {};
  }
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type != PT_NOTE || ph[i].p_offset > size ||
        ph[i].p_filesz > size - ph[i].p_offset) {
      continue;
    }
    const uint8_t* notes = base + ph[i].p_offset;
    std::string id = BuildIdInNotes(notes, notes + ph[i].p_filesz);
    if (!id.empty()) return id;
  }
  return {};
}

std::unique_ptr<DynsymIndex> DynsymIndex::Load(const std::string& path,
                                               const std::string& build_id) {
  if (build_id.empty()) return nullptr;  // nothing to tell the file is the loaded image
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || st.st_size < kMinFileBytes) return nullptr;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  if (fstat(fd, &st) != 0 || st.st_size < kMinFileBytes) {
    close(fd);
    return nullptr;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return nullptr;
  std::unique_ptr<DynsymIndex> index(new DynsymIndex(static_cast<const uint8_t*>(map), size));
  const uint8_t* base = index->map_;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto in_file = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shentsize != sizeof(Elf64_Shdr) ||
      !in_file(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr)) ||
      FileBuildId(base, size) != build_id) {
    return nullptr;
  }
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    const Elf64_Shdr& table = sh[i];
    if (table.sh_type != SHT_DYNSYM || table.sh_link >= eh->e_shnum ||
        !in_file(table.sh_offset, table.sh_size)) {
      continue;
    }
    const Elf64_Shdr& strtab = sh[table.sh_link];
    const size_t count = table.sh_size / sizeof(Elf64_Sym);
    if (count < kMinSymbols || !in_file(strtab.sh_offset, strtab.sh_size) ||
        strtab.sh_size > UINT32_MAX) {
      return nullptr;
    }
    index->strs_ = reinterpret_cast<const char*>(base + strtab.sh_offset);
    index->strs_size_ = strtab.sh_size;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + table.sh_offset);
    index->entries_.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      const Elf64_Sym& sym = syms[k];
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
          sym.st_value == 0 || sym.st_name >= strtab.sh_size) {
        continue;
      }
      index->entries_.push_back({sym.st_value, sym.st_size, sym.st_name});
    }
    std::sort(index->entries_.begin(), index->entries_.end(),
              [](const SymbolEntry& a, const SymbolEntry& b) { return a.addr < b.addr; });
    return index;
  }
  return nullptr;
}

struct ModuleInfo {
  std::string path;
  uintptr_t bias = 0, lo = 0, hi = 0;
  std::string build_id;
  bool emitted = false;
  bool symbols_loaded = false;
  bool dynsym_loaded = false;  // `symbols` came from .dynsym too (loader_free)
  ElfSymbols symbols;
  uint32_t dladdr_lookups = 0;  // names asked of dladdr (the index is tried after a few)
  bool dynsym_index_tried = false;
  std::unique_ptr<DynsymIndex> dynsym_index;  // a big module's, in place of dladdr
};

std::string ReadBuildId(const struct dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE || ph.p_memsz == 0) continue;
    const uint8_t* notes = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    std::string id = BuildIdInNotes(notes, notes + ph.p_memsz);
    if (!id.empty()) return id;
  }
  return {};
}

class SymbolizerState {
 public:
  std::vector<std::unique_ptr<ModuleInfo>> modules;
  std::unordered_map<uint64_t, uint64_t> frame_ids;  // pc -> Frame id
  uint64_t next_frame = 1;

  ModuleInfo* Find(uintptr_t pc) {
    for (auto& m : modules) {
      if (pc >= m->lo && pc < m->hi) return m.get();
    }
    return nullptr;
  }

  // dl_iterate_phdr's load/unload counters: a rescan is needed only when they moved.
  unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;

  bool LoadedSetChanged() {
    struct Counters {
      unsigned long long adds, subs;
    } c{0, 0};
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t size, void* arg) -> int {
          auto* counters = static_cast<Counters*>(arg);
          if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
            counters->adds = info->dlpi_adds;
            counters->subs = info->dlpi_subs;
          }
          return 1;  // the counters are the same in every entry
        },
        &c);
    bool changed = c.adds != seen_adds || c.subs != seen_subs;
    seen_adds = c.adds;
    seen_subs = c.subs;
    return changed;
  }

  void Rescan() {
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* arg) -> int {
          auto* self = static_cast<SymbolizerState*>(arg);
          uintptr_t lo = UINTPTR_MAX, hi = 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD) continue;
            lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
            hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
          if (hi == 0) return 0;
          for (auto& m : self->modules) {
            if (m->lo == lo && m->hi == hi) return 0;
          }
          auto m = std::make_unique<ModuleInfo>();
          if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
            m->path = info->dlpi_name;
          } else {
            char exe[PATH_MAX];
            ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
            m->path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "[main]";
          }
          m->bias = info->dlpi_addr;
          m->lo = lo;
          m->hi = hi;
          m->build_id = ReadBuildId(info);
          // dlclose may have unmapped an overlapping module: the newest mapping wins.
          std::erase_if(self->modules, [&](const std::unique_ptr<ModuleInfo>& old) {
            return old->lo < hi && lo < old->hi;
          });
          self->modules.push_back(std::move(m));
          return 0;
        },
        this);
  }

  // The module of `addr` without the loader's locks (dl_iterate_phdr and dladdr take them, and
  // the final flush of a signal may not wait for the thread the signal stopped, which may be
  // inside dlopen: a Python import). _dl_find_object (glibc 2.35) is lock-free; the module's
  // program headers and build id are read from its image, whose first page holds the ELF header.
  ModuleInfo* FindWithoutLoader(uintptr_t addr) {
#if IDLESCOPE_HAS_DL_FIND_OBJECT
    struct dl_find_object found;
    if (g_find_object == nullptr || g_find_object(reinterpret_cast<void*>(addr), &found) != 0 ||
        found.dlfo_link_map == nullptr) {
      return nullptr;
    }
    auto m = std::make_unique<ModuleInfo>();
    const struct link_map* map = found.dlfo_link_map;
    if (map->l_name != nullptr && map->l_name[0] != '\0') {
      m->path = map->l_name;
    } else {
      char exe[PATH_MAX];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
      m->path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : "[main]";
    }
    m->bias = map->l_addr;
    m->lo = reinterpret_cast<uintptr_t>(found.dlfo_map_start);
    m->hi = reinterpret_cast<uintptr_t>(found.dlfo_map_end);
    const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(m->lo);
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_phentsize == sizeof(ElfW(Phdr)) &&
        eh->e_phoff + uint64_t{eh->e_phnum} * sizeof(ElfW(Phdr)) <= m->hi - m->lo) {
      struct dl_phdr_info info {};
      info.dlpi_addr = map->l_addr;
      info.dlpi_phdr = reinterpret_cast<const ElfW(Phdr)*>(m->lo + eh->e_phoff);
      info.dlpi_phnum = eh->e_phnum;
      m->build_id = ReadBuildId(&info);
    }
    modules.push_back(std::move(m));
    return modules.back().get();
#else
    (void)addr;
    return nullptr;
#endif
  }

  // `loader_free`: dladdr is not used (see FindWithoutLoader); the module's .symtab, else
  // .dynsym, names what dladdr would.
  std::string FunctionName(ModuleInfo* m, uintptr_t addr, bool loader_free) {
    Dl_info info;
    std::string name;
    if (!loader_free && m != nullptr && !m->dynsym_index_tried &&
        ++m->dladdr_lookups > DynsymIndex::kLookupsFirst) {
      m->dynsym_index_tried = true;
      m->dynsym_index = DynsymIndex::Load(m->path, m->build_id);
    }
    if (!loader_free && m != nullptr && m->dynsym_index != nullptr) {
      name = m->dynsym_index->NameAt(addr - m->bias);
    } else if (!loader_free && dladdr(reinterpret_cast<void*>(addr), &info) != 0 &&
               info.dli_sname != nullptr && info.dli_saddr != nullptr) {
      name = info.dli_sname;
    }
    if (name.empty() && m != nullptr) {
      if (!m->symbols_loaded || (loader_free && !m->dynsym_loaded)) {
        m->symbols_loaded = true;
        m->dynsym_loaded = loader_free;
        m->symbols = LoadElfSymbols(m->path, /*dynsym=*/loader_free);
      }
      name = m->symbols.NameAt(addr - m->bias);
    }
    if (name.empty()) return name;
    int status = 0;
    char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status == 0 && demangled != nullptr) name = demangled;
    free(demangled);
    return name;
  }
};

SymbolizerState& State() {
  static SymbolizerState* state = new SymbolizerState();  // never destroyed (exit ordering)
  return *state;
}

}  // namespace

std::string FunctionInFile(const std::string& path, uint64_t offset) {
  // One module remembered: the callers (sigaction naming a handler) ask about a few functions of
  // the same program, rarely.
  static std::mutex mu;
  static std::string* cached_path = new std::string();
  static ElfSymbols* cached = new ElfSymbols();
  std::lock_guard<std::mutex> lock(mu);
  if (*cached_path != path) {
    *cached = LoadElfSymbols(path, /*dynsym=*/false);
    *cached_path = path;
  }
  std::string name = cached->NameAt(offset);
  if (name.empty()) return {};
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status == 0 && demangled != nullptr) name = demangled;
  free(demangled);
  return name;
}

uint64_t Symbolizer::FrameFor(uint64_t pc, trace::Interned* out, bool loader_free) {
  SymbolizerState& s = State();
  auto it = s.frame_ids.find(pc);
  if (it != s.frame_ids.end()) return it->second;
  if (python::IsFrameKey(pc)) {
    uint64_t id = python::FrameFor(pc, &s.next_frame, out);
    s.frame_ids.emplace(pc, id);
    return id;
  }
  // Return addresses point after the call: look up the call instruction itself.
  uintptr_t addr = pc > 0 ? pc - 1 : 0;
  ModuleInfo* m = s.Find(addr);
  if (m == nullptr) {
    if (loader_free) {
      m = s.FindWithoutLoader(addr);
    } else {
      s.Rescan();
      m = s.Find(addr);
    }
  }
  trace::Frame f;
  f.id = s.next_frame++;
  std::string fn = s.FunctionName(m, addr, loader_free);
  if (!fn.empty()) f.function = InternString(fn);
  if (m != nullptr) {
    f.module = InternPath(m->path, redact::PathKind::kProgram);
    f.rel_pc = addr - m->bias;
  } else {
    f.rel_pc = addr;
  }
  s.frame_ids.emplace(pc, f.id);
  out->frames.push_back(f);
  return f.id;
}

void Symbolizer::TakeNewModules(std::vector<trace::Module>* out, bool loader_free) {
  SymbolizerState& s = State();
  if (!loader_free && s.LoadedSetChanged()) s.Rescan();
  for (auto& m : s.modules) {
    if (m->emitted) continue;
    m->emitted = true;
    out->push_back(
        {InternPath(m->path, redact::PathKind::kProgram), m->bias, m->hi - m->lo, m->build_id});
  }
}

void Symbolizer::Reset() {
  SymbolizerState& s = State();
  s.frame_ids.clear();
  s.next_frame = 1;
  python::ResetFrames();
  for (auto& m : s.modules) m->emitted = false;
}

Symbolizer& WriterSymbolizer() {
  static Symbolizer symbolizer;
  return symbolizer;
}

}  // namespace idlescope::stacks

namespace idlescope {

namespace {
// The calling thread's previous capture, by a 128-bit hash of its frames: a hook called again and
// again from one call site (a training loop's copies, a writer's bursts) gets the same frames, so
// the id is known without walking the trie (24 lookups, ~0.3 us). initial-exec TLS, 24 bytes.
struct LastStack {
  uint64_t hash_a, hash_b;
  uint32_t id;
};
__thread LastStack t_last_stack __attribute__((tls_model("initial-exec"))) = {0, 0, 0};
}  // namespace

uint32_t CaptureStack(int skip) {
  using namespace stacks;  // NOLINT
  if (g_depth == 0 || g_slots == nullptr) return 0;
  int saved = errno;
  ++detail::t_hook_depth;
  uintptr_t pcs[kMaxDepth + 64];
  int want = static_cast<int>(g_depth) + skip + 8;
  if (want > kMaxDepth + 64) want = kMaxDepth + 64;
  int n = unwind::UsesCfiWalk() ? unwind::Backtrace(pcs, want, rings::ThreadWalkCache())
                                : BacktraceUnlessForking(pcs, want);
  // Find our caller's frame by its return address (how many frames of ours precede it depends on
  // inlining); then drop `skip` frames the caller asked to (the hook), then any frames still
  // inside the preload library (helpers of the hook).
  uintptr_t caller =
      reinterpret_cast<uintptr_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
  int first = 1;
  for (int i = 0; i < n && i < 8; ++i) {
    if (pcs[i] == caller) {
      first = i;
      break;
    }
  }
  first += skip > 0 ? skip : 0;
  while (first < n && pcs[first] >= g_self_lo && pcs[first] < g_self_hi) ++first;
  int last = std::min(n, first + static_cast<int>(g_depth));
  // A Python thread's own frames (python/pystacks.h), innermost first. They are part of the stack,
  // so of its hash: one native path serves many Python stacks.
  uint64_t py[python::kMaxFrames];
  const int python_frames = python::CaptureFrames(pcs, n, py, python::kMaxFrames);
  // The state those frames came from is the one the sampler reads, should the thread have a new
  // one (sampler.h).
  if (python_frames > 0) sampler::NoteThisThreadState();
  uint64_t hash_a = 0x243F6A8885A308D3ull ^ static_cast<uint64_t>(last - first) ^
                    static_cast<uint64_t>(python_frames) << 32;
  uint64_t hash_b = 0x13198A2E03707344ull;
  for (int i = first; i < last; ++i) {
    hash_a = (hash_a ^ pcs[i]) * 0x9E3779B97F4A7C15ull;
    hash_b = (hash_b + pcs[i]) * 0xC2B2AE3D27D4EB4Full;
    hash_b ^= hash_b >> 31;
  }
  for (int i = 0; i < python_frames; ++i) {
    hash_a = (hash_a ^ py[i]) * 0x9E3779B97F4A7C15ull;
    hash_b = (hash_b + py[i]) * 0xC2B2AE3D27D4EB4Full;
    hash_b ^= hash_b >> 31;
  }
  LastStack& prev = t_last_stack;
  if (prev.id != 0 && prev.hash_a == hash_a && prev.hash_b == hash_b) {
    --detail::t_hook_depth;
    errno = saved;
    return prev.id;
  }
  uint32_t node = 0;
  // Outermost frame first: the trie's root side is main(), so common prefixes are shared.
  bool full = false;
  for (int i = last - 1; i >= first; --i) {
    if (pcs[i] >= g_self_lo && pcs[i] < g_self_hi) continue;  // e.g. our __libc_start_main wrapper
    uint32_t child = Child(node, pcs[i]);
    if (child == 0) {
      full = true;
      break;
    }
    node = child;
  }
  // The Python frames below the native ones, outermost first (proto/trace.proto, StackNode).
  for (int i = full ? 0 : python_frames; i > 0; --i) {
    uint32_t child = Child(node, py[i - 1]);
    if (child == 0) break;
    node = child;
  }
  prev = {hash_a, hash_b, node};
  --detail::t_hook_depth;
  errno = saved;
  return node;
}

uint32_t InternPythonStack(const uint64_t* keys, int n) {
  using namespace stacks;  // NOLINT
  if (g_depth == 0 || g_slots == nullptr) return 0;
  uint32_t node = 0;
  for (int i = n; i > 0; --i) {  // outermost first, as CaptureStack's Python part
    node = Child(node, keys[i - 1]);
    // The trie is full: no stack rather than its outer frames, which would name a caller as the
    // line that computed.
    if (node == 0) return 0;
  }
  return node;
}

}  // namespace idlescope
