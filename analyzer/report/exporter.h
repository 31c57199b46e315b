// Exporters: the outputs of idlescope. An exporter turns a model (the ReportedJob of `idlescope
// report`, report/report_exporters.h; the JobDiff of `idlescope diff`) into bytes. Each command
// has one table of exporters and picks one by name (`--format`), as uftrace's `dump` picks its
// per-format ops; the command never tests which one it got.
//
// An exporter that needs more than its model says so instead (Export::watch): a RecordSink for
// the records as they are read, a SliceObserver for the idle slices as the analysis credits them
// (model/credited_slice.h). The command feeds them from the same read as the analysis, and the
// exporter reads what they gathered when it writes; it never reaches into the analysis. The HTML
// report (its timeline strip) and the timeline exports (Perfetto, Chrome JSON) watch both.
//
// To add an output of `idlescope report` (say `--format flame`):
//   1. implement Exporter<ReportedJob> (name() = "flame") in a file of its own in report/: a
//      FormatExporter when the report is all it needs, else an Export whose watch() returns what
//      it watches;
//   2. list it in the table of report/report_exporters.cc;
//   3. document its format in docs/ and the --format line of cli/report_command.cc's usage.
// An output of `idlescope diff` is the same with Exporter<JobDiff> in diff/diff_exporters.cc
// (whose exports watch nothing: the diff reads two runs for their reports and step census).
#pragma once

#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "analyzer/model/credited_slice.h"
#include "analyzer/model/record_sink.h"

namespace idlescope {

// Where an exporter writes.
class Output {
 public:
  virtual ~Output() = default;
  virtual void Write(std::string_view bytes) = 0;
  // Ends this file and starts the next of a set (an export split by size, `--max-bytes`);
  // false: this output is one file, and what follows goes on in it.
  virtual bool NextPart() { return false; }
};

class StringOutput : public Output {
 public:
  void Write(std::string_view bytes) override { text_.append(bytes); }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// A stdio stream (stdout, or a file the caller opened and closes).
class FileOutput : public Output {
 public:
  explicit FileOutput(std::FILE* file) : file_(file) {}
  void Write(std::string_view bytes) override { std::fwrite(bytes.data(), 1, bytes.size(), file_); }

 private:
  std::FILE* file_;
};

// What an export watches while the job's files are read, beside the analysis (nullptr: nothing).
struct Watch {
  RecordSink* records = nullptr;
  SliceObserver* slices = nullptr;
  bool any() const { return records != nullptr || slices != nullptr; }
};

// One export of a model: created before the model is built, so that it can watch how.
template <typename Model>
class Export {
 public:
  virtual ~Export() = default;
  // What it needs fed while the job is read; the default: nothing, the model is enough.
  virtual Watch watch() { return {}; }
  virtual void Write(const Model& model, Output& out) = 0;
  // What it wrote, in a few words for the command's closing line on stderr ("12 tracks, 300
  // slices"); "" when the command's own line says enough.
  virtual std::string Summary() const { return ""; }
};

template <typename Model>
class Exporter {
 public:
  virtual ~Exporter() = default;
  // The --format value that selects it.
  virtual std::string_view name() const = 0;
  virtual std::unique_ptr<Export<Model>> Start() const = 0;
};

// An exporter that is one function from the model to its bytes (it watches nothing).
template <typename Model>
class FormatExporter : public Exporter<Model> {
 public:
  using Format = std::string (*)(const Model&);
  FormatExporter(std::string_view name, Format format) : name_(name), format_(format) {}
  std::string_view name() const override { return name_; }
  std::unique_ptr<Export<Model>> Start() const override {
    return std::make_unique<FormatExport>(format_);
  }

 private:
  class FormatExport : public Export<Model> {
   public:
    explicit FormatExport(Format format) : format_(format) {}
    void Write(const Model& model, Output& out) override { out.Write(format_(model)); }

   private:
    Format format_;
  };

  std::string_view name_;
  Format format_;
};

// The exporter of `table` called `name`; nullptr when there is none.
template <typename Model>
const Exporter<Model>* FindExporter(std::span<const Exporter<Model>* const> table,
                                    std::string_view name) {
  for (const Exporter<Model>* e : table) {
    if (e->name() == name) return e;
  }
  return nullptr;
}

// The names of `table`'s exporters for usage lines and errors: "text, json".
template <typename Model>
std::string ExporterNames(std::span<const Exporter<Model>* const> table) {
  std::string names;
  for (const Exporter<Model>* e : table) {
    if (!names.empty()) names += ", ";
    names += e->name();
  }
  return names;
}

}  // namespace idlescope
