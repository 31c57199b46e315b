// idlescope: one binary, one subcommand per file (see commands.h).
#include <cstdio>
#include <cstring>
#include <string_view>

#include "analyzer/cli/commands.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int argc, char** argv);
  const char* help;
};

constexpr Command kCommands[] = {
    {"run", idlescope::RunCommand, "run [-o DIR] -- CMD...   trace CMD and its children"},
    {"dump", idlescope::DumpCommand, "dump FILE                print every packet of a trace"},
    {"report", idlescope::ReportCommand,
     "report [--format F] DIR|FILE... why the GPUs of a traced job sat idle"},
    {"diff", idlescope::DiffCommand, "diff BEFORE AFTER        compare two runs (a fix)"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: idlescope <command> [args]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %s\n", c.help);
  std::fprintf(out, "\n'idlescope <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    Usage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("idlescope %s\n", IDLESCOPE_VERSION);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name == c.name) return c.main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "idlescope: unknown command '%s'\n", argv[1]);
  Usage(stderr);
  return 2;
}
