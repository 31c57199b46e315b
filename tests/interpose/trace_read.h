// Reads a trace file back with libprotobuf (tests only; the production reader is analyzer/trace/).
// A file is a stream of Trace.packet fields: tag 0x0a, varint length, Packet bytes. Packets of a
// format-v2 file are expanded into v1's one-Event-per-call shape, as the analyzer reads them
// (analyzer/trace/trace_format.h), unless ParseTrace is asked for them as written; those of a v4
// Compressed packet are read as if they were in the file.
#pragma once

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/trace/trace_format.h"
#include "tests/interpose/without_compression.h"
#include "trace.pb.h"

namespace idlescope::testing {

struct ReadTrace {
  std::vector<idlescope::Packet> packets;
  bool truncated = false;    // the file ends inside a packet
  bool corrupt_run = false;  // a v2 batch whose launch runs do not expand (stops the read)
  size_t bytes = 0;
  size_t compressed = 0;  // v4 Compressed packets (their packets are in `packets`)
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool ReadVarint(const std::string& s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

inline ReadTrace ParseTrace(const std::string& compressed_data, bool expand = true) {
  ReadTrace t;
  t.bytes = compressed_data.size();
  const std::string data = WithoutCompression(compressed_data, &t.compressed);
  idlescope::FormatExpander expander(idlescope::kTraceFormatV1);  // the header says which
  size_t pos = 0;
  while (pos < data.size()) {
    uint64_t tag, len;
    if (!ReadVarint(data, &pos, &tag) || tag != 0x0a || !ReadVarint(data, &pos, &len) ||
        len > data.size() - pos) {
      t.truncated = true;
      break;
    }
    idlescope::Packet p;
    if (!p.ParseFromArray(data.data() + pos, static_cast<int>(len))) {
      t.truncated = true;
      break;
    }
    if (p.has_header()) expander = idlescope::FormatExpander(p.header().format_version());
    std::string error;
    if (expand && !expander.Expand(&p, &error)) {
      t.corrupt_run = true;
      break;
    }
    t.packets.push_back(std::move(p));
    pos += len;
  }
  return t;
}

inline ReadTrace ReadTraceFile(const std::string& path) { return ParseTrace(Slurp(path)); }

// Files named *.idlescope in `dir`, sorted.
inline std::vector<std::string> TraceFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 10 && name.substr(name.size() - 10) == ".idlescope") {
        out.push_back(dir + "/" + name);
      }
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every host event of a trace, with absolute timestamps, and the interned strings.
struct FlatEvent {
  uint32_t tid;
  uint64_t ts;
  idlescope::Event event;
};

struct Flattened {
  std::vector<FlatEvent> events;
  std::map<uint64_t, std::string> strings;
  std::map<uint64_t, idlescope::Frame> frames;
  std::map<uint64_t, idlescope::StackNode> nodes;
  std::map<uint64_t, idlescope::InternedStream> streams;
  uint64_t dropped = 0;
  int headers = 0, footers = 0;
  bool ids_defined_before_use = true;
};

inline Flattened Flatten(const ReadTrace& t) {
  Flattened f;
  for (const idlescope::Packet& p : t.packets) {
    if (p.has_header()) ++f.headers;
    if (p.has_footer()) ++f.footers;
    if (p.has_interned()) {
      for (const auto& s : p.interned().strings()) f.strings[s.id()] = s.str();
      for (const auto& fr : p.interned().frames()) f.frames[fr.id()] = fr;
      for (const auto& n : p.interned().stack_nodes()) f.nodes[n.id()] = n;
      for (const auto& s : p.interned().streams()) f.streams[s.id()] = s;
    }
    if (p.has_events()) {
      f.dropped += p.events().dropped();
      uint64_t ts = 0;
      for (const auto& e : p.events().events()) {
        ts += static_cast<uint64_t>(e.ts());
        if ((e.api() && !f.strings.count(e.api())) || (e.path() && !f.strings.count(e.path())) ||
            (e.stack() && !f.nodes.count(e.stack())) ||
            (e.stream() && !f.streams.count(e.stream()))) {
          f.ids_defined_before_use = false;
        }
        f.events.push_back({p.events().tid(), ts, e});
      }
    }
  }
  return f;
}

// Function names of a stack, innermost first.
inline std::vector<std::string> StackFunctions(const Flattened& f, uint64_t node) {
  std::vector<std::string> out;
  while (node != 0 && f.nodes.count(node)) {
    const auto& n = f.nodes.at(node);
    auto fr = f.frames.find(n.frame());
    out.push_back(fr != f.frames.end() && f.strings.count(fr->second.function())
                      ? f.strings.at(fr->second.function())
                      : "?");
    node = n.parent();
  }
  return out;
}

}  // namespace idlescope::testing
