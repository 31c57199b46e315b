// DeviceStripRecorder (analyzer/report/device_strips.h): slices land in their buckets exactly,
// corrections move time between causes, and widening keeps every nanosecond.
#include "analyzer/report/device_strips.h"

#include <gtest/gtest.h>

#include <numeric>

namespace idlescope {
namespace {

constexpr Ns kMs = 1'000'000;

ProcessInfo StartingAt(Ns start) {
  ProcessInfo info;
  info.start = start;
  return info;
}

std::vector<std::string> Ids(std::initializer_list<const char*> ids) {
  return {ids.begin(), ids.end()};
}

Ns Total(const DeviceStrip& strip, Cause cause) {
  Ns sum = 0;
  for (const auto& bucket : strip.idle) sum += bucket[Index(cause)];
  return sum;
}

TEST(DeviceStripsTest, SplitsSlicesAtBucketEdgesSinceTheJobStart) {
  DeviceStripRecorder r;
  r.AddProcess(0, StartingAt(10 * kMs));
  r.AddProcess(1, StartingAt(5 * kMs));  // the earliest start is the job start
  r.OnSlice({.device = 0,
             .when = {5 * kMs + kMs / 2, 5 * kMs + 5 * kMs / 2},
             .cause = Cause::kDataLoading});
  JobStrips s = r.Finish(4 * kMs, Ids({"h/a"}));
  ASSERT_EQ(s.bucket_ns, kFirstBucketNs);
  ASSERT_EQ(s.buckets, 4u);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].device, "h/a");
  const Cause c = Cause::kDataLoading;
  EXPECT_EQ(s.devices[0].idle[0][Index(c)], kMs / 2);
  EXPECT_EQ(s.devices[0].idle[1][Index(c)], kMs);
  EXPECT_EQ(s.devices[0].idle[2][Index(c)], kMs / 2);
  EXPECT_EQ(s.devices[0].idle[3][Index(c)], 0);
}

TEST(DeviceStripsTest, ACorrectionMovesTimeFromTheCauseItReplaces) {
  DeviceStripRecorder r;
  r.AddProcess(0, StartingAt(0));
  r.OnSlice({.device = 1, .when = {0, 3 * kMs}, .cause = Cause::kUnknown});
  r.OnSlice({.device = 1,
             .when = {kMs, 2 * kMs},
             .cause = Cause::kCheckpointing,
             .correction = true,
             .replaces = Cause::kUnknown});
  JobStrips s = r.Finish(3 * kMs, Ids({"h/a", "h/b"}));
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(Total(s.devices[0], Cause::kUnknown), 0);  // a device without slices: all zero
  EXPECT_EQ(Total(s.devices[1], Cause::kUnknown), 2 * kMs);
  EXPECT_EQ(Total(s.devices[1], Cause::kCheckpointing), kMs);
  EXPECT_EQ(s.devices[1].idle[1][Index(Cause::kUnknown)], 0);
}

TEST(DeviceStripsTest, WideningKeepsEveryNanosecondAndBoundsTheBuckets) {
  DeviceStripRecorder r;
  r.AddProcess(0, StartingAt(0));
  Ns credited = 0;
  // One 0.3 ms slice every 7 ms for an hour: far more than kMaxBuckets buckets of 1 ms.
  const Ns hour = 3600LL * 1000 * kMs;
  for (Ns t = 0; t < hour; t += 7 * kMs) {
    r.OnSlice({.device = 0, .when = {t, t + 300'000}, .cause = Cause::kHostGpuTransfer});
    credited += 300'000;
  }
  JobStrips s = r.Finish(hour, Ids({"h/a"}));
  EXPECT_LE(s.buckets, kMaxBuckets);
  EXPECT_GT(s.buckets, kMaxBuckets / 2);
  EXPECT_GE(static_cast<Ns>(s.buckets) * s.bucket_ns, hour);
  EXPECT_EQ(Total(s.devices[0], Cause::kHostGpuTransfer), credited);
}

TEST(DeviceStripsTest, AQuietEndWidensTheBucketsAtFinish) {
  DeviceStripRecorder r;
  r.AddProcess(0, StartingAt(0));
  r.OnSlice({.device = 0, .when = {0, 2 * kMs}, .cause = Cause::kStartup});
  // The job runs on for 10 s after its last idle slice: 10000 buckets of 1 ms would be too many.
  JobStrips s = r.Finish(10'000 * kMs, Ids({"h/a"}));
  EXPECT_LE(s.buckets, kMaxBuckets);
  EXPECT_EQ(Total(s.devices[0], Cause::kStartup), 2 * kMs);
}

TEST(DeviceStripsTest, ShortGapsLandInTheirBucketsLessTheSlicesThatExplainThem) {
  DeviceStripRecorder r;
  r.AddProcess(0, StartingAt(0));
  // Two short gaps of 0.4 ms across bucket 0 and 1; host work explains 0.1 ms of the second.
  r.OnShortGap(0, {kMs / 2, kMs / 2 + 400'000});
  r.OnShortGap(0, {kMs - 200'000, kMs + 200'000});
  r.OnSlice({.device = 0,
             .when = {kMs, kMs + 100'000},
             .cause = Cause::kDataLoading,
             .in_short_gap = true});
  JobStrips s = r.Finish(3 * kMs, Ids({"h/a"}));
  ASSERT_EQ(s.devices.size(), 1u);
  const DeviceStrip& d = s.devices[0];
  ASSERT_EQ(d.short_gap.size(), 3u);
  EXPECT_EQ(d.short_gap[0], 400'000 + 200'000);
  EXPECT_EQ(d.short_gap[1], 200'000 - 100'000);
  EXPECT_EQ(d.short_gap[2], 0);
  EXPECT_EQ(d.idle[1][Index(Cause::kDataLoading)], 100'000);
  EXPECT_EQ(Total(d, Cause::kDataLoading), 100'000);
}

TEST(DeviceStripsTest, WideningAndFinishKeepEveryShortGapNanosecond) {
  DeviceStripRecorder r;
  r.AddProcess(0, StartingAt(0));
  // A 50 us launch gap every 0.2 ms for 10 s: the buckets widen, the short-gap time stays.
  const Ns span = 10'000 * kMs;
  Ns gaps = 0;
  for (Ns t = 0; t + 50'000 <= span; t += 200'000) {
    r.OnShortGap(0, {t, t + 50'000});
    gaps += 50'000;
  }
  JobStrips s = r.Finish(span, Ids({"h/a"}));
  EXPECT_LE(s.buckets, kMaxBuckets);
  Ns sum = 0;
  for (size_t i = 0; i < s.buckets; ++i) {
    sum += s.devices[0].short_gap[i];
    // A quarter of every full bucket is launch gaps.
    if ((static_cast<Ns>(i) + 1) * s.bucket_ns <= span) {
      EXPECT_EQ(s.devices[0].short_gap[i], s.bucket_ns / 4) << "bucket " << i;
    }
  }
  EXPECT_EQ(sum, gaps);
}

TEST(DeviceStripsTest, ShareLevelsAreTheBucketsSharesOverTheLastBucketsWidth) {
  // Buckets of 1 ms over a 2.5 ms job: the last is 0.5 ms wide.
  std::vector<Ns> idle = {kMs, kMs / 2, kMs / 4};
  std::vector<int> levels = ShareLevels(idle, kMs, 5 * kMs / 2);
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0], kTopStripLevel);
  EXPECT_EQ(levels[1], 32);  // 31.5 rounded up, the carry -0.5 ...
  EXPECT_EQ(levels[2], 31);  // ... takes the next one's 31.5 down
}

TEST(DeviceStripsTest, ShareLevelsKeepAThinCausesTotalNeitherLostNorInflated) {
  // 0.3% of every bucket: far under one level (1/63) in each, 1.89 levels per 10 buckets.
  std::vector<Ns> idle(1000, 3 * kMs / 1000);
  std::vector<int> levels = ShareLevels(idle, kMs, 1000 * kMs);
  const int sum = std::accumulate(levels.begin(), levels.end(), 0);
  EXPECT_NEAR(sum, 0.003 * kTopStripLevel * 1000, 0.5);
  for (int level : levels) EXPECT_LE(level, 1);
  // The same time in every other bucket only: levels only where the time is.
  std::vector<Ns> sparse(1000, 0);
  for (size_t i = 0; i < sparse.size(); i += 2) sparse[i] = 6 * kMs / 1000;
  levels = ShareLevels(sparse, kMs, 1000 * kMs);
  EXPECT_NEAR(std::accumulate(levels.begin(), levels.end(), 0), 0.003 * kTopStripLevel * 1000, 0.5);
  for (size_t i = 1; i < levels.size(); i += 2) EXPECT_EQ(levels[i], 0) << "bucket " << i;
}

TEST(DeviceStripsTest, ShareLevelsShowASliverInItsLargestBucket) {
  std::vector<Ns> idle = {0, 1000, 0, 3000, 0};
  std::vector<int> levels = ShareLevels(idle, kMs, 5 * kMs);
  EXPECT_EQ(levels, (std::vector<int>{0, 0, 0, 1, 0}));
  EXPECT_EQ(ShareLevels(std::vector<Ns>(4, 0), kMs, 4 * kMs), std::vector<int>(4, 0));
}

}  // namespace
}  // namespace idlescope
