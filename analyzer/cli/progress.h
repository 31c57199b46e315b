// Progress of a long analysis on stderr: "idlescope report: 412.0 of 1210.3 MiB read (34%),
// 2.10 M events/s, ETA 9 s", rewritten in place about 4 times a second once the analysis has run
// for a second (IDLESCOPE_PROGRESS_AFTER_MS changes that), and erased when it is done. Only when
// stderr is a terminal (a log file or a pipe gets nothing), and never with --quiet. A RecordSink
// beside the analysis (it counts the records) that asks the reader how far it is
// (JobReader::BytesRead).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "analyzer/model/record_sink.h"

namespace idlescope {

class ProgressSink : public RecordSink {
 public:
  // `bytes_read` and `total_bytes` say how far the reader is; `out_fd` is where to write (2).
  ProgressSink(std::string command, std::function<uint64_t()> bytes_read, uint64_t total_bytes,
               int out_fd = 2);
  ~ProgressSink() override { Finish(); }
  // Whether progress is shown at all: `out_fd` is a terminal and not `quiet`.
  static bool Wanted(bool quiet, int out_fd = 2);

  void AddProcess(uint32_t /*process*/, const ProcessInfo& /*info*/) override {}
  void AddHostEvent(const HostEvent& /*event*/) override { Tick(); }
  void AddGpuRecord(const GpuRecord& /*record*/) override { Tick(); }
  // Erases the progress line, if one was written.
  void Finish();
  // A job in shards: `events` more records read (by any shard; the caller serializes the calls),
  // and the total once it is known.
  void AddEvents(uint64_t events) {
    events_ += events;
    Check();
  }
  void SetTotal(uint64_t total_bytes) { total_bytes_ = total_bytes; }

  // The line for these figures (tests check the wording and the arithmetic).
  static std::string Line(const std::string& command, uint64_t read, uint64_t total,
                          uint64_t events, double seconds);

 private:
  void Tick() {
    if ((++events_ & 0xfff) == 0) Check();
  }
  void Check();

  std::string command_;
  std::function<uint64_t()> bytes_read_;
  uint64_t total_bytes_;
  int fd_;
  uint64_t events_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
  // How long the analysis runs before the first line: IDLESCOPE_PROGRESS_AFTER_MS, else 1 s.
  std::chrono::milliseconds first_after_;
  bool shown_ = false;
};

}  // namespace idlescope
