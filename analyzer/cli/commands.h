// The idlescope CLI's subcommands. main.cc dispatches `idlescope <command> ARGS...` to these;
// each gets argv with argv[0] = the command name and returns the process exit status.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/cli/pipeline.h"
#include "analyzer/report/job_timeline.h"

namespace idlescope {

// Each parses its options by one table (options.h). main.cc checks stdout when it returns
// (output_file.h FinishStdout).
// idlescope run [-o DIR] -- CMD...   (run_command.cc)
int RunCommand(int argc, char** argv);
// idlescope dump FILE                (cli/dump_command.cc)
int DumpCommand(int argc, char** argv);
// idlescope report DIR|FILE...       (report_command.cc)
int ReportCommand(int argc, char** argv);
// idlescope diff BEFORE AFTER        (diff_command.cc)
int DiffCommand(int argc, char** argv);
// idlescope export --format F -o FILE DIR|FILE...   (export_command.cc): `report` with -o
// required, kept for the timeline formats' sake
int ExportCommand(int argc, char** argv);

// What `idlescope report` (and `export`) runs once its flags are parsed (report_command.cc): the
// job analyzed, written through the exporter named `format`. Returns the exit status.
class InputCopies;

struct ReportRequest {
  std::string_view command;  // for messages: "report", "export"
  std::vector<std::string> inputs;
  PipelineOptions pipeline;
  size_t jobs = 0;              // threads for the shards (0: one per core)
  bool single_process = false;  // one pass even when the export watches nothing
  std::string_view format;
  std::string output;    // "": stdout
  bool verbose = false;  // the closing lines on stderr: what was written, the throughput
  const InputCopies* copies = nullptr;  // inputs read from copies (input_copies.h), or none
  // The timeline exports' selection and split (`idlescope export --from --to --ranks
  // --max-bytes`); the other formats ignore it.
  TimelineOptions timeline;
};
int RunReport(const ReportRequest& request);
// idlescope index | plan | map | merge: a job analyzed in shards, step by step
// (shard_commands.cc)
int IndexCommand(int argc, char** argv);
int PlanCommand(int argc, char** argv);
int MapCommand(int argc, char** argv);
int MergeCommand(int argc, char** argv);
// idlescope --version, or -V of any command (version_command.cc)
int VersionCommand(int argc, char** argv);
// What it prints (returns 0).
int PrintVersion();

}  // namespace idlescope
