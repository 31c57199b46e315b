// libFuzzer target: arbitrary bytes as a job of one to three trace files (fuzz_input.h,
// AnalyzeJob).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idlescope::fuzz::AnalyzeJob(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
