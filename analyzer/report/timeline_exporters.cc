#include "analyzer/report/timeline_exporters.h"

#include <vector>

#include "absl/strings/str_format.h"

namespace idlescope {
namespace {

using MakeWriter = std::unique_ptr<TimelineWriter> (*)();

// A timeline export: the recorder watches the first read; Write streams the second.
class TimelineExport : public Export<ReportedJob> {
 public:
  explicit TimelineExport(MakeWriter make) : make_(make) {}
  Watch watch() override { return {.records = &recorder_, .slices = &recorder_}; }
  void Write(const ReportedJob& job, Output& out) override {
    std::vector<int32_t> device_ranks(job.device_ids.size(), -1);
    for (size_t d = 0; d < job.device_ids.size(); ++d) {
      for (const DeviceReport& device : job.report.devices) {
        if (device.id == job.device_ids[d]) device_ranks[d] = device.rank;
      }
    }
    const TimelineOptions all;
    std::unique_ptr<TimelineWriter> writer = make_();
    TimelineStream stream(recorder_, *job.symbols, job.device_ids, device_ranks,
                          job.timeline != nullptr ? *job.timeline : all, *writer, out);
    if (job.read_again) job.read_again(stream);
    stream.Finish();
    const TimelineCounts& c = stream.counts();
    summary_ = absl::StrFormat(
        "%d tracks, %d slices, %d bytes in %d file%s (%d GPU records without a flow: they start "
        "before their call)",
        c.tracks, c.slices, c.bytes, c.files, c.files == 1 ? "" : "s", c.flows_before_their_call);
    if (c.late_records > 0) {
      absl::StrAppendFormat(&summary_,
                            "; %d records arrived later than the reorder window and are out of "
                            "time order (a larger --reorder-window puts them in place)",
                            c.late_records);
    }
  }
  std::string Summary() const override { return summary_; }

 private:
  MakeWriter make_;
  JobTimelineRecorder recorder_;
  std::string summary_;
};

class TimelineExporter : public Exporter<ReportedJob> {
 public:
  TimelineExporter(std::string_view name, MakeWriter make) : name_(name), make_(make) {}
  std::string_view name() const override { return name_; }
  std::unique_ptr<Export<ReportedJob>> Start() const override {
    return std::make_unique<TimelineExport>(make_);
  }

 private:
  std::string_view name_;
  MakeWriter make_;
};

}  // namespace

const Exporter<ReportedJob>& PerfettoExporter() {
  static const TimelineExporter exporter("perfetto", PerfettoTimelineWriter);
  return exporter;
}

const Exporter<ReportedJob>& ChromeExporter() {
  static const TimelineExporter exporter("chrome", ChromeTimelineWriter);
  return exporter;
}

}  // namespace idlescope
