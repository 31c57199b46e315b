// Evidence resolution (analysis/evidence.h): per-file ids into the report's symbols, the
// heaviest items merged by what they name.
#include "analyzer/analysis/evidence.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace idlescope {
namespace {

class Symbols : public SymbolSource {
 public:
  std::map<std::pair<uint32_t, uint64_t>, std::string> strings;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<SymbolFrame>> stacks;
  std::string String(uint32_t p, uint64_t id) const override {
    auto it = strings.find({p, id});
    return it == strings.end() ? "" : it->second;
  }
  std::vector<SymbolFrame> Stack(uint32_t p, uint64_t id) const override {
    auto it = stacks.find({p, id});
    return it == stacks.end() ? std::vector<SymbolFrame>{} : it->second;
  }
};

TEST(Evidence, StacksLeaveOutTheRecorderKeepSixFramesAndAreOneAcrossProcesses) {
  Symbols s;
  std::vector<SymbolFrame> frames = {{.function = "Record", .module = "/x/libidlescope.so"}};
  for (int i = 0; i < 8; ++i) {
    frames.push_back(
        {.function = i == 1 ? "" : "f", .module = "/usr/lib/libtorch.so", .rel_pc = 0x10u + i});
  }
  s.stacks[{0, 5}] = frames;
  s.stacks[{1, 9}] = frames;  // the same stack in another process's file
  s.stacks[{2, 1}] = {{.function = "Record", .module = "/x/libidlescope.so"}};
  ReportSymbols out;
  EvidenceResolver r(s, &out);
  StackId a = r.Stack(0, 5);
  EXPECT_EQ(a, r.Stack(1, 9));
  EXPECT_EQ(out.Stack(a).size(), kEvidenceStackFrames);
  EXPECT_EQ(out.StackLabel(a), "f <- libtorch.so+0x11 <- f <- f <- f <- f");
  EXPECT_EQ(r.Stack(2, 1), 0u);   // nothing of the program left
  EXPECT_EQ(r.Stack(0, 77), 0u);  // never defined
  s.strings[{0, 3}] = "/data/x";
  s.strings[{1, 4}] = "/data/x";
  EXPECT_EQ(r.String(0, 3), r.String(1, 4));
  EXPECT_EQ(r.String(0, 99), 0u);
}

TEST(Evidence, HeaviestMergesWhatNamesTheSameThingAndOrdersTiesByName) {
  Symbols s;
  s.strings[{0, 1}] = "/data/b";
  s.strings[{1, 1}] = "/data/b";  // the same file in another process
  s.strings[{0, 2}] = "/data/a";
  TopEvidence top;
  top.Add({0, 1}, 10, 100);
  top.Add({1, 1}, 10, 100);
  top.Add({0, 2}, 20, 50);
  top.Add({0, 3}, 1, 0);  // an id the file never defined
  ReportSymbols out;
  EvidenceResolver r(s, &out);
  std::vector<EvidenceItem> items = r.Heaviest(top, 5, [&](const EvidenceKey& k) {
    EvidenceItem item{.kind = EvidenceKind::kObject, .id = r.String(k.process, k.id)};
    if (item.id == 0) {
      item = {.kind = EvidenceKind::kUnresolvedObject, .process = k.process, .trace_id = k.id};
    }
    return item;
  });
  ASSERT_EQ(items.size(), 3u);
  // /data/a and /data/b both explain 20: by name.
  EXPECT_EQ(out.String(items[0].id), "/data/a");
  EXPECT_EQ(out.String(items[1].id), "/data/b");
  EXPECT_EQ(items[1].ns, 20);
  EXPECT_EQ(items[1].bytes, 200u);
  EXPECT_EQ(items[1].count, 2u);
  EXPECT_EQ(items[2].kind, EvidenceKind::kUnresolvedObject);
  EXPECT_EQ(items[2].trace_id, 3u);
  EXPECT_EQ(r.Heaviest(top, 1, [&](const EvidenceKey&) { return EvidenceItem{}; }).size(), 1u);
}

TEST(Evidence, DirectoriesOfFileEvents) {
  DirectoryNames names;
  HostEvent e;
  e.type = FILE_READ;
  e.path = "/data/shards/00001.tar";
  uint64_t key = names.Of(e);
  ASSERT_NE(key, 0u);
  ASSERT_NE(names.Find(key), nullptr);
  EXPECT_EQ(*names.Find(key), "/data/shards");
  e.path = "/data/shards/00002.tar";
  EXPECT_EQ(names.Of(e), key);
  e.path = "relative.txt";
  EXPECT_EQ(names.Of(e), 0u);
  e.type = CUDA_MEMCPY;
  e.path = "/data/x";
  EXPECT_EQ(names.Of(e), 0u);
  EXPECT_EQ(names.Find(12345), nullptr);
}

TEST(Evidence, DirectoryNamesOfTwoPartsAreBoth) {
  DirectoryNames a, b;
  HostEvent e;
  e.type = FILE_READ;
  e.path = "/data/train/0.tar";
  const uint64_t train = a.Of(e);
  e.path = "/data/val/0.tar";
  const uint64_t val = b.Of(e);
  e.path = "/data/train/1.tar";
  EXPECT_EQ(b.Of(e), train);  // keys are the same in every process (FNV-1a of the path)
  a.MergeFrom(b);
  ASSERT_NE(a.Find(val), nullptr);
  EXPECT_EQ(*a.Find(val), "/data/val");
  EXPECT_EQ(*a.Find(train), "/data/train");
  EXPECT_EQ(a.names().size(), 2u);
}

}  // namespace
}  // namespace idlescope
