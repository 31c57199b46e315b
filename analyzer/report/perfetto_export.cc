#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/timeline_exporters.h"
#include "perfetto_trace.pb.h"

namespace idlescope {
namespace {

namespace pp = ::perfetto::protos;

// Every packet is on this one sequence: interned names are valid on their sequence only.
constexpr uint32_t kSequence = 1;
// A slice end's packet, at most: the framing, a timestamp, the clock, the sequence, flags and the
// track event's type and track.
constexpr uint64_t kEndBytes = 40;

// Appends `packet` to `out` as one `Trace.packet` (field 1, length-delimited): a trace file is
// a Trace message, whose packets can be written one after another.
void Append(const pp::TracePacket& packet, Output& out) {
  std::string bytes;
  bytes += static_cast<char>((1 << 3) | 2);
  const size_t size = packet.ByteSizeLong();
  for (uint64_t n = size;; n >>= 7) {
    if (n < 0x80) {
      bytes += static_cast<char>(n);
      break;
    }
    bytes += static_cast<char>((n & 0x7f) | 0x80);
  }
  packet.AppendToString(&bytes);
  out.Write(bytes);
}

// A packet of a slice's begin or end on `track` at `at`: the track event, for the caller to fill.
pp::TrackEvent* SliceEvent(pp::TracePacket& packet, Ns at, pp::TrackEvent::Type type,
                           uint64_t track) {
  packet.set_timestamp(static_cast<uint64_t>(at));
  packet.set_timestamp_clock_id(pp::BUILTIN_CLOCK_MONOTONIC);
  packet.set_trusted_packet_sequence_id(kSequence);
  packet.set_sequence_flags(pp::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  pp::TrackEvent* ev = packet.mutable_track_event();
  ev->set_type(type);
  ev->set_track_uuid(track);
  return ev;
}

// Interned strings of one kind (event names, categories, annotation names): an id per string;
// a new one's definition goes out with the packet that first uses it. Per file: each file of a
// split export is a trace of its own.
class Interner {
 public:
  uint64_t Id(const std::string& s, bool* is_new) {
    auto [it, inserted] = ids_.try_emplace(s, ids_.size() + 1);
    *is_new = inserted;
    return it->second;
  }
  void Clear() { ids_.clear(); }

 private:
  absl::flat_hash_map<std::string, uint64_t> ids_;
};

class PerfettoWriter : public TimelineWriter {
 public:
  void BeginFile(const TimelineClock& clock, Output& out) override {
    names_.Clear();
    categories_.Clear();
    annotations_.Clear();
    ends_.clear();
    // The first packet clears the sequence's incremental state and ties the clocks: the
    // timestamps are the job clock, CLOCK_MONOTONIC of the job's first host.
    pp::TracePacket packet;
    packet.set_timestamp(static_cast<uint64_t>(clock.start));
    packet.set_timestamp_clock_id(pp::BUILTIN_CLOCK_MONOTONIC);
    packet.set_trusted_packet_sequence_id(kSequence);
    packet.set_first_packet_on_sequence(true);
    packet.set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    pp::ClockSnapshot* clocks = packet.mutable_clock_snapshot();
    clocks->set_primary_trace_clock(pp::BUILTIN_CLOCK_MONOTONIC);
    pp::ClockSnapshot::Clock* mono = clocks->add_clocks();
    mono->set_clock_id(pp::BUILTIN_CLOCK_MONOTONIC);
    mono->set_timestamp(static_cast<uint64_t>(clock.start));
    if (clock.has_realtime) {
      pp::ClockSnapshot::Clock* real = clocks->add_clocks();
      real->set_clock_id(pp::BUILTIN_CLOCK_REALTIME);
      real->set_timestamp(static_cast<uint64_t>(clock.start + clock.realtime_at_zero));
    }
    Append(packet, out);
  }

  void DeclareTrack(const TimelineTrack& track, Output& out) override {
    pp::TracePacket packet;
    packet.set_trusted_packet_sequence_id(kSequence);
    pp::TrackDescriptor* d = packet.mutable_track_descriptor();
    d->set_uuid(track.uuid);
    if (track.parent != 0) d->set_parent_uuid(track.parent);
    const std::string name = ValidUtf8(track.name);  // proto strings are UTF-8
    d->set_name(name);
    d->set_sibling_order_rank(track.order);
    d->set_child_ordering(pp::TrackDescriptor::EXPLICIT);
    if (track.kind == TimelineTrack::Kind::kProcess) {
      d->mutable_process()->set_pid(track.pid);
      d->mutable_process()->set_process_name(name);
    } else if (track.kind == TimelineTrack::Kind::kThread) {
      d->mutable_thread()->set_pid(track.pid);
      d->mutable_thread()->set_tid(track.tid);
      d->mutable_thread()->set_thread_name(name);
    }
    Append(packet, out);
  }

  // Slice ends are merged into the begins in time order from a heap: an end at t goes before a
  // begin at t (a slice that ends where the next begins closes first), and of two ends at the
  // same time the later-begun slice's goes first (it nests inside the other).
  void AddSlice(const TimelineSlice& s, Output& out) override {
    while (!ends_.empty() && ends_.front().at <= s.start) PopEnd(out);
    pp::TracePacket packet;
    pp::TrackEvent* ev = SliceEvent(packet, s.start, pp::TrackEvent::TYPE_SLICE_BEGIN, s.track);
    bool is_new = false;
    ev->set_name_iid(names_.Id(s.name, &is_new));
    if (is_new) {
      pp::EventName* n = packet.mutable_interned_data()->add_event_names();
      n->set_iid(ev->name_iid());
      n->set_name(ValidUtf8(s.name));
    }
    uint64_t category = categories_.Id(s.category, &is_new);
    ev->add_category_iids(category);
    if (is_new) {
      pp::EventCategory* c = packet.mutable_interned_data()->add_event_categories();
      c->set_iid(category);
      c->set_name(s.category);
    }
    for (const TimelineArg& arg : s.args) {
      pp::DebugAnnotation* a = ev->add_debug_annotations();
      a->set_name_iid(annotations_.Id(arg.name, &is_new));
      if (is_new) {
        pp::DebugAnnotationName* n = packet.mutable_interned_data()->add_debug_annotation_names();
        n->set_iid(a->name_iid());
        n->set_name(arg.name);
      }
      if (arg.is_number) {
        a->set_int_value(arg.number);
      } else {
        a->set_string_value(ValidUtf8(arg.text));
      }
    }
    if (s.flow_out != 0) ev->add_flow_ids(s.flow_out);
    if (s.flow_in != 0) ev->add_terminating_flow_ids(s.flow_in);
    Append(packet, out);
    ends_.push_back({s.end, s.track, ++order_});
    std::push_heap(ends_.begin(), ends_.end(), HeapLess);
  }

  void EndFile(Output& out) override {
    while (!ends_.empty()) PopEnd(out);
  }

  uint64_t Bound(const TimelineSlice& s) const override {
    // The begin packet with its names interned, and every end still to be written with its own.
    uint64_t bytes = 96 + s.name.size() + s.category.size();
    for (const TimelineArg& a : s.args) bytes += 32 + a.name.size() + a.text.size();
    return bytes + (ends_.size() + 1) * kEndBytes;
  }

 private:
  struct End {
    Ns at;
    uint64_t track;
    uint64_t order;  // later-begun slices end first at equal times (they nest inside)
  };
  static bool HeapLess(const End& a, const End& b) {
    return a.at != b.at ? a.at > b.at : a.order < b.order;
  }
  void PopEnd(Output& out) {
    std::pop_heap(ends_.begin(), ends_.end(), HeapLess);
    const End e = ends_.back();
    ends_.pop_back();
    pp::TracePacket packet;
    SliceEvent(packet, e.at, pp::TrackEvent::TYPE_SLICE_END, e.track);
    Append(packet, out);
  }

  Interner names_, categories_, annotations_;
  std::vector<End> ends_;
  uint64_t order_ = 0;
};

}  // namespace

std::unique_ptr<TimelineWriter> PerfettoTimelineWriter() {
  return std::make_unique<PerfettoWriter>();
}

}  // namespace idlescope
