#include "tests/fuzz/fuzz_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "analyzer/cli/commands.h"
#include "analyzer/trace/interned_data.h"
#include "analyzer/trace/trace_reader.h"
#include "tests/fuzz/analyze_job.h"

namespace idlescope::fuzz {
namespace {}  // namespace

// What the targets computed, summed: a global with external linkage, so the work that feeds it is
// not optimized away.
size_t g_sink = 0;

namespace {

void Resolve(const InternedData& interned, uint64_t string_id, uint64_t stack_id) {
  g_sink += interned.String(string_id).size();
  if (stack_id == 0) return;
  bool complete = false;
  for (const Frame* frame : interned.Stack(stack_id, &complete)) {
    g_sink += interned.FormatFrame(*frame).size();
  }
}

// Runs `idlescope dump FILE` with its stdout on /dev/null: the fuzzer's and the test's own output
// must stay readable.
void DumpToNowhere(const std::string& path) {
  static const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  if (null >= 0) dup2(null, STDOUT_FILENO);
  std::string arg0 = "dump", arg1 = path;
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  DumpCommand(2, argv);
  std::fflush(stdout);
  if (saved >= 0) {
    dup2(saved, STDOUT_FILENO);
    close(saved);
  }
}

}  // namespace

std::vector<std::string> MemoryFiles(const std::vector<std::string_view>& contents) {
  static std::vector<int> fds;
  std::vector<std::string> paths;
  for (size_t i = 0; i < contents.size(); ++i) {
    if (i == fds.size()) {
      const int fd = memfd_create("idlescope-fuzz", MFD_CLOEXEC);
      if (fd < 0) std::abort();
      fds.push_back(fd);
    }
    const int fd = fds[i];
    if (ftruncate(fd, 0) != 0) std::abort();
    size_t done = 0;
    while (done < contents[i].size()) {
      const ssize_t n = pwrite(fd, contents[i].data() + done, contents[i].size() - done,
                               static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    paths.push_back("/proc/self/fd/" + std::to_string(fd));
  }
  return paths;
}

std::vector<std::string_view> SplitFiles(std::string_view input) {
  std::vector<std::string_view> files;
  while (files.size() + 1 < kMaxFiles) {
    const size_t at = input.find(kNextFile);
    if (at == std::string_view::npos) break;
    files.push_back(input.substr(0, at));
    input.remove_prefix(at + kNextFile.size());
  }
  files.push_back(input);
  return files;
}

void ReadTrace(std::string_view bytes) {
  const std::string path = MemoryFiles({bytes})[0];
  // Small read chunks (the reader grows its buffer for a larger packet), the smallest for every
  // third input size: packets then straddle buffer refills. `dump` reads with the default 1 MiB.
  const size_t chunk = bytes.size() % 3 == 0 ? 64 : 4096;
  auto reader = TraceFileReader::Open(path, chunk);
  if (!reader.ok()) {
    g_sink += reader.status().message().size();
    return;
  }
  InternedData interned;
  Packet packet;
  while ((*reader)->Next(&packet)) {
    switch (packet.data_case()) {
      case Packet::kInterned:
        interned.Add(packet.interned());
        break;
      case Packet::kEvents: {
        g_sink += EventStartTimes(packet.events()).size();
        for (const Event& e : packet.events().events()) {
          Resolve(interned, e.api(), e.stack());
          Resolve(interned, e.path(), 0);
          Resolve(interned, e.argv(), 0);
          if (const InternedStream* s = interned.FindStream(e.stream())) g_sink += s->device();
        }
        g_sink += interned.ThreadName(packet.events().tid()).size();
        break;
      }
      case Packet::kGpu:
        g_sink += GpuActivityStartTimes(packet.gpu()).size();
        for (const GpuActivity& a : packet.gpu().activities()) Resolve(interned, a.name(), 0);
        break;
      default:
        break;
    }
    std::vector<std::string> unknown;
    DescribeUnknownFields(packet, &unknown);
    g_sink += unknown.size();
  }
  g_sink += (*reader)->stats().TailDescription().size();
  reader->reset();
  DumpToNowhere(path);
}

void AnalyzeJob(std::string_view input) {
  g_sink += AnalyzeJobFiles(MemoryFiles(SplitFiles(input))).size();
}

}  // namespace idlescope::fuzz
