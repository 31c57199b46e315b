// The code cache (interpose/python/code_cache.cc) on objects laid out like CPython 3.12's in test
// memory: a code object is copied once (file, qualified name, first line, line table), its strings
// become UTF-8 whatever their kind, an address reused by another code object gets a new entry,
// what is not a code object (or names and a line table of the wrong types) gets id 0, and long
// copies are cut.
#include "interpose/python/code_cache.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace idlescope::python {
namespace {

// Zeroed, 16-byte aligned memory that stays put for the test's lifetime.
class Arena {
 public:
  uint8_t* Get(size_t bytes) {
    blocks_.emplace_back((bytes + 15) / 16 + 1);
    return reinterpret_cast<uint8_t*>(blocks_.back().data());
  }

 private:
  struct alignas(16) Block {
    uint8_t b[16];
  };
  std::vector<std::vector<Block>> blocks_;
};

template <typename T>
void Put(uint8_t* obj, uint32_t offset, T v) {
  memcpy(obj + offset, &v, sizeof(v));
}

template <typename T>
T Get(const uint8_t* obj, uint32_t offset) {
  T v;
  memcpy(&v, obj + offset, sizeof(v));
  return v;
}

class CodeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(TableLayout(12, &l_));
    types_.code = reinterpret_cast<uintptr_t>(&code_type_);
    types_.unicode = reinterpret_cast<uintptr_t>(&unicode_type_);
    types_.bytes = reinterpret_cast<uintptr_t>(&bytes_type_);
    ASSERT_TRUE(cache_.Init(l_, types_));
  }

  // A compact str: kind 1, 2 or 4 bytes per character; ASCII when every one is < 128.
  uintptr_t Str(const std::u32string& s, uint32_t kind = 1) {
    bool ascii = kind == 1;
    for (char32_t c : s) ascii &= c < 128;
    const uint32_t head = ascii ? l_.unicode_ascii_size : l_.unicode_compact_size;
    uint8_t* obj = arena_.Get(head + (s.size() + 1) * kind);
    Put(obj, l_.ob_type, types_.unicode);
    Put<int64_t>(obj, l_.unicode_length, static_cast<int64_t>(s.size()));
    Put<uint32_t>(obj, l_.unicode_state, (kind << 2) | (1u << 5) | (ascii ? 1u << 6 : 0));
    for (size_t i = 0; i < s.size(); ++i) {
      if (kind == 1) Put<uint8_t>(obj, head + i, static_cast<uint8_t>(s[i]));
      if (kind == 2) Put<uint16_t>(obj, head + 2 * i, static_cast<uint16_t>(s[i]));
      if (kind == 4) Put<uint32_t>(obj, head + 4 * i, static_cast<uint32_t>(s[i]));
    }
    return reinterpret_cast<uintptr_t>(obj);
  }
  uintptr_t Bytes(const std::string& b) {
    uint8_t* obj = arena_.Get(l_.bytes_data + b.size() + 1);
    Put(obj, l_.ob_type, types_.bytes);
    Put<int64_t>(obj, l_.bytes_size, static_cast<int64_t>(b.size()));
    memcpy(obj + l_.bytes_data, b.data(), b.size());
    return reinterpret_cast<uintptr_t>(obj);
  }
  uint8_t* Code(uintptr_t file, uintptr_t name, int32_t first_line, uintptr_t table) {
    uint8_t* obj = arena_.Get(l_.code_bytes + 64);
    Put(obj, l_.ob_type, types_.code);
    Put(obj, l_.code_filename, file);
    Put(obj, l_.code_name, name);
    Put(obj, l_.code_firstlineno, first_line);
    Put(obj, l_.code_linetable, table);
    return obj;
  }
  static std::string FileOf(const CodeInfo* i) { return std::string(i->file(), i->file_size); }
  static std::string NameOf(const CodeInfo* i) { return std::string(i->name(), i->name_size); }

  Layout l_;
  ObjectTypes types_;
  char code_type_ = 0, unicode_type_ = 0, bytes_type_ = 0;
  Arena arena_;
  CodeCache cache_;
};

TEST_F(CodeCacheTest, CopiedOnceAndFoundAgain) {
  uint8_t* code = Code(Str(U"/job/train.py"), Str(U"Trainer.step"), 40, Bytes("\x80\x81\x82"));
  const uintptr_t addr = reinterpret_cast<uintptr_t>(code);
  const uint32_t id = cache_.Id(addr);
  ASSERT_EQ(id, 1u);
  EXPECT_EQ(cache_.Id(addr), id);
  EXPECT_EQ(cache_.size(), 1u);
  const CodeInfo* info = cache_.Info(id);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(FileOf(info), "/job/train.py");
  EXPECT_EQ(NameOf(info), "Trainer.step");
  EXPECT_EQ(info->first_line, 40);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(info->table()), info->table_size),
            "\x80\x81\x82");
  EXPECT_EQ(cache_.Info(2), nullptr);
}

TEST_F(CodeCacheTest, StringsOfEveryKindBecomeUtf8) {
  uint8_t* latin1 = Code(Str(U"/d\u00e4ta/f.py"), Str(U"caf\u00e9"), 1, Bytes(""));
  std::u32string surrogate = U"f";
  surrogate.push_back(char32_t{0xD800});
  uint8_t* ucs2 = Code(Str(U"/\u6570\u636e.py", 2), Str(surrogate, 2), 1, Bytes(""));
  uint8_t* ucs4 = Code(Str(U"/x.py", 4), Str(U"\U0001F600", 4), 1, Bytes(""));
  const CodeInfo* a = cache_.Info(cache_.Id(reinterpret_cast<uintptr_t>(latin1)));
  const CodeInfo* b = cache_.Info(cache_.Id(reinterpret_cast<uintptr_t>(ucs2)));
  const CodeInfo* c = cache_.Info(cache_.Id(reinterpret_cast<uintptr_t>(ucs4)));
  ASSERT_TRUE(a != nullptr && b != nullptr && c != nullptr);
  EXPECT_EQ(FileOf(a), "/d\xc3\xa4ta/f.py");
  EXPECT_EQ(NameOf(a), "caf\xc3\xa9");
  EXPECT_EQ(FileOf(b), "/\xe6\x95\xb0\xe6\x8d\xae.py");
  EXPECT_EQ(NameOf(b), "f\xef\xbf\xbd");  // a lone surrogate becomes U+FFFD
  EXPECT_EQ(FileOf(c), "/x.py");
  EXPECT_EQ(NameOf(c), "\xf0\x9f\x98\x80");
}

TEST_F(CodeCacheTest, AReusedAddressIsANewCodeObject) {
  uint8_t* code = Code(Str(U"/a.py"), Str(U"f"), 10, Bytes(""));
  const uintptr_t addr = reinterpret_cast<uintptr_t>(code);
  const uint32_t first = cache_.Id(addr);
  // The code object is freed and another one is made at the same address.
  Put(code, l_.code_filename, Str(U"<string>"));
  Put(code, l_.code_name, Str(U"<lambda>"));
  Put<int32_t>(code, l_.code_firstlineno, 1);
  const uint32_t second = cache_.Id(addr);
  EXPECT_NE(second, first);
  EXPECT_EQ(FileOf(cache_.Info(second)), "<string>");
  EXPECT_EQ(FileOf(cache_.Info(first)), "/a.py");  // frames already made keep their copy
  EXPECT_EQ(cache_.Id(addr), second);
}

TEST_F(CodeCacheTest, WhatIsNotACodeObjectGetsNoId) {
  uint8_t* code = Code(Str(U"/a.py"), Str(U"f"), 1, Bytes(""));
  Put(code, l_.ob_type, types_.unicode);
  EXPECT_EQ(cache_.Id(reinterpret_cast<uintptr_t>(code)), 0u);
  // A name that is not a str, a line table that is not bytes.
  uint8_t* bad_name = Code(Bytes("x"), Str(U"f"), 1, Bytes(""));
  uint8_t* bad_table = Code(Str(U"/a"), Str(U"f"), 1, Str(U"t"));
  EXPECT_EQ(cache_.Id(reinterpret_cast<uintptr_t>(bad_name)), 0u);
  EXPECT_EQ(cache_.Id(reinterpret_cast<uintptr_t>(bad_table)), 0u);
  EXPECT_EQ(cache_.size(), 0u);
}

TEST_F(CodeCacheTest, LongCopiesAreCut) {
  std::u32string file(5000, U'a');
  const std::string table(CodeCache::kMaxTableBytes + 10, '\x80');
  uint8_t* code = Code(Str(file), Str(U"f"), 1, Bytes(table));
  const CodeInfo* info = cache_.Info(cache_.Id(reinterpret_cast<uintptr_t>(code)));
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->file_size, CodeCache::kMaxFileBytes);
  EXPECT_EQ(info->table_size, CodeCache::kMaxTableBytes);
}

// The sampler's path (IdFromPrefix): the same copies, by reads that cannot fault, of code objects
// that another thread may free while we read.
TEST_F(CodeCacheTest, ReadFromOutsideTheSameCopies) {
  const int pid = getpid();
  uint8_t* code = Code(Str(U"/job/d\u00e4ta.py", 2), Str(U"augment"), 7, Bytes("\x80\x81"));
  const uintptr_t addr = reinterpret_cast<uintptr_t>(code);
  std::vector<uint8_t> prefix(code, code + l_.code_bytes);
  const uint32_t id = cache_.IdFromPrefix(addr, prefix.data(), pid);
  ASSERT_NE(id, 0u);
  EXPECT_EQ(FileOf(cache_.Info(id)), "/job/d\xc3\xa4ta.py");
  EXPECT_EQ(NameOf(cache_.Info(id)), "augment");
  EXPECT_EQ(cache_.Info(id)->first_line, 7);
  EXPECT_EQ(cache_.Info(id)->table_size, 2u);
  // Known now, to both paths.
  EXPECT_EQ(cache_.IdFromPrefix(addr, prefix.data(), pid), id);
  EXPECT_EQ(cache_.Id(addr), id);
  // A prefix that is not a code object's.
  Put(prefix.data(), l_.ob_type, types_.unicode);
  EXPECT_EQ(cache_.IdFromPrefix(addr, prefix.data(), pid), 0u);
}

TEST_F(CodeCacheTest, ReadFromOutsideFreedObjectsGetNoIdAndNoFault) {
  const int pid = getpid();
  const long page = sysconf(_SC_PAGESIZE);
  // A code object whose name lies on a page that is unmapped by the time it is read (its owner
  // freed it): no id, no SIGSEGV.
  void* mem = mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* name = static_cast<uint8_t*>(mem);
  Put(name, l_.ob_type, types_.unicode);
  Put<int64_t>(name, l_.unicode_length, 1);
  Put<uint32_t>(name, l_.unicode_state, (1u << 2) | (1u << 5) | (1u << 6));
  uint8_t* code = Code(Str(U"/a.py"), reinterpret_cast<uintptr_t>(name), 3, Bytes(""));
  std::vector<uint8_t> prefix(code, code + l_.code_bytes);
  ASSERT_EQ(munmap(mem, static_cast<size_t>(page)), 0);
  EXPECT_EQ(cache_.IdFromPrefix(reinterpret_cast<uintptr_t>(code), prefix.data(), pid), 0u);
  // A line table far past the end of a mapping.
  uint8_t* table = Code(Str(U"/a.py"), Str(U"f"), 3, Bytes("abc"));
  Put<int64_t>(reinterpret_cast<uint8_t*>(Get<uintptr_t>(table, l_.code_linetable)), l_.bytes_size,
               int64_t{1} << 40);
  std::vector<uint8_t> table_prefix(table, table + l_.code_bytes);
  EXPECT_EQ(cache_.IdFromPrefix(reinterpret_cast<uintptr_t>(table), table_prefix.data(), pid), 0u);
  // A code object changed while its strings were read (freed and made again): the prefix read
  // after the copy differs from the one the walk read, and the copy is not kept.
  uint8_t* changing = Code(Str(U"/b.py"), Str(U"g"), 5, Bytes(""));
  std::vector<uint8_t> old_prefix(changing, changing + l_.code_bytes);
  Put<int32_t>(changing, l_.code_firstlineno, 6);
  EXPECT_EQ(cache_.IdFromPrefix(reinterpret_cast<uintptr_t>(changing), old_prefix.data(), pid), 0u);
  EXPECT_EQ(cache_.size(), 0u);
}

}  // namespace
}  // namespace idlescope::python
