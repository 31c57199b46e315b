// JobSymbols: the interned tables (strings, frames, stacks) of every trace file of a job, by
// process, as a value: the read stage fills it while it streams the files and hands it over when
// it is done, so the report is built from it without a reader alive. Native frames without a
// source line get one from their module's debug info when it is on this machine
// (read/source_lines.h, the process's SharedSourceLines): every stack the report, its
// summaries and exports resolve reads so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/model/symbol_source.h"
#include "analyzer/read/source_lines.h"
#include "analyzer/trace/interned_data.h"

namespace idlescope {

class JobSymbols : public SymbolSource {
 public:
  // The tables of `process` (created empty on first use).
  InternedData& ForProcess(uint32_t process);
  const InternedData* Find(uint32_t process) const;

  // SymbolSource.
  std::string String(uint32_t process, uint64_t id) const override;
  // InternedData::MergedStack.
  std::vector<SymbolFrame> Stack(uint32_t process, uint64_t stack_id) const override;
  // InternedData::Stack without its Python frames.
  std::vector<SymbolFrame> NativeStack(uint32_t process, uint64_t stack_id) const override;

 private:
  std::vector<SymbolFrame> Frames(uint32_t process, uint64_t stack_id, bool merged) const;

  // By process; only the processes whose files were read have one (a shard of a job reads a few
  // of many), and each stays where it is (the reader points into it).
  std::vector<std::unique_ptr<InternedData>> tables_;
};

}  // namespace idlescope
