// A shard's summary as a file (analyzer/shard/summary_file.h): record batches written as they
// come and read back one at a time by offset, the rest read as the summary's state; the file is
// one Summary message to any protobuf reader; a file that is no summary is refused in one line.
#include "analyzer/shard/summary_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "analyzer/shard/plan.h"

namespace idlescope::testing {
namespace {

std::string TempPath(const char* name) {
  return std::string(::testing::TempDir()) + "/" + name + "-" + std::to_string(getpid());
}

std::string Batch(int64_t at) {
  shard::CrossRankBatch batch;
  batch.add_records()->set_at(at);
  return batch.SerializeAsString();
}

TEST(SummaryFile, BatchesAsTheyComeTheStateLastOneMessageToAnyReader) {
  const std::string path = TempPath("summary");
  {
    absl::StatusOr<std::unique_ptr<SummaryWriter>> w = SummaryWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE((*w)->AddBatch(Batch(1)).ok());
    ASSERT_TRUE((*w)->AddBatch(Batch(2)).ok());
    shard::Summary rest;
    rest.set_format(kShardFormat);
    rest.set_shard(7);
    rest.add_owned(3);
    rest.set_end(12345);
    ASSERT_TRUE((*w)->Finish(rest).ok());
  }
  absl::StatusOr<std::unique_ptr<SummaryFile>> f = SummaryFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->state().shard(), 7u);
  EXPECT_EQ((*f)->state().end(), 12345);
  EXPECT_EQ((*f)->state().cross_rank_size(), 0);  // not held: read when needed
  ASSERT_EQ((*f)->batches(), 2u);
  EXPECT_EQ((*f)->Batch(0), Batch(1));
  EXPECT_EQ((*f)->Batch(1), Batch(2));
  // The same file is one Summary with both batches.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  shard::Summary whole;
  ASSERT_TRUE(whole.ParseFromString(bytes));
  EXPECT_EQ(whole.cross_rank_size(), 2);
  EXPECT_EQ(whole.shard(), 7u);
  std::remove(path.c_str());
}

TEST(SummaryFile, NotASummaryOrAnotherFormatIsOneLine) {
  const std::string path = TempPath("not-summary");
  {
    std::ofstream out(path, std::ios::binary);
    out << "\xff\xff\xff garbage";
  }
  absl::StatusOr<std::unique_ptr<SummaryFile>> f = SummaryFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), path + ": not an idlescope summary");
  {
    shard::Summary other;
    other.set_format(kShardFormat + 1);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << other.SerializeAsString();
  }
  f = SummaryFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("summary of format " + std::to_string(kShardFormat + 1)),
            std::string::npos)
      << f.status().message();
  std::remove(path.c_str());
  EXPECT_FALSE(SummaryFile::Open(path).ok());
}

}  // namespace
}  // namespace idlescope::testing
