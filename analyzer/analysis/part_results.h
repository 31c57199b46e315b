// PartResults: what the analysis of a part of a job hands the merge (analysis/job_merge.h) once
// its devices are finished. A job read in one pass is the one-part case; a job analyzed in shards
// (analyzer/shard/) has one part per shard, carried between processes as a summary
// (proto/summary.proto, shard/summary.h converts both ways).
//
// Only what the part owns is here: the processes whose trace files it read as its own (a guest's
// figures are its owner's), and the devices it analyzed (each device in exactly one part). The
// cross-rank stages' records are not: they go to a CrossRankSink as they are made
// (analysis/cross_rank.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/analysis/crediting.h"
#include "analyzer/analysis/device_result.h"
#include "analyzer/analysis/evidence.h"
#include "analyzer/analysis/host_activity.h"
#include "analyzer/analysis/processes.h"
#include "analyzer/analysis/savings.h"
#include "analyzer/analysis/startup.h"
#include "analyzer/analysis/steps.h"
#include "analyzer/model/job_report.h"
#include "analyzer/model/warnings.h"

namespace idlescope {

// An owned process: how far its records went, what it could see, what it did before its first
// kernel (its file reads are in the part's host activity).
struct ProcessResult {
  uint32_t process = 0;
  Ns last_seen = 0;
  Ns end = 0;
  bool ended = false;
  uint32_t visible_devices = 0;  // the most devices its DeviceInfos said it could see
  Startup::Process startup = {};
};

// A warning of the reader about an owned file, or that file's figures; `file` is the process.
struct FileWarning {
  uint32_t file = 0;
  ReportWarning warning;
};
struct FileResult {
  uint32_t file = 0;
  FileReport report;
};

struct InstallerLaunch {
  std::string host;
  uint32_t pid = 0;
  JobProcesses::Launch launch;
};

struct PartResults {
  explicit PartResults(size_t top_evidence = 0) : host_activity(top_evidence) {}

  Ns end = 0;          // the latest end of the processes the part read (owned and guests)
  Ns finished_at = 0;  // where its devices' timelines were finished (no earlier than `end`)
  std::vector<ProcessResult> processes;   // owned, by process
  std::vector<InstallerLaunch> launches;  // how installers were started, by (host, pid)
  // Its devices (finished at `finished_at`: DeviceResult::finished_at) and its longest gaps, whose
  // `device` indexes `devices`.
  std::vector<DeviceResult> devices;
  std::vector<ClosedGap> top_gaps;
  HostActivity host_activity;  // of its owned processes
  CopyRates copy_rates;
  DirectoryNames directories;  // the directories its evidence names
  uint64_t host_events = 0;    // records of its owned processes
  uint64_t gpu_records = 0;
  uint64_t forgotten_candidates = 0;
  uint64_t late_candidates = 0;
  std::vector<FileWarning> warnings;  // of its owned files, in the order they were found
  std::vector<FileResult> files;
  std::vector<ProcessSteps> steps;  // of its owned processes with GPU activity or NVTX ranges
};

}  // namespace idlescope
