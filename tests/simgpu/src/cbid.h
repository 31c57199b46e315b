// CUPTI callback ids by API name, generated at build time from the real
// cupti_runtime_cbid.h / cupti_driver_cbid.h (see CMakeLists.txt), so simgpu's ids are the
// real ones. Runtime names drop the "_vNNNN" suffix; the newest version wins.
#pragma once

#include <cstdint>

namespace simgpu {

uint32_t RuntimeCbid(const char* name);  // 0 (CUPTI_RUNTIME_TRACE_CBID_INVALID) if unknown
uint32_t DriverCbid(const char* name);   // 0 (CUPTI_DRIVER_TRACE_CBID_INVALID) if unknown

}  // namespace simgpu
