// RecordSink: what the read stage hands on. A reader (read/job_reader.h) delivers the records of a
// whole job to one sink: every process first (numbered 0, 1, 2, ... in the order given), then the
// host events, GPU records, device infos and process ends of all its trace files merged by time,
// approximately (a file's records are only nearly in time order; see JobReader), with AdvanceTo(t)
// saying that every record before `t` has been delivered. Warnings and per-file figures come last.
//
// Sinks: the analysis (analysis/job_analysis.h), diff's step census (diff/step_census.h), and
// any pair of them through a TeeSink, so that one read of the files feeds both. A sink overrides
// what it needs; the rest is ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/model/job_model.h"
#include "analyzer/model/job_report.h"

namespace idlescope {

class RecordSink {
 public:
  virtual ~RecordSink() = default;

  virtual void AddProcess(uint32_t process, const ProcessInfo& info) = 0;
  virtual void AddDeviceInfo(uint32_t /*process*/, const DeviceProps& /*props*/) {}
  virtual void AddHostEvent(const HostEvent& /*event*/) {}
  virtual void AddGpuRecord(const GpuRecord& /*record*/) {}
  // The process ended cleanly at `end` (Footer.end_ns). Without it, its last record ends it.
  virtual void EndProcess(uint32_t /*process*/, Ns /*end*/) {}
  // Every record of the process's file was delivered (after its EndProcess, if any).
  virtual void FileDone(uint32_t /*process*/) {}
  // Every record before `t` has been delivered.
  virtual void AdvanceTo(Ns /*t*/) {}
  virtual void AddWarning(const ReportWarning& /*warning*/) {}
  virtual void AddFile(const FileReport& /*file*/) {}
  // Jobs on several hosts, before any process: how each host's clock was aligned.
  virtual void AddHostClock(const HostClock& /*clock*/) {}
  // After the processes, before any record: an address `process` had a socket on, in
  // SocketPeers::Key form (analysis/identities.h), read from the start of its file
  // (read/socket_addresses.h), so that the other end of a socket is found whatever part of the
  // job is analyzed.
  virtual void AddSocketAddress(uint32_t /*process*/, std::string /*key*/) {}
  // The name thread `tid` of `process` had (pthread_setname_np, prctl PR_SET_NAME: its comm),
  // as the recorder last read it; a later call for the same thread names it anew.
  virtual void AddThreadName(uint32_t /*process*/, uint32_t /*tid*/, std::string_view /*name*/) {}
};

// Hands every record to each of its sinks, in the order they were given.
class TeeSink : public RecordSink {
 public:
  explicit TeeSink(std::vector<RecordSink*> sinks) : sinks_(std::move(sinks)) {}

  void AddProcess(uint32_t process, const ProcessInfo& info) override {
    for (RecordSink* s : sinks_) s->AddProcess(process, info);
  }
  void AddDeviceInfo(uint32_t process, const DeviceProps& props) override {
    for (RecordSink* s : sinks_) s->AddDeviceInfo(process, props);
  }
  void AddHostEvent(const HostEvent& event) override {
    for (RecordSink* s : sinks_) s->AddHostEvent(event);
  }
  void AddGpuRecord(const GpuRecord& record) override {
    for (RecordSink* s : sinks_) s->AddGpuRecord(record);
  }
  void EndProcess(uint32_t process, Ns end) override {
    for (RecordSink* s : sinks_) s->EndProcess(process, end);
  }
  void FileDone(uint32_t process) override {
    for (RecordSink* s : sinks_) s->FileDone(process);
  }
  void AdvanceTo(Ns t) override {
    for (RecordSink* s : sinks_) s->AdvanceTo(t);
  }
  void AddWarning(const ReportWarning& warning) override {
    for (RecordSink* s : sinks_) s->AddWarning(warning);
  }
  void AddFile(const FileReport& file) override {
    for (RecordSink* s : sinks_) s->AddFile(file);
  }
  void AddHostClock(const HostClock& clock) override {
    for (RecordSink* s : sinks_) s->AddHostClock(clock);
  }
  void AddSocketAddress(uint32_t process, std::string key) override {
    for (RecordSink* s : sinks_) s->AddSocketAddress(process, key);
  }
  void AddThreadName(uint32_t process, uint32_t tid, std::string_view name) override {
    for (RecordSink* s : sinks_) s->AddThreadName(process, tid, name);
  }

 private:
  std::vector<RecordSink*> sinks_;
};

}  // namespace idlescope
