// libFuzzer target: arbitrary bytes as one trace file (fuzz_input.h, ReadTrace).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  idlescope::fuzz::ReadTrace(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
