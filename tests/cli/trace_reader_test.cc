// The streaming reader on generated traces: every complete packet kept, cut and corrupt tails
// reported with the right byte counts, unknown fields counted, bad files refused with one line;
// format v2 files read back as the v1 packets they were compacted from, v4 files as the packets
// their Compressed packets hold.
#include "analyzer/trace/trace_reader.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/trace/compressed_packets.h"
#include "analyzer/trace/interned_data.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "proto/format_rules.h"
#include "tests/cli/trace_builder.h"

namespace idlescope {
namespace {

using testing::CompactToLatest;
using testing::MakeSampleTrace;
using testing::MakeTempDir;
using testing::TraceBytes;
using testing::WriteFile;

std::vector<Packet> ReadAll(TraceFileReader& reader) {
  std::vector<Packet> packets;
  Packet p;
  while (reader.Next(&p)) packets.push_back(p);
  return packets;
}

class TraceReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("reader"); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
};

TEST_F(TraceReaderTest, ReadsEveryPacketOfACompleteTrace) {
  TraceBytes trace = MakeSampleTrace();
  WriteFile(Path("a.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("a.idlescope"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().pid(), 4242u);
  EXPECT_EQ((*reader)->header().ppid(), 4200u);
  std::vector<Packet> packets = ReadAll(**reader);
  ASSERT_EQ(packets.size() + 1, trace.packets.size());
  for (size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(packets[i].SerializeAsString(), trace.packets[i + 1].SerializeAsString()) << i;
  }
  const TraceReadStats& s = (*reader)->stats();
  EXPECT_FALSE(s.truncated());
  EXPECT_TRUE(s.footer_seen);
  EXPECT_EQ(s.packets, trace.packets.size());
  EXPECT_EQ(s.bytes_read, trace.bytes.size());
  EXPECT_EQ(s.good_end_offset, trace.bytes.size());
  EXPECT_EQ(s.dropped_bytes, 0u);
  EXPECT_EQ(s.unknown_fields, 0u);
  EXPECT_EQ(s.TailDescription(), "");
  EXPECT_EQ((*reader)->last_packet_offset(), trace.packet_ends[trace.packets.size() - 2]);
}

// Issue 2, Done-when 3: cut the file at every byte offset after the header (this covers the last
// packets and every other one); with a tiny read chunk too, so that cuts also fall on buffer
// refills. The reader keeps exactly the complete packets and reports what it dropped.
TEST_F(TraceReaderTest, TruncationAtEveryOffsetKeepsEveryCompletePacket) {
  int cuts = 0;
  for (const TraceBytes& trace :
       {MakeSampleTrace(/*footer=*/true), CompactToLatest(MakeSampleTrace(/*footer=*/true))}) {
    const uint64_t header_end = trace.packet_ends[0];
    ASSERT_GE(trace.packets.size(), 6u);
    for (size_t chunk : {size_t{64}, TraceFileReader::kDefaultChunkBytes}) {
      // From the whole file down, cutting the same file shorter each time (cheap on a busy CI).
      const std::string path = Path("cut.idlescope");
      WriteFile(path, trace.bytes);
      for (uint64_t cut = trace.bytes.size(); cut >= header_end; --cut) {
        ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(cut)), 0);
        auto reader = TraceFileReader::Open(path, chunk);
        ASSERT_TRUE(reader.ok()) << "cut " << cut << ": " << reader.status();
        std::vector<Packet> packets = ReadAll(**reader);
        // The packets that end at or before the cut survive, byte for byte.
        size_t complete = 0;
        while (complete < trace.packet_ends.size() && trace.packet_ends[complete] <= cut) {
          ++complete;
        }
        ASSERT_EQ(packets.size() + 1, complete) << "cut " << cut;
        for (size_t i = 0; i < packets.size(); ++i) {
          ASSERT_EQ(packets[i].SerializeAsString(), trace.Expected(i + 1).SerializeAsString())
              << "cut " << cut << " packet " << i + 1;
        }
        const TraceReadStats& s = (*reader)->stats();
        const uint64_t good_end = trace.packet_ends[complete - 1];
        EXPECT_EQ(s.good_end_offset, good_end) << "cut " << cut;
        EXPECT_EQ(s.packets, complete);
        EXPECT_EQ(s.file_bytes, cut);
        EXPECT_EQ(s.footer_seen, complete == trace.packets.size()) << "cut " << cut;
        if (cut == good_end) {
          EXPECT_FALSE(s.truncated()) << "cut " << cut;
          EXPECT_EQ(s.dropped_bytes, 0u);
        } else {
          EXPECT_TRUE(s.truncated()) << "cut " << cut;
          EXPECT_EQ(s.dropped_bytes, cut - good_end) << "cut " << cut;
          const bool in_framing = cut - good_end < trace.framing_bytes[complete];
          EXPECT_EQ(s.tail, in_framing ? TailProblem::kCutInFraming : TailProblem::kCutInPacket)
              << "cut " << cut;
          EXPECT_NE(s.TailDescription().find("truncated: " + std::to_string(cut - good_end) +
                                             " bytes after offset " + std::to_string(good_end) +
                                             " were dropped (cut inside a packet"),
                    std::string::npos)
              << s.TailDescription();
        }
        ++cuts;
      }
    }
  }
  EXPECT_GT(cuts, 2000);
}

// A v1 trace with every kind of batch v2 compacts: mixed launches, copies and writes; NCCL calls
// on two communicators and a split; launches without correlation ids.
TraceBytes MixedV1Trace() {
  TraceBytes trace = MakeSampleTrace(/*footer=*/false);
  {
    // Paths that share directories and a stack of new nodes (v3 writes them as prefixes and a
    // chain).
    Packet p;
    Interned* in = p.mutable_interned();
    const char* paths[] = {"/usr/lib/python3/dist-packages/torch/nn/modules/conv.py",
                           "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py",
                           "/usr/lib/python3/dist-packages/torch/functional.py"};
    for (uint64_t i = 0; i < 3; ++i) {
      InternedString* str = in->add_strings();
      str->set_id(900 + i);
      str->set_str(paths[i]);
    }
    for (uint64_t i = 0; i < 4; ++i) {
      StackNode* n = in->add_stack_nodes();
      n->set_id(900 + i);
      n->set_parent(i == 0 ? 1 : 899 + i);  // below the sample trace's stack 1
      n->set_frame(1);
    }
    trace.Add(p);
  }
  for (uint64_t seq = 3; seq < 6; ++seq) {
    Packet p;
    *p.mutable_events() = testing::MakeEventBatch(4242, seq, 1000, seq);
    trace.Add(p);
  }
  Packet p;
  EventBatch* batch = p.mutable_events();
  batch->set_tid(4243);
  uint64_t prev = 0;
  for (int i = 0; i < 40; ++i) {
    Event* e = batch->add_events();
    const uint64_t t = 1'000'002'000'000 + static_cast<uint64_t>(i) * 50'000;
    e->set_ts(static_cast<int64_t>(t - prev));
    prev = t;
    e->set_dur(4000);
    if (i % 4 == 3) {
      e->set_type(NCCL_COLLECTIVE);
      e->set_async(true);
      e->set_nccl_op(NCCL_ALL_REDUCE);
      e->set_comm(i % 8 == 3 ? 0x9e3779b97f4a7c15ull : 0x1234);
      e->set_seq(static_cast<uint64_t>(i) / 4 + 1);
      e->set_nranks(8);
      e->set_stream(1);
    } else if (i == 21) {
      e->set_type(NCCL_COMM_INIT);
      e->set_comm(0x5151);
      e->set_parent_comm(0x1234);
      e->set_nranks(4);
    } else {
      e->set_type(CUDA_LAUNCH);
      e->set_async(true);
      e->set_api(2);
      e->set_stream(1);
      if (i > 10) e->set_correlation(500 + static_cast<uint64_t>(i));
    }
  }
  trace.Add(p);
  return trace;
}

TEST_F(TraceReaderTest, ReadsAV2TraceAsTheV1PacketsItWasCompactedFrom) {
  TraceBytes v1 = MixedV1Trace();
  TraceBytes v2 = CompactToLatest(v1);
  // A random mix (half launches, in short runs): v2 saves 13% here, more on real traces.
  EXPECT_LT(v2.bytes.size(), v1.bytes.size() * 9 / 10);
  for (const TraceBytes* trace : {&v1, &v2}) {
    WriteFile(Path("m.idlescope"), trace->bytes);
    auto reader = TraceFileReader::Open(Path("m.idlescope"), 4096);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->format_version(), trace == &v1 ? 1u : kTraceFormatVersion);
    std::vector<Packet> packets = ReadAll(**reader);
    ASSERT_EQ(packets.size() + 1, trace->packets.size());
    for (size_t i = 0; i < packets.size(); ++i) {
      EXPECT_EQ(packets[i].SerializeAsString(), trace->Expected(i + 1).SerializeAsString())
          << i << ":\n"
          << packets[i].DebugString().substr(0, 2000);
    }
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_FALSE(s.truncated()) << s.TailDescription();
    EXPECT_EQ(s.unknown_fields, 0u);
    EXPECT_EQ(s.undefined_comm_ids, 0u);
    if (trace == &v2) {
      EXPECT_GT(s.launch_runs, 100u);
      EXPECT_GT(s.run_launches, 1000u);
      EXPECT_EQ(s.kernel_runs, 1u);
      EXPECT_EQ(s.run_kernels, 3u);
    } else {
      EXPECT_EQ(s.launch_runs, 0u);
      EXPECT_EQ(s.kernel_runs, 0u);
    }
  }
}

// A v2 batch whose run does not expand is a corrupt packet: everything before it is kept.
// A v4 file: `trace`'s header, then its other packets compressed as two flushes, split after
// packet `split` (CompressPackets, as the recorder writes a flush).
std::string CompressedInTwo(const TraceBytes& trace, size_t split) {
  const uint64_t header_end = trace.packet_ends[0];
  const uint64_t split_at = trace.packet_ends[split];
  const std::string_view bytes = trace.bytes;
  return std::string(bytes.substr(0, header_end)) +
         CompressPackets(bytes.substr(header_end, split_at - header_end)) +
         CompressPackets(bytes.substr(split_at));
}

// The framed packets of `bytes` from `offset` on: their offsets, up to the end.
std::vector<uint64_t> PacketStarts(const std::string& bytes, uint64_t offset) {
  std::vector<uint64_t> starts;
  while (offset < bytes.size()) {
    starts.push_back(offset);
    uint64_t length = 0;
    size_t at = offset + 1;
    for (int shift = 0;; shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(bytes[at++]);
      length |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) break;
    }
    offset = at + length;
  }
  return starts;
}

TEST_F(TraceReaderTest, ReadsAV4TraceAsThePacketsItsCompressedPacketsHold) {
  const TraceBytes v3 = CompactToLatest(MixedV1Trace());
  const size_t split = 8;  // the first flush ends with the first large batch
  const std::string v4 = CompressedInTwo(v3, split);
  ASSERT_EQ(PacketStarts(v4, v3.packet_ends[0]).size(), 2u);  // both flushes were compressed
  EXPECT_LT(v4.size(), v3.bytes.size() / 2);
  WriteFile(Path("v3.idlescope"), v3.bytes);
  WriteFile(Path("v4.idlescope"), v4);
  auto v3_reader = TraceFileReader::Open(Path("v3.idlescope"), 4096);
  ASSERT_TRUE(v3_reader.ok()) << v3_reader.status();
  const std::vector<Packet> expected = ReadAll(**v3_reader);
  ASSERT_EQ(expected.size() + 1, v3.packets.size());
  // Read whole, and suspended in each compressed packet (its frame is decompressed again).
  for (const std::vector<size_t>& suspend_after : {std::vector<size_t>{}, {1, split + 2}}) {
    auto reader = TraceFileReader::Open(Path("v4.idlescope"), 4096);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->format_version(), 4u);
    std::vector<Packet> packets;
    Packet p;
    while ((*reader)->Next(&p)) {
      packets.push_back(p);
      EXPECT_TRUE((*reader)->last_packet_compressed());
      EXPECT_EQ((*reader)->last_packet_offset(), packets.size() <= split
                                                     ? v3.packet_ends[0]
                                                     : PacketStarts(v4, v3.packet_ends[0])[1]);
      if (std::count(suspend_after.begin(), suspend_after.end(), packets.size()) > 0) {
        (*reader)->Suspend();
      }
    }
    ASSERT_EQ(packets.size(), expected.size());
    for (size_t i = 0; i < packets.size(); ++i) {
      EXPECT_EQ(packets[i].SerializeAsString(), expected[i].SerializeAsString()) << i;
    }
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_FALSE(s.truncated()) << s.TailDescription();
    EXPECT_EQ(s.packets, v3.packets.size());
    EXPECT_EQ(s.compressed_packets, 2u);
    EXPECT_EQ(s.bytes_read, v4.size());
    EXPECT_EQ(s.good_end_offset, v4.size());
  }
}

// Cut anywhere, a v4 file reads up to its last whole Compressed packet, as any file does up to
// its last whole packet.
TEST_F(TraceReaderTest, ACutV4TraceKeepsEveryWholeCompressedPacket) {
  const TraceBytes v3 = CompactToLatest(MixedV1Trace());
  const size_t split = 8;  // the first flush ends with the first large batch
  const std::string v4 = CompressedInTwo(v3, split);
  const std::vector<uint64_t> starts = PacketStarts(v4, v3.packet_ends[0]);
  ASSERT_EQ(starts.size(), 2u);
  // Every byte around the packets' boundaries and in their framing, every 37th elsewhere.
  for (uint64_t cut = starts[0] + 1; cut < v4.size();
       cut += cut < starts[0] + 64 || (cut + 64 > starts[1] && cut < starts[1] + 64) ? 1 : 37) {
    WriteFile(Path("cut.idlescope"), v4.substr(0, cut));
    auto reader = TraceFileReader::Open(Path("cut.idlescope"), 1024);
    ASSERT_TRUE(reader.ok()) << reader.status();
    const std::vector<Packet> packets = ReadAll(**reader);
    const TraceReadStats& s = (*reader)->stats();
    const bool first_whole = cut >= starts[1];
    EXPECT_EQ(packets.size(), first_whole ? split : 0u) << cut;
    EXPECT_EQ(s.good_end_offset, first_whole ? starts[1] : starts[0]) << cut;
    EXPECT_EQ(s.good_end_offset + s.dropped_bytes, cut) << cut;
    if (cut == starts[1]) {
      EXPECT_FALSE(s.truncated()) << s.TailDescription();  // a file of the first flush
    } else {
      EXPECT_TRUE(s.tail == TailProblem::kCutInPacket || s.tail == TailProblem::kCutInFraming)
          << cut << ": " << s.TailDescription();
    }
  }
}

// A frame that does not decompress into whole packets is a corrupt packet: the reader stops
// there, with one line saying why, and keeps every packet before it.
TEST_F(TraceReaderTest, ACorruptFrameIsACorruptPacket) {
  const TraceBytes v3 = CompactToLatest(MixedV1Trace());
  const std::string packets = v3.bytes.substr(v3.packet_ends[0]);
  Packet good;
  ASSERT_TRUE(good.ParseFromString(CompressPackets(packets).substr(4))) << "one Compressed packet";
  ASSERT_TRUE(good.has_compressed());
  const std::string frame = good.compressed().zstd();
  auto compress = [](std::string_view content, bool content_size) {
    std::string out(ZSTD_compressBound(content.size()), '\0');
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
    out.resize(ZSTD_compress2(cctx, out.data(), out.size(), content.data(), content.size()));
    ZSTD_freeCCtx(cctx);
    return out;
  };
  Packet nested;
  nested.mutable_compressed()->set_zstd(frame);
  std::string nested_framed = "\x0a";
  testing::AppendVarint(nested.ByteSizeLong(), &nested_framed);
  nested_framed += nested.SerializeAsString();
  struct Case {
    std::string name, zstd, expect;
    uint32_t version = 4;
  };
  std::string cut_frame = frame.substr(0, frame.size() - 9);
  std::string flipped = frame;
  flipped[0] ^= 0x10;  // the magic
  const std::vector<Case> cases = {
      {"cut", cut_frame, "not a zstd frame"},
      {"magic", flipped, "not a zstd frame"},
      {"trailing", frame + "xyz", "3 bytes after its zstd frame"},
      {"no-size", compress(packets, false), "does not state its content size"},
      {"huge", compress(std::string(kMaxInflatedBytes + 1, '\0'), true), "above the 64 MiB limit"},
      {"not-packets", compress(packets.substr(1), true), "not whole packets from byte 0"},
      {"nested", compress(nested_framed, true), "packet 1 of the compressed packet"},
      {"in-v3", frame, "format v3 has no compressed packets", 3},
  };
  for (const Case& c : cases) {
    TraceBytes trace;
    Packet header = v3.packets[0];
    header.mutable_header()->set_format_version(c.version);
    trace.Add(header);
    trace.Add(v3.packets[1]);
    Packet p;
    p.mutable_compressed()->set_zstd(c.zstd);
    trace.Add(p);
    trace.Add(v3.packets[2]);
    WriteFile(Path(c.name), trace.bytes);
    auto reader = TraceFileReader::Open(Path(c.name));
    ASSERT_TRUE(reader.ok()) << reader.status();
    const std::vector<Packet> read = ReadAll(**reader);
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_EQ(read.size(), 1u) << c.name;
    EXPECT_EQ(s.tail, TailProblem::kUnparseablePacket) << c.name;
    EXPECT_EQ(s.good_end_offset, trace.packet_ends[1]) << c.name;
    const std::string line = s.TailDescription();
    EXPECT_NE(line.find(c.expect), std::string::npos) << c.name << ": " << line;
    EXPECT_NE(line.find("compressed packet"), std::string::npos) << c.name << ": " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
}

TEST_F(TraceReaderTest, InconsistentLaunchRunIsACorruptPacket) {
  TraceBytes v2 = CompactToLatest(MixedV1Trace());
  size_t index = 0;
  while (!(v2.packets[index].has_events() && v2.packets[index].events().events_size() > 100)) {
    ++index;
  }
  struct Damage {
    const char* what;
    void (*apply)(LaunchRun*);
  };
  const Damage damages[] = {
      {"ts and dur", [](LaunchRun* r) { r->add_dur(5); }},
      {"correlation", [](LaunchRun* r) { r->add_correlation_delta(1); }},
      {"site column", [](LaunchRun* r) { r->add_site(0); }},
      {"out of range",
       [](LaunchRun* r) {
         r->clear_site();
         for (int i = 0; i < r->ts_size(); ++i) r->add_site(7);
       }},
      {"no site", [](LaunchRun* r) { r->clear_sites(); }},
  };
  for (const Damage& d : damages) {
    TraceBytes broken;
    for (size_t i = 0; i < v2.packets.size(); ++i) {
      Packet p = v2.packets[i];
      if (i == index) {
        for (Event& e : *p.mutable_events()->mutable_events()) {
          if (e.launches_size() > 0) {
            d.apply(e.mutable_launches(0));
            break;
          }
        }
      }
      broken.Add(p);
    }
    WriteFile(Path("r.idlescope"), broken.bytes);
    auto reader = TraceFileReader::Open(Path("r.idlescope"));
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ(ReadAll(**reader).size(), index - 1) << d.what;
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_EQ(s.tail, TailProblem::kUnparseablePacket) << d.what;
    EXPECT_EQ(s.good_end_offset, broken.packet_ends[index - 1]) << d.what;
    EXPECT_NE(s.TailDescription().find("a launch run is corrupt"), std::string::npos)
        << s.TailDescription();
  }
}

TEST_F(TraceReaderTest, InconsistentKernelRunIsACorruptPacket) {
  TraceBytes v2 = CompactToLatest(MakeSampleTrace());
  size_t index = 0;
  while (!v2.packets[index].has_gpu()) ++index;
  TraceBytes broken;
  for (size_t i = 0; i < v2.packets.size(); ++i) {
    Packet p = v2.packets[i];
    if (i == index) {
      bool damaged = false;
      for (GpuActivity& a : *p.mutable_gpu()->mutable_activities()) {
        if (a.kernels_size() > 0) {
          a.mutable_kernels(0)->add_start(5);
          damaged = true;
        }
      }
      ASSERT_TRUE(damaged);
    }
    broken.Add(p);
  }
  WriteFile(Path("k.idlescope"), broken.bytes);
  auto reader = TraceFileReader::Open(Path("k.idlescope"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(ReadAll(**reader).size(), index - 1);
  const TraceReadStats& s = (*reader)->stats();
  EXPECT_EQ(s.tail, TailProblem::kUnparseablePacket);
  EXPECT_NE(s.TailDescription().find("a kernel run is corrupt"), std::string::npos)
      << s.TailDescription();
}

// A v3 Interned packet whose chain has no frames, or whose string names an undefined or shorter
// prefix, is a corrupt packet.
TEST_F(TraceReaderTest, V3InternedThatDoesNotExpandIsACorruptPacket) {
  const TraceBytes v3 = CompactToLatest(MixedV1Trace());
  size_t index = 0;
  while (!(v3.packets[index].has_interned() &&
           v3.packets[index].interned().stack_chains_size() == 1)) {
    ++index;
  }
  ASSERT_EQ(v3.packets[index].interned().strings(1).prefix(), 900u);
  struct Damage {
    const char* what;
    void (*apply)(Interned*);
    const char* says;
  };
  const Damage damages[] = {
      {"no frames", [](Interned* in) { in->mutable_stack_chains(0)->clear_frames(); },
       "stack chain 900 has no frames"},
      {"undefined prefix", [](Interned* in) { in->mutable_strings(1)->set_prefix(7777); },
       "string 901 starts with 47 bytes of string 7777, which is not defined before it"},
      {"prefix later", [](Interned* in) { in->mutable_strings(1)->set_prefix(902); },
       "which is not defined before it"},
      {"prefix too long", [](Interned* in) { in->mutable_strings(1)->set_prefix_size(400); },
       "string 901 starts with 400 bytes of string 900, which is shorter"},
      {"prefix over PATH_MAX", [](Interned* in) { in->mutable_strings(1)->set_prefix_size(5000); },
       "string 901 starts with 5000 bytes of string 900: more than 4096"},
      {"prefixes that add too much",
       [](Interned* in) {
         // 3,000 strings of 2 bytes, each the first 4,000 bytes of a 4,000-byte string: 12 MB
         // from some 20 KB.
         InternedString* big = in->add_strings();
         big->set_id(2000);
         big->set_str("/" + std::string(3999, 'x'));
         for (uint64_t i = 0; i < 3000; ++i) {
           InternedString* s = in->add_strings();
           s->set_id(3000 + i);
           s->set_str("/y");
           s->set_prefix(2000);
           s->set_prefix_size(4000);
         }
       },
       "bytes of string 2000: more than its packet may add"},
  };
  for (const Damage& d : damages) {
    TraceBytes broken;
    for (size_t i = 0; i < v3.packets.size(); ++i) {
      Packet p = v3.packets[i];
      if (i == index) d.apply(p.mutable_interned());
      broken.Add(p);
    }
    WriteFile(Path("i.idlescope"), broken.bytes);
    auto reader = TraceFileReader::Open(Path("i.idlescope"));
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ(ReadAll(**reader).size(), index - 1) << d.what;
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_EQ(s.tail, TailProblem::kUnparseablePacket) << d.what;
    EXPECT_NE(s.TailDescription().find(d.says), std::string::npos) << s.TailDescription();
  }
}

TEST_F(TraceReaderTest, V2UnknownFieldsInRunsAndUndefinedCommunicatorsAreCounted) {
  TraceBytes trace;
  Packet p;
  *p.mutable_header() = testing::MakeHeader(1, 0);
  p.mutable_header()->set_format_version(2);
  trace.Add(p);
  p.Clear();
  LaunchRun run;
  run.add_ts(100);
  run.add_ts(50);
  run.add_dur(3);
  run.add_dur(4);
  run.add_sites()->set_api(2);
  std::string run_bytes = run.SerializeAsString();
  testing::AppendVarint(9 << 3 | 0, &run_bytes);  // LaunchRun field 9, varint 1
  testing::AppendVarint(1, &run_bytes);
  ASSERT_TRUE(p.mutable_events()->add_events()->add_launches()->ParseFromString(run_bytes));
  Event* nccl = p.mutable_events()->add_events();
  nccl->set_type(NCCL_COLLECTIVE);
  nccl->set_comm_id(3);  // never defined
  trace.Add(p);
  WriteFile(Path("v.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("v.idlescope"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<Packet> packets = ReadAll(**reader);
  ASSERT_EQ(packets.size(), 1u);
  ASSERT_EQ(packets[0].events().events_size(), 3);
  EXPECT_EQ(packets[0].events().events(1).ts(), 50);
  EXPECT_EQ(packets[0].events().events(1).api(), 2u);
  EXPECT_TRUE(packets[0].events().events(1).async());
  EXPECT_EQ(packets[0].events().events(2).comm(), 0u);
  const TraceReadStats& s = (*reader)->stats();
  EXPECT_EQ(s.unknown_fields, 1u);
  EXPECT_EQ(s.undefined_comm_ids, 1u);
  EXPECT_EQ(s.launch_runs, 1u);
  EXPECT_EQ(s.run_launches, 2u);
}

// A file cut anywhere inside its header packet (the process killed, or the disk full, while the
// recorder wrote it) is a truncated trace, not "not an idlescope trace", even before the magic is
// complete. A minimal header has one-byte length prefixes; a recorder's, with a long command line,
// two-byte ones.
Header MinimalHeader() {
  Header h;
  h.set_magic("IDLESCOPE");
  h.set_format_version(2);
  h.set_pid(7);
  h.set_host("h");
  return h;
}

TEST_F(TraceReaderTest, CutInsideTheHeaderIsReportedAsTruncated) {
  for (bool long_cmdline : {false, true}) {
    TraceBytes trace;
    Packet p;
    *p.mutable_header() = long_cmdline ? testing::MakeHeader(7, 1) : MinimalHeader();
    if (long_cmdline) p.mutable_header()->add_cmdline(std::string(3000, 'x'));
    trace.Add(p);
    ASSERT_EQ(trace.framing_bytes[0], long_cmdline ? 3u : 2u);
    // Every cut through the framing and the magic, then a sample of the rest.
    for (uint64_t cut = 1; cut < trace.packet_ends[0]; cut += cut < 64 ? 1 : 61) {
      WriteFile(Path("h.idlescope"), trace.bytes.substr(0, cut));
      auto reader = TraceFileReader::Open(Path("h.idlescope"));
      ASSERT_FALSE(reader.ok()) << "cut " << cut;
      const std::string msg(reader.status().message());
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find("header cut short"), std::string::npos) << "cut " << cut << ": " << msg;
      EXPECT_EQ(msg.find("not an idlescope trace"), std::string::npos) << msg;
    }
  }
}

// A header whose magic is there but whose bytes do not parse is a corrupt trace, not another kind
// of file.
TEST_F(TraceReaderTest, CorruptHeaderAfterTheMagicIsCalledCorrupt) {
  Packet p;
  *p.mutable_header() = MinimalHeader();
  std::string payload = p.SerializeAsString();
  // Header.pid (field 3, varint) becomes an overlong varint: 11 bytes with the high bit set.
  const std::string pid_field = std::string("\x18\x07", 2);
  const size_t at = payload.find(pid_field);
  ASSERT_NE(at, std::string::npos);
  payload.replace(at + 1, 1, std::string(11, '\xff'));
  payload[1] = static_cast<char>(payload.size() - 2);  // Packet.header's length (one byte)
  ASSERT_LT(payload.size(), 130u);
  TraceBytes trace;
  trace.AddRaw(payload);
  WriteFile(Path("c.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("c.idlescope"));
  ASSERT_FALSE(reader.ok());
  const std::string msg(reader.status().message());
  EXPECT_NE(msg.find("corrupt trace header"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

// Counts what libprotobuf logs (it writes multi-line errors to stderr, e.g. for invalid UTF-8).
class ProtobufLogCounter {
 public:
  ProtobufLogCounter() {
    count_ = 0;
    previous_ = google::protobuf::SetLogHandler(&Count);
  }
  ~ProtobufLogCounter() { google::protobuf::SetLogHandler(previous_); }
  int count() const { return count_; }

 private:
  static void Count(google::protobuf::LogLevel, const char*, int, const std::string&) { ++count_; }
  static inline int count_ = 0;
  google::protobuf::LogHandler* previous_;
};

// Host names, environment values, device names and notice texts are whatever bytes the system
// gave: a Latin-1 path in a notice, a CUDA_VISIBLE_DEVICES that is not UTF-8. libprotobuf refused
// such packets when these fields were proto3 `string`s (the header: "not an idlescope trace";
// a notice: every packet after it dropped as corrupt, with a libprotobuf error on stderr). They
// are read, byte for byte, with nothing logged.
TEST_F(TraceReaderTest, TextFieldsThatAreNotUtf8AreReadByteForByte) {
  const std::string latin1_host =
      "gpu-n\xf6"
      "de";                                                  // "gpu-node" with o-umlaut in Latin-1
  const std::string bad_env = std::string("0,\xff\xfe", 4);  // not UTF-8 at all
  const std::string notice_text = "cannot write /data/caf\xe9/ckpt.pt";
  const std::string device_name = "NVIDIA \xc3\x28";  // an invalid 2-byte sequence
  TraceBytes trace = MakeSampleTrace();
  Header header = trace.packets[0].header();
  header.set_host(latin1_host);
  header.set_cuda_visible_devices(bad_env);
  header.set_tool_version("0.1\x80");
  header.set_boot_id("b\xffoot");
  header.mutable_config()->add_families("i\xf6");
  TraceBytes bad;
  {
    ProtobufLogCounter serializing;  // older protos logged here too (and wrote the bytes anyway)
    Packet p;
    *p.mutable_header() = header;
    bad.Add(p);
    for (size_t i = 1; i + 1 < trace.packets.size(); ++i) bad.Add(trace.packets[i]);
    p.Clear();
    p.mutable_notice()->set_severity(WARNING);
    p.mutable_notice()->set_code("trace_write_failed");
    p.mutable_notice()->set_text(notice_text);
    bad.Add(p);
    p.Clear();
    p.mutable_device()->set_name(device_name);
    p.mutable_device()->set_uuid("GPU-\xe9");
    bad.Add(p);
    bad.Add(trace.packets.back());  // the footer
  }
  WriteFile(Path("u.idlescope"), bad.bytes);

  ProtobufLogCounter logs;
  auto reader = TraceFileReader::Open(Path("u.idlescope"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->header().host(), latin1_host);
  EXPECT_EQ((*reader)->header().cuda_visible_devices(), bad_env);
  EXPECT_EQ((*reader)->header().boot_id(), "b\xffoot");
  std::vector<Packet> packets = ReadAll(**reader);
  EXPECT_FALSE((*reader)->stats().truncated()) << (*reader)->stats().TailDescription();
  EXPECT_TRUE((*reader)->stats().footer_seen);
  ASSERT_EQ(packets.size(), bad.packets.size() - 1);
  const Packet& notice = packets[packets.size() - 3];
  ASSERT_EQ(notice.data_case(), Packet::kNotice);
  EXPECT_EQ(notice.notice().text(), notice_text);
  const Packet& device = packets[packets.size() - 2];
  ASSERT_EQ(device.data_case(), Packet::kDevice);
  EXPECT_EQ(device.device().name(), device_name);
  EXPECT_EQ(logs.count(), 0);
}

// The rule behind the test above, for fields added later: the format has no `string` field
// (libprotobuf validates proto3 strings as UTF-8 and fails the packet), only `bytes`.
TEST(TraceFormatTest, NoFieldIsAProto3String) {
  const google::protobuf::FileDescriptor* file = Packet::descriptor()->file();
  std::vector<const google::protobuf::Descriptor*> messages;
  for (int i = 0; i < file->message_type_count(); ++i) messages.push_back(file->message_type(i));
  for (size_t m = 0; m < messages.size(); ++m) {
    for (int i = 0; i < messages[m]->nested_type_count(); ++i) {
      messages.push_back(messages[m]->nested_type(i));
    }
    for (int i = 0; i < messages[m]->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* field = messages[m]->field(i);
      EXPECT_NE(field->type(), google::protobuf::FieldDescriptor::TYPE_STRING)
          << field->full_name() << " is a string: make it bytes";
    }
  }
  EXPECT_GT(messages.size(), 20u);
}

TEST_F(TraceReaderTest, PacketLargerThanTheReadChunkIsReadWhole) {
  TraceBytes trace;
  Packet p;
  *p.mutable_header() = testing::MakeHeader(1, 0);
  trace.Add(p);
  p.Clear();
  *p.mutable_events() = testing::MakeEventBatch(1, 0, 5000, 7);
  trace.Add(p);
  ASSERT_GT(trace.bytes.size(), 50000u);
  WriteFile(Path("big.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("big.idlescope"), 64);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<Packet> packets = ReadAll(**reader);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].events().events_size(), 5000);
  EXPECT_FALSE((*reader)->stats().truncated());
  EXPECT_FALSE((*reader)->stats().footer_seen);
}

// Bounded memory: the read buffer is the chunk size, or one packet when a packet is larger, and
// goes back to the chunk size after it; it never grows with the file.
TEST_F(TraceReaderTest, MemoryIsBoundedByChunkOrLargestPacket) {
  TraceBytes trace;
  Packet p;
  *p.mutable_header() = testing::MakeHeader(1, 0);
  trace.Add(p);
  for (int i = 0; i < 400; ++i) {
    p.Clear();
    *p.mutable_events() = testing::MakeEventBatch(1, i, i == 10 ? 4000 : 100, i);
    trace.Add(p);
  }
  uint64_t largest = 0;
  for (size_t i = 1; i < trace.packet_ends.size(); ++i) {
    largest = std::max(largest, trace.packet_ends[i] - trace.packet_ends[i - 1]);
  }
  const size_t chunk = 8192;
  ASSERT_GT(largest, chunk);
  ASSERT_GT(trace.bytes.size(), 50 * chunk);
  WriteFile(Path("m.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("m.idlescope"), chunk);
  ASSERT_TRUE(reader.ok());
  Packet packet;
  size_t most = 0, count = 0;
  while ((*reader)->Next(&packet)) {
    most = std::max(most, (*reader)->buffer_bytes());
    ++count;
  }
  EXPECT_EQ(count, 400u);
  EXPECT_LE(most, largest);
  EXPECT_EQ((*reader)->buffer_bytes(), 0u);  // freed at the end of the file
  EXPECT_FALSE((*reader)->stats().truncated());
}

// Random byte flips anywhere after the header: never a crash or a hang, and every packet before
// the first damaged one is still returned.
TEST_F(TraceReaderTest, FlippedBytesNeverCrash) {
  TraceBytes trace = MakeSampleTrace();
  const uint64_t header_end = trace.packet_ends[0];
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    std::string bytes = trace.bytes;
    uint64_t first_damage = bytes.size();
    for (int flips = 1 + rng() % 4; flips > 0; --flips) {
      uint64_t at = header_end + rng() % (bytes.size() - header_end);
      bytes[at] = static_cast<char>(bytes[at] ^ (1 + rng() % 255));
      first_damage = std::min(first_damage, at);
    }
    WriteFile(Path("f.idlescope"), bytes);
    auto reader = TraceFileReader::Open(Path("f.idlescope"), seed % 2 ? 64 : 4096);
    ASSERT_TRUE(reader.ok()) << seed;
    std::vector<Packet> packets = ReadAll(**reader);
    size_t intact = 0;
    while (trace.packet_ends[intact + 1] <= first_damage) ++intact;
    ASSERT_GE(packets.size(), intact) << seed;
    for (size_t i = 0; i < intact; ++i) {
      EXPECT_EQ(packets[i].SerializeAsString(), trace.packets[i + 1].SerializeAsString()) << seed;
    }
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_EQ(s.good_end_offset + s.dropped_bytes, bytes.size()) << seed;
  }
}

TEST_F(TraceReaderTest, UnknownFieldsAreReadCountedAndNamed) {
  TraceBytes trace;
  Packet p;
  *p.mutable_header() = testing::MakeHeader(1, 0);
  trace.Add(p);
  // An event with a field from a newer format (id 99) inside a batch.
  Event event;
  event.set_type(FILE_WRITE);
  event.set_bytes(10);
  std::string event_bytes = event.SerializeAsString();
  testing::AppendVarint(99 << 3 | 0, &event_bytes);  // field 99, varint 5
  testing::AppendVarint(5, &event_bytes);
  p.Clear();
  ASSERT_TRUE(p.mutable_events()->add_events()->ParseFromString(event_bytes));
  p.mutable_events()->set_tid(1);
  std::string packet_bytes = p.SerializeAsString();
  testing::AppendVarint(98 << 3 | 2, &packet_bytes);  // Packet field 98, bytes "xy"
  testing::AppendVarint(2, &packet_bytes);
  packet_bytes += "xy";
  trace.AddRaw(packet_bytes);
  // A packet of a kind this reader does not know (only field 40).
  std::string new_kind;
  testing::AppendVarint(40 << 3 | 0, &new_kind);
  testing::AppendVarint(1, &new_kind);
  trace.AddRaw(new_kind);
  // A top-level Trace field other than `packet` (field 2, varint 7): skipped.
  testing::AppendVarint(2 << 3 | 0, &trace.bytes);
  testing::AppendVarint(7, &trace.bytes);
  p.Clear();
  p.mutable_footer()->set_reason(EXIT_NORMAL);
  trace.Add(p);
  WriteFile(Path("u.idlescope"), trace.bytes);

  auto reader = TraceFileReader::Open(Path("u.idlescope"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<Packet> packets = ReadAll(**reader);
  ASSERT_EQ(packets.size(), 3u);
  EXPECT_EQ(packets[0].events().events(0).bytes(), 10u);
  EXPECT_EQ(CountUnknownFields(packets[0]), 2u);
  std::vector<std::string> names;
  DescribeUnknownFields(packets[0], &names);
  EXPECT_EQ(names, (std::vector<std::string>{"Packet:98", "Event:99"}));
  EXPECT_EQ(packets[1].data_case(), Packet::DATA_NOT_SET);
  EXPECT_TRUE(packets[2].has_footer());
  const TraceReadStats& s = (*reader)->stats();
  EXPECT_EQ(s.unknown_fields, 4u);  // 98, 99, 40 and the Trace-level field 2
  EXPECT_EQ(s.skipped_trace_fields, 1u);
  EXPECT_FALSE(s.truncated());
  EXPECT_TRUE(s.footer_seen);
}

TEST_F(TraceReaderTest, OversizedLengthIsCorruptionNotAnAllocation) {
  TraceBytes trace = MakeSampleTrace(false);
  const uint64_t good = trace.bytes.size();
  trace.bytes.push_back(0x0a);
  testing::AppendVarint(1ull << 40, &trace.bytes);  // 1 TiB
  trace.bytes += "abc";
  WriteFile(Path("o.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("o.idlescope"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ReadAll(**reader).size() + 1, trace.packets.size());
  const TraceReadStats& s = (*reader)->stats();
  EXPECT_EQ(s.tail, TailProblem::kOversizedPacket);
  EXPECT_EQ(s.good_end_offset, good);
  EXPECT_EQ(s.dropped_bytes, trace.bytes.size() - good);
  EXPECT_NE(s.TailDescription().find("corrupt: "), std::string::npos) << s.TailDescription();
}

TEST_F(TraceReaderTest, LengthPastEndOfFileIsATruncationNotAnAllocation) {
  TraceBytes trace = MakeSampleTrace(false);
  const uint64_t good = trace.bytes.size();
  trace.bytes.push_back(0x0a);
  testing::AppendVarint(60ull << 20, &trace.bytes);  // under the sanity bound, past EOF
  trace.bytes += "abc";
  WriteFile(Path("p.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("p.idlescope"));
  ASSERT_TRUE(reader.ok());
  ReadAll(**reader);
  EXPECT_EQ((*reader)->stats().tail, TailProblem::kCutInPacket);
  EXPECT_EQ((*reader)->stats().dropped_bytes, trace.bytes.size() - good);
}

TEST_F(TraceReaderTest, GarbageAfterGoodPacketsIsReportedAsCorrupt) {
  TraceBytes trace = MakeSampleTrace(false);
  const uint64_t good = trace.bytes.size();
  // Tag 0x0a, length 3, bytes that are not a Packet (a truncated varint inside).
  trace.bytes += std::string("\x0a\x03\x08\xff\xff", 5);
  WriteFile(Path("g.idlescope"), trace.bytes);
  auto reader = TraceFileReader::Open(Path("g.idlescope"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(ReadAll(**reader).size() + 1, trace.packets.size());
  EXPECT_EQ((*reader)->stats().tail, TailProblem::kUnparseablePacket);
  EXPECT_EQ((*reader)->stats().good_end_offset, good);
  EXPECT_EQ((*reader)->stats().dropped_bytes, 5u);

  TraceBytes zeros = MakeSampleTrace(false);
  zeros.bytes += std::string(100, '\0');  // a preallocated, never written tail
  WriteFile(Path("z.idlescope"), zeros.bytes);
  auto zr = TraceFileReader::Open(Path("z.idlescope"));
  ASSERT_TRUE(zr.ok());
  EXPECT_EQ(ReadAll(**zr).size() + 1, zeros.packets.size());
  EXPECT_EQ((*zr)->stats().tail, TailProblem::kBadFraming);
  EXPECT_EQ((*zr)->stats().dropped_bytes, 100u);
}

// Random bytes after a valid prefix: never a crash, the prefix is always kept.
TEST_F(TraceReaderTest, RandomTailsNeverCrash) {
  TraceBytes trace = MakeSampleTrace(false);
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    std::string bytes = trace.bytes;
    const size_t n = rng() % 300;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(rng()));
    if (seed % 2 == 0 && n > 0) bytes[trace.bytes.size()] = 0x0a;  // look like a packet
    WriteFile(Path("r.idlescope"), bytes);
    auto reader = TraceFileReader::Open(Path("r.idlescope"), seed % 3 == 0 ? 64 : 4096);
    ASSERT_TRUE(reader.ok()) << seed;
    EXPECT_GE(ReadAll(**reader).size() + 1, trace.packets.size()) << seed;
    const TraceReadStats& s = (*reader)->stats();
    EXPECT_EQ(s.good_end_offset + s.dropped_bytes, bytes.size()) << seed;
  }
}

TEST_F(TraceReaderTest, FilesThatAreNotTracesAreRefusedWithOneLine) {
  struct Case {
    std::string name, bytes, expect;
  };
  Packet events;
  *events.mutable_events() = testing::MakeEventBatch(1, 0, 3, 1);
  TraceBytes no_header;
  no_header.Add(events);
  Packet wrong_magic;
  *wrong_magic.mutable_header() = testing::MakeHeader(1, 0);
  wrong_magic.mutable_header()->set_magic("PERFETTO");
  TraceBytes bad_magic;
  bad_magic.Add(wrong_magic);
  Packet v5;
  *v5.mutable_header() = testing::MakeHeader(1, 0);
  v5.mutable_header()->set_format_version(5);
  TraceBytes version5;
  version5.Add(v5);
  Packet v0 = v5;
  v0.mutable_header()->set_format_version(0);
  TraceBytes version0;
  version0.Add(v0);
  const std::vector<Case> cases = {
      {"empty", "", "empty file"},
      {"text", "hello, this is a text file\nwith two lines\n", "not an idlescope trace"},
      {"newline", "\nstarts with a newline, which is byte 0x0a\n", "not an idlescope trace"},
      {"elf",
       std::string("\x7f"
                   "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
                   16),
       "not an idlescope trace"},
      {"events-first", no_header.bytes, "not an idlescope trace"},
      {"wrong-magic", bad_magic.bytes, "not an idlescope trace"},
      {"version-5", version5.bytes,
       "unsupported trace format version 5 (this idlescope reads "
       "versions 1 to 4)"},
      {"version-0", version0.bytes, "unsupported trace format version 0"},
  };
  for (const Case& c : cases) {
    WriteFile(Path(c.name), c.bytes);
    auto reader = TraceFileReader::Open(Path(c.name));
    ASSERT_FALSE(reader.ok()) << c.name;
    const std::string msg(reader.status().message());
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(Path(c.name)), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  auto missing = TraceFileReader::Open(Path("missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("No such file or directory"), std::string::npos);
  auto directory = TraceFileReader::Open(dir_);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("directory"), std::string::npos);
}

TEST_F(TraceReaderTest, ListTraceFilesFindsOnlyTraceFilesSorted) {
  WriteFile(Path("host-20.idlescope"), "x");
  WriteFile(Path("host-10.idlescope"), "x");
  WriteFile(Path("notes.txt"), "x");
  WriteFile(Path(".idlescope"), "x");
  ASSERT_EQ(mkdir(Path("sub.idlescope").c_str(), 0755), 0);
  auto files = ListTraceFiles(dir_);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files,
            (std::vector<std::string>{Path("host-10.idlescope"), Path("host-20.idlescope")}));
  EXPECT_FALSE(ListTraceFiles(Path("nope")).ok());
}

TEST(EventTimesTest, UndoesTheDeltaEncoding) {
  EventBatch batch;
  for (int64_t ts : {1000, 5, -3, 10}) batch.add_events()->set_ts(ts);
  EXPECT_EQ(EventStartTimes(batch), (std::vector<int64_t>{1000, 1005, 1002, 1012}));
  GpuBatch gpu;
  for (int64_t ts : {7000, -100, 50}) gpu.add_activities()->set_start(ts);
  EXPECT_EQ(GpuActivityStartTimes(gpu), (std::vector<int64_t>{7000, 6900, 6950}));
}

TEST(InternedDataTest, ResolvesStringsStacksAndStreams) {
  TraceBytes trace = MakeSampleTrace();
  InternedData data;
  data.Add(trace.packets[1].interned());
  EXPECT_EQ(data.String(5), "/ckpt/model-0001.pt");
  EXPECT_EQ(data.String(0), "");
  EXPECT_EQ(data.String(999), "");
  bool complete = false;
  std::vector<const Frame*> frames = data.Stack(3, &complete);  // torch::save <- main
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_TRUE(complete);
  EXPECT_EQ(data.FormatFrame(*frames[0]), "torch::save (libtorch_cpu.so+0x3c4d)");
  EXPECT_EQ(data.FormatFrame(*frames[1]), "main (python3.11+0x1234)");
  ASSERT_NE(data.FindStream(1), nullptr);
  EXPECT_EQ(data.FindStream(1)->handle(), 0x5555'0000'1000u);
  EXPECT_EQ(data.FindStream(2), nullptr);
  EXPECT_EQ(data.ThreadName(4242), "python3");
  EXPECT_EQ(data.conflicting_ids(), 0u);

  // A redefinition is counted and ignored; a cyclic stack ends instead of looping.
  Interned more;
  InternedString* s = more.add_strings();
  s->set_id(5);
  s->set_str("/other");
  StackNode* a = more.add_stack_nodes();
  a->set_id(10);
  a->set_parent(11);
  a->set_frame(1);
  StackNode* b = more.add_stack_nodes();
  b->set_id(11);
  b->set_parent(10);
  b->set_frame(2);
  data.Add(more);
  EXPECT_EQ(data.String(5), "/ckpt/model-0001.pt");
  EXPECT_EQ(data.conflicting_ids(), 1u);
  EXPECT_EQ(data.Stack(10, &complete).size(), 2u);
  EXPECT_FALSE(complete);
  Frame unknown;
  unknown.set_rel_pc(0x10);
  EXPECT_EQ(data.FormatFrame(unknown), "? (?+0x10)");
}

}  // namespace
}  // namespace idlescope
