// Replays every kept fuzz input through the fuzz targets' own functions in the normal build
// (and under ASan+UBSan in build-asan): the minimised corpus (tests/fuzz/corpus/), every input
// that ever crashed a target (tests/fuzz/regressions/, named after what it found), and the
// golden traces the fuzzers are seeded with. A crash found by a fuzzer is fixed, and its input
// added to regressions/, where this test keeps it from coming back.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_input.h"

namespace idlescope::fuzz {
namespace {

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      for (std::string& f : FilesUnder(path)) out.push_back(std::move(f));
    } else if (S_ISREG(st.st_mode) && name != "README.md" && name.find(".expected.") == name.npos) {
      out.push_back(path);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kFuzzDir = IDLESCOPE_SOURCE_DIR "/tests/fuzz";

TEST(FuzzRegressionTest, ReaderCorpusAndCrashes) {
  std::vector<std::string> inputs = FilesUnder(kFuzzDir + "/corpus/trace_reader");
  for (std::string& f : FilesUnder(kFuzzDir + "/regressions/trace_reader")) inputs.push_back(f);
  for (std::string& f : FilesUnder(IDLESCOPE_SOURCE_DIR "/tests/golden")) inputs.push_back(f);
  ASSERT_GT(inputs.size(), 10u);
  for (const std::string& path : inputs) {
    SCOPED_TRACE(path);
    ReadTrace(Contents(path));
  }
}

TEST(FuzzRegressionTest, AnalyzerCorpusAndCrashes) {
  std::vector<std::string> inputs = FilesUnder(kFuzzDir + "/corpus/analyze_job");
  for (std::string& f : FilesUnder(kFuzzDir + "/regressions/analyze_job")) inputs.push_back(f);
  ASSERT_GE(inputs.size(), 2u);
  for (const std::string& path : inputs) {
    SCOPED_TRACE(path);
    AnalyzeJob(Contents(path));
  }
  // Each golden case as one job: its files joined as the fuzzer's input format joins them.
  DIR* d = opendir(IDLESCOPE_SOURCE_DIR "/tests/golden");
  ASSERT_NE(d, nullptr);
  int jobs = 0;
  while (struct dirent* e = readdir(d)) {
    const std::string dir = std::string(IDLESCOPE_SOURCE_DIR "/tests/golden/") + e->d_name;
    struct stat st;
    if (e->d_name[0] == '.' || stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    std::string job;
    for (const std::string& file : FilesUnder(dir)) {
      if (!job.empty()) job += kNextFile;
      job += Contents(file);
    }
    SCOPED_TRACE(dir);
    AnalyzeJob(job);
    ++jobs;
  }
  closedir(d);
  EXPECT_GE(jobs, 5);
}

TEST(FuzzRegressionTest, InputsSplitIntoFiles) {
  const std::string two = std::string("a") + std::string(kNextFile) + "b";
  EXPECT_EQ(SplitFiles(two), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(SplitFiles("only"), (std::vector<std::string_view>{"only"}));
  std::string many = "1";
  for (int i = 2; i <= 5; ++i) many += std::string(kNextFile) + std::to_string(i);
  const std::vector<std::string_view> files = SplitFiles(many);
  ASSERT_EQ(files.size(), kMaxFiles);
  EXPECT_EQ(files[0], "1");
  EXPECT_NE(files.back().find(kNextFile), std::string_view::npos);  // the rest, as one file
}

TEST(FuzzRegressionTest, MemoryFilesHoldTheBytes) {
  const std::vector<std::string> paths = MemoryFiles({"first", std::string_view("\0x", 2)});
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(Contents(paths[0]), "first");
  EXPECT_EQ(Contents(paths[1]), std::string("\0x", 2));
  EXPECT_EQ(Contents(MemoryFiles({"shorter"})[0]), "shorter");  // reused, truncated
}

}  // namespace
}  // namespace idlescope::fuzz
