#include "tests/cli/trace_builder.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <random>

#include "analyzer/trace/trace_format.h"
#include "gtest/gtest.h"

namespace idlescope::testing {
namespace {

constexpr uint64_t kClockNs = 1'000'000'000'000;  // CLOCK_MONOTONIC at the header's snapshot

// Interned ids used by MakeSampleTrace and MakeEventBatch.
enum : uint64_t {
  kStrMemcpy = 1,
  kStrLaunch,
  kStrWrite,
  kStrFsync,
  kStrCkptPath,
  kStrTrainFn,
  kStrSaveFn,
  kStrMainFn,
  kStrLibTorch,
  kStrExe,
  kStrKernel,
  kStrCount
};
enum : uint64_t { kFrameTrain = 1, kFrameSave, kFrameMain };
enum : uint64_t { kStackMain = 1, kStackTrain, kStackSave };
constexpr uint64_t kStream = 1;

void SetString(Interned* in, uint64_t id, const std::string& s) {
  InternedString* str = in->add_strings();
  str->set_id(id);
  str->set_str(s);
}

}  // namespace

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void TraceBytes::AddRaw(const std::string& payload) {
  const size_t before = bytes.size();
  bytes.push_back(0x0a);
  AppendVarint(payload.size(), &bytes);
  framing_bytes.push_back(bytes.size() - before);
  bytes += payload;
  packet_ends.push_back(bytes.size());
  Packet parsed;
  parsed.ParseFromString(payload);
  packets.push_back(parsed);
}

void TraceBytes::Add(const Packet& packet) {
  // Trace{packet} serializes to exactly one framed packet: the recorder's framing.
  Trace one;
  *one.add_packet() = packet;
  const size_t before = bytes.size();
  bytes += one.SerializeAsString();
  std::string framed_payload = packet.SerializeAsString();
  framing_bytes.push_back(bytes.size() - before - framed_payload.size());
  packet_ends.push_back(bytes.size());
  packets.push_back(packet);
}

Header MakeHeader(uint32_t pid, uint32_t ppid) {
  Header h;
  h.set_magic("IDLESCOPE");
  h.set_format_version(1);
  h.set_pid(pid);
  h.set_ppid(ppid);
  h.set_host("testhost");
  h.set_exe("/usr/bin/python3");
  h.add_cmdline("python3");
  h.add_cmdline("train.py");
  h.set_rank(0);
  h.set_world_size(1);
  h.mutable_clock()->set_monotonic_ns(kClockNs);
  h.mutable_clock()->set_realtime_ns(1'796'000'000'123'456'789);
  h.set_origin(ORIGIN_PRELOAD);
  h.set_tool_version("0.1.0");
  h.set_process_start_ns(kClockNs - 250'000'000);
  h.set_main_tid(pid);
  h.set_boot_id("0f1e2d3c-boot");
  h.mutable_config()->set_flush_interval_ms(1000);
  h.mutable_config()->set_stack_depth(16);
  h.mutable_config()->add_families("cuda");
  h.mutable_config()->add_families("io");
  return h;
}

EventBatch MakeEventBatch(uint32_t tid, uint64_t seq, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  EventBatch batch;
  batch.set_tid(tid);
  batch.set_seq(seq);
  uint64_t prev = 0;
  uint64_t t = kClockNs + 1'000'000 + seq * 10'000'000;
  for (int i = 0; i < n; ++i) {
    Event* e = batch.add_events();
    t += 1000 + rng() % 20000;
    e->set_ts(static_cast<int64_t>(t - prev));
    prev = t;
    switch (rng() % 4) {
      case 0:  // a pageable host-to-device copy
        e->set_type(CUDA_MEMCPY);
        e->set_api(kStrMemcpy);
        e->set_dur(200'000 + rng() % 100'000);
        e->set_bytes(64ull << 20);
        e->set_stream(kStream);
        e->set_copy_kind(COPY_H2D);
        e->set_host_mem(MEM_PAGEABLE);
        e->set_stack(kStackTrain);
        e->set_correlation(i + 1);
        break;
      case 1:
      case 2:  // kernel launches: the bulk of a training step
        e->set_type(CUDA_LAUNCH);
        e->set_api(kStrLaunch);
        e->set_dur(3000 + rng() % 2000);
        e->set_stream(kStream);
        e->set_async(true);
        e->set_correlation(i + 1);
        break;
      default:  // checkpoint writes
        e->set_type(FILE_WRITE);
        e->set_api(kStrWrite);
        e->set_dur(50'000 + rng() % 50'000);
        e->set_bytes(1 << 20);
        e->set_fd(7);
        e->set_path(kStrCkptPath);
        e->set_fs_type(FS_LOCAL);
        e->set_count(4);
        e->set_stack(kStackSave);
        break;
    }
  }
  return batch;
}

TraceBytes MakeSampleTrace(bool footer) {
  TraceBytes trace;
  Packet p;
  *p.mutable_header() = MakeHeader(4242, 4200);
  trace.Add(p);

  p.Clear();
  Interned* in = p.mutable_interned();
  SetString(in, kStrMemcpy, "cudaMemcpyAsync");
  SetString(in, kStrLaunch, "cudaLaunchKernel");
  SetString(in, kStrWrite, "write");
  SetString(in, kStrFsync, "fsync");
  SetString(in, kStrCkptPath, "/ckpt/model-0001.pt");
  SetString(in, kStrTrainFn, "train_step");
  SetString(in, kStrSaveFn, "torch::save");
  SetString(in, kStrMainFn, "main");
  SetString(in, kStrLibTorch, "/usr/lib/libtorch_cpu.so");
  SetString(in, kStrExe, "/usr/bin/python3.11");
  SetString(in, kStrKernel, "void gemm_kernel<float>(float*, float const*, int)");
  auto frame = [in](uint64_t id, uint64_t fn, uint64_t module, uint64_t pc) {
    Frame* f = in->add_frames();
    f->set_id(id);
    f->set_function(fn);
    f->set_module(module);
    f->set_rel_pc(pc);
  };
  frame(kFrameTrain, kStrTrainFn, kStrLibTorch, 0x1a2b);
  frame(kFrameSave, kStrSaveFn, kStrLibTorch, 0x3c4d);
  frame(kFrameMain, kStrMainFn, kStrExe, 0x1234);
  auto node = [in](uint64_t id, uint64_t parent, uint64_t f) {
    StackNode* n = in->add_stack_nodes();
    n->set_id(id);
    n->set_parent(parent);
    n->set_frame(f);
  };
  node(kStackMain, 0, kFrameMain);
  node(kStackTrain, kStackMain, kFrameTrain);
  node(kStackSave, kStackMain, kFrameSave);
  InternedStream* s = in->add_streams();
  s->set_id(kStream);
  s->set_handle(0x5555'0000'1000);
  s->set_device(0);
  ThreadName* t = in->add_threads();
  t->set_tid(4242);
  t->set_name("python3");
  trace.Add(p);

  for (uint64_t seq = 0; seq < 3; ++seq) {
    p.Clear();
    *p.mutable_events() = MakeEventBatch(4242, seq, 5 + static_cast<int>(seq) * 7, seq + 1);
    trace.Add(p);
  }

  p.Clear();
  GpuBatch* gpu = p.mutable_gpu();
  uint64_t prev = 0;
  for (int i = 0; i < 4; ++i) {
    GpuActivity* a = gpu->add_activities();
    uint64_t start = kClockNs + 2'000'000 + i * 100'000;
    a->set_start(static_cast<int64_t>(start - prev));
    prev = start;
    a->set_kind(i == 0 ? GPU_MEMCPY : GPU_KERNEL);
    a->set_dur(50'000);
    a->set_stream(7);
    a->set_correlation(i + 1);
    if (i == 0) {
      a->set_bytes(64ull << 20);
      a->set_copy_kind(COPY_H2D);
      a->set_src_kind(MEM_PAGEABLE);
      a->set_dst_kind(MEM_DEVICE);
    } else {
      a->set_name(kStrKernel);
      a->set_grid(132);
      a->set_block(256);
    }
  }
  trace.Add(p);

  p.Clear();
  Notice* n = p.mutable_notice();
  n->set_ts(kClockNs + 3'000'000);
  n->set_severity(WARNING);
  n->set_code("cupti_unavailable");
  n->set_text("libcupti.so could not be loaded: GPU activity is not recorded");
  trace.Add(p);

  if (footer) {
    p.Clear();
    Footer* f = p.mutable_footer();
    f->set_end_ns(kClockNs + 5'000'000);
    f->set_events(5 + 12 + 19);
    f->set_gpu_activities(4);
    f->set_batches(3);
    f->set_bytes(trace.bytes.size());
    f->set_reason(EXIT_NORMAL);
    trace.Add(p);
  }
  return trace;
}

TraceBytes CompactToLatest(const TraceBytes& v1) {
  TraceBytes v2;
  FormatCompactor compactor;
  for (const Packet& original : v1.packets) {
    Packet p = original;
    Interned comms;
    compactor.Compact(&p, &comms);
    if (comms.comms_size() > 0) {
      Packet defs;
      *defs.mutable_interned() = comms;
      v2.Add(defs);
      v2.read_back.push_back(defs);
    }
    v2.Add(p);
    Packet expected = original;
    if (expected.has_header()) expected.mutable_header()->set_format_version(kTraceFormatVersion);
    v2.read_back.push_back(expected);
  }
  return v2;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    ASSERT_GT(n, 0) << path;
    done += static_cast<size_t>(n);
  }
  close(fd);
}

std::string MakeTempDir(const std::string& prefix) {
  std::string tmpl = ::testing::TempDir() + "/" + prefix + "-XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr) << tmpl;
  return tmpl;
}

}  // namespace idlescope::testing
