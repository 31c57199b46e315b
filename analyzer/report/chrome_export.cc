#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/text_cat.h"
#include "analyzer/report/timeline_exporters.h"

namespace idlescope {

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
  // One event per line: a trace of millions of events stays readable with grep and diff.
  JsonWriter j(JsonLayout::kCompact);
  j.BeginObject();
  j.String("displayTimeUnit", "ns");
  j.Key("traceEvents");
  j.BeginArray();
  // A metadata event: the name or sort index of a process or thread.
  auto metadata = [&](std::string_view what, int32_t pid, uint32_t tid, std::string_view key,
                      auto value) {
    j.LineBreak();
    j.BeginObject();
    j.String("ph", "M");
    j.String("name", what);
    j.Int("pid", pid);
    j.Uint("tid", tid);
    j.Key("args");
    j.BeginObject();
    if constexpr (std::is_integral_v<decltype(value)>) {
      j.Int(key, value);
    } else {
      j.String(key, value);
    }
    j.EndObject();
    j.EndObject();
  };
  auto process_names = [&](int32_t pid, const TimelineTrack& track) {
    metadata("process_name", pid, 0, "name", std::string_view(track.name));
    metadata("process_sort_index", pid, 0, "sort_index", track.order);
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
    metadata("thread_name", p.pid, p.tid, "name", std::string_view(name));
  }
  // Times: job-clock ns as the format's microseconds, exactly (three decimals).
  for (const TimelineSlice& s : t.slices) {
    const Place& p = place[s.track];
    j.LineBreak();
    j.BeginObject();
    j.String("ph", "X");
    j.String("name", s.name);
    j.String("cat", s.category);
    j.Int("pid", p.pid);
    j.Uint("tid", p.tid);
    j.Decimal("ts", s.start, 3);
    j.Decimal("dur", s.end - s.start, 3);
    j.Key("args");
    j.BeginObject();
    for (const TimelineArg& a : s.args) {
      if (a.is_number) {
        j.Int(a.name, a.number);
      } else {
        j.String(a.name, a.text);
      }
    }
    j.EndObject();
    j.EndObject();
    // Flows: "s" inside the CUDA call, "f" bound to the enclosing slice (the GPU record).
    for (const auto& [ph, id] : {std::pair{"s", s.flow_out}, std::pair{"f", s.flow_in}}) {
      if (id == 0) continue;
      j.LineBreak();
      j.BeginObject();
      j.String("ph", ph);
      if (*ph == 'f') j.String("bp", "e");
      j.String("name", "launch");
      j.String("cat", "flow");
      j.Uint("id", id);
      j.Int("pid", p.pid);
      j.Uint("tid", p.tid);
      j.Decimal("ts", s.start, 3);
      j.EndObject();
    }
  }
  j.LineBreak();
  j.EndArray();
  j.EndObject();
  return j.Finish();
}

}  // namespace idlescope
