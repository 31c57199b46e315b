// Format v4's compression in the recorder (interpose/packet_compressor.h): what it writes reads
// back as the packets it was given, small or incompressible input and a missing workspace are
// written as they are, and its bytes are those of the tools' writer (CompressPackets,
// analyzer/trace/compressed_packets.h), which follows the same rules (proto/format_rules.h).
#include "interpose/packet_compressor.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "analyzer/trace/compressed_packets.h"
#include "interpose/trace_encoder.h"
#include "proto/format_rules.h"
#include "trace.pb.h"

namespace idlescope {
namespace {

uint64_t Next(uint64_t* seed, uint64_t n) {
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  return (*seed >> 33) % n;
}

// Interned packets of `n` paths each, as a Python job's imports define them (the recorder's
// encoder), with notices between them: `packets` framed packets in all.
std::string InternedPackets(int packets, int n, uint64_t seed) {
  wire::Buffer b;
  format::PathPrefixes prefixes;
  uint64_t id = 1;
  for (int p = 0; p < packets; ++p) {
    trace::Interned interned;
    for (int i = 0; i < n; ++i, ++id) {
      interned.strings.push_back({id, "/usr/lib/python3/dist-packages/torch/nn/modules/m" +
                                          std::to_string(Next(&seed, 5000)) +
                                          "/__init__.cpython-311.pyc"});
      interned.frames.push_back({id, id, 1, 0x1000 * id, 0, 0, trace::kFramePython, 0, false});
      interned.stack_nodes.push_back({id, id - 1, id});
    }
    trace::WriteInternedPacket(b, interned, prefixes);
    trace::WriteNoticePacket(b, {id, 1, "code", "text of notice " + std::to_string(p)});
  }
  return std::string(b.view());
}

// The packets a frame holds, framed again (what the writer gave the compressor).
std::string Inflated(const idlescope::Packet& packet) {
  PacketInflater inflater;
  std::string error;
  EXPECT_TRUE(inflater.Inflate(packet.compressed().zstd(), &error)) << error;
  std::string framed;
  while (inflater.pending()) {
    const std::string_view p = inflater.Next();
    framed.push_back('\x0a');
    for (uint64_t v = p.size();; v >>= 7) {
      framed.push_back(static_cast<char>(v >= 0x80 ? (v & 0x7f) | 0x80 : v));
      if (v < 0x80) break;
    }
    framed.append(p);
  }
  return framed;
}

// The framed packets of `bytes`, parsed.
std::vector<idlescope::Packet> Packets(const std::string& bytes) {
  idlescope::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  return {trace.packet().begin(), trace.packet().end()};
}

std::string Compressed(PacketCompressor& compressor, const std::string& packets) {
  wire::Buffer out;
  compressor.Append(reinterpret_cast<const uint8_t*>(packets.data()), packets.size(), &out);
  return std::string(out.view());
}

TEST(PacketCompressorTest, AFlushReadsBackAsItsPacketsAndIsWhatTheToolsWrite) {
  const std::string packets = InternedPackets(20, 50, 1);
  PacketCompressor compressor;
  errno = 4242;
  const std::string out = Compressed(compressor, packets);
  EXPECT_EQ(errno, 4242);
  EXPECT_GT(compressor.mapped_bytes(), format::kCompressMaxFrameInput);
  const std::vector<idlescope::Packet> written = Packets(out);
  ASSERT_EQ(written.size(), 1u);
  ASSERT_TRUE(written[0].has_compressed());
  EXPECT_EQ(Inflated(written[0]), packets);
  EXPECT_LT(out.size(), packets.size() / 3) << packets.size();
  EXPECT_EQ(out, CompressPackets(packets));
  // The context is reused, and every frame stands alone: the same input, the same bytes.
  EXPECT_EQ(Compressed(compressor, packets), out);
}

TEST(PacketCompressorTest, FramesHoldWholePacketsOfAtMostAMebibyte) {
  const std::string packets = InternedPackets(600, 100, 2);
  ASSERT_GT(packets.size(), 2 * format::kCompressMaxFrameInput);
  PacketCompressor compressor;
  const std::string out = Compressed(compressor, packets);
  std::string back;
  for (const idlescope::Packet& p : Packets(out)) {
    ASSERT_TRUE(p.has_compressed());
    const std::string framed = Inflated(p);
    EXPECT_LE(framed.size(), format::kCompressMaxFrameInput);
    back += framed;
  }
  EXPECT_EQ(back, packets);
  EXPECT_GE(Packets(out).size(), 3u);
  EXPECT_EQ(out, CompressPackets(packets));
}

TEST(PacketCompressorTest, SmallFlushesAreWrittenAsTheyAreWithoutAWorkspace) {
  const std::string packets = InternedPackets(1, 5, 3);
  ASSERT_LT(packets.size(), format::kCompressMinBytes);
  PacketCompressor compressor;
  EXPECT_EQ(Compressed(compressor, packets), packets);
  EXPECT_EQ(compressor.mapped_bytes(), 0u);
  EXPECT_EQ(CompressPackets(packets), packets);
}

TEST(PacketCompressorTest, PacketsThatDoNotShrinkAreWrittenAsTheyAre) {
  uint64_t seed = 4;
  std::string noise(8000, '\0');
  for (char& c : noise) c = static_cast<char>(Next(&seed, 256));
  wire::Buffer b;
  trace::WriteNoticePacket(b, {1, 1, "noise", noise});
  const std::string packets(b.view());
  PacketCompressor compressor;
  EXPECT_EQ(Compressed(compressor, packets), packets);
  EXPECT_GT(compressor.mapped_bytes(), 0u);
  EXPECT_EQ(CompressPackets(packets), packets);
}

int g_maps = 0;
void* NoMemory(size_t) {
  ++g_maps;
  return nullptr;
}

TEST(PacketCompressorTest, WithoutAWorkspaceThePacketsAreWrittenAsTheyAre) {
  const std::string packets = InternedPackets(20, 50, 5);
  PacketCompressor compressor(&NoMemory);
  g_maps = 0;
  EXPECT_EQ(Compressed(compressor, packets), packets);
  EXPECT_EQ(Compressed(compressor, packets), packets);
  EXPECT_EQ(g_maps, 1);  // asked once per process, not at every flush
  EXPECT_EQ(compressor.mapped_bytes(), 0u);
}

}  // namespace
}  // namespace idlescope
