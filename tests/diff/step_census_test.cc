// The step census as a sink (diff/step_census.h), fed records directly: per communicator and per
// kernel name the most any one process saw, the median grid, names resolved after the read.
#include "analyzer/diff/step_census.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace idlescope {
namespace {

class Names : public SymbolSource {
 public:
  std::map<std::pair<uint32_t, uint64_t>, std::string> strings;
  std::string String(uint32_t process, uint64_t id) const override {
    auto it = strings.find({process, id});
    return it == strings.end() ? "" : it->second;
  }
  std::vector<SymbolFrame> Stack(uint32_t, uint64_t) const override { return {}; }
};

void Kernel(StepCensusSink& sink, uint32_t process, uint64_t name, uint64_t grid, bool nccl = false,
            GpuActivityKind kind = GPU_KERNEL) {
  GpuRecord r;
  r.process = process;
  r.kind = kind;
  r.name_id = name;
  r.grid = grid;
  r.nccl = nccl;
  sink.AddGpuRecord(r);
}

void Collective(StepCensusSink& sink, uint32_t process, uint64_t comm) {
  HostEvent e;
  e.process = process;
  e.type = NCCL_COLLECTIVE;
  e.comm = comm;
  sink.AddHostEvent(e);
}

TEST(StepCensus, MostPerProcessMedianGridAndNamesFromEachProcess) {
  StepCensusSink sink;
  sink.AddProcess(0, {});
  sink.AddProcess(1, {});
  // Process 0 runs "gemm" 5 times (grids 8, 8, 8, 16, 16), process 1 (its own name ids) 3 times.
  for (uint64_t grid : {8, 16, 8, 16, 8}) Kernel(sink, 0, 1, grid);
  for (int i = 0; i < 3; ++i) Kernel(sink, 1, 7, 32);
  Kernel(sink, 0, 2, 4);                     // "relu" once
  Kernel(sink, 0, 3, 4, /*nccl=*/true);      // NCCL kernels are no steps
  Kernel(sink, 0, 1, 4, false, GPU_MEMCPY);  // nor copies
  Kernel(sink, 1, 9, 4);                     // a name its file never defined
  for (int i = 0; i < 4; ++i) Collective(sink, 0, 0xa);
  for (int i = 0; i < 6; ++i) Collective(sink, 1, 0xa);
  for (int i = 0; i < 6; ++i) Collective(sink, 1, 0x5);  // a tie: the smaller id is main

  Names names;
  names.strings[{0, 1}] = "gemm";
  names.strings[{0, 2}] = "relu";
  names.strings[{1, 7}] = "gemm";
  StepCensus census = sink.Census(names);
  EXPECT_EQ(census.nccl_collectives, 6u);
  EXPECT_EQ(census.nccl_comm, 0x5u);
  ASSERT_EQ(census.kernels.size(), 3u);
  EXPECT_EQ(census.kernels[0].name, "gemm");
  EXPECT_EQ(census.kernels[0].count, 5u);  // the most by one process, not the sum
  EXPECT_EQ(census.kernels[0].median_grid, 8u);
  EXPECT_EQ(census.kernels[1].count, 1u);
  EXPECT_EQ(census.kernels[2].count, 1u);
  bool unnamed = false;
  for (const KernelCount& k : census.kernels) unnamed |= k.name == "kernel#9";
  EXPECT_TRUE(unnamed);
}

TEST(StepCensus, KeepsAtMostEightKernelsMostFrequentFirst) {
  StepCensusSink sink;
  sink.AddProcess(0, {});
  Names names;
  for (uint64_t id = 1; id <= 12; ++id) {
    names.strings[{0, id}] = "k" + std::to_string(id);
    for (uint64_t i = 0; i < id; ++i) Kernel(sink, 0, id, 1);
  }
  StepCensus census = sink.Census(names);
  ASSERT_EQ(census.kernels.size(), kMaxCensusKernels);
  EXPECT_EQ(census.kernels[0].name, "k12");
  EXPECT_EQ(census.kernels[0].count, 12u);
  EXPECT_EQ(census.kernels.back().count, 5u);
}

}  // namespace
}  // namespace idlescope
