#include "interpose/hooks/nccl_comms.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

namespace idlescope::nccl {
namespace {

TEST(Nccl, DtypeSizesOfNccl228) {
  EXPECT_EQ(DtypeSize(0), 1u);   // int8
  EXPECT_EQ(DtypeSize(2), 4u);   // int32
  EXPECT_EQ(DtypeSize(4), 8u);   // int64
  EXPECT_EQ(DtypeSize(6), 2u);   // float16
  EXPECT_EQ(DtypeSize(7), 4u);   // float32
  EXPECT_EQ(DtypeSize(8), 8u);   // float64
  EXPECT_EQ(DtypeSize(9), 2u);   // bfloat16
  EXPECT_EQ(DtypeSize(11), 1u);  // float8e5m2
  EXPECT_EQ(DtypeSize(12), 0u);
  EXPECT_EQ(DtypeSize(-1), 0u);
}

TEST(Nccl, BytesPerRankFollowsEachCollectivesCountMeaning) {
  // 1M floats.
  EXPECT_EQ(BytesPerRank(kAllReduce, 1 << 20, 7, 4, 0, 0), 4u << 20);
  EXPECT_EQ(BytesPerRank(kAllGather, 1 << 20, 7, 4, 0, 0), 4u << 20);       // sendcount
  EXPECT_EQ(BytesPerRank(kReduceScatter, 1 << 20, 7, 4, 0, 0), 16u << 20);  // nranks*recvcount
  EXPECT_EQ(BytesPerRank(kAllToAll, 100, 9, 8, 3, 0), 1600u);
  EXPECT_EQ(BytesPerRank(kScatter, 10, 7, 4, 2, 2), 160u);  // root sends everyone's part
  EXPECT_EQ(BytesPerRank(kScatter, 10, 7, 4, 1, 2), 0u);
  EXPECT_EQ(BytesPerRank(kGather, 10, 7, 4, 1, 2), 40u);
  EXPECT_EQ(BytesPerRank(kSend, 3, 8, 2, 0, 1), 24u);
  EXPECT_EQ(BytesPerRank(kBroadcast, 5, 0, 4, 0, 0), 5u);
}

TEST(Nccl, CommIdsAreDeterministicAndDistinct) {
  std::array<char, 128> a{}, b{};
  a[0] = 1;
  b[0] = 2;
  EXPECT_EQ(CommIdFromUniqueId(a.data(), a.size()), CommIdFromUniqueId(a.data(), a.size()));
  EXPECT_NE(CommIdFromUniqueId(a.data(), a.size()), CommIdFromUniqueId(b.data(), b.size()));
  EXPECT_NE(CommIdFromUniqueId(a.data(), a.size()), 0u);
  uint64_t parent = CommIdFromUniqueId(a.data(), a.size());
  std::set<uint64_t> ids = {parent,
                            CommIdFromSplit(parent, 0, 1),
                            CommIdFromSplit(parent, 1, 1),
                            CommIdFromSplit(parent, 0, 2),
                            CommIdFromInitAll(100, 1),
                            CommIdFromInitAll(100, 2),
                            CommIdFromInitAll(101, 1)};
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ(CommIdFromSplit(parent, 1, 1), CommIdFromSplit(parent, 1, 1));
}

TEST(CommTable, InsertFindEraseAndReuse) {
  auto table = std::make_unique<CommTable>();
  int comms[3];
  EXPECT_EQ(table->Find(&comms[0]), nullptr);
  ASSERT_TRUE(table->Insert(&comms[0], CommInfo{11, 0, 0, 4}));
  ASSERT_TRUE(table->Insert(&comms[1], CommInfo{22, 11, 1, 2}));
  CommTable::Entry* e = table->Find(&comms[1]);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->info.id, 22u);
  EXPECT_EQ(e->info.parent, 11u);
  EXPECT_EQ(e->info.rank, 1);
  EXPECT_EQ(e->seq.fetch_add(1) + 1, 1u);
  EXPECT_EQ(e->seq.fetch_add(1) + 1, 2u);
  table->Erase(&comms[1]);
  EXPECT_EQ(table->Find(&comms[1]), nullptr);
  EXPECT_NE(table->Find(&comms[0]), nullptr);
  // A new communicator at the same address starts its sequence again.
  ASSERT_TRUE(table->Insert(&comms[1], CommInfo{33, 0, 0, 8}));
  EXPECT_EQ(table->Find(&comms[1])->info.id, 33u);
  EXPECT_EQ(table->Find(&comms[1])->seq.load(), 0u);
  EXPECT_FALSE(table->Insert(nullptr, CommInfo{}));
  EXPECT_EQ(table->Find(nullptr), nullptr);
}

TEST(CommTable, ManyCommunicatorsAndErasedSlots) {
  auto table = std::make_unique<CommTable>();
  std::vector<int> comms(3000);
  for (size_t i = 0; i < comms.size(); ++i) {
    ASSERT_TRUE(table->Insert(&comms[i], CommInfo{i + 1, 0, 0, 1}));
  }
  for (size_t i = 0; i < comms.size(); i += 2) table->Erase(&comms[i]);
  for (size_t i = 0; i < comms.size(); ++i) {
    CommTable::Entry* e = table->Find(&comms[i]);
    if (i % 2 == 0) {
      EXPECT_EQ(e, nullptr);
    } else {
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->info.id, i + 1);
    }
  }
}

TEST(CommTable, ConcurrentCollectivesGetDistinctSequenceNumbers) {
  auto table = std::make_unique<CommTable>();
  int comm;
  ASSERT_TRUE(table->Insert(&comm, CommInfo{1, 0, 0, 2}));
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> seen(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) seen[t].push_back(table->Find(&comm)->seq.fetch_add(1) + 1);
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (auto& v : seen) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 40000u);
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), 40000u);
}

}  // namespace
}  // namespace idlescope::nccl
