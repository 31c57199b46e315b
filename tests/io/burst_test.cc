#include <gtest/gtest.h>

#include <vector>

#include "interpose/hooks/io_burst.h"

namespace idlescope::io {
namespace {

constexpr uint8_t kWrite = 31;
constexpr uint8_t kRead = 32;

IoCall Call(uint8_t type, int fd, uint64_t ts, uint64_t dur, uint64_t bytes, uint32_t api = 1) {
  IoCall c;
  c.type = type;
  c.fd = fd;
  c.api = api;
  c.ts = ts;
  c.dur = dur;
  c.bytes = bytes;
  return c;
}

// Drives a sequence of calls through the burst logic the way the hooks do and returns the
// emitted bursts (the last one closed explicitly, as close/fsync would).
std::vector<Burst> Drive(const std::vector<IoCall>& calls, BurstPolicy policy = {}) {
  std::vector<Burst> out;
  Burst b;
  for (const IoCall& c : calls) {
    if (Extends(b, c, policy)) {
      Merge(b, c);
      continue;
    }
    if (b.open) out.push_back(b);
    Begin(b, c);
  }
  if (b.open) out.push_back(b);
  return out;
}

TEST(Burst, TightWriteLoopIsOneEventWithAllBytesAndTime) {
  // 2.6 million 4 KB writes would be a 10 GB checkpoint; 1000 here, 2 us each, 0.5 us apart.
  std::vector<IoCall> calls;
  uint64_t t = 1'000'000;
  for (int i = 0; i < 1000; ++i) {
    calls.push_back(Call(kWrite, 5, t, 2000, 4096));
    t += 2500;
  }
  auto bursts = Drive(calls);
  ASSERT_EQ(bursts.size(), 1u);
  EXPECT_EQ(bursts[0].count, 1000u);
  EXPECT_EQ(bursts[0].bytes, 4096u * 1000);
  EXPECT_EQ(bursts[0].dur, 2000u * 1000);  // time inside the calls, not the span
  EXPECT_EQ(bursts[0].start, 1'000'000u);
  EXPECT_EQ(bursts[0].last_end, t - 500);
}

TEST(Burst, SpanLimitSplitsLongBursts) {
  // 100 ms of back-to-back 1 ms writes: 20 ms per burst -> 5 bursts, nothing lost.
  std::vector<IoCall> calls;
  for (int i = 0; i < 100; ++i) {
    calls.push_back(Call(kWrite, 5, static_cast<uint64_t>(i) * 1'000'000, 1'000'000, 1 << 20));
  }
  auto bursts = Drive(calls);
  ASSERT_EQ(bursts.size(), 5u);
  uint64_t bytes = 0, count = 0, dur = 0;
  for (const Burst& b : bursts) {
    bytes += b.bytes;
    count += b.count;
    dur += b.dur;
    EXPECT_LE(b.last_end - b.start, BurstPolicy{}.max_span);
  }
  EXPECT_EQ(bytes, 100ull << 20);
  EXPECT_EQ(count, 100u);
  EXPECT_EQ(dur, 100'000'000u);
}

TEST(Burst, GapOutsideTheCallsEndsTheBurst) {
  // Two writes 5 ms apart (the thread computed in between): two events, so the burst never
  // claims the compute time.
  auto bursts = Drive({Call(kWrite, 5, 0, 1000, 10), Call(kWrite, 5, 5'000'000, 1000, 10)});
  ASSERT_EQ(bursts.size(), 2u);
  EXPECT_EQ(bursts[1].start, 5'000'000u);
}

TEST(Burst, OtherFdOrKindEndsTheBurst) {
  auto bursts =
      Drive({Call(kWrite, 5, 0, 100, 1), Call(kWrite, 5, 200, 100, 1), Call(kWrite, 6, 400, 100, 1),
             Call(kRead, 6, 600, 100, 7), Call(kRead, 6, 800, 100, 7)});
  ASSERT_EQ(bursts.size(), 3u);
  EXPECT_EQ(bursts[0].count, 2u);
  EXPECT_EQ(bursts[1].fd, 6);
  EXPECT_EQ(bursts[1].type, kWrite);
  EXPECT_EQ(bursts[2].type, kRead);
  EXPECT_EQ(bursts[2].bytes, 14u);
}

TEST(Burst, ApiMixOnOneFdMergesKeepingTheFirstApi) {
  // fwrite then the fflush that writes the buffer out: one stream of bytes.
  auto bursts = Drive({Call(kWrite, 5, 0, 100, 4096, 7), Call(kWrite, 5, 150, 900, 0, 8)});
  ASSERT_EQ(bursts.size(), 1u);
  EXPECT_EQ(bursts[0].api, 7u);
  EXPECT_EQ(bursts[0].dur, 1000u);
  EXPECT_EQ(bursts[0].bytes, 4096u);
}

TEST(Burst, FirstErrorIsKept) {
  IoCall ok = Call(kRead, 3, 0, 10, 100);
  IoCall again = Call(kRead, 3, 20, 10, 0);
  again.result = -11;  // EAGAIN
  IoCall later = Call(kRead, 3, 40, 10, 0);
  later.result = -4;
  auto bursts = Drive({ok, again, later});
  ASSERT_EQ(bursts.size(), 1u);
  EXPECT_EQ(bursts[0].result, -11);
  EXPECT_EQ(bursts[0].count, 3u);
}

TEST(Burst, FdNamingAnotherFileStartsANewBurst) {
  // Another thread closed the fd and opened another file under the same number: its fd table
  // entry changed (IoCall::fd_info), so the next write is that file's.
  IoCall a = Call(kWrite, 5, 0, 10, 100);
  a.fd_info = 0x1'0000'0007;
  IoCall a2 = a;
  a2.ts = 20;
  IoCall b = Call(kWrite, 5, 40, 10, 100);
  b.fd_info = 0x1'0000'0008;
  auto bursts = Drive({a, a2, b});
  ASSERT_EQ(bursts.size(), 2u);
  EXPECT_EQ(bursts[0].count, 2u);
  EXPECT_EQ(bursts[1].fd_info, b.fd_info);
  EXPECT_EQ(bursts[1].count, 1u);
}

TEST(Burst, PolicyInTicks) {
  // Limits in ns become ticks once; here 2.5 ticks per ns.
  BurstPolicy ticks = BurstPolicy{}.InTicks([](uint64_t ns) { return ns * 5 / 2; });
  EXPECT_EQ(ticks.max_gap, 2'500'000u);
  EXPECT_EQ(ticks.max_span, 50'000'000u);
  // The 1 ms gap is 2.5e6 ticks: 2e6 ticks between two calls keep the burst, 2.6e6 end it.
  auto bursts = Drive({Call(kWrite, 5, 0, 100, 1), Call(kWrite, 5, 2'000'100, 100, 1)}, ticks);
  EXPECT_EQ(bursts.size(), 1u);
  bursts = Drive({Call(kWrite, 5, 0, 100, 1), Call(kWrite, 5, 2'600'100, 100, 1)}, ticks);
  EXPECT_EQ(bursts.size(), 2u);
}

TEST(Burst, ClockGoingBackwardsStartsANewBurst) {
  auto bursts = Drive({Call(kWrite, 5, 1000, 100, 1), Call(kWrite, 5, 500, 100, 1)});
  EXPECT_EQ(bursts.size(), 2u);
}

TEST(Burst, OffsetOfTheFirstCall) {
  IoCall a = Call(kWrite, 5, 0, 10, 4096);
  a.offset = 8192;
  IoCall b = Call(kWrite, 5, 20, 10, 4096);
  b.offset = 12288;
  auto bursts = Drive({a, b});
  ASSERT_EQ(bursts.size(), 1u);
  EXPECT_EQ(bursts[0].offset, 8192u);
}

}  // namespace
}  // namespace idlescope::io
