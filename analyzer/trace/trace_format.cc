#include "analyzer/trace/trace_format.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/unknown_field_set.h"

namespace idlescope {
namespace {

bool IsCuda(int type) { return type >= CUDA_MEMCPY && type <= CUDA_LAUNCH_SUMMARY; }

// The fields of a LaunchSite.
struct Site {
  uint64_t api, stream;
  uint32_t device;
  uint64_t stack;
  bool operator==(const Site&) const = default;
};

// The recorder's rule (interpose/trace_encoder.cc RunLaunch), on a v1-shaped Event: a launch that
// carries nothing but what a LaunchRun holds (`async` is implied either way).
bool RunLaunch(const Event& e) {
  return e.type() == CUDA_LAUNCH && e.result() == 0 && e.bytes() == 0 && e.count() == 0 &&
         e.ptr() == 0 && e.copy_kind() == 0 && e.host_mem() == 0 && e.path() == 0 &&
         e.fs_type() == 0 && e.fd() == 0 && e.offset() == 0 && e.nccl_op() == 0 &&
         e.nccl_dtype() == 0 && e.nccl_redop() == 0 && e.peer() == 0 && e.comm() == 0 &&
         e.rank() == 0 && e.nranks() == 0 && e.seq() == 0 && e.group_depth() == 0 &&
         e.child_pid() == 0 && e.argv() == 0 && e.net_scope() == 0 && e.parent_comm() == 0 &&
         !e.has_correlation_delta() && e.launches_size() == 0 && e.comm_id() == 0 &&
         e.parent_comm_id() == 0 && e.GetReflection()->GetUnknownFields(e).empty();
}

}  // namespace

bool AsyncByType(int type) {
  return type == CUDA_LAUNCH || type == CUDA_GRAPH_LAUNCH || type == NCCL_COLLECTIVE;
}

// ---------------------------------------------------------------------------------------------
// Reading: v2 -> v1 shape.

bool FormatExpander::Expand(Packet* packet, std::string* error) {
  if (version_ < 2) return true;
  switch (packet->data_case()) {
    case Packet::kInterned:
      for (const InternedComm& c : packet->interned().comms()) comms_[c.id()] = c.comm();
      return version_ < 3 || ExpandInterned(packet->mutable_interned(), error);
    case Packet::kEvents:
      return ExpandEvents(packet->mutable_events(), error);
    case Packet::kGpu:
      return ExpandActivities(packet->mutable_gpu(), error);
    default:
      return true;
  }
}

bool FormatExpander::ExpandInterned(Interned* interned, std::string* error) {
  // What the prefixes add, at most kMaxPrefixGrowth times the packet's own bytes: a prefix is a
  // few bytes that stand for up to kMaxPrefix (a path's directory typically takes 3-4 times its
  // tail and reference).
  constexpr uint64_t kMaxPrefixGrowth = 64;
  uint64_t added = 0, allowed = 0;
  for (InternedString& s : *interned->mutable_strings()) {
    if (s.prefix() != 0 || s.prefix_size() != 0) {
      if (allowed == 0) allowed = kMaxPrefixGrowth * interned->ByteSizeLong();
      added += s.prefix_size();
      if (s.prefix_size() > format::PathPrefixes::kMaxPrefix || added > allowed) {
        *error = absl::StrFormat("string %u starts with %u bytes of string %u: more than %s",
                                 s.id(), s.prefix_size(), s.prefix(),
                                 added > allowed ? "its packet may add"
                                                 : absl::StrCat(format::PathPrefixes::kMaxPrefix));
        return false;
      }
      auto it = prefix_strings_.find(s.prefix());
      if (it == prefix_strings_.end() || s.prefix_size() > it->second.size()) {
        *error = absl::StrFormat(
            "string %u starts with %u bytes of string %u, which %s", s.id(), s.prefix_size(),
            s.prefix(), it == prefix_strings_.end() ? "is not defined before it" : "is shorter");
        return false;
      }
      s.mutable_str()->insert(0, it->second, 0, s.prefix_size());
      s.clear_prefix();
      s.clear_prefix_size();
    }
    if (s.str().find('/') != std::string::npos) prefix_strings_.try_emplace(s.id(), s.str());
  }
  for (const StackChain& c : interned->stack_chains()) {
    if (c.frames_size() == 0) {
      *error = absl::StrFormat("stack chain %u has no frames", c.first());
      return false;
    }
    uint64_t parent = c.parent();
    for (int i = 0; i < c.frames_size(); ++i) {
      StackNode* n = interned->add_stack_nodes();
      n->set_id(c.first() + static_cast<uint64_t>(i));
      n->set_parent(parent);
      n->set_frame(c.frames(i));
      parent = n->id();
    }
  }
  interned->clear_stack_chains();
  return true;
}

uint64_t FormatExpander::Comm(uint64_t id) {
  if (id == 0) return 0;
  auto it = comms_.find(id);
  if (it != comms_.end()) return it->second;
  ++undefined_comm_ids_;
  return 0;
}

void FormatExpander::ExpandEvent(Event* e, uint64_t* correlation) {
  if (e->has_correlation_delta()) {
    *correlation += static_cast<uint64_t>(e->correlation_delta());
    e->set_correlation(*correlation);
    e->clear_correlation_delta();
  }
  if (AsyncByType(e->type())) e->set_async(true);
  if (e->comm_id() != 0) {
    e->set_comm(Comm(e->comm_id()));
    e->clear_comm_id();
  }
  if (e->parent_comm_id() != 0) {
    e->set_parent_comm(Comm(e->parent_comm_id()));
    e->clear_parent_comm_id();
  }
}

namespace {

// Checks a batch's runs (LaunchRun or KernelRun: `ts_size` is the first column's length) and
// counts the items the batch expands to. Returns the problem, or nullptr.
template <typename Run>
const char* CheckRun(const Run& r, int n) {
  if (n == 0 || r.dur_size() != n) return "its time and dur columns differ in length";
  if (r.correlation_delta_size() != 0 && r.correlation_delta_size() != n) {
    return "its correlation column has the wrong length";
  }
  if (r.site_size() != 0 && r.site_size() != n) return "its site column has the wrong length";
  if (r.sites_size() == 0) return "it has no site";
  for (uint32_t s : r.site()) {
    if (s >= static_cast<uint32_t>(r.sites_size())) return "a site index is out of range";
  }
  return nullptr;
}

// A batch's items (Events or GpuActivities) expanded in place, without allocating once the
// reader's Packet has held a batch as large: the field grows to its final size with the message
// objects it kept from earlier packets, then items are placed from the back. A plain item is
// expanded and moved (pointer swap) to its slot; a run holder's elements are written into the
// free objects of their slots, the first one into `scratch`, which is then swapped with the holder
// (the holder's runs stay with `scratch`, cleared, for reuse). `correlations[i]`: the batch's
// running correlation id before item i (the chain goes forward, this pass backward).
//   runs_of(item): its runs; fill(target, run, k, &correlation): element k of a run into a cleared
//   item; plain(item, correlation): expands a plain item.
template <typename Item, typename RunsOf, typename Fill, typename Plain>
void ExpandInPlace(google::protobuf::RepeatedPtrField<Item>* items, int total,
                   const std::vector<uint64_t>& correlations, Item* scratch, RunsOf runs_of,
                   Fill fill, Plain plain) {
  const int n = items->size();
  for (int k = n; k < total; ++k) items->Add();
  int w = total - 1;  // the last slot not yet filled; the objects in slots (i, w] are free
  for (int i = n - 1; i >= 0; --i) {
    Item* item = items->Mutable(i);
    const auto& runs = runs_of(*item);
    if (runs.empty()) {
      plain(item, correlations[i]);
      items->SwapElements(i, w--);
      continue;
    }
    int m = 0;
    for (const auto& r : runs) m += r.dur_size();
    const int first = w - m + 1;  // >= i: the items before i take at least i slots
    uint64_t correlation = correlations[i];
    int j = 0;
    for (const auto& r : runs) {
      for (int k = 0; k < r.dur_size(); ++k, ++j) {
        fill(j == 0 ? scratch : items->Mutable(first + j), r, k, &correlation);
      }
    }
    item->Swap(scratch);
    scratch->Clear();
    items->SwapElements(i, first);
    w = first - 1;
  }
}

}  // namespace

bool FormatExpander::ExpandEvents(EventBatch* batch, std::string* error) {
  auto* events = batch->mutable_events();
  // Check every run, count, and chain the correlation ids forward first: a corrupt batch is
  // refused whole, not half expanded.
  const int n = events->size();
  correlations_.resize(static_cast<size_t>(n));
  int total = 0;
  bool runs = false;
  uint64_t correlation = 0;
  for (int i = 0; i < n; ++i) {
    const Event& e = events->Get(i);
    correlations_[static_cast<size_t>(i)] = correlation;
    if (e.launches_size() == 0) {
      ++total;
      if (e.has_correlation_delta()) correlation += static_cast<uint64_t>(e.correlation_delta());
      continue;
    }
    runs = true;
    for (const LaunchRun& r : e.launches()) {
      if (const char* problem = CheckRun(r, r.ts_size())) {
        *error = absl::StrFormat("event batch of thread %d (seq %d): a launch run is corrupt (%s)",
                                 batch->tid(), batch->seq(), problem);
        return false;
      }
      total += r.ts_size();
      for (int64_t d : r.correlation_delta()) correlation += static_cast<uint64_t>(d);
      ++launch_runs_;
      run_launches_ += static_cast<uint64_t>(r.ts_size());
    }
  }
  auto plain = [this](Event* e, uint64_t correlation) { ExpandEvent(e, &correlation); };
  if (!runs || keep_runs_) {
    for (int i = 0; i < n; ++i) {
      Event* e = events->Mutable(i);
      const uint64_t before = correlations_[static_cast<size_t>(i)];
      if (e->launches_size() == 0) {
        plain(e, before);
      } else {
        e->set_correlation(before);
      }
    }
    return true;
  }
  ExpandInPlace(
      events, total, correlations_, &scratch_event_,
      [](const Event& e) -> const auto& { return e.launches(); },
      [](Event* launch, const LaunchRun& r, int k, uint64_t* correlation) {
        const LaunchSite& site = r.sites(r.site_size() != 0 ? static_cast<int>(r.site(k)) : 0);
        launch->set_type(CUDA_LAUNCH);
        launch->set_ts(r.ts(k));
        launch->set_dur(r.dur(k));
        launch->set_api(site.api());
        launch->set_stack(site.stack());
        launch->set_stream(site.stream());
        launch->set_device(site.device());
        launch->set_async(true);
        if (r.correlation_delta_size() != 0) {
          *correlation += static_cast<uint64_t>(r.correlation_delta(k));
          launch->set_correlation(*correlation);
        }
      },
      plain);
  return true;
}

bool FormatExpander::ExpandActivities(GpuBatch* batch, std::string* error) {
  auto* activities = batch->mutable_activities();
  const int n = activities->size();
  correlations_.resize(static_cast<size_t>(n));
  int total = 0;
  bool runs = false;
  uint64_t correlation = 0;
  for (int i = 0; i < n; ++i) {
    const GpuActivity& a = activities->Get(i);
    correlations_[static_cast<size_t>(i)] = correlation;
    if (a.kernels_size() == 0) {
      ++total;
      if (a.has_correlation_delta()) correlation += static_cast<uint64_t>(a.correlation_delta());
      continue;
    }
    runs = true;
    for (const KernelRun& r : a.kernels()) {
      if (const char* problem = CheckRun(r, r.start_size())) {
        *error = absl::StrFormat("GPU batch: a kernel run is corrupt (%s)", problem);
        return false;
      }
      total += r.start_size();
      for (int64_t d : r.correlation_delta()) correlation += static_cast<uint64_t>(d);
      ++kernel_runs_;
      run_kernels_ += static_cast<uint64_t>(r.start_size());
    }
  }
  auto plain = [](GpuActivity* a, uint64_t correlation) {
    if (!a->has_correlation_delta()) return;
    a->set_correlation(correlation + static_cast<uint64_t>(a->correlation_delta()));
    a->clear_correlation_delta();
  };
  if (!runs || keep_runs_) {
    for (int i = 0; i < n; ++i) {
      GpuActivity* a = activities->Mutable(i);
      const uint64_t before = correlations_[static_cast<size_t>(i)];
      if (a->kernels_size() == 0) {
        plain(a, before);
      } else {
        a->set_correlation(before);
      }
    }
    return true;
  }
  ExpandInPlace(
      activities, total, correlations_, &scratch_activity_,
      [](const GpuActivity& a) -> const auto& { return a.kernels(); },
      [](GpuActivity* kernel, const KernelRun& r, int k, uint64_t* correlation) {
        const KernelSite& site = r.sites(r.site_size() != 0 ? static_cast<int>(r.site(k)) : 0);
        kernel->set_kind(GPU_KERNEL);
        kernel->set_start(r.start(k));
        kernel->set_dur(r.dur(k));
        kernel->set_device(site.device());
        kernel->set_stream(site.stream());
        kernel->set_name(site.name());
        kernel->set_grid(site.grid());
        kernel->set_block(site.block());
        kernel->set_nccl(site.nccl());
        kernel->set_graph(site.graph());
        kernel->set_shared_mem(site.shared_mem());
        kernel->set_registers(site.registers());
        if (r.correlation_delta_size() != 0) {
          *correlation += static_cast<uint64_t>(r.correlation_delta(k));
          kernel->set_correlation(*correlation);
        }
      },
      plain);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing: v1 shape -> v2.

void FormatCompactor::Compact(Packet* packet, Interned* new_comms) {
  switch (packet->data_case()) {
    case Packet::kHeader:
      packet->mutable_header()->set_format_version(version_);
      return;
    case Packet::kInterned:
      if (version_ >= 3) CompactInterned(packet->mutable_interned());
      return;
    case Packet::kEvents:
      CompactEvents(packet->mutable_events(), new_comms);
      return;
    case Packet::kGpu:
      CompactActivities(packet->mutable_gpu());
      return;
    default:
      return;
  }
}

// Mirrors trace::EncodeInterned (interpose/trace_encoder.cc), with the same rules.
void FormatCompactor::CompactInterned(Interned* interned) {
  for (InternedString& s : *interned->mutable_strings()) {
    format::Prefix prefix = prefixes_.Define(s.id(), s.str());
    if (prefix.id == 0) continue;
    s.mutable_str()->erase(0, prefix.size);
    s.set_prefix(prefix.id);
    s.set_prefix_size(prefix.size);
  }
  const auto& nodes = interned->stack_nodes();
  for (int i = 0, n = nodes.size(); i < n;) {
    StackChain* c = interned->add_stack_chains();
    c->set_first(nodes[i].id());
    c->set_parent(nodes[i].parent());
    int end = i;
    do {
      c->add_frames(nodes[end].frame());
      ++end;
    } while (end < n &&
             format::ContinuesChain(nodes[end - 1].id(), nodes[end].id(), nodes[end].parent()));
    i = end;
  }
  interned->clear_stack_nodes();
}

uint64_t FormatCompactor::CommId(uint64_t comm, Interned* new_comms) {
  if (comm == 0) return 0;
  auto [it, inserted] = comm_ids_.try_emplace(comm, comm_ids_.size() + 1);
  if (inserted) {
    InternedComm* c = new_comms->add_comms();
    c->set_id(it->second);
    c->set_comm(comm);
  }
  return it->second;
}

// Mirrors trace::EventBatchEncoder (interpose/trace_encoder.cc) rule for rule.
void FormatCompactor::CompactEvents(EventBatch* batch, Interned* new_comms) {
  auto* events = batch->mutable_events();
  std::vector<Event*> old(events->size());
  events->ExtractSubrange(0, events->size(), old.data());

  uint64_t prev_correlation = 0;
  std::vector<Event*> run;  // collected launches, already in v2 form
  std::vector<Site> sites;
  std::vector<uint32_t> site_of;
  bool run_correlated = false;
  auto flush_run = [&] {
    if (run.size() == 1) events->AddAllocated(run[0]);
    if (run.size() >= 2) {
      Event* holder = events->Add();
      LaunchRun* r = holder->add_launches();
      for (size_t k = 0; k < run.size(); ++k) {
        r->add_ts(run[k]->ts());
        r->add_dur(run[k]->dur());
        if (run_correlated) r->add_correlation_delta(run[k]->correlation_delta());
        if (sites.size() > 1) r->add_site(site_of[k]);
        delete run[k];
      }
      for (const Site& s : sites) {
        LaunchSite* site = r->add_sites();
        site->set_api(s.api);
        site->set_stream(s.stream);
        site->set_device(s.device);
        site->set_stack(s.stack);
      }
    }
    run.clear();
    sites.clear();
    site_of.clear();
  };

  for (Event* e : old) {
    const bool launch = RunLaunch(*e);
    if (IsCuda(e->type()) && e->correlation() != 0) {
      e->set_correlation_delta(static_cast<int64_t>(e->correlation() - prev_correlation));
      prev_correlation = e->correlation();
    }
    e->clear_correlation();
    if (AsyncByType(e->type())) e->clear_async();
    if (e->comm() != 0) e->set_comm_id(CommId(e->comm(), new_comms));
    if (e->parent_comm() != 0) e->set_parent_comm_id(CommId(e->parent_comm(), new_comms));
    e->clear_comm();
    e->clear_parent_comm();
    if (!launch) {
      flush_run();
      events->AddAllocated(e);
      continue;
    }
    const Site site{e->api(), e->stream(), e->device(), e->stack()};
    const bool correlated = e->has_correlation_delta();
    size_t index = 0;
    while (index < sites.size() && !(sites[index] == site)) ++index;
    if (!run.empty() &&
        (correlated != run_correlated || (index == sites.size() && index == kMaxLaunchSites))) {
      flush_run();
      index = 0;
    }
    if (run.empty()) run_correlated = correlated;
    if (index == sites.size()) sites.push_back(site);
    site_of.push_back(static_cast<uint32_t>(index));
    run.push_back(e);
  }
  flush_run();
}

// Mirrors trace::GpuBatchEncoder (interpose/trace_encoder.cc) rule for rule.
void FormatCompactor::CompactActivities(GpuBatch* batch) {
  auto* activities = batch->mutable_activities();
  std::vector<GpuActivity*> old(activities->size());
  activities->ExtractSubrange(0, activities->size(), old.data());

  uint64_t prev_correlation = 0;
  std::vector<GpuActivity*> run;   // collected kernels, already in v2 form
  std::vector<std::string> sites;  // each site as its serialized KernelSite
  std::vector<uint32_t> site_of;
  bool run_correlated = false;
  auto flush_run = [&] {
    if (run.size() == 1) activities->AddAllocated(run[0]);
    if (run.size() >= 2) {
      KernelRun* r = activities->Add()->add_kernels();
      for (size_t k = 0; k < run.size(); ++k) {
        r->add_start(run[k]->start());
        r->add_dur(run[k]->dur());
        if (run_correlated) r->add_correlation_delta(run[k]->correlation_delta());
        if (sites.size() > 1) r->add_site(site_of[k]);
        delete run[k];
      }
      for (const std::string& s : sites) r->add_sites()->ParseFromString(s);
    }
    run.clear();
    sites.clear();
    site_of.clear();
  };

  for (GpuActivity* a : old) {
    // A kernel record a KernelRun can hold: nothing but the columns and a site's fields.
    const bool kernel = a->kind() == GPU_KERNEL && a->bytes() == 0 && a->copy_kind() == 0 &&
                        a->src_kind() == 0 && a->dst_kind() == 0 && a->dst_device() == 0 &&
                        !a->has_correlation_delta() && a->kernels_size() == 0 &&
                        a->GetReflection()->GetUnknownFields(*a).empty();
    if (a->correlation() != 0) {
      a->set_correlation_delta(static_cast<int64_t>(a->correlation() - prev_correlation));
      prev_correlation = a->correlation();
    }
    a->clear_correlation();
    if (!kernel) {
      flush_run();
      activities->AddAllocated(a);
      continue;
    }
    KernelSite site;
    site.set_device(a->device());
    site.set_stream(a->stream());
    site.set_name(a->name());
    site.set_grid(a->grid());
    site.set_block(a->block());
    site.set_nccl(a->nccl());
    site.set_graph(a->graph());
    site.set_shared_mem(a->shared_mem());
    site.set_registers(a->registers());
    const std::string key = site.SerializeAsString();
    const bool correlated = a->has_correlation_delta();
    size_t index = 0;
    while (index < sites.size() && sites[index] != key) ++index;
    if (!run.empty() &&
        (correlated != run_correlated || (index == sites.size() && index == kMaxKernelSites))) {
      flush_run();
      index = 0;
    }
    if (run.empty()) run_correlated = correlated;
    if (index == sites.size()) sites.push_back(key);
    site_of.push_back(static_cast<uint32_t>(index));
    run.push_back(a);
  }
  flush_run();
}

}  // namespace idlescope
