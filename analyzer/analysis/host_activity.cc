#include "analyzer/analysis/host_activity.h"

#include <algorithm>
#include <tuple>

#include "analyzer/model/labels.h"

namespace idlescope {

HostActivity::HostActivity(size_t top) : top_(top), tables_(kHostActivityKindCount) {}
HostActivity::~HostActivity() = default;
HostActivity::HostActivity(HostActivity&&) noexcept = default;
HostActivity& HostActivity::operator=(HostActivity&&) noexcept = default;

std::optional<HostActivityKind> ActivityKindOf(const HostEvent& e, EventClass event_class) {
  switch (e.type) {
    case PROC_EXEC:
    case PROC_SPAWN:
      return HostActivityKind::kPrograms;
    case FILE_WRITE:
    case FILE_SYNC:
    case FILE_RENAME:
    case FILE_CLOSE:
    case FILE_COPY:
      if (event_class == EventClass::kCheckpointWrite) {
        return HostActivityKind::kCheckpointWrites;
      } else if (e.type == FILE_CLOSE && !IsRemoteFs(e.fs_type)) {
        return std::nullopt;  // closing a local file does not block (see ClassifyHostEvent)
      } else if (e.fs_type == FS_SOCKET &&
                 (e.net_scope == NET_PRIVATE || e.net_scope == NET_PUBLIC)) {
        return HostActivityKind::kNetwork;
      } else if (e.fs_type == FS_PIPE || e.fs_type == FS_SOCKET) {
        return HostActivityKind::kIpc;
      } else {
        return HostActivityKind::kWrites;
      }
      break;
    case FILE_READ:
      if (event_class == EventClass::kTerminalRead) {
        return HostActivityKind::kTerminal;
      } else if (event_class == EventClass::kReadWorkerQueue ||
                 event_class == EventClass::kStdinPipe) {
        return HostActivityKind::kIpc;
      } else if (event_class == EventClass::kPeerRecv || event_class == EventClass::kDownload) {
        // A socket whose peer is known (docs/attribution.md, "Who is at the other end").
        return e.net_scope == NET_PRIVATE || e.net_scope == NET_PUBLIC ? HostActivityKind::kNetwork
                                                                       : HostActivityKind::kIpc;
      } else {
        return HostActivityKind::kReads;
      }
      break;
    case NET_CONNECT:
    case NET_RECV:
    case NET_SEND:
      return e.net_scope == NET_PRIVATE || e.net_scope == NET_PUBLIC ? HostActivityKind::kNetwork
                                                                     : HostActivityKind::kIpc;
    case WAIT:
      // A wait on a terminal, pipes or sockets is the read it waits for; any other is idling.
      if (IsTerminalEvent(e)) return HostActivityKind::kTerminal;
      if (IsIdleWait(e)) return HostActivityKind::kIdleWaits;
      return e.net_scope == NET_PRIVATE || e.net_scope == NET_PUBLIC ? HostActivityKind::kNetwork
                                                                     : HostActivityKind::kIpc;
    default:
      return std::nullopt;
  }
}

void HostActivity::MoveToCheckpointWrites(std::span<const EvidenceKey> writes) {
  Table& from = tables_[static_cast<size_t>(HostActivityKind::kWrites)];
  Table& to = tables_[static_cast<size_t>(HostActivityKind::kCheckpointWrites)];
  for (const EvidenceKey& key : writes) {
    auto it = from.items.find(key);
    if (it == from.items.end()) continue;
    const Table::Weight w = it->second;
    from.items.erase(it);
    from.ns -= w.ns;
    from.bytes -= std::min(from.bytes, w.bytes);
    from.count -= std::min(from.count, w.count);
    from.main_ns -= w.main_ns;
    to.ns += w.ns;
    to.bytes += w.bytes;
    to.count += w.count;
    to.main_ns += w.main_ns;
    Table::Weight& into = to.Item(key);
    into.ns += w.ns;
    into.bytes += w.bytes;
    into.count += w.count;
    into.main_ns += w.main_ns;
    if (w.longest > into.longest) {
      into.longest = w.longest;
      into.tid = w.tid;
      into.main_thread = w.main_thread;
      into.stack = w.stack;
      into.fs = w.fs;
    }
  }
}

void HostActivity::Note(const HostEvent& e, EventClass event_class, bool main_thread) {
  std::optional<HostActivityKind> activity = ActivityKindOf(e, event_class);
  if (!activity) return;
  const HostActivityKind kind = *activity;
  // A wait (but on a terminal) counts where it keeps a GPU or a process waiting: on a thread that
  // feeds a GPU, or a main thread (a job that only sleeps). Every library's helper threads wait
  // in their loops.
  if (e.type == WAIT && kind != HostActivityKind::kTerminal && e.device < 0 && !main_thread) {
    return;
  }
  Ns ns = std::max<Ns>(e.end - e.start, 0);
  uint64_t calls = std::max<uint64_t>(e.count, 1);
  if (kind == HostActivityKind::kReads) {
    if (e.process >= reads_.size()) reads_.resize(e.process + 1);
    FileReads& r = reads_[e.process];
    r.reads += calls;
    r.bytes += e.bytes;
    r.ns += ns;
  }
  Table& table = tables_[static_cast<size_t>(kind)];
  table.ns += ns;
  table.bytes += e.bytes;
  table.count += calls;
  if (main_thread) table.main_ns += ns;
  // Idle waits by the call (nanosleep, epoll_wait), the others by what they name (a file, a peer).
  Table::Weight& w =
      table.Item({e.process, kind == HostActivityKind::kIdleWaits ? e.api_id : e.path_id});
  w.ns += ns;
  w.bytes += e.bytes;
  w.count += calls;
  if (main_thread) w.main_ns += ns;
  if (ns > w.longest) {
    w.longest = ns;
    w.tid = e.tid;
    w.main_thread = main_thread;
    if (e.stack != 0) w.stack = e.stack;
    w.fs = e.fs_type;
  }
  if (kind == HostActivityKind::kPrograms && w.label.empty()) {
    w.label = ProgramLabel(e.path, e.argv);
    w.installer = event_class == EventClass::kInstaller;
  }
}

void HostActivity::MergeFrom(const HostActivity& other) {
  for (size_t k = 0; k < tables_.size() && k < other.tables_.size(); ++k) {
    Table& table = tables_[k];
    const Table& from = other.tables_[k];
    table.ns += from.ns;
    table.bytes += from.bytes;
    table.count += from.count;
    table.main_ns += from.main_ns;
    table.evicted = table.evicted || from.evicted;
    for (const auto& [key, w] : from.items) {
      Table::Weight& into = table.Item(key);
      into.ns += w.ns;
      into.bytes += w.bytes;
      into.count += w.count;
      into.main_ns += w.main_ns;
      if (w.longest > into.longest) {
        into.longest = w.longest;
        into.tid = w.tid;
        into.main_thread = w.main_thread;
        if (w.stack != 0) into.stack = w.stack;
        into.fs = w.fs;
      }
      if (into.label.empty()) {
        into.label = w.label;
        into.installer = w.installer;
      }
    }
  }
  for (uint32_t p = 0; p < other.reads_.size(); ++p) {
    const FileReads& r = other.reads_[p];
    if (r.reads == 0 && r.bytes == 0 && r.ns == 0) continue;
    if (p >= reads_.size()) reads_.resize(p + 1);
    reads_[p].reads += r.reads;
    reads_[p].bytes += r.bytes;
    reads_[p].ns += r.ns;
  }
}

HostActivityReport HostActivity::Build(const JobProcesses& processes,
                                       EvidenceResolver& evidence) const {
  HostActivityReport report;
  // Programs that ran as traced processes of the job: children that exec'd (not forked copies)
  // count with their run time, merged with the exec/spawn calls that started them by command line.
  struct Ran {
    std::string label;
    const JobProcess* process;
  };
  std::vector<Ran> programs;
  for (uint32_t i = 0; i < processes.size(); ++i) {
    const JobProcess* p = &processes[i];
    const JobProcess* parent = processes.ImageParent(i);
    if (parent == nullptr) continue;
    // Workers (BuildFamilies): forked, same program, not exec'd since.
    if (p->worker) {
      WorkerProcess w;
      w.pid = p->info.pid;
      w.ppid = p->info.ppid;
      w.lifetime_ns = p->End() - p->info.start;
      if (i < reads_.size()) {
        w.reads = reads_[i].reads;
        w.read_bytes = reads_[i].bytes;
        w.read_ns = reads_[i].ns;
      }
      report.workers_with_reads += w.reads > 0;
      report.workers.push_back(w);
    } else if (!p->info.forked || p->info.exe != parent->info.exe ||
               p->info.cmdline != parent->info.cmdline) {
      // (A forked copy of its parent that exec'd is counted by its exec'd twin.)
      programs.push_back({CommandLabel(p->info), p});
    }
  }
  std::sort(report.workers.begin(), report.workers.end(),
            [](const WorkerProcess& a, const WorkerProcess& b) { return a.pid < b.pid; });

  for (int k = 0; k < kHostActivityKindCount; ++k) {
    const HostActivityKind kind = static_cast<HostActivityKind>(k);
    const Table& table = tables_[static_cast<size_t>(k)];
    HostActivityGroup group;
    group.kind = kind;
    group.ns = table.ns;
    group.bytes = table.bytes;
    group.count = table.count;
    group.main_thread_ns = table.main_ns;
    group.approximate = table.evicted;
    // The heaviest items, merged across processes by what they name (ids are per file).
    std::vector<std::pair<EvidenceKey, const Table::Weight*>> heaviest;
    for (const auto& [key, w] : table.items) heaviest.push_back({key, &w});
    auto heavier = [](const auto& a, const auto& b) {
      if (a.second->ns != b.second->ns) return a.second->ns > b.second->ns;
      if (a.second->bytes != b.second->bytes) return a.second->bytes > b.second->bytes;
      return std::tie(a.first.process, a.first.id) < std::tie(b.first.process, b.first.id);
    };
    size_t n = std::min(heaviest.size(), top_ * 8);
    std::partial_sort(heaviest.begin(), heaviest.begin() + static_cast<ptrdiff_t>(n),
                      heaviest.end(), heavier);
    heaviest.resize(n);
    absl::flat_hash_map<StringId, size_t> index;
    std::vector<Ns> longest;
    std::vector<absl::flat_hash_set<uint32_t>> pids;
    auto item_for = [&](StringId what) -> size_t {
      auto [it, inserted] = index.try_emplace(what, group.items.size());
      if (inserted) {
        group.items.push_back({});
        group.items.back().what = what;
        longest.push_back(-1);
        pids.emplace_back();
      }
      return it->second;
    };
    for (const auto& [key, w] : heaviest) {
      const JobProcess& p = processes[key.process];
      StringId what = kind == HostActivityKind::kPrograms ? evidence.Intern(w->label)
                      : key.id != 0                       ? evidence.String(key.process, key.id)
                                                          : 0;
      size_t i = item_for(what);
      HostActivityItem& item = group.items[i];
      item.ns += w->ns;
      item.bytes += w->bytes;
      item.count += w->count;
      item.main_thread_ns += w->main_ns;
      item.installer = item.installer || w->installer;
      pids[i].insert(p.info.pid);
      if (w->longest > longest[i]) {
        longest[i] = w->longest;
        item.pid = p.info.pid;
        item.tid = w->tid;
        item.main_thread = w->main_thread;
        item.fs_type = w->fs;
        item.stack = w->stack != 0 ? evidence.Stack(key.process, w->stack) : 0;
      }
    }
    if (kind == HostActivityKind::kPrograms) {
      for (const Ran& ran : programs) {
        Ns ran_ns = ran.process->End() - ran.process->info.start;
        size_t i = item_for(evidence.Intern(ran.label));
        HostActivityItem& item = group.items[i];
        item.ns += ran_ns;
        item.count += item.count == 0;  // traced, though its start was not
        item.installer = item.installer || ran.process->installer;
        pids[i].insert(ran.process->info.pid);
        if (item.pid == 0) item.pid = ran.process->info.pid;
        group.ns += ran_ns;
        group.count += 1;
      }
    }
    for (size_t i = 0; i < group.items.size(); ++i) {
      group.items[i].processes = static_cast<uint32_t>(pids[i].size());
    }
    const ReportSymbols& names = evidence.symbols();
    std::sort(group.items.begin(), group.items.end(),
              [&](const HostActivityItem& a, const HostActivityItem& b) {
                if (a.ns != b.ns) return a.ns > b.ns;
                if (a.bytes != b.bytes) return a.bytes > b.bytes;
                return ItemLabel(a.what, names) < ItemLabel(b.what, names);
              });
    if (group.items.size() > top_) group.items.resize(top_);
    if (group.count > 0 || !group.items.empty()) report.groups.push_back(std::move(group));
  }
  return report;
}

// A job without GPU work: its no_gpu_work cause points at what the job's threads did instead
// (docs/attribution.md, "Host activity"): the heaviest host activity items, and one note per kind.
void PointAtHostActivity(const HostActivityReport& host, size_t top, CauseReport& r) {
  struct Heavy {
    const HostActivityGroup* group;
    const HostActivityItem* item;
  };
  std::vector<Heavy> heavy;
  std::vector<const HostActivityGroup*> groups;
  // Pipes and sockets only say "waiting for another process", idle waits "waiting": they are
  // evidence only when nothing else is.
  auto waiting_only = [](const HostActivityGroup& g) {
    return g.kind == HostActivityKind::kIpc || g.kind == HostActivityKind::kIdleWaits;
  };
  bool something_else = false;
  for (const HostActivityGroup& g : host.groups) {
    groups.push_back(&g);
    something_else = something_else || !waiting_only(g);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto* a, const auto* b) { return a->ns > b->ns; });
  for (const HostActivityGroup* g : groups) {
    Finding f{
        .kind = FindingKind::kHostActivity, .ns = g->ns, .bytes = g->bytes, .count = g->count};
    f.activity = g->kind;
    r.findings.push_back(f);
    if (waiting_only(*g) && something_else) continue;
    for (const HostActivityItem& item : g->items) heavy.push_back({g, &item});
  }
  if (!host.workers.empty()) {
    Finding f{.kind = FindingKind::kWorkerProcesses, .count = host.workers.size()};
    f.other_count = host.workers_with_reads;
    for (const WorkerProcess& w : host.workers) {
      f.calls += w.reads;
      f.bytes += w.read_bytes;
    }
    r.findings.push_back(f);
  }
  std::stable_sort(heavy.begin(), heavy.end(),
                   [](const Heavy& a, const Heavy& b) { return a.item->ns > b.item->ns; });
  for (const Heavy& h : heavy) {
    if (r.objects.size() >= top) break;
    EvidenceItem object{.kind = EvidenceKind::kHostActivity, .id = h.item->what};
    object.activity = h.group->kind;
    object.ns = h.item->ns;
    object.bytes = h.item->bytes;
    object.count = h.item->count;
    r.objects.push_back(object);
    if (h.item->stack == 0) continue;
    auto same = [&](const EvidenceItem& e) {
      return e.kind == EvidenceKind::kStack && e.id == h.item->stack;
    };
    auto it = std::find_if(r.stacks.begin(), r.stacks.end(), same);
    if (it == r.stacks.end()) {
      EvidenceItem stack{.kind = EvidenceKind::kStack, .id = h.item->stack};
      stack.ns = h.item->ns;
      stack.bytes = h.item->bytes;
      stack.count = h.item->count;
      r.stacks.push_back(stack);
    } else {
      it->ns += h.item->ns;
      it->bytes += h.item->bytes;
      it->count += h.item->count;
    }
  }
}

}  // namespace idlescope
