#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "interpose/hooks/io_fd_table.h"

namespace idlescope::io {
namespace {

TEST(FsType, StatfsMagicClasses) {
  EXPECT_EQ(FsTypeFromStatfsMagic(0xEF53), kFsLocal);      // ext4
  EXPECT_EQ(FsTypeFromStatfsMagic(0x58465342), kFsLocal);  // xfs
  EXPECT_EQ(FsTypeFromStatfsMagic(0x9123683E), kFsLocal);  // btrfs
  EXPECT_EQ(FsTypeFromStatfsMagic(0x01021994), kFsTmpfs);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x858458f6), kFsTmpfs);  // ramfs
  EXPECT_EQ(FsTypeFromStatfsMagic(0x6969), kFsNfs);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x65735546), kFsFuse);
  EXPECT_EQ(FsTypeFromStatfsMagic(0xFF534D42), kFsCifs);
  EXPECT_EQ(FsTypeFromStatfsMagic(0xFE534D42), kFsCifs);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x0BD00BD0), kFsLustre);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x794c7630), kFsOverlay);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x50495045), kFsPipe);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x534F434B), kFsSocket);
  EXPECT_EQ(FsTypeFromStatfsMagic(0x9fa0), kFsDevice);           // proc
  EXPECT_EQ(FsTypeFromStatfsMagic(0x00C36400), kFsOtherRemote);  // ceph
  EXPECT_EQ(FsTypeFromStatfsMagic(0x12345678), kFsOther);
  // f_type is a signed long: a sign-extended magic still maps.
  EXPECT_EQ(FsTypeFromStatfsMagic(
                static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(0xFF534D42)))),
            kFsCifs);
}

TEST(FsType, ModeDecidesSocketsPipesDevices) {
  EXPECT_EQ(FsTypeFromMode(S_IFSOCK | 0600), kFsSocket);
  EXPECT_EQ(FsTypeFromMode(S_IFIFO | 0600), kFsPipe);
  EXPECT_EQ(FsTypeFromMode(S_IFCHR | 0600), kFsDevice);
  EXPECT_EQ(FsTypeFromMode(S_IFBLK | 0600), kFsDevice);
  EXPECT_EQ(FsTypeFromMode(S_IFREG | 0600), kFsUnspecified);
  EXPECT_EQ(FsTypeFromMode(S_IFDIR | 0700), kFsUnspecified);
}

TEST(FsType, RealFilesystemsOfThisMachine) {
  struct statfs sfs;
  ASSERT_EQ(statfs("/proc/self", &sfs), 0);
  EXPECT_EQ(FsTypeFromStatfsMagic(static_cast<uint64_t>(sfs.f_type)), kFsDevice);
  if (statfs("/dev/shm", &sfs) == 0) {
    EXPECT_EQ(FsTypeFromStatfsMagic(static_cast<uint64_t>(sfs.f_type)), kFsTmpfs);
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  struct stat st;
  ASSERT_EQ(fstat(fds[0], &st), 0);
  EXPECT_EQ(FsTypeFromMode(st.st_mode), kFsPipe);
  close(fds[0]);
  close(fds[1]);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ASSERT_EQ(fstat(sv[0], &st), 0);
  EXPECT_EQ(FsTypeFromMode(st.st_mode), kFsSocket);
  close(sv[0]);
  close(sv[1]);
}

TEST(FdInfo, PackRoundTrip) {
  FdInfo info;
  info.path = 0xfedcba98;
  info.fs = kFsNfs;
  info.scope = kNetPublic;
  info.state = FdState::kIgnored;
  FdInfo back = FdInfo::Unpack(info.Pack());
  EXPECT_EQ(back.path, info.path);
  EXPECT_EQ(back.fs, kFsNfs);
  EXPECT_EQ(back.scope, kNetPublic);
  EXPECT_EQ(back.state, FdState::kIgnored);
  EXPECT_EQ(FdInfo{}.Pack(), 0u);  // zero = unknown, what fresh mmap pages hold
}

class FdTableTest : public ::testing::Test {
 protected:
  void TearDown() override { table_.Release(); }
  FdTable table_;
};

FdInfo Tracked(uint32_t path, FsType fs) {
  FdInfo info;
  info.path = path;
  info.fs = fs;
  info.state = FdState::kTracked;
  return info;
}

TEST_F(FdTableTest, UnknownUntilSetAndAfterClear) {
  EXPECT_EQ(table_.Get(3).state, FdState::kUnknown);
  table_.Set(3, Tracked(7, kFsLocal));
  EXPECT_EQ(table_.Get(3).state, FdState::kTracked);
  EXPECT_EQ(table_.Get(3).path, 7u);
  EXPECT_EQ(table_.Get(4).state, FdState::kUnknown);
  table_.Clear(3);
  EXPECT_EQ(table_.Get(3).state, FdState::kUnknown);
}

TEST_F(FdTableTest, OutOfRangeFdsAreIgnored) {
  table_.Set(-1, Tracked(1, kFsLocal));
  table_.Set(FdTable::kMaxFds, Tracked(1, kFsLocal));
  EXPECT_EQ(table_.Get(-1).state, FdState::kUnknown);
  EXPECT_EQ(table_.Get(FdTable::kMaxFds).state, FdState::kUnknown);
  table_.Clear(-5);
  table_.Clear(FdTable::kMaxFds + 10);
}

TEST_F(FdTableTest, HighFdsLiveInLaterChunks) {
  int high = FdTable::kMaxFds - 1;
  table_.Set(high, Tracked(9, kFsTmpfs));
  EXPECT_EQ(table_.Get(high).fs, kFsTmpfs);
  EXPECT_EQ(table_.Get(high - 1).state, FdState::kUnknown);
  EXPECT_EQ(table_.Get(5).state, FdState::kUnknown);
}

TEST_F(FdTableTest, ClearRangeSpansChunks) {
  int edge = FdTable::kChunkSize;
  for (int fd = edge - 3; fd <= edge + 3; ++fd) table_.Set(fd, Tracked(1, kFsLocal));
  table_.Set(edge + 100, Tracked(2, kFsLocal));
  table_.ClearRange(edge - 2, edge + 2);
  EXPECT_EQ(table_.Get(edge - 3).state, FdState::kTracked);
  for (int fd = edge - 2; fd <= edge + 2; ++fd) EXPECT_EQ(table_.Get(fd).state, FdState::kUnknown);
  EXPECT_EQ(table_.Get(edge + 3).state, FdState::kTracked);
  // close_range(3, ~0U): everything from 3 on.
  table_.ClearRange(3, ~0u);
  EXPECT_EQ(table_.Get(edge + 100).state, FdState::kUnknown);
}

TEST_F(FdTableTest, DupCopiesTheEntry) {
  table_.Set(10, Tracked(42, kFsNfs));
  table_.Copy(10, 11);
  EXPECT_EQ(table_.Get(11).path, 42u);
  EXPECT_EQ(table_.Get(11).fs, kFsNfs);
}

// The write/read hooks skip reading an fd's entry while the generation has not moved: every kind
// of change moves it, after the entry changed.
TEST_F(FdTableTest, EveryChangeMovesTheGeneration) {
  uint32_t g = table_.Generation();
  table_.Set(10, Tracked(42, kFsNfs));
  EXPECT_NE(table_.Generation(), g);
  g = table_.Generation();
  table_.Copy(10, 11);
  EXPECT_NE(table_.Generation(), g);
  g = table_.Generation();
  table_.Clear(11);
  EXPECT_NE(table_.Generation(), g);
  g = table_.Generation();
  table_.ClearRange(3, 20);
  EXPECT_NE(table_.Generation(), g);
  g = table_.Generation();
  EXPECT_EQ(table_.Get(10).state, FdState::kUnknown);  // reads leave it alone
  EXPECT_EQ(table_.GetPacked(10), 0u);
  EXPECT_EQ(table_.Generation(), g);
}

TEST_F(FdTableTest, PackedEntryIsWhatGetUnpacks) {
  table_.Set(7, Tracked(99, kFsSocket));
  uint64_t packed = table_.GetPacked(7);
  EXPECT_EQ(packed, Tracked(99, kFsSocket).Pack());
  EXPECT_EQ(FdInfo::FsOf(packed), kFsSocket);
  EXPECT_EQ(FdInfo::StateOf(packed), FdState::kTracked);
  EXPECT_EQ(FdInfo::StateOf(table_.GetPacked(8)), FdState::kUnknown);
  EXPECT_EQ(table_.GetPacked(-1), 0u);
}

// Readers never see a torn entry while writers replace it: every value read is one that was
// written as a whole.
TEST_F(FdTableTest, ConcurrentReadersSeeWholeEntries) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (uint32_t i = 1; !stop.load(); ++i) {
        uint32_t v = (i % 1000) * 2 + static_cast<uint32_t>(w);
        table_.Set(100 + static_cast<int>(i % 8), Tracked(v, w == 0 ? kFsLocal : kFsNfs));
      }
    });
  }
  int bad = 0;
  for (int i = 0; i < 200000; ++i) {
    FdInfo info = table_.Get(100 + i % 8);
    if (info.state == FdState::kUnknown) continue;
    bool from_w0 = info.path % 2 == 0;
    if ((from_w0 && info.fs != kFsLocal) || (!from_w0 && info.fs != kFsNfs)) ++bad;
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace idlescope::io
