// A real PyTorch job (Debian's python3-torch, CPU) traced: DataLoader workers have their own
// traces linked to the parent, their dataset reads are recorded, and torch.save's checkpoint
// writes show the .pt path, the bytes and the writing thread.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/io/trace_file.h"

namespace idlescope::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(TorchTrace, DataLoaderWorkersAndCheckpoints) {
  if (access(kPython, X_OK) != 0 || RunBare({kPython, "-c", "import torch"}) != 0) {
    GTEST_SKIP() << "no python3-torch for /usr/bin/python3";
  }
  std::string out = MakeTempDir(), data = MakeTempDir(), ckpt = MakeTempDir();
#ifdef IDLESCOPE_CLI
  ASSERT_EQ(RunWithCli(IDLESCOPE_CLI, {kPython, TORCH_JOB_PY, data, ckpt}, out), 0);
#else
  ASSERT_EQ(RunTraced({kPython, TORCH_JOB_PY, data, ckpt}, out), 0);
#endif
  auto files = ReadTraceDir(out);

  // The training process: the one that forked the workers.
  const TraceFile* main = nullptr;
  for (const auto& f : files) {
    if (!f.OfType(PROC_FORK).empty()) main = &f;
  }
  ASSERT_NE(main, nullptr) << "traces in " << out;
  EXPECT_TRUE(main->has_footer);

  // Checkpoints: every byte torch.save wrote to epochN.pt is in FILE_WRITE events on that path,
  // written by one thread of the main process.
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::string pt = ckpt + "/epoch" + std::to_string(epoch) + ".pt";
    struct stat st;
    ASSERT_EQ(stat(pt.c_str(), &st), 0);
    uint64_t bytes = 0, dur = 0;
    std::set<uint32_t> threads;
    bool opened = false;
    for (const TraceEvent& e : main->events) {
      if (main->Str(e.event.path()) != pt) continue;
      if (e.event.type() == FILE_OPEN) opened = true;
      if (e.event.type() == FILE_WRITE) {
        bytes += e.event.bytes();
        dur += e.event.dur();
        threads.insert(e.tid);
      }
    }
    SCOPED_TRACE(pt);
    EXPECT_TRUE(opened);
    EXPECT_EQ(bytes, static_cast<uint64_t>(st.st_size));
    EXPECT_GT(dur, 0u);
    ASSERT_EQ(threads.size(), 1u);
    EXPECT_NE(*threads.begin(), 0u);
  }

  // Workers: one trace per forked worker (2 per epoch), linked by pid/ppid, reading samples.
  auto forks = main->OfType(PROC_FORK);
  EXPECT_GE(forks.size(), 4u);
  // Bytes per (worker, sample file): Python reads a file to EOF with two read() calls (the data,
  // then 0 bytes), merged into one burst unless the worker was descheduled between them for
  // longer than the burst gap (1 ms): so check the total per file, not each event. Every epoch
  // reads every sample once, in some worker.
  std::map<std::pair<uint32_t, std::string>, uint64_t> sample_bytes;
  std::set<std::string> samples_read;
  int workers_with_reads = 0;
  for (auto* fork : forks) {
    const TraceFile* worker = nullptr;
    for (const auto& f : files) {
      if (f.header.pid() == fork->event.child_pid()) worker = &f;
    }
    ASSERT_NE(worker, nullptr) << "no trace for worker " << fork->event.child_pid();
    EXPECT_EQ(worker->header.ppid(), main->header.pid());
    EXPECT_EQ(worker->header.origin(), ORIGIN_FORK);
    bool read_any = false;
    for (auto* e : worker->OfType(FILE_READ)) {
      std::string path = worker->Str(e->event.path());
      if (path.rfind(data + "/sample", 0) == 0 && EndsWith(path, ".bin")) {
        sample_bytes[{worker->header.pid(), path}] += e->event.bytes();
        samples_read.insert(path);
        read_any = true;
      }
    }
    if (read_any) ++workers_with_reads;
  }
  EXPECT_EQ(samples_read.size(), 64u);
  for (const auto& [key, bytes] : sample_bytes) EXPECT_EQ(bytes, 256u * 4) << key.second;
  EXPECT_GE(workers_with_reads, 2);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + out + "' '" + data + "' '" + ckpt + "'";
    (void)system(cmd.c_str());
  }
}

}  // namespace
}  // namespace idlescope::testing
