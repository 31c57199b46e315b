// Reader throughput: packets/s, events/s and MB/s over a generated trace of realistic event
// batches (CUDA copies and launches, checkpoint writes with stacks; 1000 events per batch, as a
// busy thread flushes them), in format v1 and v2. Prints the figures; fails only if a trace does
// not read back.
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "analyzer/trace/trace_reader.h"
#include "tests/cli/trace_builder.h"

namespace {

// Best of 3 full reads of `bytes` (written to a temp file); prints one line per figure.
bool Measure(const char* label, const std::string& bytes) {
  char path[] = "/tmp/idlescope-bench-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return false;
  close(fd);
  idlescope::testing::WriteFile(path, bytes);
  double best = 1e9;
  uint64_t packets = 0, events = 0;
  for (int round = 0; round < 3; ++round) {
    auto start = std::chrono::steady_clock::now();
    auto reader = idlescope::TraceFileReader::Open(path);
    if (!reader.ok()) {
      fprintf(stderr, "%s\n", std::string(reader.status().message()).c_str());
      return false;
    }
    idlescope::Packet p;
    packets = 1;
    events = 0;
    while ((*reader)->Next(&p)) {
      ++packets;
      if (p.has_events()) events += p.events().events_size();
    }
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if ((*reader)->stats().truncated() || (*reader)->stats().bytes_read != bytes.size()) {
      fprintf(stderr, "trace did not read back whole\n");
      return false;
    }
  }
  unlink(path);
  printf("trace_reader_bench: %s: %zu bytes, %lu packets, %lu events (%.1f bytes/event)\n", label,
         bytes.size(), static_cast<unsigned long>(packets), static_cast<unsigned long>(events),
         static_cast<double>(bytes.size()) / events);
  printf("trace_reader_bench: %s: best of 3: %.3f s = %.0f packets/s, %.2f M events/s, %.1f MB/s\n",
         label, best, packets / best, events / best / 1e6, bytes.size() / best / 1e6);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = argc > 1 ? atoi(argv[1]) : 1000;
  const int per_batch = 1000;
  idlescope::testing::TraceBytes trace = idlescope::testing::MakeSampleTrace(/*footer=*/false);
  trace.bytes.reserve(static_cast<size_t>(batches) * per_batch * 24);
  for (int b = 0; b < batches; ++b) {
    idlescope::Packet p;
    *p.mutable_events() = idlescope::testing::MakeEventBatch(100 + b % 8, b / 8, per_batch, b);
    trace.Add(p);
  }
  // The same events as the recorder writes them now (format v2: launch runs, deltas), and as
  // older recorders wrote them (v1): the reader expands v2 into v1's shape, at what cost.
  const std::string v2 = idlescope::testing::CompactToLatest(trace).bytes;
  trace.packets.clear();
  return Measure("v1", trace.bytes) && Measure("v2", v2) ? 0 : 1;
}
