#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/text_cat.h"
#include "analyzer/report/timeline_exporters.h"

namespace idlescope {
namespace {

// A JSON string literal.
std::string Quote(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

// Job-clock ns as the format's microseconds, exactly (three decimals).
std::string Micros(Ns ns) {
  return absl::StrFormat("%s%d.%03d", ns < 0 ? "-" : "", (ns < 0 ? -ns : ns) / 1000,
                         (ns < 0 ? -ns : ns) % 1000);
}

}  // namespace

std::string FormatChromeTrace(const JobTimeline& t) {
  // The format has processes and threads only: a track that is neither becomes a thread of its
  // process (its nearest process ancestor; the "GPU idle" group is a process of its own) with a
  // made-up tid above any real one.
  struct Place {
    int32_t pid;
    uint32_t tid;
  };
  absl::flat_hash_map<uint64_t, Place> place;
  absl::flat_hash_map<uint64_t, const TimelineTrack*> by_uuid;
  for (const TimelineTrack& track : t.tracks) by_uuid[track.uuid] = &track;
  int32_t next_pid = 1 << 30;  // for top-level groups: above any real pid (at most 2^22)
  uint32_t next_tid = 1u << 30;
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto event = [&](const std::string& json) {
    CatTo(&out, first ? "" : ",\n", json);
    first = false;
  };
  auto process_names = [&](int32_t pid, const TimelineTrack& track) {
    event(absl::StrFormat(
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":%s}}", pid,
        Quote(track.name)));
    event(
        absl::StrFormat("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
                        "\"args\":{\"sort_index\":%d}}",
                        pid, track.order));
  };
  for (const TimelineTrack& track : t.tracks) {
    Place p{0, 0};
    if (track.kind == TimelineTrack::Kind::kProcess) {
      p = {track.pid, 0};
      process_names(p.pid, track);
    } else if (track.kind == TimelineTrack::Kind::kThread) {
      p = {track.pid, track.tid};
    } else if (track.parent == 0) {
      p = {next_pid++, 0};
      process_names(p.pid, track);
    } else {
      p = {place[track.parent].pid, next_tid++};
    }
    place[track.uuid] = p;
    if (track.kind == TimelineTrack::Kind::kProcess || p.tid == 0) continue;
    std::string name = track.name;
    if (track.kind == TimelineTrack::Kind::kPlain) {
      // "NCCL" of thread 12: say whose it is, since the format shows threads side by side.
      const TimelineTrack* parent = by_uuid[track.parent];
      if (parent->kind == TimelineTrack::Kind::kThread) name = Cat(parent->name, ": ", name);
    }
    event(absl::StrFormat(
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":%s}}",
        p.pid, p.tid, Quote(name)));
  }
  for (const TimelineSlice& s : t.slices) {
    const Place& p = place[s.track];
    std::string args;
    for (const TimelineArg& a : s.args) {
      CatTo(&args, args.empty() ? "" : ",", Quote(a.name), ":",
            a.is_number ? Cat(a.number) : Quote(a.text));
    }
    event(
        absl::StrFormat("{\"ph\":\"X\",\"name\":%s,\"cat\":%s,\"pid\":%d,\"tid\":%d,\"ts\":%s,"
                        "\"dur\":%s,\"args\":{%s}}",
                        Quote(s.name), Quote(s.category), p.pid, p.tid, Micros(s.start),
                        Micros(s.end - s.start), args));
    // Flows: "s" inside the CUDA call, "f" bound to the enclosing slice (the GPU record).
    if (s.flow_out != 0) {
      event(
          absl::StrFormat("{\"ph\":\"s\",\"name\":\"launch\",\"cat\":\"flow\",\"id\":%d,"
                          "\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                          s.flow_out, p.pid, p.tid, Micros(s.start)));
    }
    if (s.flow_in != 0) {
      event(
          absl::StrFormat("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"launch\",\"cat\":\"flow\","
                          "\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%s}",
                          s.flow_in, p.pid, p.tid, Micros(s.start)));
    }
  }
  out += "\n]}\n";
  return out;
}

}  // namespace idlescope
