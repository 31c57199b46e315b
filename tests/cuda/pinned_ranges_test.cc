// PinnedRanges: the host range map the CUDA copy hooks consult on every copy.
#include "interpose/cuda/pinned_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace idlescope {
namespace {

TEST(PinnedRanges, FindsContainingRangeOnly) {
  PinnedRanges m;
  m.Insert(0x1000, 0x1000, RangeKind::kPinned);
  m.Insert(0x8000, 0x100, RangeKind::kManaged);
  m.Insert(0x4000, 0x2000, RangeKind::kDevice);
  EXPECT_EQ(m.Find(0xfff), RangeKind::kNone);
  EXPECT_EQ(m.Find(0x1000), RangeKind::kPinned);
  EXPECT_EQ(m.Find(0x1fff), RangeKind::kPinned);
  EXPECT_EQ(m.Find(0x2000), RangeKind::kNone);
  EXPECT_EQ(m.Find(0x5fff), RangeKind::kDevice);
  EXPECT_EQ(m.Find(0x6000), RangeKind::kNone);
  EXPECT_EQ(m.Find(0x80ff), RangeKind::kManaged);
  EXPECT_EQ(m.Find(0x8100), RangeKind::kNone);
  EXPECT_EQ(m.Size(), 3u);
}

// The copy hooks memoize the range FindRange returns, keyed by Generation(): the bounds must be
// the whole range, and any change of the map must change the generation.
TEST(PinnedRanges, FindRangeGivesBoundsForTheHookMemo) {
  PinnedRanges m;
  m.Insert(0x1000, 0x1000, RangeKind::kPinned);
  m.Insert(0x4000, 0x2000, RangeKind::kDevice);
  uintptr_t begin = 7, end = 7;
  EXPECT_EQ(m.FindRange(0x4abc, &begin, &end), RangeKind::kDevice);
  EXPECT_EQ(begin, 0x4000u);
  EXPECT_EQ(end, 0x6000u);
  EXPECT_EQ(m.FindRange(0x1000, &begin, &end), RangeKind::kPinned);
  EXPECT_EQ(begin, 0x1000u);
  EXPECT_EQ(end, 0x2000u);
  begin = end = 7;
  EXPECT_EQ(m.FindRange(0x3000, &begin, &end), RangeKind::kNone);
  EXPECT_EQ(begin, 7u);  // untouched on a miss
  EXPECT_EQ(end, 7u);
  // A freed buffer whose address comes back as pageable memory: the generation moved on.
  const uint64_t g = m.Generation();
  m.Remove(0x1000);
  EXPECT_NE(m.Generation(), g);
  EXPECT_EQ(m.FindRange(0x1000, &begin, &end), RangeKind::kNone);
}

TEST(PinnedRanges, RemoveByBaseAndGenerationChanges) {
  PinnedRanges m;
  uint64_t g0 = m.Generation();
  m.Insert(0x1000, 0x1000, RangeKind::kPinned);
  uint64_t g1 = m.Generation();
  EXPECT_NE(g0, g1);
  EXPECT_EQ(g1 % 2, 0u);
  EXPECT_EQ(m.Remove(0x1800), RangeKind::kNone);  // not a base
  EXPECT_EQ(m.Generation(), g1);
  EXPECT_EQ(m.Remove(0x1000), RangeKind::kPinned);
  EXPECT_NE(m.Generation(), g1);
  EXPECT_EQ(m.Find(0x1000), RangeKind::kNone);
  EXPECT_EQ(m.Size(), 0u);
}

TEST(PinnedRanges, OverlappingInsertReplacesStaleRanges) {
  PinnedRanges m;
  m.Insert(0x1000, 0x1000, RangeKind::kPinned);
  m.Insert(0x3000, 0x1000, RangeKind::kPinned);
  m.Insert(0x5000, 0x1000, RangeKind::kPinned);
  // A registration covering the first two (their frees were missed).
  m.Insert(0x1800, 0x2000, RangeKind::kManaged);
  EXPECT_EQ(m.Find(0x1000), RangeKind::kNone);
  EXPECT_EQ(m.Find(0x1800), RangeKind::kManaged);
  EXPECT_EQ(m.Find(0x37ff), RangeKind::kManaged);
  EXPECT_EQ(m.Find(0x3800), RangeKind::kNone);
  EXPECT_EQ(m.Find(0x5000), RangeKind::kPinned);
  EXPECT_EQ(m.Size(), 2u);
}

TEST(PinnedRanges, GrowsPastInitialCapacity) {
  PinnedRanges m;
  std::vector<uintptr_t> bases;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) bases.push_back(0x10000 + uintptr_t(i) * 0x100);
  std::shuffle(bases.begin(), bases.end(), rng);
  for (uintptr_t b : bases) m.Insert(b, 0x80, RangeKind::kPinned);
  EXPECT_EQ(m.Size(), 5000u);
  for (uintptr_t b : bases) {
    ASSERT_EQ(m.Find(b + 0x7f), RangeKind::kPinned);
    ASSERT_EQ(m.Find(b + 0x80), RangeKind::kNone);
  }
  for (size_t i = 0; i < bases.size(); i += 2) ASSERT_EQ(m.Remove(bases[i]), RangeKind::kPinned);
  EXPECT_EQ(m.Size(), 2500u);
  for (size_t i = 0; i < bases.size(); ++i) {
    ASSERT_EQ(m.Find(bases[i] + 1), i % 2 ? RangeKind::kPinned : RangeKind::kNone);
  }
}

// Readers must never misclassify a range that stays mapped, nor see one that was never
// inserted, while writers insert, remove and grow the table concurrently.
TEST(PinnedRanges, ConcurrentReadersSeeStableRangesDuringChurn) {
  PinnedRanges m;
  // Stable ranges at even slots, churned ranges at odd slots; slot = 0x1000 bytes.
  constexpr int kSlots = 512;
  auto slot = [](int i) { return uintptr_t(0x100000) + uintptr_t(i) * 0x1000; };
  for (int i = 0; i < kSlots; i += 2) m.Insert(slot(i), 0x800, RangeKind::kPinned);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> errors{0}, lookups{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(w);
      for (int iter = 0; iter < 20000; ++iter) {
        int i = 2 * int(rng() % (kSlots / 2)) + 1;
        if (rng() & 1) {
          m.Insert(slot(i), 0x800, RangeKind::kManaged);
        } else {
          m.Remove(slot(i));
        }
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937 rng(100 + r);
      while (!stop.load(std::memory_order_relaxed)) {
        int i = int(rng() % kSlots);
        RangeKind k = m.Find(slot(i) + 0x400);
        RangeKind gap = m.Find(slot(i) + 0x900);  // never mapped
        bool ok = gap == RangeKind::kNone &&
                  (i % 2 == 0 ? k == RangeKind::kPinned
                              : (k == RangeKind::kManaged || k == RangeKind::kNone));
        if (!ok) errors.fetch_add(1);
        lookups.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  threads[0].join();
  threads[1].join();
  stop = true;
  threads[2].join();
  threads[3].join();
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_GT(lookups.load(), 0u);
}

}  // namespace
}  // namespace idlescope
