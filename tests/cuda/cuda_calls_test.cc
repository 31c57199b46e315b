// interpose/cuda/cuda_calls.h: the one description of a CUDA call that the runtime hooks and the
// CUPTI callbacks read. Every cudart.def line has a CUPTI reading and a callback id, and that id is
// the call's own in CUPTI's headers (cupti_runtime_cbid.h / cupti_driver_cbid.h, read into
// cbid_tables.inc at build time by tests/simgpu/cbid_tables.cmake); CUPTI ids lead to the same
// reading as the call they name.
#include "interpose/cuda/cuda_calls.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <string_view>

namespace idlescope::cuda {
namespace {

struct Entry {
  const char* name;
  uint32_t id;
};
#include "cbid_tables.inc"  // kRuntimeCbids[] (names without _vNNNN), kDriverCbids[]

// The names CUPTI's headers give to a callback id (a runtime call's versions share a name).
template <size_t N>
std::set<std::string> NamesOf(const Entry (&entries)[N], uint32_t id) {
  std::set<std::string> names;
  for (const Entry& e : entries) {
    if (e.id == id) names.insert(e.name);
  }
  return names;
}

std::string_view Core(std::string_view name) {
  for (std::string_view suffix : {"_ptds", "_ptsz", "_v2"}) {
    if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
  }
  return name;
}

bool IsCopy(Shape s) {
  return s == Shape::kCopyRuntime || s == Shape::kCopyDriver || s == Shape::kCopyUnsized;
}
bool IsMemset(Shape s) {
  return s == Shape::kMemsetRuntime || s == Shape::kMemsetDriver || s == Shape::kMemsetUnsized;
}

// What a call's name says it is, written independently of the table: the table must agree.
void ExpectReadingFitsName(const CallDescription& call) {
  SCOPED_TRACE(call.name);
  const std::string_view core = Core(call.name);
  const CuptiReading& r = call.cupti;
  const bool copy = core.find("Memcpy") != std::string_view::npos;
  const bool memset = core.find("Memset") != std::string_view::npos;
  EXPECT_EQ(IsCopy(r.shape), copy);
  EXPECT_EQ(IsMemset(r.shape), memset);
  EXPECT_EQ(r.shape == Shape::kLaunch || r.shape == Shape::kGraphLaunch,
            core.find("Launch") != std::string_view::npos);
  EXPECT_EQ(r.shape == Shape::kGraphLaunch, core.find("GraphLaunch") != std::string_view::npos);
  if (copy || memset) {
    EXPECT_EQ(r.async, core.ends_with("Async"));
    // Sizes and streams are read only from the plain 1D forms.
    const bool plain = core == "cudaMemcpy" || core == "cudaMemcpyAsync" || core == "cudaMemset" ||
                       core == "cudaMemsetAsync" || core.starts_with("cuMemcpyHtoD") ||
                       core.starts_with("cuMemcpyDtoH") || core.starts_with("cuMemcpyDtoD") ||
                       core == "cuMemcpy" || core == "cuMemcpyAsync" ||
                       core.starts_with("cuMemsetD8") || core.starts_with("cuMemsetD16") ||
                       core.starts_with("cuMemsetD32");
    EXPECT_EQ(r.shape != Shape::kCopyUnsized && r.shape != Shape::kMemsetUnsized, plain);
    if (plain) {
      EXPECT_EQ(r.has_stream, core.ends_with("Async"));
    }
  } else {
    EXPECT_FALSE(r.has_stream);
  }
  if (core.find("Peer") != std::string_view::npos) {
    EXPECT_EQ(r.copy_kind, ev::kPeer);
  }
  if (r.shape == Shape::kMemsetDriver) {
    EXPECT_EQ(r.elem_bytes, core.starts_with("cuMemsetD8")    ? 1
                            : core.starts_with("cuMemsetD16") ? 2
                                                              : 4);
  }
  if (core.ends_with("Synchronize")) {
    EXPECT_EQ(r.shape, core == "cudaStreamSynchronize" || core == "cuStreamSynchronize"
                           ? Shape::kSyncStream
                           : Shape::kSyncOther);
  }
  if (core.find("WaitEvent") != std::string_view::npos) {
    EXPECT_EQ(r.shape, Shape::kSyncOther);
    EXPECT_TRUE(r.async);  // the host does not wait; the stream does
  }
}

TEST(CudaCallsTest, EveryRuntimeCallHasItsOwnCuptiIdAndAReading) {
  std::set<uint32_t> ids;
  std::set<std::string> names;
  for (const CallDescription& call : kRuntimeCalls) {
    SCOPED_TRACE(call.name);
    ASSERT_NE(call.name, nullptr);
    EXPECT_TRUE(names.insert(call.name).second) << "listed twice";
    EXPECT_TRUE(ids.insert(call.cbid).second) << "callback id listed twice";
    EXPECT_EQ(NamesOf(kRuntimeCbids, call.cbid), std::set<std::string>{call.name});
    ExpectReadingFitsName(call);
  }
  EXPECT_EQ(names.size(), size_t{kRuntimeCallCount});
  // Hook ids and table rows are the same order (cudart.def).
  EXPECT_STREQ(kRuntimeCalls[kCall_cudaMemcpyAsync].name, "cudaMemcpyAsync");
  EXPECT_STREQ(kRuntimeCalls[kCall_cudaSetDevice].name, "cudaSetDevice");
  // Calls the hooks record that CUPTI must not record again (it only lends their correlation id
  // while a hook waits): allocations, frees, device selection.
  EXPECT_EQ(kRuntimeCalls[kCall_cudaMalloc].cupti.shape, Shape::kIdOnly);
  EXPECT_EQ(kRuntimeCalls[kCall_cudaSetDevice].cupti.shape, Shape::kIdOnly);
  EXPECT_EQ(kRuntimeCalls[kCall_cudaHostRegister].cupti.shape, Shape::kHostRegister);
}

TEST(CudaCallsTest, OlderCuptiIdsOfARuntimeCallLeadToTheSameCall) {
  std::set<uint32_t> ids;
  for (const CallDescription& call : kRuntimeCalls) ids.insert(call.cbid);
  ASSERT_FALSE(RuntimeCallVersions().empty());
  for (const RuntimeCallVersion& v : RuntimeCallVersions()) {
    const CallDescription& call = kRuntimeCalls[v.call];
    SCOPED_TRACE(call.name);
    EXPECT_TRUE(ids.insert(v.cbid).second) << "callback id listed twice";
    EXPECT_EQ(NamesOf(kRuntimeCbids, v.cbid), std::set<std::string>{call.name});
  }
  // Every version CUPTI's header knows of a hooked call is listed: a libcudart of any of those
  // versions reports its own id.
  std::map<std::string, int> versions;
  for (const Entry& e : kRuntimeCbids) ++versions[e.name];
  for (const CallDescription& call : kRuntimeCalls) {
    int listed = 1;
    for (const RuntimeCallVersion& v : RuntimeCallVersions())
      listed += &kRuntimeCalls[v.call] == &call;
    EXPECT_EQ(listed, versions[call.name]) << call.name;
  }
}

TEST(CudaCallsTest, DriverCallsAreNamedAsCuptiNamesTheirIds) {
  std::set<uint32_t> ids;
  ASSERT_FALSE(DriverCalls().empty());
  for (const CallDescription& call : DriverCalls()) {
    SCOPED_TRACE(call.name);
    EXPECT_TRUE(ids.insert(call.cbid).second) << "callback id listed twice";
    EXPECT_EQ(NamesOf(kDriverCbids, call.cbid), std::set<std::string>{call.name});
    EXPECT_NE(call.cupti.shape, Shape::kIdOnly);  // no hook records these: CUPTI reads them
    ExpectReadingFitsName(call);
  }
  // The forms a static libcudart calls (cuMemcpyHtoDAsync_v2 and its _ptsz form) are there.
  std::set<std::string> names;
  for (const CallDescription& call : DriverCalls()) names.insert(call.name);
  for (const char* name : {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz", "cuLaunchKernel",
                           "cuStreamSynchronize", "cuMemHostAlloc", "cuMemsetD32Async"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

}  // namespace
}  // namespace idlescope::cuda
