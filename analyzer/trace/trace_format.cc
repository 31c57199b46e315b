#include "analyzer/trace/trace_format.h"

#include <utility>
#include <vector>

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
         !e.has_correlation_delta() && !e.has_launches() && e.comm_id() == 0 &&
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
      return true;
    case Packet::kEvents:
      return ExpandEvents(packet->mutable_events(), error);
    default:
      return true;
  }
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

bool FormatExpander::ExpandEvents(EventBatch* batch, std::string* error) {
  auto* events = batch->mutable_events();
  // Check every run first: a corrupt batch is refused whole, not half expanded.
  int total = 0;
  bool runs = false;
  for (const Event& e : *events) {
    if (!e.has_launches()) {
      ++total;
      continue;
    }
    runs = true;
    const LaunchRun& r = e.launches();
    const int n = r.ts_size();
    const char* problem = nullptr;
    if (n == 0 || r.dur_size() != n) {
      problem = "its ts and dur columns differ in length";
    } else if (r.correlation_delta_size() != 0 && r.correlation_delta_size() != n) {
      problem = "its correlation column has the wrong length";
    } else if (r.site_size() != 0 && r.site_size() != n) {
      problem = "its site column has the wrong length";
    } else if (r.sites_size() == 0) {
      problem = "it has no site";
    } else {
      for (uint32_t s : r.site()) {
        if (s >= static_cast<uint32_t>(r.sites_size())) problem = "a site index is out of range";
      }
    }
    if (problem != nullptr) {
      *error = absl::StrFormat("event batch of thread %d (seq %d): a launch run is corrupt (%s)",
                               batch->tid(), batch->seq(), problem);
      return false;
    }
    total += n;
  }

  uint64_t correlation = 0;
  if (!runs) {
    for (Event& e : *events) ExpandEvent(&e, &correlation);
    return true;
  }
  // Rebuild the list in order: plain events move over, each run becomes its launches. Message
  // objects the field keeps from earlier packets (the reader reuses its Packet) are reused.
  std::vector<Event*> old(events->size());
  events->ExtractSubrange(0, events->size(), old.data());
  events->Reserve(total);
  for (Event* e : old) {
    if (!e->has_launches()) {
      ExpandEvent(e, &correlation);
      events->AddAllocated(e);
      continue;
    }
    const LaunchRun& r = e->launches();
    const bool correlated = r.correlation_delta_size() != 0;
    for (int k = 0; k < r.ts_size(); ++k) {
      const LaunchSite& site = r.sites(r.site_size() != 0 ? static_cast<int>(r.site(k)) : 0);
      Event* launch = events->Add();
      launch->set_type(CUDA_LAUNCH);
      launch->set_ts(r.ts(k));
      launch->set_dur(r.dur(k));
      launch->set_api(site.api());
      launch->set_stack(site.stack());
      launch->set_stream(site.stream());
      launch->set_device(site.device());
      launch->set_async(true);
      if (correlated) {
        correlation += static_cast<uint64_t>(r.correlation_delta(k));
        launch->set_correlation(correlation);
      }
    }
    ++launch_runs_;
    run_launches_ += static_cast<uint64_t>(r.ts_size());
    delete e;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing: v1 shape -> v2.

void FormatCompactor::Compact(Packet* packet, Interned* new_comms) {
  switch (packet->data_case()) {
    case Packet::kHeader:
      packet->mutable_header()->set_format_version(kTraceFormatVersion);
      return;
    case Packet::kEvents:
      CompactEvents(packet->mutable_events(), new_comms);
      return;
    default:
      return;
  }
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
      LaunchRun* r = holder->mutable_launches();
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

}  // namespace idlescope
