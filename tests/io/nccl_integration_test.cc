// NCCL hooks end to end on simgpu: a 4-process job (programs/nccl_job.cc) traced; every rank's
// file must hold every collective with the right bytes, rank/size, communicator id and sequence
// number, so that the same collective can be matched across the 4 files.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/io/trace_file.h"

namespace idlescope::testing {
namespace {

constexpr int kRanks = 4;

struct Collective {
  NcclOp op;
  uint64_t count;
  uint64_t bytes;
  uint32_t dtype;
  uint32_t redop;
  int32_t peer;
};

TEST(NcclTrace, FourRankJobIsMatchableAcrossFiles) {
  std::string out = MakeTempDir();
  std::vector<std::string> job = {NCCL_JOB_BIN, "launch", std::to_string(kRanks)};
  std::vector<std::string> env = {std::string("LD_LIBRARY_PATH=") + SIMGPU_LIB_DIR,
                                  "SIMGPU_DEVICES=" + std::to_string(kRanks)};
#ifdef IDLESCOPE_CLI
  // The way users run it: `idlescope run -o DIR -- job`.
  ASSERT_EQ(RunWithCli(IDLESCOPE_CLI, job, out, env), 0);
#else
  ASSERT_EQ(RunTraced(job, out, env), 0);
#endif
  auto files = ReadTraceDir(out);
  std::map<int, const TraceFile*> by_rank;
  for (const auto& f : files) {
    for (auto* e : f.OfType(NCCL_COMM_INIT)) {
      if (e->event.parent_comm() == 0) by_rank[e->event.rank()] = &f;
    }
  }
  ASSERT_EQ(by_rank.size(), static_cast<size_t>(kRanks)) << "traces in " << out;

  // The world communicator: the same id in every file.
  std::set<uint64_t> world_ids;
  for (auto& [rank, f] : by_rank) {
    for (auto* e : f->OfType(NCCL_COMM_INIT)) {
      if (e->event.parent_comm() != 0) continue;
      EXPECT_EQ(e->event.nranks(), kRanks);
      EXPECT_EQ(e->event.result(), 0);
      EXPECT_NE(e->event.comm(), 0u);
      world_ids.insert(e->event.comm());
    }
  }
  ASSERT_EQ(world_ids.size(), 1u);
  uint64_t world = *world_ids.begin();

  const std::vector<Collective> expected = {
      {NCCL_ALL_REDUCE, 1 << 20, 4u << 20, 7, 0, 0},
      {NCCL_ALL_REDUCE, 1 << 20, 4u << 20, 7, 0, 0},
      {NCCL_ALL_REDUCE, 1 << 20, 4u << 20, 7, 0, 0},
      {NCCL_ALL_GATHER, 1000, 4000, 2, 0, 0},               // sends sendcount
      {NCCL_REDUCE_SCATTER, 1000, kRanks * 4000, 7, 0, 0},  // sends nranks*recvcount
      {NCCL_BROADCAST, 1024, 4096, 7, 0, 1},
  };
  // (comm, seq) -> ranks that recorded it: every collective must be in all 4 files.
  std::map<std::pair<uint64_t, uint64_t>, std::set<int>> seen;
  std::map<int, uint64_t> split_comm_of_rank;
  for (auto& [rank, f] : by_rank) {
    std::vector<const TraceEvent*> world_colls, p2p;
    for (auto* e : f->OfType(NCCL_COLLECTIVE)) {
      if (e->event.comm() != world) continue;
      EXPECT_EQ(e->event.rank(), rank);
      EXPECT_EQ(e->event.nranks(), kRanks);
      EXPECT_EQ(e->event.result(), 0);
      EXPECT_NE(e->event.stream(), 0u);
      if (e->event.nccl_op() == NCCL_SEND || e->event.nccl_op() == NCCL_RECV) {
        p2p.push_back(e);
      } else {
        world_colls.push_back(e);
        seen[{world, e->event.seq()}].insert(rank);
      }
    }
    ASSERT_EQ(world_colls.size(), expected.size()) << "rank " << rank;
    for (size_t i = 0; i < expected.size(); ++i) {
      const Event& ev = world_colls[i]->event;
      SCOPED_TRACE("rank " + std::to_string(rank) + " collective " + std::to_string(i));
      EXPECT_EQ(ev.seq(), i + 1);
      EXPECT_EQ(ev.nccl_op(), expected[i].op);
      EXPECT_EQ(ev.count(), expected[i].count);
      EXPECT_EQ(ev.bytes(), expected[i].bytes);
      EXPECT_EQ(ev.nccl_dtype(), expected[i].dtype);
      EXPECT_EQ(ev.nccl_redop(), expected[i].redop);
      EXPECT_EQ(ev.peer(), expected[i].peer);
      EXPECT_EQ(ev.group_depth(), 0u);
      EXPECT_EQ(f->Str(ev.api()), i < 3 ? "ncclAllReduce" : f->Str(ev.api()));
    }
    // The Send/Recv ring, inside a group.
    ASSERT_EQ(p2p.size(), 2u);
    EXPECT_EQ(p2p[0]->event.nccl_op(), NCCL_SEND);
    EXPECT_EQ(p2p[0]->event.peer(), (rank + 1) % kRanks);
    EXPECT_EQ(p2p[1]->event.nccl_op(), NCCL_RECV);
    EXPECT_EQ(p2p[1]->event.peer(), (rank + kRanks - 1) % kRanks);
    for (auto* e : p2p) {
      EXPECT_EQ(e->event.group_depth(), 1u);
      EXPECT_EQ(e->event.bytes(), 1024u);
      EXPECT_EQ(e->event.seq(), 0u);
    }
    auto groups = f->OfType(NCCL_GROUP);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(f->Str(groups[0]->event.api()), "ncclGroupStart");
    EXPECT_EQ(groups[0]->event.group_depth(), 1u);
    EXPECT_EQ(f->Str(groups[1]->event.api()), "ncclGroupEnd");
    EXPECT_EQ(groups[1]->event.group_depth(), 0u);

    // The split communicator: parent = world, 2 ranks, its own sequence.
    const TraceEvent* split = nullptr;
    for (auto* e : f->OfType(NCCL_COMM_INIT)) {
      if (e->event.parent_comm() == world) split = e;
    }
    ASSERT_NE(split, nullptr);
    EXPECT_EQ(split->event.nranks(), 2);
    EXPECT_EQ(split->event.rank(), rank / 2);
    split_comm_of_rank[rank] = split->event.comm();
    bool found = false;
    for (auto* e : f->OfType(NCCL_COLLECTIVE)) {
      if (e->event.comm() != split->event.comm()) continue;
      found = true;
      EXPECT_EQ(e->event.seq(), 1u);
      EXPECT_EQ(e->event.nranks(), 2);
      EXPECT_EQ(e->event.bytes(), 8000u);
      EXPECT_EQ(e->event.nccl_redop(), 2u);  // ncclMax
    }
    EXPECT_TRUE(found);
    EXPECT_EQ(f->OfType(NCCL_COMM_DESTROY).size(), 2u);
  }
  for (auto& [key, ranks] : seen) EXPECT_EQ(ranks.size(), static_cast<size_t>(kRanks));
  EXPECT_EQ(split_comm_of_rank[0], split_comm_of_rank[2]);
  EXPECT_EQ(split_comm_of_rank[1], split_comm_of_rank[3]);
  EXPECT_NE(split_comm_of_rank[0], split_comm_of_rank[1]);
  EXPECT_NE(split_comm_of_rank[0], world);
  if (!HasFailure()) {
    std::string cmd = "rm -rf '" + out + "'";
    (void)system(cmd.c_str());
  }
}

}  // namespace
}  // namespace idlescope::testing
