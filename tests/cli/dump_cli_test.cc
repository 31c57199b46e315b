// `idlescope dump` (the real binary) on generated traces, cut traces, and files that are not
// traces (issue 6, Done-when 5: one line on stderr and a non-zero exit, never a crash).
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/cli_process.h"
#include "tests/cli/trace_builder.h"

namespace idlescope {
namespace {

using testing::MakeSampleTrace;
using testing::ProcessResult;
using testing::RunProcess;
using testing::TraceBytes;
using testing::WriteFile;

ProcessResult Dump(const std::string& path, const std::string& option = "") {
  std::vector<std::string> argv = {IDLESCOPE_BIN, "dump"};
  if (!option.empty()) argv.push_back(option);
  argv.push_back(path);
  return RunProcess(argv);
}

size_t Lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

class DumpCliTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("dump"); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }

  // One line on stderr, nothing on stdout, exit status 1.
  void ExpectRefused(const std::string& path, const std::string& what) {
    ProcessResult r = Dump(path);
    ASSERT_TRUE(WIFEXITED(r.wait_status))
        << what << ": " << testing::DescribeWaitStatus(r.wait_status) << "\n"
        << r.err;
    EXPECT_EQ(WEXITSTATUS(r.wait_status), 1) << what;
    EXPECT_EQ(Lines(r.err), 1u) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("idlescope dump: ", 0), 0u) << what << ": " << r.err;
    EXPECT_EQ(r.out, "") << what;
  }

  std::string dir_;
};

TEST_F(DumpCliTest, PrintsEveryPacketAndEventWithIdsResolved) {
  TraceBytes trace = MakeSampleTrace();
  WriteFile(Path("t.idlescope"), trace.bytes);
  ProcessResult r = Dump(Path("t.idlescope"));
  ASSERT_EQ(r.wait_status, 0) << r.err;
  const std::string& out = r.out;
  // Header in full, with the clock snapshot as wall time.
  EXPECT_NE(out.find("packet 0 @0: header"), std::string::npos) << out;
  EXPECT_NE(out.find("magic=\"IDLESCOPE\" format_version=1 pid=4242 ppid=4200 host=\"testhost\""),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("cmdline: \"python3\" \"train.py\""), std::string::npos);
  EXPECT_NE(out.find("origin=ORIGIN_PRELOAD"), std::string::npos);
  EXPECT_NE(out.find("process start: -0.250000000"), std::string::npos) << out;
  // Events: time from the clock snapshot, tid, type, api, duration, resolved path/stream/stack.
  EXPECT_NE(out.find(" tid 4242 FILE_WRITE \"write\" dur="), std::string::npos) << out;
  EXPECT_NE(out.find("path=\"/ckpt/model-0001.pt\""), std::string::npos);
  EXPECT_NE(out.find("fs_type=FS_LOCAL"), std::string::npos);
  EXPECT_NE(out.find(" CUDA_MEMCPY \"cudaMemcpyAsync\" dur="), std::string::npos);
  EXPECT_NE(out.find("stream=1(handle 0x555500001000 dev 0)"), std::string::npos) << out;
  EXPECT_NE(out.find("copy_kind=COPY_H2D host_mem=MEM_PAGEABLE"), std::string::npos);
  EXPECT_NE(out.find("      at torch::save (libtorch_cpu.so+0x3c4d)\n"
                     "      at main (python3.11+0x1234)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("events tid 4242 (\"python3\") seq 2 dropped 0: 19 events"),
            std::string::npos);
  // The first event of the first batch starts 1 ms + something after the snapshot.
  EXPECT_NE(out.find("\n  +0.001"), std::string::npos);
  // GPU activities with kernel names resolved.
  EXPECT_NE(out.find("GPU_KERNEL dev 0 stream 7 dur=50.000us"), std::string::npos) << out;
  EXPECT_NE(out.find("name=\"void gemm_kernel<float>(float*, float const*, int)\" grid=132 "
                     "block=256"),
            std::string::npos);
  EXPECT_NE(out.find("notice +0.003000000 WARNING cupti_unavailable: libcupti.so could not"),
            std::string::npos);
  EXPECT_NE(out.find("footer end_ns="), std::string::npos);
  EXPECT_NE(out.find("reason=EXIT_NORMAL"), std::string::npos);
  EXPECT_NE(out.find("summary: 8 packets (1 header, 1 interned, 3 event batches, 1 gpu batches, 0 "
                     "devices, 0 module maps, 1 notices, 1 footer, 0 unknown), 36 events, 4 gpu "
                     "activities"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("truncated"), std::string::npos);
  EXPECT_EQ(out.find("no footer"), std::string::npos);
  // One line per event: 36 event lines that start with a time.
  size_t event_lines = 0;
  for (size_t pos = 0; (pos = out.find("\n  +0.", pos)) != std::string::npos; ++pos) ++event_lines;
  EXPECT_EQ(event_lines, 36u + 4u);  // events + GPU activities
}

// The lines of a dump that show events and GPU activities (and their stacks).
std::vector<std::string> EventLines(const std::string& out) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(pos, end - pos);
    if (line.rfind("  +", 0) == 0 || line.rfind("  -", 0) == 0 || line.rfind("      at ", 0) == 0) {
      lines.push_back(line);
    }
    pos = end + 1;
  }
  return lines;
}

// A v4 file dumps its events exactly as the v1 file it was compacted from, and says how many
// of them it stored as runs, and how many packets were compressed.
TEST_F(DumpCliTest, ACompactTraceDumpsTheSameEventsAsV1) {
  TraceBytes v1 = MakeSampleTrace();
  WriteFile(Path("v1.idlescope"), v1.bytes);
  WriteFile(Path("v3.idlescope"), testing::CompactToLatest(v1).bytes);
  ProcessResult r1 = Dump(Path("v1.idlescope"));
  ProcessResult r2 = Dump(Path("v3.idlescope"));
  ASSERT_EQ(r1.wait_status, 0) << r1.err;
  ASSERT_EQ(r2.wait_status, 0) << r2.err;
  const std::vector<std::string> lines = EventLines(r1.out);
  EXPECT_GE(lines.size(), 36u + 4u);  // events and GPU activities, and stack frames
  EXPECT_EQ(EventLines(r2.out), lines);
  EXPECT_NE(r1.out.find("\nformat v1\n"), std::string::npos) << r1.out;
  EXPECT_NE(r2.out.find("format_version=4"), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find(" launches stored in "), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("gpu 4 activities, dropped 0 (3 kernels stored in 1 runs)"),
            std::string::npos)
      << r2.out;
  EXPECT_NE(r2.out.find("\nformat v4: "), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("of the gpu activities kernels stored in 1 kernel runs; 0 of the packets "
                        "were in 0 compressed packets\n"),
            std::string::npos)
      << r2.out;
}

TEST_F(DumpCliTest, SaysHowManyBytesWereDroppedFromACutFile) {
  TraceBytes trace = MakeSampleTrace(/*footer=*/true);
  const uint64_t last_start = trace.packet_ends[trace.packet_ends.size() - 2];
  const uint64_t cut = last_start + 5;  // inside the footer packet
  WriteFile(Path("cut.idlescope"), trace.bytes.substr(0, cut));
  ProcessResult r = Dump(Path("cut.idlescope"));
  ASSERT_EQ(r.wait_status, 0) << r.err;
  EXPECT_NE(r.out.find("truncated: 5 bytes after offset " + std::to_string(last_start) +
                       " were dropped (cut inside a packet"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("no footer: the process did not exit cleanly"), std::string::npos);
  EXPECT_NE(r.out.find("summary: 7 packets"), std::string::npos) << r.out;
}

TEST_F(DumpCliTest, ReportsUnknownFields) {
  TraceBytes trace;
  Packet p;
  *p.mutable_header() = testing::MakeHeader(7, 1);
  trace.Add(p);
  p.Clear();
  p.mutable_notice()->set_code("x");
  std::string bytes = p.SerializeAsString();
  testing::AppendVarint(99 << 3 | 0, &bytes);
  testing::AppendVarint(1, &bytes);
  trace.AddRaw(bytes);
  WriteFile(Path("u.idlescope"), trace.bytes);
  ProcessResult r = Dump(Path("u.idlescope"));
  ASSERT_EQ(r.wait_status, 0) << r.err;
  EXPECT_NE(r.out.find("unknown fields (ignored): Packet:99"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", 1 unknown fields,"), std::string::npos) << r.out;
}

TEST_F(DumpCliTest, SummaryModeSkipsEvents) {
  WriteFile(Path("t.idlescope"), MakeSampleTrace().bytes);
  ProcessResult r = Dump(Path("t.idlescope"), "--summary");
  ASSERT_EQ(r.wait_status, 0) << r.err;
  EXPECT_EQ(r.out.find("FILE_WRITE"), std::string::npos);
  EXPECT_NE(r.out.find("summary: 8 packets"), std::string::npos);
}

TEST_F(DumpCliTest, EmptyTextAndElfFilesAreRefused) {
  WriteFile(Path("empty"), "");
  ExpectRefused(Path("empty"), "empty file");
  WriteFile(Path("text"), "epoch 1 loss 0.25\nepoch 2 loss 0.20\n");
  ExpectRefused(Path("text"), "text file");
  ExpectRefused(IDLESCOPE_BIN, "ELF binary");
  ExpectRefused(Path("does-not-exist"), "missing file");
  ExpectRefused(dir_, "directory");
}

TEST_F(DumpCliTest, RandomBytesAreRefusedNeverACrash) {
  int runs = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (size_t length : {1, 2, 3, 16, 200, 70000}) {
      std::mt19937_64 rng(seed * 1000 + length);
      std::string bytes(length, '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      // Half of them start like a packet, to get past the first tag check.
      if (seed % 2 == 0) bytes[0] = 0x0a;
      const std::string path =
          Path("random-" + std::to_string(seed) + "-" + std::to_string(length));
      WriteFile(path, bytes);
      ExpectRefused(path, path);
      ++runs;
    }
  }
  EXPECT_EQ(runs, 36);
}

TEST_F(DumpCliTest, UsageErrors) {
  ProcessResult r = RunProcess({IDLESCOPE_BIN, "dump"});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 2);
  r = RunProcess({IDLESCOPE_BIN, "dump", "--bogus", "x"});
  EXPECT_TRUE(WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 2);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos);
}

}  // namespace
}  // namespace idlescope
