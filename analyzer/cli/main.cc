// idlescope: one binary, one subcommand per file (see commands.h).
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "analyzer/cli/commands.h"
#include "analyzer/cli/options.h"
#include "analyzer/cli/output_file.h"
#include "analyzer/cli/temporary_paths.h"

namespace {

struct Command {
  const char* name;
  int (*main)(int argc, char** argv);
  const char* help;
};

constexpr Command kCommands[] = {
    {"run", idlescope::RunCommand, "run [-o DIR] [--] CMD...  trace CMD and its children"},
    {"dump", idlescope::DumpCommand, "dump FILE                print every packet of a trace"},
    {"report", idlescope::ReportCommand,
     "report [--format F] DIR|FILE... why the GPUs of a traced job sat idle"},
    {"diff", idlescope::DiffCommand, "diff BEFORE AFTER        compare two runs (a fix)"},
    {"export", idlescope::ExportCommand,
     "export --format perfetto|chrome -o FILE DIR|FILE... the job's timeline for a trace viewer"},
    {"index", idlescope::IndexCommand,
     "index -o INDEX DIR|FILE...  a job in shards, 1: each file's index (tools/dask_report.py)"},
    {"plan", idlescope::PlanCommand, "plan -o PLAN INDEX...    2: the job's shards"},
    {"map", idlescope::MapCommand, "map -o SUMMARY PLAN SHARD  3: one shard's summary"},
    {"merge", idlescope::MergeCommand, "merge PLAN SUMMARY...    4: the report"},
    {"version", idlescope::VersionCommand,
     "version                  version, git commit, trace formats read and written (-V)"},
};

const char* g_command = "idlescope";

// Allocation failure (a job larger than the memory or the address-space limit, ulimit -v): one
// line instead of std::bad_alloc's abort (exit 134), from operator new's handler. Nothing here
// allocates: the heap is exhausted.
void OutOfMemory() {
  idlescope::RemoveTemporaryPaths();  // _exit runs no destructor
  char limit[64] = "none";
  struct rlimit as;
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::snprintf(limit, sizeof limit, "%llu MiB",
                  static_cast<unsigned long long>(as.rlim_cur >> 20));
  }
  struct rusage usage;
  long peak_kib = getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : 0;
  char line[256];
  int n = std::snprintf(line, sizeof line,
                        "idlescope %s: out of memory (peak RSS %ld MiB, address-space limit %s)\n",
                        g_command, peak_kib >> 10, limit);
  if (n > 0) {
    ssize_t ignored =
        write(STDERR_FILENO, line,
              static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
    (void)ignored;
  }
  _exit(1);
}

void Usage(FILE* out) {
  std::fprintf(out, "usage: idlescope <command> [args]\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %s\n", c.help);
  std::fprintf(out,
               "\n'idlescope help COMMAND' (or 'idlescope COMMAND --help') for a command's options "
               "and exit statuses;\n'idlescope -V' (--version) for the version.\n");
}

const Command* Find(std::string_view name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-V" || name == "--version") name = "version";
  if (name == "-h" || name == "--help" || (name == "help" && argc == 2)) {
    Usage(stdout);
    return idlescope::FinishStdout("help", 0);
  }
  // `idlescope help CMD`: CMD's --help.
  char help_flag[] = "--help";
  char* help_argv[] = {argc > 2 ? argv[2] : nullptr, help_flag, nullptr};
  const bool help = name == "help";
  if (help) name = argv[2];
  const Command* command = Find(name);
  if (command == nullptr) {
    std::fprintf(stderr, "idlescope: unknown command '%s'; see 'idlescope --help'\n",
                 std::string(name).c_str());
    return 2;
  }
  g_command = command->name;
  // `run` hands its signals to the traced command (run_command.cc), and its SIGPIPE disposition
  // is the command's: every other command removes what it made under TMPDIR when a signal ends it.
  if (command != &kCommands[0]) idlescope::RemoveTemporaryPathsOnSignals();
  std::set_new_handler(OutOfMemory);
  const int status = help ? command->main(2, help_argv) : command->main(argc - 1, argv + 1);
  return idlescope::FinishStdout(command->name, status);
}
