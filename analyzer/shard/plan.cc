#include "analyzer/shard/plan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/read/clock_alignment.h"
#include "analyzer/read/file_end.h"
#include "analyzer/read/job_reader.h"
#include "analyzer/read/socket_addresses.h"
#include "analyzer/shard/integrity.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {
namespace {

ProcessEnd EndingOf(const shard::Ending& e) {
  ProcessEnd end;
  end.reason =
      ExitReason_IsValid(e.reason()) ? static_cast<ExitReason>(e.reason()) : EXIT_UNSPECIFIED;
  end.status = e.status();
  end.at = e.at();
  end.stack = e.stack();
  end.drove_gpu = e.drove_gpu();
  return end;
}

shard::Process ToMessage(const ProcessInfo& info) {
  shard::Process p;
  p.set_pid(info.pid);
  p.set_ppid(info.ppid);
  p.set_host(info.host);
  p.set_boot_id(info.boot_id);
  p.set_exe(info.exe);
  p.set_cmdline(info.cmdline);
  p.set_rank(info.rank);
  p.set_start(info.start);
  p.set_cuda_visible_devices(info.cuda_visible_devices);
  p.set_main_tid(info.main_tid);
  p.set_forked(info.forked);
  p.set_realtime_at_zero(info.realtime_at_zero);
  shard::Ending* ending = p.mutable_ending();
  ending->set_reason(info.ending.reason);
  ending->set_status(info.ending.status);
  ending->set_at(info.ending.at);
  ending->set_stack(info.ending.stack);
  ending->set_drove_gpu(info.ending.drove_gpu);
  return p;
}

// The shards of the job's processes (plan.h says which process goes where).
void PlanShards(const std::vector<ProcessInfo>& infos, shard::Plan& plan) {
  JobProcesses processes;
  for (const ProcessInfo& info : infos) processes.Add(info);
  processes.BuildFamilies();
  const uint32_t n = static_cast<uint32_t>(infos.size());
  // The rank of each process's outermost ranked ancestor (itself included), -1 for none.
  std::vector<int32_t> root(n, -1);
  for (uint32_t i = 0; i < n; ++i) {
    int64_t at = i;
    for (uint32_t hops = 0; hops <= n && at >= 0; ++hops) {
      if (processes[static_cast<uint32_t>(at)].info.rank >= 0) {
        root[i] = processes[static_cast<uint32_t>(at)].info.rank;
      }
      at = processes[static_cast<uint32_t>(at)].parent;
    }
  }
  // One shard per root rank, by rank; the processes without one first, when there are any.
  std::map<int32_t, uint32_t> shard_of_rank;
  for (uint32_t i = 0; i < n; ++i) shard_of_rank.try_emplace(root[i], 0);
  uint32_t next = 0;
  for (auto& [rank, shard] : shard_of_rank) shard = next++;
  std::vector<std::vector<uint32_t>> owned(next), guests(next);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t home = shard_of_rank[root[i]];
    owned[home].push_back(i);
    plan.mutable_files(static_cast<int>(i))->set_owner(home);
    const JobProcess& p = processes[i];
    if (p.in_installer) {
      // An installer's time explains every device (docs/attribution.md, "Library installation").
      for (uint32_t s = 0; s < next; ++s) {
        if (s != home) guests[s].push_back(i);
      }
    } else if (root[i] < 0) {
      // A launcher explains the devices of the ranks it started: its ranked descendants' shards.
      std::vector<uint32_t> shards;
      for (uint32_t j : p.family) {
        if (root[j] < 0) continue;
        int64_t up = processes[j].parent;
        bool descendant = false;
        for (uint32_t hops = 0; hops <= n && up >= 0 && !descendant; ++hops) {
          descendant = up == i;
          up = processes[static_cast<uint32_t>(up)].parent;
        }
        if (descendant) shards.push_back(shard_of_rank[root[j]]);
      }
      std::sort(shards.begin(), shards.end());
      shards.erase(std::unique(shards.begin(), shards.end()), shards.end());
      for (uint32_t s : shards) guests[s].push_back(i);
    }
  }
  for (uint32_t s = 0; s < next; ++s) {
    shard::Shard* shard = plan.add_shards();
    for (uint32_t i : owned[s]) shard->add_owned(i);
    for (uint32_t i : guests[s]) shard->add_guests(i);
  }
}

}  // namespace

shard::FileIndex IndexFile(const TraceInput& input, bool align, bool identify) {
  shard::FileIndex index;
  index.set_path(input.path);
  index.set_listed(input.listed);
  // The identity first: whatever changes after it, while the file is indexed or later, a map sees.
  if (identify) {
    absl::StatusOr<shard::FileIdentity> identity = IdentifyFile(input.path);
    if (!identity.ok()) {
      index.set_why(std::string(identity.status().message()));
      return index;
    }
    *index.mutable_identity() = *identity;
  }
  struct stat st;
  if (index.has_identity()) {
    index.set_size(index.identity().size());
  } else if (stat(input.path.c_str(), &st) == 0) {
    index.set_size(static_cast<uint64_t>(st.st_size));
  }
  absl::StatusOr<std::unique_ptr<TraceFileReader>> reader =
      TraceFileReader::Open(input.path, 64 << 10);
  if (!reader.ok()) {
    index.set_why(std::string(reader.status().message()));
    return index;
  }
  index.set_readable(true);
  *index.mutable_header() = (*reader)->header();
  reader->reset();
  const ProcessEnd end = ReadFileEnd(input.path);
  if (end.footer()) index.set_footer_end(static_cast<uint64_t>(end.at));
  shard::Ending* ending = index.mutable_ending();
  ending->set_reason(end.reason);
  ending->set_status(end.status);
  ending->set_at(end.at);
  ending->set_stack(end.stack);
  ending->set_drove_gpu(end.drove_gpu);
  for (std::string& key : ReadSocketAddressKeys(input.path)) index.add_sockets(std::move(key));
  index.set_aligned(align);
  if (align) {
    for (const CollectiveEnd& e : ReadCollectiveEnds(input.path)) {
      shard::CollectiveEnd* out = index.add_collective_ends();
      out->set_comm(e.comm);
      out->set_seq(e.seq);
      out->set_end(e.end);
    }
  }
  return index;
}

bool SpansHosts(const std::vector<shard::FileIndex>& files) {
  const std::string* boot = nullptr;
  for (const shard::FileIndex& f : files) {
    if (!f.readable()) continue;
    if (boot == nullptr) {
      boot = &f.header().boot_id();
    } else if (f.header().boot_id() != *boot) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<shard::Plan> MakePlan(const std::vector<shard::FileIndex>& index,
                                     const AnalysisOptions& options, Ns reorder_window) {
  shard::Plan plan;
  plan.set_format(kShardFormat);
  shard::Options* o = plan.mutable_options();
  o->set_min_gap(options.min_gap);
  o->set_top_gaps(options.top_gaps);
  o->set_top_evidence(options.top_evidence);
  o->set_python_frames(options.python_frames);
  o->set_advance_quantum(options.advance_quantum);
  o->set_reorder_window(reorder_window);
  o->set_step_marker(options.step_marker);
  // Readable files, as JobReader::Open takes them: one named by the user must be readable.
  std::vector<const shard::FileIndex*> files;
  for (const shard::FileIndex& f : index) {
    if (f.readable()) {
      files.push_back(&f);
      continue;
    }
    if (!f.listed()) return absl::InvalidArgumentError(f.why());
    shard::Skipped* skipped = plan.add_skipped();
    skipped->set_path(f.path());
    skipped->set_why(f.why());
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("no readable trace file: %d skipped (%s)",
                                                      plan.skipped_size(), plan.skipped(0).why()));
  }
  // Clocks, as JobReader::Run sets them: one offset per boot id from the REALTIME snapshots,
  // relative to the first file's; refined from shared collectives on several hosts.
  const Header& first = files[0]->header();
  const Ns reference =
      static_cast<Ns>(first.clock().realtime_ns()) - static_cast<Ns>(first.clock().monotonic_ns());
  absl::flat_hash_map<std::string, Ns> offset_by_boot;
  absl::flat_hash_map<std::string, uint32_t> host_of_boot;
  std::vector<std::string> host_names;
  std::vector<uint32_t> file_host;
  std::vector<Ns> offsets;
  for (const shard::FileIndex* f : files) {
    const Header& h = f->header();
    auto [it, inserted] = offset_by_boot.try_emplace(h.boot_id(), 0);
    if (inserted && h.boot_id() != first.boot_id() && h.has_clock()) {
      it->second = static_cast<Ns>(h.clock().realtime_ns()) -
                   static_cast<Ns>(h.clock().monotonic_ns()) - reference;
    }
    offsets.push_back(it->second);
    auto [host, new_host] =
        host_of_boot.try_emplace(h.boot_id(), static_cast<uint32_t>(host_names.size()));
    if (new_host) host_names.push_back(h.host().empty() ? h.boot_id() : h.host());
    file_host.push_back(host->second);
  }
  if (host_names.size() > 1) {
    std::vector<std::vector<CollectiveEnd>> ends(files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      for (const shard::CollectiveEnd& e : files[i]->collective_ends()) {
        ends[i].push_back({e.comm(), e.seq(), e.end() + offsets[i]});
      }
    }
    HostAlignment alignment = AlignHosts(host_names, file_host, ends);
    for (size_t i = 0; i < files.size(); ++i) offsets[i] -= alignment.correction[file_host[i]];
    for (const HostClock& clock : alignment.clocks) {
      shard::HostClock* c = plan.add_clocks();
      c->set_host(clock.host);
      c->set_method(static_cast<uint32_t>(clock.method));
      c->set_via(clock.via);
      c->set_correction(clock.correction_ns);
      c->set_collectives(clock.collectives);
      c->set_residual(clock.residual_ns);
    }
  }
  std::vector<ProcessInfo> infos;
  Ns job_start = 0, end_hint = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const shard::FileIndex& f = *files[i];
    ProcessInfo info = ProcessInfoOf(f.header(), offsets[i], f.path());
    info.ending = OnJobClock(EndingOf(f.ending()), offsets[i]);
    job_start = i == 0 ? info.start : std::min(job_start, info.start);
    if (f.footer_end() != 0) {
      end_hint = std::max(end_hint, static_cast<Ns>(f.footer_end()) + offsets[i]);
    }
    shard::PlannedFile* p = plan.add_files();
    p->set_path(f.path());
    p->set_size(f.size());
    p->set_offset(offsets[i]);
    *p->mutable_process() = ToMessage(info);
    for (const std::string& key : f.sockets()) p->add_sockets(key);
    if (f.has_identity()) *p->mutable_identity() = f.identity();
    plan.set_total_bytes(plan.total_bytes() + f.size());
    infos.push_back(std::move(info));
  }
  plan.set_job_start(job_start);
  plan.set_job_end_hint(end_hint);
  PlanShards(infos, plan);
  plan.set_job(JobDigest(plan));
  return plan;
}

absl::Status CheckPlan(const shard::Plan& plan) {
  const uint32_t files = static_cast<uint32_t>(plan.files_size());
  for (int s = 0; s < plan.shards_size(); ++s) {
    const shard::Shard& shard = plan.shards(s);
    if (shard.owned_size() == 0) {
      return absl::InvalidArgumentError(absl::StrFormat("corrupt plan: shard %d owns no file", s));
    }
    for (uint32_t i : shard.owned()) {
      if (i >= files) return absl::InvalidArgumentError("corrupt plan: a file out of range");
    }
    for (uint32_t i : shard.guests()) {
      if (i >= files) return absl::InvalidArgumentError("corrupt plan: a file out of range");
    }
  }
  if (plan.shards_size() == 0) return absl::InvalidArgumentError("corrupt plan: no shard");
  return absl::OkStatus();
}

ProcessInfo ToProcessInfo(const shard::Process& p, const std::string& path) {
  ProcessInfo info;
  info.pid = p.pid();
  info.ppid = p.ppid();
  info.host = p.host();
  info.boot_id = p.boot_id();
  info.exe = p.exe();
  info.cmdline = p.cmdline();
  info.rank = p.rank();
  info.start = p.start();
  info.file = path;
  info.cuda_visible_devices = p.cuda_visible_devices();
  info.main_tid = p.main_tid();
  info.forked = p.forked();
  info.realtime_at_zero = p.realtime_at_zero();
  info.ending = EndingOf(p.ending());
  return info;
}

AnalysisOptions ToAnalysisOptions(const shard::Options& o) {
  AnalysisOptions options;
  options.min_gap = o.min_gap();
  options.top_gaps = o.top_gaps();
  options.top_evidence = o.top_evidence();
  options.python_frames = o.python_frames();
  options.advance_quantum = o.advance_quantum();
  options.step_marker = o.step_marker();
  return options;
}

absl::Status ParseShardMessage(const std::string& bytes, const char* what,
                               google::protobuf::Message* out) {
  if (!out->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(absl::StrCat("not an idlescope ", what));
  }
  const google::protobuf::FieldDescriptor* format = out->GetDescriptor()->FindFieldByName("format");
  const uint32_t version = format == nullptr ? 0 : out->GetReflection()->GetUInt32(*out, format);
  if (version != kShardFormat) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s of format %u, this idlescope reads format %u", what, version, kShardFormat));
  }
  return absl::OkStatus();
}

}  // namespace idlescope
