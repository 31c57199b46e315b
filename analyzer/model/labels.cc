#include "analyzer/model/labels.h"

#include <signal.h>
#include <string.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace idlescope {

std::string ProcessEndHow(const ProcessEnd& end) {
  if (end.reason == EXIT_SIGNAL) {
    const char* abbrev = sigabbrev_np(end.status);
    return abbrev != nullptr ? absl::StrCat("SIG", abbrev)
                             : absl::StrFormat("signal %d", end.status);
  }
  if (end.reason == EXIT_DETACHED) return "untraced after seccomp";
  if (end.footer()) return absl::StrFormat("exit status %d", end.status);
  return "no trace end";
}

std::string DeathLabel(const ProcessInfo& info) {
  const std::string who = info.rank >= 0 ? absl::StrFormat("rank %d (pid %u)", info.rank, info.pid)
                                         : absl::StrFormat("pid %u", info.pid);
  const ProcessEnd& end = info.ending;
  if (end.reason == EXIT_SIGNAL) return absl::StrCat(who, " died of ", ProcessEndHow(end));
  if (end.footer()) return absl::StrCat(who, " failed with ", ProcessEndHow(end));
  return absl::StrCat(who, " ended without its trace end (killed with SIGKILL?)");
}

std::string StackText(StackId id, const ReportSymbols& symbols) {
  const std::string& first_user = symbols.FirstUserLabel(id);
  if (first_user.empty()) return symbols.StackLabel(id);
  return absl::StrCat(first_user, " [", symbols.StackLabel(id), "]");
}

std::string ShortStackText(StackId id, const ReportSymbols& symbols) {
  const std::string& first_user = symbols.FirstUserLabel(id);
  if (first_user.empty()) return symbols.ShortStackLabel(id);
  return absl::StrCat(first_user, " [", symbols.ShortStackLabel(id), "]");
}

std::string EvidenceText(const EvidenceItem& item, const ReportSymbols& symbols) {
  if (item.kind == EvidenceKind::kStack) return ShortStackText(item.id, symbols);
  return EvidenceLabel(item, symbols);
}

std::string EvidenceLabel(const EvidenceItem& item, const ReportSymbols& symbols) {
  switch (item.kind) {
    case EvidenceKind::kStack:
      return StackText(item.id, symbols);
    case EvidenceKind::kObject:
      return std::string(symbols.String(item.id));
    case EvidenceKind::kDirectory:
      return item.id == 0 ? "?" : std::string(symbols.String(item.id));
    case EvidenceKind::kHostActivity:
      return absl::StrCat(std::string(HostActivityKindName(item.activity)), ": ",
                          std::string(ItemLabel(item.id, symbols)));
    case EvidenceKind::kUnresolvedStack:
      return absl::StrCat("stack #", item.trace_id, " of process ", item.process);
    case EvidenceKind::kUnresolvedObject:
      return absl::StrCat("string #", item.trace_id, " of process ", item.process);
  }
  return "";
}

std::string_view ItemLabel(StringId what, const ReportSymbols& symbols) {
  return what == 0 ? std::string_view("(unnamed)") : symbols.String(what);
}

std::string_view ClockMethodName(ClockMethod method) {
  switch (method) {
    case ClockMethod::kReference:
      return "reference";
    case ClockMethod::kCollectives:
      return "collectives";
    case ClockMethod::kRealtime:
      return "realtime";
  }
  return "realtime";
}

}  // namespace idlescope
