#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/text_cat.h"
#include "analyzer/report/timeline_exporters.h"

namespace idlescope {
namespace {

// One event per line: a trace of millions of events stays readable with grep and diff. Each
// event is written as it comes: `{"displayTimeUnit":"ns","traceEvents":[`, the events, `]}`.
class ChromeWriter : public TimelineWriter {
 public:
  void BeginFile(const TimelineClock& /*clock*/, Output& out) override {
    out.Write(R"({"displayTimeUnit":"ns","traceEvents":[)");
    first_ = true;
  }

  // The format has processes and threads only: a track that is neither becomes a thread of its
  // process (its nearest process ancestor; the "GPU idle" group is a process of its own) with a
  // made-up tid above any real one.
  void DeclareTrack(const TimelineTrack& track, Output& out) override {
    auto [it, inserted] = place_.try_emplace(track.uuid, Place{0, 0, track.kind, track.name});
    Place& p = it->second;
    if (inserted) {
      if (track.kind == TimelineTrack::Kind::kProcess) {
        p.pid = track.pid;
      } else if (track.kind == TimelineTrack::Kind::kThread) {
        p.pid = track.pid;
        p.tid = track.tid;
      } else if (track.parent == 0) {
        p.pid = next_pid_++;
      } else {
        const Place& parent = place_.at(track.parent);
        p.pid = parent.pid;
        p.tid = next_tid_++;
        // "NCCL" of thread 12: say whose it is, since the format shows threads side by side.
        if (parent.kind == TimelineTrack::Kind::kThread) p.name = Cat(parent.name, ": ", p.name);
      }
    }
    if (p.tid == 0) {
      Metadata(out, "process_name", p.pid, 0, "name", std::string_view(track.name));
      Metadata(out, "process_sort_index", p.pid, 0, "sort_index", track.order);
    } else {
      Metadata(out, "thread_name", p.pid, p.tid, "name", std::string_view(p.name));
    }
  }

  // Times: job-clock ns as the format's microseconds, exactly (three decimals).
  void AddSlice(const TimelineSlice& s, Output& out) override {
    const Place& p = place_.at(s.track);
    JsonWriter j(JsonLayout::kCompact);
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
    Event(out, std::move(j));
    // Flows: "s" inside the CUDA call, "f" bound to the enclosing slice (the GPU record).
    for (const auto& [ph, id] : {std::pair{"s", s.flow_out}, std::pair{"f", s.flow_in}}) {
      if (id == 0) continue;
      JsonWriter f(JsonLayout::kCompact);
      f.BeginObject();
      f.String("ph", ph);
      if (*ph == 'f') f.String("bp", "e");
      f.String("name", "launch");
      f.String("cat", "flow");
      f.Uint("id", id);
      f.Int("pid", p.pid);
      f.Uint("tid", p.tid);
      f.Decimal("ts", s.start, 3);
      f.EndObject();
      Event(out, std::move(f));
    }
  }

  void EndFile(Output& out) override { out.Write("\n]}\n"); }

  uint64_t Bound(const TimelineSlice& s) const override {
    uint64_t bytes = 160 + 2 * (s.name.size() + s.category.size());
    // Escapes (\u0001) take up to six bytes per byte.
    for (const TimelineArg& a : s.args) bytes += 32 + a.name.size() + 6 * a.text.size();
    return 6 * s.name.size() + bytes + (s.flow_in != 0 || s.flow_out != 0 ? 256 : 0) + 4;
  }

 private:
  struct Place {
    int32_t pid;
    uint32_t tid;
    TimelineTrack::Kind kind;
    std::string name;  // a thread's name in the format
  };

  // One event on a line of its own after the last.
  void Event(Output& out, JsonWriter j) {
    std::string text = j.Finish();
    text.pop_back();  // Finish's newline: the next event's line break goes before it
    out.Write(first_ ? "\n" : ",\n");
    out.Write(text);
    first_ = false;
  }

  // A metadata event: the name or sort index of a process or thread.
  template <typename Value>
  void Metadata(Output& out, std::string_view what, int32_t pid, uint32_t tid, std::string_view key,
                Value value) {
    JsonWriter j(JsonLayout::kCompact);
    j.BeginObject();
    j.String("ph", "M");
    j.String("name", what);
    j.Int("pid", pid);
    j.Uint("tid", tid);
    j.Key("args");
    j.BeginObject();
    if constexpr (std::is_integral_v<Value>) {
      j.Int(key, value);
    } else {
      j.String(key, value);
    }
    j.EndObject();
    j.EndObject();
    Event(out, std::move(j));
  }

  // Kept across the files of a split export: a track is the same pid and tid in each.
  absl::flat_hash_map<uint64_t, Place> place_;
  int32_t next_pid_ = 1 << 30;  // for top-level groups: above any real pid (at most 2^22)
  uint32_t next_tid_ = 1u << 30;
  bool first_ = true;
};

}  // namespace

std::unique_ptr<TimelineWriter> ChromeTimelineWriter() { return std::make_unique<ChromeWriter>(); }

}  // namespace idlescope
