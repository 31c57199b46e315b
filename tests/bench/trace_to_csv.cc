// trace_to_csv: the events of a trace directory as CSV tables, for tests/bench/run.sh's SQLite
// comparison (the way Nsight Systems answers questions: export the trace into SQLite once, then
// ask in SQL). Reads every *.idlescope file of DIR with the streaming reader and writes
//   OUT/gpu.csv   pid,device,stream,kind,start,end        one row per GPU activity
//   OUT/host.csv  pid,tid,type,api,start,end              one row per host event
//   OUT/names.csv pid,id,name                             the files' interned strings (api ids)
// Times are the trace clock (ns), start and end absolute. Prints "events N" (host + GPU rows).
//   trace_to_csv DIR OUT
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/trace/trace_reader.h"

namespace {

// CSV field for a name: quoted, with doubled quotes (SQLite's .import reads RFC 4180).
std::string CsvQuoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: trace_to_csv DIR OUT\n");
    return 2;
  }
  auto files = idlescope::ListTraceFiles(argv[1]);
  if (!files.ok()) {
    std::fprintf(stderr, "trace_to_csv: %s\n", std::string(files.status().message()).c_str());
    return 1;
  }
  std::string out = argv[2];
  FILE* gpu = std::fopen((out + "/gpu.csv").c_str(), "w");
  FILE* host = std::fopen((out + "/host.csv").c_str(), "w");
  FILE* names = std::fopen((out + "/names.csv").c_str(), "w");
  if (gpu == nullptr || host == nullptr || names == nullptr) {
    std::fprintf(stderr, "trace_to_csv: cannot write in %s\n", out.c_str());
    return 1;
  }
  std::fprintf(gpu, "pid,device,stream,kind,start,end\n");
  std::fprintf(host, "pid,tid,type,api,start,end\n");
  std::fprintf(names, "pid,id,name\n");
  unsigned long long rows = 0;
  for (const std::string& path : *files) {
    auto reader = idlescope::TraceFileReader::Open(path);
    if (!reader.ok()) {
      std::fprintf(stderr, "trace_to_csv: skipping %s\n",
                   std::string(reader.status().message()).c_str());
      continue;
    }
    unsigned pid = (*reader)->header().pid();
    idlescope::Packet packet;
    while ((*reader)->Next(&packet)) {
      if (packet.has_events()) {
        const idlescope::EventBatch& batch = packet.events();
        std::vector<int64_t> starts = idlescope::EventStartTimes(batch);
        for (int i = 0; i < batch.events_size(); ++i) {
          const idlescope::Event& e = batch.events(i);
          std::fprintf(host, "%u,%u,%d,%llu,%lld,%lld\n", pid, batch.tid(),
                       static_cast<int>(e.type()), static_cast<unsigned long long>(e.api()),
                       static_cast<long long>(starts[i]),
                       static_cast<long long>(starts[i] + static_cast<int64_t>(e.dur())));
        }
        rows += static_cast<unsigned long long>(batch.events_size());
      } else if (packet.has_gpu()) {
        const idlescope::GpuBatch& batch = packet.gpu();
        std::vector<int64_t> starts = idlescope::GpuActivityStartTimes(batch);
        for (int i = 0; i < batch.activities_size(); ++i) {
          const idlescope::GpuActivity& a = batch.activities(i);
          std::fprintf(gpu, "%u,%u,%u,%d,%lld,%lld\n", pid, a.device(), a.stream(),
                       static_cast<int>(a.kind()), static_cast<long long>(starts[i]),
                       static_cast<long long>(starts[i] + static_cast<int64_t>(a.dur())));
        }
        rows += static_cast<unsigned long long>(batch.activities_size());
      } else if (packet.has_interned()) {
        for (const idlescope::InternedString& s : packet.interned().strings()) {
          std::fprintf(names, "%u,%llu,%s\n", pid, static_cast<unsigned long long>(s.id()),
                       CsvQuoted(s.str()).c_str());
        }
      }
    }
  }
  bool ok = std::fclose(gpu) == 0;
  ok = std::fclose(host) == 0 && ok;
  ok = std::fclose(names) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "trace_to_csv: writing %s failed\n", out.c_str());
    return 1;
  }
  std::printf("events %llu\n", rows);
  return 0;
}
