// Issue 2, Done-when 5: the preload library brings no libprotobuf, no abseil and no C++ runtime
// into the traced process, and exports no C++ standard library symbol that could take the place
// of the program's own (see interpose/CMakeLists.txt for what it links and why).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string Capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

const std::string kLib = IDLESCOPE_PRELOAD_LIB;

TEST(LinkageTest, NeedsOnlyTheCLibrary) {
  std::string dyn = Capture("readelf -d '" + kLib + "'");
  ASSERT_NE(dyn.find("(NEEDED)"), std::string::npos) << dyn;
  const std::set<std::string> allowed = {"libc.so.6",       "ld-linux-x86-64.so.2", "libdl.so.2",
                                         "libpthread.so.0", "librt.so.1",           "libm.so.6"};
  std::istringstream lines(dyn);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    size_t open = line.find('['), close = line.find(']');
    ASSERT_NE(open, std::string::npos);
    std::string lib = line.substr(open + 1, close - open - 1);
    EXPECT_TRUE(allowed.count(lib)) << "libidlescope.so needs " << lib;
  }
}

TEST(LinkageTest, LddShowsNoCxxProtobufOrAbseil) {
  std::string ldd = Capture("ldd '" + kLib + "' 2>&1");
  ASSERT_NE(ldd.find("libc.so.6"), std::string::npos) << ldd;
  for (const char* bad : {"libprotobuf", "libabsl", "libstdc++", "libgcc_s", "libunwind", "libc++",
                          "libcuda", "libcudart", "libcupti", "libnccl"}) {
    EXPECT_EQ(ldd.find(bad), std::string::npos) << bad << " in\n" << ldd;
  }
}

TEST(LinkageTest, RequiresOnlyGlibcSymbolVersions) {
  // GLIBCXX_/CXXABI_/GCC_ version needs would mean a dependency on libstdc++/libgcc_s.
  std::string versions = Capture("readelf -V -W '" + kLib + "'");
  size_t needs = versions.find(".gnu.version_r");
  ASSERT_NE(needs, std::string::npos) << versions;
  std::string section = versions.substr(needs);
  EXPECT_EQ(section.find("GLIBCXX"), std::string::npos) << section;
  EXPECT_EQ(section.find("CXXABI"), std::string::npos) << section;
  EXPECT_EQ(section.find("GCC_"), std::string::npos) << section;
}

TEST(LinkageTest, ExportsNoStandardLibraryOrProtobufSymbols) {
  std::string syms = Capture("nm -D --defined-only '" + kLib + "'");
  ASSERT_NE(syms.find("idlescope_mark"), std::string::npos) << syms;
  ASSERT_NE(syms.find("__libc_start_main"), std::string::npos) << syms;
  std::istringstream lines(syms);
  std::string line;
  while (std::getline(lines, line)) {
    std::string name = line.substr(line.rfind(' ') + 1);
    for (const char* prefix :
         {"_ZNSt", "_ZNKSt", "_ZSt", "_ZTISt", "_ZTVSt", "_ZN9__gnu_cxx", "_ZN10__cxxabiv1",
          "_ZN6google", "_ZN4absl", "__cxa_", "_Unwind_", "unw_", "_U",
          // operator new/delete: the library's own delete (alloc.cc) must stay its own
          "_Znw", "_Zna", "_Zdl", "_Zda",
          // zstd's archive (format v4): a program may load its own libzstd
          "ZSTD_", "ZSTDv0", "ZBUFF", "ZDICT_", "HUF_", "FSE_", "HIST_", "POOL_", "ERR_"}) {
      EXPECT_NE(name.rfind(prefix, 0), 0u) << "exported: " << name;
    }
  }
}

}  // namespace
