// interpose/real_symbol.h: the search order (RTLD_NEXT, the alternate name, an already loaded
// library RTLD_NEXT cannot see) and what RealFunction keeps.
#include "interpose/real_symbol.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

extern "C" int real_symbol_probe_alternate(void);

// Interposes the linked probe library's function, as the preload library does libc's.
extern "C" __attribute__((visibility("default"))) int real_symbol_probe(void) { return 0; }

namespace idlescope {
namespace {

using ProbeFn = int (*)();

int Call(void* f) { return reinterpret_cast<ProbeFn>(f)(); }

TEST(RealSymbolTest, NextDefinitionAfterOursComesFirst) {
  ASSERT_EQ(real_symbol_probe(), 0);
  void* f = FindRealSymbol("real_symbol_probe");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Call(f), 1);
  EXPECT_EQ(f, dlsym(RTLD_NEXT, "real_symbol_probe"));
}

TEST(RealSymbolTest, AlternateNameWhenTheFirstIsMissing) {
  EXPECT_EQ(FindRealSymbol("real_symbol_no_such_function"), nullptr);
  void* f = FindRealSymbol("real_symbol_no_such_function", "real_symbol_probe_alternate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Call(f), real_symbol_probe_alternate());
}

// A library loaded RTLD_LOCAL (a plugin's libcudart or libnccl): RTLD_NEXT misses it, the
// RTLD_NOLOAD lookup by soname finds it, and never loads one that is not there.
TEST(RealSymbolTest, LibraryLoadedLocallyIsFoundWithoutLoadingIt) {
  constinit static RealLibrary library{{"libreal_symbol_absent.so", LOCAL_PROBE_SONAME, nullptr}};
  constinit static RealFunction<ProbeFn> retried{"real_symbol_local_probe", nullptr, &library};
  constinit static RealFunction<ProbeFn> kept{"real_symbol_local_probe", nullptr, &library,
                                              OnMiss::kKeep};
  constinit static RealFunction<ProbeFn> alternate{"real_symbol_no_such_function",
                                                   "real_symbol_local_probe_alternate", &library};

  EXPECT_EQ(library.Handle(), nullptr);
  EXPECT_EQ(FindRealSymbol("real_symbol_local_probe", nullptr, &library), nullptr);
  EXPECT_EQ(retried.Get(), nullptr);
  EXPECT_EQ(kept.Get(), nullptr);
  EXPECT_EQ(dlopen(LOCAL_PROBE_SONAME, RTLD_NOW | RTLD_NOLOAD), nullptr) << "loaded by a lookup";

  void* handle = dlopen(LOCAL_PROBE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  EXPECT_EQ(dlsym(RTLD_NEXT, "real_symbol_local_probe"), nullptr);
  EXPECT_EQ(FindRealSymbol("real_symbol_local_probe"), nullptr);  // no library given

  void* f = FindRealSymbol("real_symbol_local_probe", nullptr, &library);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f, dlsym(handle, "real_symbol_local_probe"));
  EXPECT_EQ(Call(f), 3);
  EXPECT_NE(library.Handle(), nullptr);

  ASSERT_NE(retried.Get(), nullptr);  // a miss was not kept
  EXPECT_EQ(retried.Get()(), 3);
  EXPECT_EQ(kept.Get(), nullptr);  // OnMiss::kKeep: asked once
  ASSERT_NE(alternate.Get(), nullptr);
  EXPECT_EQ(alternate.Get()(), 4);

  // The library's handle is kept: the resolved pointer survives the loader's dlclose.
  dlclose(handle);
  EXPECT_NE(dlopen(LOCAL_PROBE_SONAME, RTLD_NOW | RTLD_NOLOAD), nullptr);
  EXPECT_EQ(retried.Get()(), 3);
}

}  // namespace
}  // namespace idlescope
