#include "analyzer/cli/options.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "analyzer/cli/commands.h"
#include "analyzer/report/escape.h"

namespace idlescope {
namespace {

constexpr int kHelpOption = -1;
constexpr int kVersionOption = -2;
constexpr OptionSpec kHelp = {kHelpOption, "help", 'h'};
constexpr OptionSpec kVersion = {kVersionOption, "version", 'V'};

// getopt_long's value for the long form of option i; a short form returns its character.
constexpr int kLongOption = 256;

}  // namespace

ParsedCommandLine ParseCommandLine(const CommandSpec& spec, int argc, char** argv) {
  std::vector<OptionSpec> options(spec.options.begin(), spec.options.end());
  options.push_back(kHelp);
  options.push_back(kVersion);
  // '+': the options end at the first operand; ':' (after it): a missing value is ':', not '?',
  // and getopt prints nothing (opterr too): the messages are ours.
  std::string shorts = spec.options_end_at_operand ? "+:" : ":";
  std::vector<struct option> longs;
  for (size_t i = 0; i < options.size(); ++i) {
    const OptionSpec& o = options[i];
    longs.push_back({o.name, o.value != nullptr ? required_argument : no_argument, nullptr,
                     kLongOption + static_cast<int>(i)});
    if (o.short_name != 0) {
      shorts += o.short_name;
      if (o.value != nullptr) shorts += ':';
    }
  }
  longs.push_back({nullptr, 0, nullptr, 0});
  auto index_of = [&](int c) -> int {
    if (c >= kLongOption) return c - kLongOption;
    for (size_t i = 0; i < options.size(); ++i) {
      if (options[i].short_name == c) return static_cast<int>(i);
    }
    return -1;
  };
  // How the user wrote the option getopt stopped at: "-o", "--output", "--outptu".
  auto spelled = [&](int c) -> std::string {
    if (c > 0 && c < kLongOption) return std::string{'-', static_cast<char>(c)};
    if (c >= kLongOption) return absl::StrCat("--", options[c - kLongOption].name);
    std::string_view arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    return std::string(arg.substr(0, arg.find('=')));
  };

  ParsedCommandLine line;
  const std::string command(spec.name);
  opterr = 0;
  optind = 0;  // glibc: start afresh (a test may parse twice in one process)
  for (;;) {
    const int c = getopt_long(argc, argv, shorts.c_str(), longs.data(), nullptr);
    if (c == -1) break;
    if (c == ':') {
      const OptionSpec& o = options[static_cast<size_t>(index_of(optopt))];
      line.exit_status = UsageError(
          command, absl::StrCat(spelled(optopt), " needs a value (",
                                o.values != nullptr ? o.values() : std::string(o.value), ")"));
      return line;
    }
    if (c == '?') {
      const int i = optopt != 0 ? index_of(optopt) : -1;
      line.exit_status =
          UsageError(command, i >= 0 ? absl::StrCat(spelled(optopt), " takes no value")
                                     : absl::StrCat("unknown option '", spelled(optopt), "'"));
      return line;
    }
    const OptionSpec& o = options[static_cast<size_t>(index_of(c))];
    if (o.id == kHelpOption) {
      std::fputs(spec.usage, stdout);
      line.exit_status = 0;
      return line;
    }
    if (o.id == kVersionOption) {
      line.exit_status = PrintVersion();
      return line;
    }
    line.options.push_back({o.id, o.name, o.value != nullptr ? optarg : nullptr});
  }
  for (int i = optind; i < argc; ++i) line.operands.emplace_back(argv[i]);
  return line;
}

void PrintError(std::string_view command, absl::string_view message) {
  std::fprintf(stderr, "idlescope %.*s: %s\n", static_cast<int>(command.size()), command.data(),
               EscapeControls(std::string_view(message.data(), message.size())).c_str());
}

int UsageError(std::string_view command, absl::string_view message) {
  PrintError(command, absl::StrCat(message, " (usage: idlescope help ",
                                   absl::string_view(command.data(), command.size()), ")"));
  return 2;
}

bool ParseNonNegative(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && *out >= 0;
}

bool NumberValue(std::string_view command, const ParsedOption& option, double* out) {
  if (option.value != nullptr && ParseNonNegative(option.value, out)) return true;
  UsageError(command, absl::StrCat("--", option.name, " needs a non-negative number, not '",
                                   option.value != nullptr ? option.value : "", "'"));
  return false;
}

AnalysisOption ApplyAnalysisOption(std::string_view command, const ParsedOption& option,
                                   PipelineOptions* pipeline) {
  double number = 0;
  switch (option.id) {
    case kQuietOption:
      pipeline->progress.clear();
      return AnalysisOption::kTaken;
    case kNoPythonFramesOption:
      pipeline->analysis.python_frames = false;
      return AnalysisOption::kTaken;
    case kStepMarkerOption:
      pipeline->analysis.step_marker = StepMarkerName(option.value);
      return AnalysisOption::kTaken;
    case kMinGapOption:
    case kTopOption:
    case kReorderWindowOption:
      if (!NumberValue(command, option, &number)) return AnalysisOption::kBad;
      break;
    default:
      return AnalysisOption::kNotOne;
  }
  if (option.id == kMinGapOption) {
    pipeline->analysis.min_gap = static_cast<Ns>(number * 1e6);
  } else if (option.id == kReorderWindowOption) {
    pipeline->read.reorder_window = static_cast<Ns>(number * 1e6);
  } else {
    pipeline->analysis.top_gaps = static_cast<size_t>(number);
    pipeline->analysis.top_evidence = static_cast<size_t>(number);
  }
  return AnalysisOption::kTaken;
}

}  // namespace idlescope
