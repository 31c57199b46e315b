#include "interpose/hooks/process_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace idlescope::proc {
namespace {

constexpr char kLib[] = "/opt/idlescope/lib/libidlescope.so";

// Runs BuildTracedEnv the way the hooks do: ask the size, then build into exactly that.
std::vector<std::string> Build(std::vector<const char*> env, const PreservedEnv& keep,
                               bool null_env = false) {
  env.push_back(nullptr);
  char* const* envp = null_env ? nullptr : const_cast<char* const*>(env.data());
  char** out = nullptr;
  size_t needed = BuildTracedEnv(envp, keep, nullptr, 0, &out);
  EXPECT_EQ(out, nullptr);
  std::vector<char> arena(needed);
  EXPECT_EQ(BuildTracedEnv(envp, keep, arena.data(), arena.size(), &out), needed);
  std::vector<std::string> result;
  for (char** e = out; e != nullptr && *e != nullptr; ++e) result.emplace_back(*e);
  return result;
}

std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& e : env) m[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  return m;
}

PreservedEnv Keep() {
  std::vector<const char*> startup = {"PATH=/usr/bin",
                                      "IDLESCOPE_OUT=/tmp/traces",
                                      "LD_PRELOAD=/opt/idlescope/lib/libidlescope.so",
                                      "IDLESCOPE_STACK_DEPTH=8",
                                      "IDLESCOPE_BAD",
                                      nullptr};
  PreservedEnv keep;
  keep.Capture(const_cast<char* const*>(startup.data()), kLib);
  return keep;
}

TEST(PreservedEnv, CapturesOurVariablesAndLibrary) {
  PreservedEnv keep = Keep();
  EXPECT_STREQ(keep.library_path(), kLib);
  ASSERT_EQ(keep.size(), 2u);  // "IDLESCOPE_BAD" has no '=': not a variable
  EXPECT_STREQ(keep.entry(0), "IDLESCOPE_OUT=/tmp/traces");
  EXPECT_STREQ(keep.entry(1), "IDLESCOPE_STACK_DEPTH=8");
}

TEST(TracedEnv, ClearedEnvironmentGetsPreloadAndOurVariables) {
  auto env = AsMap(Build({}, Keep()));
  EXPECT_EQ(env["LD_PRELOAD"], kLib);
  EXPECT_EQ(env["IDLESCOPE_OUT"], "/tmp/traces");
  EXPECT_EQ(env["IDLESCOPE_STACK_DEPTH"], "8");
  EXPECT_EQ(env.size(), 3u);
}

TEST(TracedEnv, NullEnvpIsTreatedAsEmpty) {
  auto env = AsMap(Build({}, Keep(), /*null_env=*/true));
  EXPECT_EQ(env["LD_PRELOAD"], kLib);
  EXPECT_EQ(env.size(), 3u);
}

TEST(TracedEnv, ProgramsOwnVariablesWinAndOthersStay) {
  auto env = AsMap(Build({"HOME=/root", "IDLESCOPE_OUT=/elsewhere",
                          "LD_PRELOAD="
                          "/x/libidlescope.so"},
                         Keep()));
  EXPECT_EQ(env["HOME"], "/root");
  EXPECT_EQ(env["IDLESCOPE_OUT"], "/elsewhere");  // set explicitly by the program: kept
  EXPECT_EQ(env["IDLESCOPE_STACK_DEPTH"], "8");
  EXPECT_EQ(env["LD_PRELOAD"], "/x/libidlescope.so");  // already loads a libidlescope.so
}

TEST(TracedEnv, OtherPreloadsAreKeptAfterOurs) {
  auto env = AsMap(Build({"LD_PRELOAD=libjemalloc.so.2 /usr/lib/libfoo.so"}, Keep()));
  EXPECT_EQ(env["LD_PRELOAD"], std::string(kLib) + ":libjemalloc.so.2 /usr/lib/libfoo.so");
  auto empty = AsMap(Build({"LD_PRELOAD="}, Keep()));
  EXPECT_EQ(empty["LD_PRELOAD"], kLib);
}

TEST(TracedEnv, NothingToAddKeepsTheProgramsEntries) {
  std::vector<std::string> env = Build({"LD_PRELOAD=/opt/idlescope/lib/libidlescope.so",
                                        "IDLESCOPE_OUT=/a", "IDLESCOPE_STACK_DEPTH=1", "X=1"},
                                       Keep());
  EXPECT_EQ(env, (std::vector<std::string>{"LD_PRELOAD=/opt/idlescope/lib/libidlescope.so",
                                           "IDLESCOPE_OUT=/a", "IDLESCOPE_STACK_DEPTH=1", "X=1"}));
}

TEST(TracedEnv, TooSmallArenaBuildsNothing) {
  std::vector<const char*> env = {"A=1", nullptr};
  char** out = nullptr;
  char small[8];
  size_t needed =
      BuildTracedEnv(const_cast<char* const*>(env.data()), Keep(), small, sizeof(small), &out);
  EXPECT_GT(needed, sizeof(small));
  EXPECT_EQ(out, nullptr);
}

PreservedEnv KeepWith(const char* policy) {
  std::string children = std::string("IDLESCOPE_CHILDREN=") + policy;
  std::vector<const char*> startup = {"IDLESCOPE_OUT=/tmp/traces", children.c_str(), nullptr};
  PreservedEnv keep;
  keep.Capture(const_cast<char* const*>(startup.data()), kLib);
  return keep;
}

// The envp as BuildTracedEnv leaves it when nothing is to change: 0 bytes, *out = envp.
bool LeftAsIs(std::vector<const char*> env, const PreservedEnv& keep) {
  env.push_back(nullptr);
  char* const* envp = const_cast<char* const*>(env.data());
  char** out = nullptr;
  return BuildTracedEnv(envp, keep, nullptr, 0, &out) == 0 && out == envp;
}

TEST(ChildrenPolicy, ParsesTheThreeValuesOnly) {
  ChildrenPolicy p = ChildrenPolicy::kAll;
  EXPECT_TRUE(ParseChildrenPolicy("none", &p));
  EXPECT_EQ(p, ChildrenPolicy::kNone);
  EXPECT_TRUE(ParseChildrenPolicy("env", &p));
  EXPECT_EQ(p, ChildrenPolicy::kEnv);
  EXPECT_TRUE(ParseChildrenPolicy("all", &p));
  EXPECT_EQ(p, ChildrenPolicy::kAll);
  EXPECT_FALSE(ParseChildrenPolicy("some", &p));
  EXPECT_EQ(KeepWith("bogus").policy(), ChildrenPolicy::kAll);
  EXPECT_EQ(Keep().policy(), ChildrenPolicy::kAll);
}

TEST(ChildrenPolicy, EnvTracesOnlyWhatStillPreloadsUs) {
  PreservedEnv keep = KeepWith("env");
  EXPECT_TRUE(LeftAsIs({}, keep));
  EXPECT_TRUE(LeftAsIs({"PATH=/bin", "LD_PRELOAD=/other.so"}, keep));
  auto env = AsMap(Build({"LD_PRELOAD=/opt/idlescope/lib/libidlescope.so"}, keep));
  EXPECT_EQ(env["LD_PRELOAD"], kLib);
  EXPECT_EQ(env["IDLESCOPE_OUT"], "/tmp/traces");  // kept the preload: our settings follow
  EXPECT_EQ(env["IDLESCOPE_CHILDREN"], "env");
}

TEST(ChildrenPolicy, NoneTakesOurLibraryOutOfLdPreload) {
  PreservedEnv keep = KeepWith("none");
  EXPECT_TRUE(LeftAsIs({"PATH=/bin"}, keep));
  auto env = AsMap(Build({"PATH=/bin", "LD_PRELOAD=/a.so:/opt/idlescope/lib/libidlescope.so /b.so",
                          "IDLESCOPE_OUT=/x"},
                         keep));
  EXPECT_EQ(env["LD_PRELOAD"], "/a.so:/b.so");
  EXPECT_EQ(env["IDLESCOPE_OUT"], "/x");  // inert without the library; left as the program made it
  EXPECT_EQ(env.size(), 3u);
  env = AsMap(Build({"PATH=/bin", "LD_PRELOAD=libidlescope.so"}, keep));
  EXPECT_EQ(env.count("LD_PRELOAD"), 0u);  // nothing else was preloaded: no entry at all
  EXPECT_EQ(env.size(), 1u);
}

TEST(PreservedEnv, AddDefaultLeavesWhatTheEnvironmentHad) {
  PreservedEnv keep = Keep();
  keep.AddDefault("IDLESCOPE_STDERR", "42:0:0");
  keep.AddDefault("IDLESCOPE_OUT", "/elsewhere");
  ASSERT_EQ(keep.size(), 3u);
  EXPECT_STREQ(keep.entry(2), "IDLESCOPE_STDERR=42:0:0");
  EXPECT_STREQ(keep.entry(0), "IDLESCOPE_OUT=/tmp/traces");
}

TEST(PreloadHasLibrary, MatchesPathOrFileName) {
  EXPECT_TRUE(PreloadHasLibrary(kLib, kLib));
  EXPECT_TRUE(PreloadHasLibrary("a.so:/other/libidlescope.so", kLib));
  EXPECT_TRUE(PreloadHasLibrary("a.so libidlescope.so", kLib));
  EXPECT_FALSE(PreloadHasLibrary("libidlescope.so.bak", kLib));
  EXPECT_FALSE(PreloadHasLibrary("", kLib));
  EXPECT_FALSE(PreloadHasLibrary(nullptr, kLib));
  EXPECT_FALSE(PreloadHasLibrary("::", kLib));
}

}  // namespace
}  // namespace idlescope::proc
