// End to end on simgpu: nvcc-built programs run under the real preload library (or
// CUDA_INJECTION64_PATH), and the trace is read back with libprotobuf. Done-when 1-5 of issue 4.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/trace/trace_format.h"
#include "tests/interpose/without_compression.h"
#include "trace.pb.h"

namespace fs = std::filesystem;

namespace {

struct RunResult {
  int status = -1;
  std::string out;
};

// Runs `argv` with `env` added to a minimal environment; returns exit status and stdout.
RunResult RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::string path = std::string("PATH=") + (getenv("PATH") ? getenv("PATH") : "/usr/bin");
    envp.push_back(const_cast<char*>(path.c_str()));
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(pipefd[1]);
  RunResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) r.out.append(buf, n);
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

fs::path FreshDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("idlescope_cuda_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// One trace file, indexed.
struct Trace {
  idlescope::Header header;
  idlescope::Footer footer;
  bool has_footer = false;
  std::map<uint64_t, std::string> strings;
  std::map<uint64_t, idlescope::Frame> frames;
  std::map<uint64_t, idlescope::StackNode> nodes;
  std::map<uint64_t, idlescope::InternedStream> streams;
  std::vector<idlescope::Event> events;     // ts made absolute
  std::vector<idlescope::GpuActivity> gpu;  // start made absolute
  std::vector<idlescope::Notice> notices;

  std::string Api(const idlescope::Event& e) const {
    auto it = strings.find(e.api());
    return it == strings.end() ? "" : it->second;
  }
  // Function names of a stack, innermost first.
  std::vector<std::string> Stack(uint64_t id) const {
    std::vector<std::string> out;
    while (id != 0 && nodes.count(id)) {
      const auto& n = nodes.at(id);
      auto f = frames.find(n.frame());
      out.push_back(f == frames.end()                     ? "?"
                    : strings.count(f->second.function()) ? strings.at(f->second.function())
                                                          : "?");
      id = n.parent();
    }
    return out;
  }
  bool StackNames(uint64_t id, const std::string& fn) const {
    for (const auto& s : Stack(id)) {
      if (s.find(fn) != std::string::npos) return true;
    }
    return false;
  }
  std::vector<const idlescope::GpuActivity*> Gpu(uint64_t correlation) const {
    std::vector<const idlescope::GpuActivity*> out;
    for (const auto& a : gpu) {
      if (a.correlation() == correlation) out.push_back(&a);
    }
    return out;
  }
};

Trace ReadTrace(const fs::path& file) {
  Trace t;
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  idlescope::Trace proto;
  EXPECT_TRUE(proto.ParseFromString(idlescope::testing::WithoutCompression(ss.str()))) << file;
  idlescope::FormatExpander expander(idlescope::kTraceFormatV1);  // the header says which version
  for (auto& p : *proto.mutable_packet()) {
    if (p.has_header()) expander = idlescope::FormatExpander(p.header().format_version());
    std::string error;
    EXPECT_TRUE(expander.Expand(&p, &error)) << file << ": " << error;
    if (p.has_header()) t.header = p.header();
    if (p.has_footer()) {
      t.footer = p.footer();
      t.has_footer = true;
    }
    if (p.has_notice()) t.notices.push_back(p.notice());
    if (p.has_interned()) {
      for (const auto& s : p.interned().strings()) t.strings[s.id()] = s.str();
      for (const auto& f : p.interned().frames()) t.frames[f.id()] = f;
      for (const auto& n : p.interned().stack_nodes()) t.nodes[n.id()] = n;
      for (const auto& s : p.interned().streams()) t.streams[s.id()] = s;
    }
    if (p.has_events()) {
      int64_t ts = 0;
      for (auto e : p.events().events()) {
        ts += e.ts();
        e.set_ts(ts);
        t.events.push_back(e);
      }
    }
    if (p.has_gpu()) {
      int64_t start = 0;
      for (auto a : p.gpu().activities()) {
        start += a.start();
        a.set_start(start);
        t.gpu.push_back(a);
      }
    }
  }
  return t;
}

// The trace of the traced program itself (the only file whose exe is `exe`).
Trace ReadTraceOf(const fs::path& dir, const std::string& exe) {
  for (const auto& f : fs::directory_iterator(dir)) {
    Trace t = ReadTrace(f.path());
    if (fs::path(t.header.exe()).filename() == fs::path(exe).filename()) return t;
  }
  ADD_FAILURE() << "no trace of " << exe << " in " << dir;
  return {};
}

std::string SimgpuEnv() { return std::string("LD_LIBRARY_PATH=") + SIMGPU_LIB_DIR; }

// Every GPU record of cuda_copies' work: 3 kernels, 6 copies, 2 memsets.
void ExpectAllOfCudaCopiesGpuWork(const Trace& t) {
  int kernels = 0, copies = 0, memsets = 0;
  for (const auto& a : t.gpu) {
    kernels += a.kind() == idlescope::GPU_KERNEL;
    copies += a.kind() == idlescope::GPU_MEMCPY;
    memsets += a.kind() == idlescope::GPU_MEMSET;
  }
  EXPECT_EQ(kernels, 3);
  EXPECT_EQ(copies, 6);
  EXPECT_EQ(memsets, 2);
}

struct Expected {
  const char* api;
  const char* function;  // must appear in the stack
  idlescope::CopyKind kind;
  idlescope::MemKind host_mem;
  bool async;
};

// Done-when 1 and 2: every copy with direction, bytes, pinned/pageable, blocked time, stack and
// its CUPTI record (same correlation) inside the host span.
void CheckCopies(const std::string& exe, bool per_thread) {
  RunResult plain = RunProgram({exe}, {SimgpuEnv()});
  ASSERT_EQ(plain.status, 0) << plain.out;
  fs::path dir = FreshDir(per_thread ? "ptds" : "legacy");
  RunResult traced = RunProgram({exe}, {SimgpuEnv(), std::string("LD_PRELOAD=") + PRELOAD_LIB,
                                        "IDLESCOPE_OUT=" + dir.string(), "IDLESCOPE_QUIET=1"});
  ASSERT_EQ(traced.status, 0);
  EXPECT_EQ(traced.out, plain.out);
  Trace t = ReadTraceOf(dir, exe);
  ASSERT_TRUE(t.has_footer);
  const std::string sync = per_thread ? "cudaMemcpy_ptds" : "cudaMemcpy";
  const std::string async = per_thread ? "cudaMemcpyAsync_ptsz" : "cudaMemcpyAsync";
  const Expected expected[] = {
      {"UploadPageable", "UploadPageable", idlescope::COPY_H2D, idlescope::MEM_PAGEABLE, false},
      {"UploadPinned", "UploadPinned", idlescope::COPY_H2D, idlescope::MEM_PINNED, false},
      {"UploadPinnedAsync", "UploadPinnedAsync", idlescope::COPY_H2D, idlescope::MEM_PINNED, true},
      {"DownloadPageableAsync", "DownloadPageableAsync", idlescope::COPY_D2H,
       idlescope::MEM_PAGEABLE, true},
      {"DownloadPinnedAsync", "DownloadPinnedAsync", idlescope::COPY_D2H, idlescope::MEM_PINNED,
       true},
      {"DownloadPinned", "DownloadPinned", idlescope::COPY_D2H, idlescope::MEM_PINNED, false},
  };
  std::vector<const idlescope::Event*> copies;
  for (const auto& e : t.events) {
    if (e.type() == idlescope::CUDA_MEMCPY) copies.push_back(&e);
  }
  ASSERT_EQ(copies.size(), std::size(expected));
  const uint64_t span_begin = t.header.process_start_ns(), span_end = t.footer.end_ns();
  for (size_t i = 0; i < copies.size(); ++i) {
    const auto& e = *copies[i];
    const auto& x = expected[i];
    SCOPED_TRACE(x.function);
    EXPECT_EQ(t.Api(e), x.async ? async : sync);
    EXPECT_EQ(e.copy_kind(), x.kind);
    EXPECT_EQ(e.host_mem(), x.host_mem);
    EXPECT_EQ(e.async(), x.async);
    EXPECT_EQ(e.bytes(), 1u << 20);
    EXPECT_GT(e.dur(), 0u);
    EXPECT_TRUE(t.StackNames(e.stack(), x.function));
    ASSERT_NE(e.correlation(), 0u);
    auto gpu = t.Gpu(e.correlation());
    ASSERT_EQ(gpu.size(), 1u);
    const auto& g = *gpu[0];
    EXPECT_EQ(g.kind(), idlescope::GPU_MEMCPY);
    EXPECT_EQ(g.bytes(), e.bytes());
    EXPECT_EQ(g.copy_kind(), e.copy_kind());
    // CUPTI's ground truth agrees with what the hook saw at call time.
    EXPECT_EQ(x.kind == idlescope::COPY_H2D ? g.src_kind() : g.dst_kind(), x.host_mem);
    EXPECT_GE(uint64_t(g.start()), span_begin);
    EXPECT_LE(uint64_t(g.start()) + g.dur(), span_end);
    EXPECT_GE(uint64_t(g.start()), uint64_t(e.ts()));  // the GPU starts after the call does
    if (!x.async) {
      // A synchronous copy returns after the GPU finished it.
      EXPECT_LE(uint64_t(g.start()) + g.dur(), uint64_t(e.ts()) + e.dur());
    }
    auto stream = t.streams.find(e.stream());
    ASSERT_NE(stream, t.streams.end());
    if (!x.async) {
      EXPECT_EQ(stream->second.handle(), per_thread ? 2u : 1u);
    }
  }
  // Memsets, syncs, launches: recorded, correlated to GPU work.
  int memsets = 0, syncs = 0, launches = 0, kernels = 0;
  for (const auto& e : t.events) {
    if (e.type() == idlescope::CUDA_MEMSET) {
      ++memsets;
      ASSERT_EQ(t.Gpu(e.correlation()).size(), 1u);
      EXPECT_EQ(t.Gpu(e.correlation())[0]->bytes(), e.bytes());
    }
    if (e.type() == idlescope::CUDA_SYNC) {
      ++syncs;
      EXPECT_TRUE(t.StackNames(e.stack(), "Wait"));
    }
    if (e.type() == idlescope::CUDA_LAUNCH) {
      ++launches;
      auto g = t.Gpu(e.correlation());
      ASSERT_EQ(g.size(), 1u);
      EXPECT_EQ(g[0]->kind(), idlescope::GPU_KERNEL);
      EXPECT_EQ(t.strings[g[0]->name()], "ScaleKernel(float*, int, float)");
      EXPECT_EQ(g[0]->grid(), 1024u);
      EXPECT_EQ(g[0]->block(), 256u);
      ++kernels;
    }
  }
  EXPECT_EQ(memsets, 2);
  EXPECT_EQ(syncs, 3);
  EXPECT_EQ(launches, 3);
  EXPECT_EQ(kernels, 3);
}

TEST(CudaTrace, LegacyStreamExampleFullyTraced) { CheckCopies(CUDA_COPIES, false); }

TEST(CudaTrace, PerThreadDefaultStreamExampleFullyTraced) { CheckCopies(CUDA_COPIES_PTDS, true); }

// SIGTERM (how schedulers end jobs): the final flush also delivers CUPTI's last buffers. The
// signal handler cannot call CUPTI and the writer thread must not (its descriptor table is its
// own, without the CUDA driver's): the CUPTI layer's flush thread does it for the writer. With
// the periodic CUPTI flush far away, that forced flush is the only way GPU records get here.
TEST(CudaTrace, SigtermFlushesCuptiOnTheCuptiThread) {
  fs::path dir = FreshDir("sigterm");
  RunResult r =
      RunProgram({CUDA_COPIES, "sigterm"}, {SimgpuEnv(), std::string("LD_PRELOAD=") + PRELOAD_LIB,
                                            "IDLESCOPE_OUT=" + dir.string(), "IDLESCOPE_QUIET=1",
                                            "IDLESCOPE_CUPTI_FLUSH_MS=600000"});
  EXPECT_EQ(r.status, 128 + SIGTERM);
  Trace t = ReadTraceOf(dir, CUDA_COPIES);
  ASSERT_TRUE(t.has_footer);
  ExpectAllOfCudaCopiesGpuWork(t);
}

// A periodic flush that took CUPTI's buffers and hands them over slowly (simgpu holds it 1 s)
// while the program exits: the exit's forced flush waits for it, so the records it holds come
// before the footer (they were lost, uncounted: every kernel and copy of a run beside two hogs).
TEST(CudaTrace, AnExitDuringAPeriodicCuptiFlushKeepsItsRecords) {
  fs::path dir = FreshDir("slow_flush");
  RunResult r = RunProgram(
      {CUDA_COPIES, "linger"},
      {SimgpuEnv(), std::string("LD_PRELOAD=") + PRELOAD_LIB, "IDLESCOPE_OUT=" + dir.string(),
       "IDLESCOPE_QUIET=1", "IDLESCOPE_CUPTI_FLUSH_MS=1", "SIMGPU_CUPTI_FLUSH_DELAY_US=1000000"});
  ASSERT_EQ(r.status, 0) << r.out;
  Trace t = ReadTraceOf(dir, CUDA_COPIES);
  ASSERT_TRUE(t.has_footer);
  ExpectAllOfCudaCopiesGpuWork(t);
}

// Done-when 3: libcudart loaded RTLD_LOCAL by a dlopen'ed plugin (dlsym(RTLD_NEXT) cannot see it).
TEST(CudaTrace, PluginLoadingCudartLocallyIsTraced) {
  fs::path dir = FreshDir("plugin");
  RunResult r = RunProgram({CUDA_PLUGIN_HOST, CUDA_PLUGIN},
                           {SimgpuEnv(), std::string("LD_PRELOAD=") + PRELOAD_LIB,
                            "IDLESCOPE_OUT=" + dir.string(), "IDLESCOPE_QUIET=1"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("plugin ok"), std::string::npos);
  Trace t = ReadTraceOf(dir, CUDA_PLUGIN_HOST);
  int copies = 0;
  for (const auto& e : t.events) {
    if (e.type() != idlescope::CUDA_MEMCPY) continue;
    ++copies;
    EXPECT_EQ(e.copy_kind(), idlescope::COPY_H2D);
    EXPECT_EQ(e.bytes(), 4096u);
    EXPECT_TRUE(t.StackNames(e.stack(), "PluginCopy"));
    EXPECT_EQ(t.Gpu(e.correlation()).size(), 1u);
  }
  EXPECT_EQ(copies, 1);
}

// Done-when 4: CUPTI unavailable: same output and exit code, the trace says why.
TEST(CudaTrace, CuptiUnavailableLeavesJobUntouched) {
  // A library dir with simgpu's runtime and driver but no libcupti; the override points nowhere.
  // (The ld cache may still find the real libcupti, which fails without a GPU: also a reason.)
  fs::path libs = FreshDir("nocupti_libs");
  fs::create_symlink(fs::path(SIMGPU_LIB_DIR) / "libcudart.so.13", libs / "libcudart.so.13");
  fs::create_symlink(fs::path(SIMGPU_LIB_DIR) / "libcuda.so.1", libs / "libcuda.so.1");
  RunResult plain = RunProgram({CUDA_COPIES}, {SimgpuEnv()});
  fs::path dir = FreshDir("nocupti");
  RunResult traced =
      RunProgram({CUDA_COPIES},
                 {"LD_LIBRARY_PATH=" + libs.string(), std::string("LD_PRELOAD=") + PRELOAD_LIB,
                  "IDLESCOPE_OUT=" + dir.string(), "IDLESCOPE_CUPTI_LIB=/nonexistent/libcupti.so"});
  EXPECT_EQ(traced.status, plain.status);
  EXPECT_EQ(traced.out, plain.out);
  Trace t = ReadTraceOf(dir, CUDA_COPIES);
  bool notice = false;
  for (const auto& n : t.notices) {
    if (n.code() == "cupti_unavailable") {
      notice = true;
      EXPECT_FALSE(n.text().empty());
    }
  }
  EXPECT_TRUE(notice);
  EXPECT_TRUE(t.gpu.empty());
  int copies = 0;
  for (const auto& e : t.events) copies += e.type() == idlescope::CUDA_MEMCPY;
  EXPECT_EQ(copies, 6);  // host side still traced
}

// Done-when 5: CUDA_INJECTION64_PATH without LD_PRELOAD gives the GPU timeline (and host calls
// through the CUPTI callbacks).
TEST(CudaTrace, InjectionModeProducesGpuTimeline) {
  fs::path dir = FreshDir("injection");
  RunResult plain = RunProgram({CUDA_COPIES}, {SimgpuEnv()});
  RunResult r =
      RunProgram({CUDA_COPIES}, {SimgpuEnv(), std::string("CUDA_INJECTION64_PATH=") + PRELOAD_LIB,
                                 "IDLESCOPE_OUT=" + dir.string(), "IDLESCOPE_QUIET=1"});
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.out, plain.out);
  Trace t = ReadTraceOf(dir, CUDA_COPIES);
  EXPECT_EQ(t.header.origin(), idlescope::ORIGIN_INJECTION);
  int kernels = 0, copies = 0;
  for (const auto& a : t.gpu) {
    kernels += a.kind() == idlescope::GPU_KERNEL;
    copies += a.kind() == idlescope::GPU_MEMCPY;
  }
  EXPECT_EQ(kernels, 3);
  EXPECT_EQ(copies, 6);
  int host_copies = 0;
  for (const auto& e : t.events) {
    if (e.type() != idlescope::CUDA_MEMCPY) continue;
    ++host_copies;
    EXPECT_EQ(t.Gpu(e.correlation()).size(), 1u);  // seen once, correlated
  }
  EXPECT_EQ(host_copies, 6);
}

}  // namespace
