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

}  // namespace idlescope
