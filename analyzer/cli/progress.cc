#include "analyzer/cli/progress.h"

#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/str_format.h"

namespace idlescope {
namespace {

// Shown once the analysis has run this long (a quick report prints no progress at all), unless
// IDLESCOPE_PROGRESS_AFTER_MS says otherwise (0: at once; a test's job is not a second long on
// every machine).
constexpr std::chrono::milliseconds kFirstAfter(1000);
constexpr std::chrono::milliseconds kEvery(250);

std::chrono::milliseconds FirstAfter() {
  const char* v = std::getenv("IDLESCOPE_PROGRESS_AFTER_MS");
  if (v == nullptr || *v == '\0') return kFirstAfter;
  char* end = nullptr;
  long long ms = std::strtoll(v, &end, 10);
  if (*end != '\0' || ms < 0) return kFirstAfter;
  return std::chrono::milliseconds(ms);
}

}  // namespace

ProgressSink::ProgressSink(std::string command, std::function<uint64_t()> bytes_read,
                           uint64_t total_bytes, int out_fd)
    : command_(std::move(command)),
      bytes_read_(std::move(bytes_read)),
      total_bytes_(total_bytes),
      fd_(out_fd),
      first_after_(FirstAfter()) {}

bool ProgressSink::Wanted(bool quiet, int out_fd) { return !quiet && isatty(out_fd) == 1; }

std::string ProgressSink::Line(const std::string& command, uint64_t read, uint64_t total,
                               uint64_t events, double seconds) {
  constexpr double kMiB = 1024.0 * 1024.0;
  std::string line =
      absl::StrFormat("%s: %.1f of %.1f MiB read", command, static_cast<double>(read) / kMiB,
                      static_cast<double>(total) / kMiB);
  if (total > 0) {
    absl::StrAppendFormat(&line, " (%.0f%%)",
                          100.0 * static_cast<double>(read) / static_cast<double>(total));
  }
  if (seconds > 0) {
    absl::StrAppendFormat(&line, ", %.2f M events/s", static_cast<double>(events) / seconds / 1e6);
  }
  if (read > 0 && total > read && seconds > 0) {
    double eta = seconds * static_cast<double>(total - read) / static_cast<double>(read);
    absl::StrAppendFormat(&line, ", ETA %.0f s", eta);
  }
  return line;
}

void ProgressSink::Check() {
  auto now = std::chrono::steady_clock::now();
  if (now - start_ < first_after_ || (shown_ && now - last_ < kEvery)) return;
  last_ = now;
  double seconds = std::chrono::duration<double>(now - start_).count();
  // \r and "erase to the end of the line": the line is rewritten in place.
  std::string line =
      absl::StrFormat("\r%s\033[K", Line(command_, bytes_read_(), total_bytes_, events_, seconds));
  if (write(fd_, line.data(), line.size()) > 0) shown_ = true;
}

void ProgressSink::Finish() {
  if (!shown_) return;
  shown_ = false;
  constexpr char kErase[] = "\r\033[K";
  if (write(fd_, kErase, sizeof(kErase) - 1) < 0) return;  // nothing more to do on a dead tty
}

}  // namespace idlescope
