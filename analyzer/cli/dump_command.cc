// `idlescope dump FILE`: every packet and every event of one trace file, readably.
//
// One line per event or GPU activity; interned ids (API names, paths, streams, stacks) resolved
// through the file's own Interned packets; header, footer and notices in full. Events of a v2 file
// are shown as the reader expands them (one line per launch of a LaunchRun or kernel of a
// KernelRun, correlation ids and communicators resolved), with the batch line saying how many
// were stored as runs, so a v1 and a v2 trace of the same job dump alike. The last lines say
// how the file ends: a cut or corrupt tail (how many bytes were dropped, from which offset) or a
// missing footer (the process did not exit cleanly). A file that is not a trace is one line on
// stderr and exit status 1.
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "analyzer/cli/commands.h"
#include "analyzer/cli/input_copies.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/report/escape.h"
#include "analyzer/report/units.h"
#include "analyzer/trace/interned_data.h"
#include "analyzer/trace/trace_reader.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace idlescope {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// A string field as dump shows it: quoted, its control characters escaped as the text report
// escapes them (report/escape.h), and its quotes too.
std::string Quote(absl::string_view bytes) {
  return absl::StrCat(
      "\"",
      absl::StrReplaceAll(EscapeControls(std::string_view(bytes.data(), bytes.size())),
                          {{"\"", "\\\""}}),
      "\"");
}

// CLOCK_REALTIME ns as UTC, "2026-11-29T16:31:41.123456789Z".
std::string WallTime(uint64_t realtime_ns) {
  time_t secs = static_cast<time_t>(realtime_ns / 1000000000);
  struct tm tm;
  if (gmtime_r(&secs, &tm) == nullptr) return absl::StrCat(realtime_ns, "ns");
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return absl::StrFormat("%s.%09dZ", buf, realtime_ns % 1000000000);
}

// One scalar of `m`'s field (index `i` when repeated) as text; enums by name (or number when the
// writer is newer than this reader), bytes escaped and quoted.
std::string Scalar(const Message& m, const FieldDescriptor* f, int i);

// "name=value name=value ..." for every set field of `m`, in field-number order, except the
// names in `skip`. `special` may render a field itself (returns true and appends).
template <typename Special>
std::string Fields(const Message& m, const std::vector<absl::string_view>& skip, Special special) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  std::string out;
  for (const FieldDescriptor* f : fields) {
    bool skipped = false;
    for (absl::string_view s : skip) skipped |= f->name() == s;
    if (skipped) continue;
    std::string value;
    if (special(f, &value)) {
      // rendered by the caller
    } else if (f->is_repeated()) {
      std::vector<std::string> items;
      for (int i = 0; i < r->FieldSize(m, f); ++i) items.push_back(Scalar(m, f, i));
      value = absl::StrCat("[", absl::StrJoin(items, " "), "]");
    } else {
      value = Scalar(m, f, -1);
    }
    absl::StrAppend(&out, out.empty() ? "" : " ", f->name(), "=", value);
  }
  return out;
}

std::string Fields(const Message& m, const std::vector<absl::string_view>& skip = {}) {
  return Fields(m, skip, [](const FieldDescriptor*, std::string*) { return false; });
}

std::string Scalar(const Message& m, const FieldDescriptor* f, int i) {
  const Reflection* r = m.GetReflection();
  const bool rep = i >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM: {
      int v = rep ? r->GetRepeatedEnumValue(m, f, i) : r->GetEnumValue(m, f);
      const auto* value = f->enum_type()->FindValueByNumber(v);
      return value != nullptr ? value->name() : absl::StrCat(v);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return Quote(rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f));
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return absl::StrCat("{", Fields(rep ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f)),
                          "}");
  }
  return "?";
}

std::string EnumName(const google::protobuf::EnumDescriptor* type, int value) {
  const auto* v = type->FindValueByNumber(value);
  return v != nullptr ? v->name() : absl::StrCat(type->name(), "(", value, ")");
}

class Dumper {
 public:
  Dumper(const TraceFileReader& reader, bool events) : reader_(reader), events_(events) {}

  void PrintHeader(const idlescope::Header& h) {
    clock_ns_ = static_cast<int64_t>(h.clock().monotonic_ns());
    out_ = absl::StrFormat("packet 0 @0: header\n  %s\n", Fields(h, {"clock", "cmdline"}));
    std::vector<std::string> args;
    for (const std::string& a : h.cmdline()) args.push_back(Quote(a));
    absl::StrAppend(&out_, "  cmdline: ", absl::StrJoin(args, " "), "\n");
    absl::StrAppendFormat(&out_, "  clock: monotonic %d ns = %s; times below are seconds from it\n",
                          h.clock().monotonic_ns(), WallTime(h.clock().realtime_ns()));
    if (h.process_start_ns() != 0) {
      absl::StrAppend(&out_, "  process start: ",
                      SignedSecondsExact(static_cast<int64_t>(h.process_start_ns()) - clock_ns_),
                      "\n");
    }
    Flush();
  }

  void PrintPacket(uint64_t index, const idlescope::Packet& p) {
    out_.clear();
    absl::StrAppendFormat(&out_, "packet %d @%d: ", index, reader_.last_packet_offset());
    if (reader_.last_packet_compressed()) {
      ++in_compressed_;
      absl::StrAppend(&out_, "(compressed) ");
    }
    switch (p.data_case()) {
      case idlescope::Packet::kHeader:
        ++headers_;
        absl::StrAppend(&out_, "header (again; a header belongs only at the start)\n  ",
                        Fields(p.header()), "\n");
        break;
      case idlescope::Packet::kInterned:
        ++interned_;
        PrintInterned(p.interned());
        break;
      case idlescope::Packet::kEvents:
        ++event_batches_;
        PrintEvents(p.events(), reader_.stats());
        break;
      case idlescope::Packet::kGpu:
        ++gpu_batches_;
        PrintGpu(p.gpu(), reader_.stats());
        break;
      case idlescope::Packet::kDevice:
        ++devices_;
        absl::StrAppend(&out_, "device ", Fields(p.device()), "\n");
        break;
      case idlescope::Packet::kModules:
        ++modules_;
        PrintModules(p.modules());
        break;
      case idlescope::Packet::kNotice: {
        ++notices_;
        const Notice& n = p.notice();
        absl::StrAppend(&out_, "notice ", SignedSecondsExact(Rel(n.ts())), " ",
                        EnumName(Severity_descriptor(), n.severity()), " ", n.code(), ": ",
                        n.text(), "\n");
        break;
      }
      case idlescope::Packet::kFooter:
        ++footers_;
        absl::StrAppend(&out_, "footer ", Fields(p.footer()), "\n");
        if (p.footer().end_ns() != 0) {
          absl::StrAppend(&out_, "  end: ", SignedSecondsExact(Rel(p.footer().end_ns())), "\n");
        }
        break;
      case idlescope::Packet::kCompressed:  // never: the reader hands out what it holds
      case idlescope::Packet::DATA_NOT_SET:
        ++other_;
        absl::StrAppend(&out_, "unknown packet type (written by a newer idlescope?)\n");
        break;
    }
    std::vector<std::string> unknown;
    DescribeUnknownFields(p, &unknown);
    if (!unknown.empty()) {
      absl::StrAppend(&out_, "  unknown fields (ignored): ", absl::StrJoin(unknown, ", "), "\n");
    }
    Flush();
  }

  void PrintSummary(const TraceReadStats& s) {
    out_ = absl::StrFormat(
        "summary: %d packets (%d header, %d interned, %d event batches, %d gpu batches, %d "
        "devices, %d module maps, %d notices, %d footer, %d unknown), %d events, %d gpu "
        "activities, %d events dropped, %d gpu records dropped, %d unknown fields, %d of %d bytes "
        "read\n",
        s.packets, headers_, interned_, event_batches_, gpu_batches_, devices_, modules_, notices_,
        footers_, other_, events_count_, activities_count_, events_dropped_, gpu_dropped_,
        s.unknown_fields, s.bytes_read, s.file_bytes);
    absl::StrAppendFormat(&out_, "format v%d", reader_.format_version());
    if (reader_.format_version() >= 2) {
      absl::StrAppendFormat(&out_,
                            ": %d of the events were launches stored in %d launch runs, %d of the "
                            "gpu activities kernels stored in %d kernel runs",
                            s.run_launches, s.launch_runs, s.run_kernels, s.kernel_runs);
    }
    if (reader_.format_version() >= 4) {
      absl::StrAppendFormat(&out_, "; %d of the packets were in %d compressed packets",
                            in_compressed_, s.compressed_packets);
    }
    absl::StrAppend(&out_, "\n");
    if (s.skipped_trace_fields != 0) {
      absl::StrAppendFormat(&out_, "skipped %d unknown top-level fields\n", s.skipped_trace_fields);
    }
    if (s.undefined_comm_ids != 0) {
      absl::StrAppendFormat(&out_, "warning: %d events use an undefined communicator id\n",
                            s.undefined_comm_ids);
    }
    if (interned_data_.conflicting_ids() != 0) {
      absl::StrAppendFormat(&out_, "warning: %d interned ids redefined with a different value\n",
                            interned_data_.conflicting_ids());
    }
    if (s.truncated()) absl::StrAppend(&out_, s.TailDescription(), "\n");
    if (!s.footer_seen) absl::StrAppend(&out_, "no footer: the process did not exit cleanly\n");
    Flush();
  }

 private:
  int64_t Rel(uint64_t abs_ns) const { return static_cast<int64_t>(abs_ns) - clock_ns_; }

  std::string Str(uint64_t id) const {
    if (id == 0) return "\"\"";
    if (!interned_data_.HasString(id)) return absl::StrCat("<undefined string ", id, ">");
    return Quote(interned_data_.String(id));
  }

  void PrintInterned(const idlescope::Interned& in) {
    interned_data_.Add(in);
    absl::StrAppendFormat(
        &out_, "interned %d strings, %d frames, %d stack nodes, %d streams, %d threads%s\n",
        in.strings_size(), in.frames_size(), in.stack_nodes_size(), in.streams_size(),
        in.threads_size(),
        in.comms_size() == 0 ? "" : absl::StrCat(", ", in.comms_size(), " communicators"));
    if (!events_) return;
    for (const InternedString& s : in.strings()) {
      absl::StrAppend(&out_, "  string ", s.id(), " = ", Quote(s.str()), "\n");
    }
    for (const Frame& f : in.frames()) {
      absl::StrAppend(&out_, "  frame ", f.id(), " = ", interned_data_.FormatFrame(f),
                      f.kind() != FRAME_PYTHON ? ""
                      : f.python_entry()       ? " [python, entry]"
                                               : " [python]",
                      "\n");
    }
    for (const StackNode& n : in.stack_nodes()) {
      absl::StrAppend(&out_, "  stack ", n.id(), " = frame ", n.frame(), " parent ", n.parent(),
                      "\n");
    }
    for (const InternedStream& s : in.streams()) {
      absl::StrAppendFormat(&out_, "  stream %d = handle 0x%x device %d\n", s.id(), s.handle(),
                            s.device());
    }
    for (const ThreadName& t : in.threads()) {
      absl::StrAppend(&out_, "  thread ", t.tid(), " = ", Quote(t.name()), "\n");
    }
    for (const InternedComm& c : in.comms()) {
      absl::StrAppendFormat(&out_, "  communicator %d = 0x%x\n", c.id(), c.comm());
    }
  }

  void PrintEvents(const EventBatch& batch, const TraceReadStats& s) {
    events_count_ += batch.events_size();
    events_dropped_ += batch.dropped();
    absl::string_view name = interned_data_.ThreadName(batch.tid());
    const uint64_t runs = s.launch_runs - runs_seen_, in_runs = s.run_launches - run_launches_seen_;
    runs_seen_ = s.launch_runs;
    run_launches_seen_ = s.run_launches;
    absl::StrAppendFormat(
        &out_, "events tid %d%s seq %d dropped %d: %d events%s\n", batch.tid(),
        name.empty() ? "" : absl::StrCat(" (", Quote(name), ")"), batch.seq(), batch.dropped(),
        batch.events_size(),
        runs == 0 ? "" : absl::StrFormat(" (%d launches stored in %d runs)", in_runs, runs));
    if (!events_) return;
    std::vector<int64_t> starts = EventStartTimes(batch);
    for (int i = 0; i < batch.events_size(); ++i) {
      const Event& e = batch.events(i);
      absl::StrAppend(&out_, "  ", SignedSecondsExact(starts[i] - clock_ns_), " tid ", batch.tid(),
                      " ", EnumName(EventType_descriptor(), e.type()),
                      e.api() != 0 ? absl::StrCat(" ", Str(e.api())) : "",
                      " dur=", CompactDuration(e.dur()));
      std::string rest =
          Fields(e, {"type", "ts", "dur", "api", "stack"},
                 [&](const FieldDescriptor* f, std::string* v) { return EventField(e, f, v); });
      if (!rest.empty()) absl::StrAppend(&out_, " ", rest);
      absl::StrAppend(&out_, "\n");
      if (e.stack() != 0) StackLines(e.stack());
    }
  }

  bool EventField(const Event& e, const FieldDescriptor* f, std::string* v) const {
    const std::string& n = f->name();
    if (n == "path") {
      *v = Str(e.path());
    } else if (n == "argv") {
      // One interned string, arguments separated by NUL bytes.
      std::vector<std::string> args;
      for (absl::string_view a : absl::StrSplit(interned_data_.String(e.argv()), '\0')) {
        args.push_back(Quote(a));
      }
      *v = absl::StrCat("[", absl::StrJoin(args, " "), "]");
    } else if (n == "stream") {
      const InternedStream* s = interned_data_.FindStream(e.stream());
      *v = s == nullptr
               ? absl::StrCat("<undefined stream ", e.stream(), ">")
               : absl::StrFormat("%d(handle 0x%x dev %d)", e.stream(), s->handle(), s->device());
    } else if (n == "ptr" || n == "comm" || n == "parent_comm") {
      *v = absl::StrFormat("0x%x", e.GetReflection()->GetUInt64(e, f));
    } else {
      return false;
    }
    return true;
  }

  void StackLines(uint64_t stack_id) {
    bool complete = false;
    std::vector<const Frame*> frames = interned_data_.Stack(stack_id, &complete);
    for (const Frame* f : frames) {
      absl::StrAppend(&out_, "      at ", interned_data_.FormatFrame(*f), "\n");
    }
    if (!complete) absl::StrAppend(&out_, "      at <undefined stack node in ", stack_id, ">\n");
  }

  void PrintGpu(const GpuBatch& batch, const TraceReadStats& s) {
    activities_count_ += batch.activities_size();
    gpu_dropped_ += batch.dropped();
    const uint64_t runs = s.kernel_runs - kernel_runs_seen_,
                   in_runs = s.run_kernels - kernels_seen_;
    kernel_runs_seen_ = s.kernel_runs;
    kernels_seen_ = s.run_kernels;
    absl::StrAppendFormat(
        &out_, "gpu %d activities, dropped %d%s\n", batch.activities_size(), batch.dropped(),
        runs == 0 ? "" : absl::StrFormat(" (%d kernels stored in %d runs)", in_runs, runs));
    if (!events_) return;
    std::vector<int64_t> starts = GpuActivityStartTimes(batch);
    for (int i = 0; i < batch.activities_size(); ++i) {
      const GpuActivity& a = batch.activities(i);
      absl::StrAppend(&out_, "  ", SignedSecondsExact(starts[i] - clock_ns_), " ",
                      EnumName(GpuActivityKind_descriptor(), a.kind()), " dev ", a.device(),
                      " stream ", a.stream(), " dur=", CompactDuration(a.dur()));
      std::string rest = Fields(a, {"kind", "start", "dur", "device", "stream"},
                                [&](const FieldDescriptor* f, std::string* v) {
                                  if (f->name() != "name") return false;
                                  *v = Str(a.name());
                                  return true;
                                });
      if (!rest.empty()) absl::StrAppend(&out_, " ", rest);
      absl::StrAppend(&out_, "\n");
    }
  }

  void PrintModules(const ModuleMap& map) {
    absl::StrAppendFormat(&out_, "modules %d\n", map.modules_size());
    for (const Module& m : map.modules()) {
      absl::StrAppendFormat(&out_, "  0x%x-0x%x %s build_id %s\n", m.base(), m.base() + m.size(),
                            Str(m.path()), absl::BytesToHexString(m.build_id()));
    }
  }

  void Flush() {
    WriteStdout(out_);
    out_.clear();
  }

  const TraceFileReader& reader_;
  const bool events_;
  InternedData interned_data_;
  std::string out_;
  int64_t clock_ns_ = 0;
  uint64_t headers_ = 1, interned_ = 0, event_batches_ = 0, gpu_batches_ = 0, notices_ = 0,
           footers_ = 0, devices_ = 0, modules_ = 0, other_ = 0, in_compressed_ = 0;
  uint64_t events_count_ = 0, activities_count_ = 0, events_dropped_ = 0, gpu_dropped_ = 0;
  uint64_t runs_seen_ = 0, run_launches_seen_ = 0, kernel_runs_seen_ = 0, kernels_seen_ = 0;
};

constexpr char kUsage[] =
    "usage: idlescope dump [--summary] FILE\n"
    "  Print every packet and event of a trace file, then how the file ends.\n"
    "  --summary     only the header, notices, footer and the summary (no events)\n"
    "  -h, --help    this text;  -V, --version  idlescope's version\n"
    "exit status: 0 dumped (a cut or corrupt tail is said at the end), 1 FILE is not a trace\n"
    "or stdout cannot be written (one line says which), 2 usage error\n";

enum DumpOption : int { kSummaryOption = kFirstCommandOption };

constexpr OptionSpec kDumpOptions[] = {{kSummaryOption, "summary"}};

constexpr CommandSpec kDump = {"dump", kDumpOptions, kUsage};

}  // namespace

int DumpCommand(int argc, char** argv) {
  ParsedCommandLine line = ParseCommandLine(kDump, argc, argv);
  if (line.exit_status) return *line.exit_status;
  bool events = true;
  for (const ParsedOption& option : line.options) {
    if (option.id == kSummaryOption) events = false;
  }
  const std::vector<std::string>& files = line.operands;
  if (files.size() != 1) {
    return UsageError("dump", files.empty() ? "no trace file given" : "one trace file at a time");
  }
  InputCopies copies;  // a compressed trace, stdin, a pipe (input_copies.h)
  absl::StatusOr<std::vector<std::string>> file = copies.Prepare(files);
  if (!file.ok()) {
    PrintError("dump", file.status().message());
    return 1;
  }
  auto reader = TraceFileReader::Open(file->front());
  if (!reader.ok()) {
    PrintError("dump", reader.status().message());
    return 1;
  }
  Dumper dumper(**reader, events);
  dumper.PrintHeader((*reader)->header());
  idlescope::Packet packet;
  // Until stdout fails (a reader that has gone wants no more: main.cc says it in one line).
  for (uint64_t index = 1; !StdoutFailed() && (*reader)->Next(&packet); ++index) {
    dumper.PrintPacket(index, packet);
  }
  if (!StdoutFailed()) dumper.PrintSummary((*reader)->stats());
  return StdoutFailed() ? 1 : 0;
}

}  // namespace idlescope
