// The idlescope CLI's subcommands. main.cc dispatches `idlescope <command> ARGS...` to these;
// each gets argv with argv[0] = the command name and returns the process exit status.
#pragma once

namespace idlescope {

// idlescope run [-o DIR] -- CMD...   (run_command.cc)
int RunCommand(int argc, char** argv);
// idlescope dump FILE                (cli/dump_command.cc)
int DumpCommand(int argc, char** argv);
// idlescope report DIR|FILE...       (report_command.cc)
int ReportCommand(int argc, char** argv);
// idlescope diff BEFORE AFTER        (diff_command.cc)
int DiffCommand(int argc, char** argv);
// idlescope export --format F -o FILE DIR|FILE...   (export_command.cc)
int ExportCommand(int argc, char** argv);
// idlescope index | plan | map | merge: a job analyzed in shards, step by step
// (shard_commands.cc)
int IndexCommand(int argc, char** argv);
int PlanCommand(int argc, char** argv);
int MapCommand(int argc, char** argv);
int MergeCommand(int argc, char** argv);
// idlescope --version                (version_command.cc)
int VersionCommand(int argc, char** argv);

}  // namespace idlescope
