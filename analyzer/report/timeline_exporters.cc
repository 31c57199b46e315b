#include "analyzer/report/timeline_exporters.h"

#include "absl/strings/str_format.h"

namespace idlescope {
namespace {

using TimelineFormat = std::string (*)(const JobTimeline&);

// A timeline export: the recorder keeps the records and idle slices of the read, and the
// timeline is built from them once the job's symbols are known.
class TimelineExport : public Export<ReportedJob> {
 public:
  explicit TimelineExport(TimelineFormat format) : format_(format) {}
  Watch watch() override { return {.records = &recorder_, .slices = &recorder_}; }
  void Write(const ReportedJob& job, Output& out) override {
    const JobTimeline timeline = recorder_.Build(*job.symbols, job.device_ids);
    summary_ = absl::StrFormat(
        "%d tracks, %d slices (%d GPU records without a flow: they start before their call)",
        timeline.tracks.size(), timeline.slices.size(), timeline.flows_before_their_call);
    out.Write(format_(timeline));
  }
  std::string Summary() const override { return summary_; }

 private:
  TimelineFormat format_;
  JobTimelineRecorder recorder_;
  std::string summary_;
};

class TimelineExporter : public Exporter<ReportedJob> {
 public:
  TimelineExporter(std::string_view name, TimelineFormat format) : name_(name), format_(format) {}
  std::string_view name() const override { return name_; }
  std::unique_ptr<Export<ReportedJob>> Start() const override {
    return std::make_unique<TimelineExport>(format_);
  }

 private:
  std::string_view name_;
  TimelineFormat format_;
};

}  // namespace

const Exporter<ReportedJob>& PerfettoExporter() {
  static const TimelineExporter exporter("perfetto", FormatPerfettoTrace);
  return exporter;
}

const Exporter<ReportedJob>& ChromeExporter() {
  static const TimelineExporter exporter("chrome", FormatChromeTrace);
  return exporter;
}

}  // namespace idlescope
