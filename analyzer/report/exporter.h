// Exporters: the outputs of idlescope. An exporter turns a model (the JobReport of `idlescope
// report`, the JobDiff of `idlescope diff`) into bytes; it reads the model and nothing else, so an
// output is added without touching the analysis (uftrace's dump ops, Perfetto's OutputWriter).
//
// To add an output (say `report --format html`):
//   1. implement Exporter<JobReport> (name() = "html") in a file of its own in report/;
//   2. list it in the exporter table of report/report_exporters.cc;
//   3. document its format in docs/.
// The CLI finds it by name (`--format html`). Exporters that need more than the report (a
// timeline of credited slices) take a slice observer instead (model/credited_slice.h).
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace idlescope {

// Where an exporter writes.
class Output {
 public:
  virtual ~Output() = default;
  virtual void Write(std::string_view bytes) = 0;
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

template <typename Model>
class Exporter {
 public:
  virtual ~Exporter() = default;
  // The --format value that selects it.
  virtual std::string_view name() const = 0;
  virtual void Write(const Model& model, Output& out) const = 0;
};

// An exporter that is one function from the model to its bytes.
template <typename Model>
class FormatExporter : public Exporter<Model> {
 public:
  using Format = std::string (*)(const Model&);
  FormatExporter(std::string_view name, Format format) : name_(name), format_(format) {}
  std::string_view name() const override { return name_; }
  void Write(const Model& model, Output& out) const override { out.Write(format_(model)); }

 private:
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
