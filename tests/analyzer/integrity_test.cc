// Shard files that travel (analyzer/shard/integrity.h): XXH64 as its reference gives it, whole or
// in pieces; every single bit flip of a sealed file is refused in one line; a trace file's
// identity tells a changed or swapped file; the job digest ignores what a merge may change.
#include "analyzer/shard/integrity.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "analyzer/shard/plan.h"
#include "analyzer/shard/summary_file.h"

namespace idlescope::testing {
namespace {

std::string TempPath(const char* name) {
  return std::string(::testing::TempDir()) + "/" + name + "-" + std::to_string(getpid());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ContentHash, Xxh64ReferenceValues) {
  // XXH64 with seed 0, as the reference implementation (libxxhash 0.8.1) gives them.
  EXPECT_EQ(HashBytes(""), 0xef46db3751d8e999ull);
  EXPECT_EQ(HashBytes("a"), 0xd24ec4f1a98c6e5bull);
  EXPECT_EQ(HashBytes("abc"), 0x44bc2cf5ad770999ull);
  EXPECT_EQ(HashBytes("message digest"), 0x066ed728fceeb3beull);
  std::string long_input;
  for (int i = 0; i < 4; ++i) {
    for (int b = 0; b < 256; ++b) long_input.push_back(static_cast<char>(b));
  }
  long_input += "xyz";  // 1027 bytes: stripes, 8-, 4- and 1-byte tails
  EXPECT_EQ(HashBytes(long_input), 0xe146cb31b65bc21aull);
}

TEST(ContentHash, PiecesOfAnySizeHashAsTheWhole) {
  std::string input;
  for (int i = 0; i < 1000; ++i) input.push_back(static_cast<char>(i * 7 + 3));
  const uint64_t whole = HashBytes(input);
  for (size_t piece : {1u, 3u, 31u, 32u, 33u, 100u}) {
    ContentHash hash;
    for (size_t at = 0; at < input.size(); at += piece) {
      hash.Update(input.data() + at, std::min(piece, input.size() - at));
    }
    EXPECT_EQ(hash.Digest(), whole) << piece;
  }
}

shard::Plan SmallPlan() {
  shard::Plan plan;
  plan.set_format(kShardFormat);
  for (uint32_t i = 0; i < 2; ++i) {
    shard::PlannedFile* f = plan.add_files();
    f->set_path("/t/node0-" + std::to_string(100 + i) + ".idlescope");
    f->set_size(4096 + i);
    f->set_owner(i);
    f->mutable_process()->set_pid(100 + i);
    f->mutable_process()->set_rank(static_cast<int32_t>(i));
    f->mutable_identity()->set_size(4096 + i);
    f->mutable_identity()->set_mtime(1'700'000'000'123'456'789 + i);
    f->mutable_identity()->set_content_hash(0x1234567890abcdefull + i);
    plan.add_shards()->add_owned(i);
  }
  plan.mutable_options()->set_min_gap(1'000'000);
  plan.set_job(JobDigest(plan));
  return plan;
}

TEST(ShardFile, EverySingleBitFlipIsRefusedInOneLine) {
  const shard::Plan plan = SmallPlan();
  const std::string file = Sealed(plan.SerializeAsString());
  shard::Plan read;
  ASSERT_TRUE(ParseShardFile(file, "plan", &read).ok());
  EXPECT_EQ(read.SerializeAsString(), plan.SerializeAsString());
  for (size_t bit = 0; bit < file.size() * 8; ++bit) {
    std::string flipped = file;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    absl::Status status = ParseShardFile(flipped, "plan", &read);
    ASSERT_FALSE(status.ok()) << "bit " << bit;
    EXPECT_EQ(status.message().find('\n'), std::string::npos);
    EXPECT_TRUE(absl::StartsWith(status.message(), "corrupt plan") ||
                absl::StartsWith(status.message(), "not an idlescope plan") ||
                absl::StartsWith(status.message(), "plan of format"))
        << "bit " << bit << ": " << status.message();
  }
}

TEST(ShardFile, CutOrUnsealedOrOfAnotherFormat) {
  const std::string file = Sealed(SmallPlan().SerializeAsString());
  shard::Plan read;
  EXPECT_EQ(ParseShardFile(file.substr(0, file.size() - 1), "plan", &read).message(),
            "not an idlescope plan");
  EXPECT_EQ(
      ParseShardFile(file.substr(0, file.size() - kChecksumFieldSize), "plan", &read).message(),
      "corrupt plan: no checksum at its end");
  EXPECT_EQ(ParseShardFile(SmallPlan().SerializeAsString(), "plan", &read).message(),
            "corrupt plan: no checksum at its end");
  EXPECT_EQ(ParseShardFile("", "plan", &read).message(),
            "plan of format 0, this idlescope reads "
            "format " +
                std::to_string(kShardFormat));
  shard::Plan old = SmallPlan();
  old.set_format(1);  // before checksums: no checksum, and another format
  EXPECT_EQ(ParseShardFile(old.SerializeAsString(), "plan", &read).message(),
            "plan of format 1, this idlescope reads format " + std::to_string(kShardFormat));
}

TEST(ShardFile, SummaryWrittenInPiecesIsSealedAndEveryFlipRefused) {
  const std::string path = TempPath("sealed-summary");
  {
    absl::StatusOr<std::unique_ptr<SummaryWriter>> w = SummaryWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status();
    shard::CrossRankBatch batch;
    batch.add_records()->set_at(42);
    ASSERT_TRUE((*w)->AddBatch(batch.SerializeAsString()).ok());
    shard::Summary rest;
    rest.set_format(kShardFormat);
    rest.set_shard(1);
    rest.add_owned(1);
    ASSERT_TRUE((*w)->Finish(rest).ok());
  }
  const std::string file = ReadFile(path);
  ASSERT_TRUE(SummaryFile::Open(path).ok());
  for (size_t bit = 0; bit < file.size() * 8; ++bit) {
    std::string flipped = file;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    WriteFile(path, flipped);
    absl::StatusOr<std::unique_ptr<SummaryFile>> f = SummaryFile::Open(path);
    ASSERT_FALSE(f.ok()) << "bit " << bit;
    EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
  }
  // A batch changed after the summary was opened (and checked) is not handed on.
  WriteFile(path, file);
  absl::StatusOr<std::unique_ptr<SummaryFile>> f = SummaryFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  std::string changed = file;
  changed[4] = static_cast<char>(changed[4] ^ 1);  // inside the first batch
  WriteFile(path, changed);
  EXPECT_EQ((*f)->Batch(0), "");
  std::remove(path.c_str());
}

TEST(FileIdentity, SizeTimeAndContentTellAChangedFile) {
  const std::string path = TempPath("trace");
  WriteFile(path, std::string(100000, 'x'));
  absl::StatusOr<shard::FileIdentity> indexed = IdentifyFile(path);
  ASSERT_TRUE(indexed.ok()) << indexed.status();
  EXPECT_EQ(indexed->size(), 100000u);
  EXPECT_EQ(indexed->content_hash(), HashBytes(std::string(100000, 'x')));
  EXPECT_TRUE(CheckIdentity(path, *indexed, true).ok());

  // Another content of the same size, its time put back: only the hash tells.
  std::string other(100000, 'x');
  other[50000] = 'y';
  WriteFile(path, other);
  struct timespec times[2] = {{0, UTIME_OMIT},
                              {indexed->mtime() / 1'000'000'000, indexed->mtime() % 1'000'000'000}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_TRUE(CheckIdentity(path, *indexed, false).ok());
  absl::Status status = CheckIdentity(path, *indexed, true);
  EXPECT_NE(status.message().find("changed since it was indexed: the same size and time"),
            std::string::npos)
      << status.message();

  WriteFile(path, std::string(100001, 'x'));
  EXPECT_EQ(CheckIdentity(path, *indexed, false).message(),
            path + " changed since it was indexed: 100001 bytes, indexed 100000");
  std::remove(path.c_str());
  EXPECT_TRUE(absl::IsNotFound(CheckIdentity(path, *indexed, true)));
}

TEST(JobDigest, SameJobWhateverTheShardsAndEndHintAnotherForOtherFilesOrOptions) {
  const shard::Plan plan = SmallPlan();
  shard::Plan united = plan;  // what a merge's replan changes
  united.clear_shards();
  united.add_shards()->add_owned(0);
  united.mutable_shards(0)->add_owned(1);
  united.mutable_files(1)->set_owner(0);
  united.set_job_end_hint(99);
  EXPECT_EQ(JobDigest(united), plan.job());
  shard::Plan other = plan;
  other.mutable_files(0)->mutable_identity()->set_content_hash(1);
  EXPECT_NE(JobDigest(other), plan.job());
  other = plan;
  other.mutable_options()->set_min_gap(2'000'000);
  EXPECT_NE(JobDigest(other), plan.job());
}

}  // namespace
}  // namespace idlescope::testing
