// Issue 2, Done-when 6: the hand-written encoder (interpose/wire.h, trace_encoder.cc) produces
// exactly libprotobuf's bytes for every message of proto/trace.proto, with non-trivial values
// (large and negative numbers, empty and non-UTF-8 bytes, packed/repeated fields, nesting).
#include "interpose/wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>

#include "interpose/trace_encoder.h"
#include "trace.pb.h"

namespace idlescope {
namespace {

using wire::Buffer;

std::string Bytes(const Buffer& b) { return std::string(b.view()); }

std::string Serialize(const google::protobuf::MessageLite& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  return s;
}

// A body encoder wrapped as a Trace { packet { <field> { body } } } stream element.
template <typename F>
std::string AsPacket(trace::PacketField field, F&& body) {
  Buffer b;
  {
    trace::PacketScope p(b, field);
    body(b);
  }
  return Bytes(b);
}

std::string Framed(const idlescope::Packet& p) {
  idlescope::Trace t;
  *t.add_packet() = p;
  return Serialize(t);
}

const std::string kNotUtf8("\xff\xfe\x00path", 7);

trace::Header FullHeader() {
  trace::Header h;
  h.pid = 123456;
  h.ppid = 1;
  h.host = "gpu-node-17";
  h.exe = "/usr/bin/python3.11" + kNotUtf8;
  h.cmdline = {"python3", "train.py", "", "--lr=3e-4", kNotUtf8};
  h.rank = 0;  // optional: present although zero
  h.local_rank = -1;
  h.world_size = 64;
  h.slurm_procid = std::numeric_limits<int32_t>::min();
  h.clock = {1234567890123ull, 1795970313299887616ull};
  h.origin = trace::kOriginFork;
  h.tool_version = "0.1.0";
  h.cuda_visible_devices = "";  // set but empty: still written
  h.process_start_ns = 1234000000000ull;
  h.main_tid = 123456;
  h.boot_id = "b2a59e05-3c82-4973-a040-4c8d6f68ca1e";
  h.config.flush_interval_ms = 500;
  h.config.buffer_bytes = 786432;
  h.config.stack_depth = 24;
  h.config.families = {"cuda", "cupti", "io"};
  return h;
}

void FillProto(const trace::Header& h, idlescope::Header* p) {
  p->set_magic(h.magic);
  p->set_format_version(h.format_version);
  p->set_pid(h.pid);
  p->set_ppid(h.ppid);
  p->set_host(h.host);
  p->set_exe(h.exe);
  for (const auto& a : h.cmdline) p->add_cmdline(a);
  if (h.rank) p->set_rank(*h.rank);
  if (h.local_rank) p->set_local_rank(*h.local_rank);
  if (h.world_size) p->set_world_size(*h.world_size);
  if (h.slurm_procid) p->set_slurm_procid(*h.slurm_procid);
  p->mutable_clock()->set_monotonic_ns(h.clock.monotonic_ns);
  p->mutable_clock()->set_realtime_ns(h.clock.realtime_ns);
  p->set_origin(static_cast<idlescope::Origin>(h.origin));
  p->set_tool_version(h.tool_version);
  if (h.cuda_visible_devices) p->set_cuda_visible_devices(*h.cuda_visible_devices);
  p->set_process_start_ns(h.process_start_ns);
  p->set_main_tid(h.main_tid);
  p->set_boot_id(h.boot_id);
  auto* c = p->mutable_config();
  c->set_flush_interval_ms(h.config.flush_interval_ms);
  c->set_buffer_bytes(h.config.buffer_bytes);
  c->set_stack_depth(h.config.stack_depth);
  for (const auto& f : h.config.families) c->add_families(f);
}

TEST(WireTest, VarintsAndZigZag) {
  for (uint64_t v :
       {0ull, 1ull, 127ull, 128ull, 300ull, 16383ull, 16384ull, (1ull << 35) - 1, ~0ull}) {
    Buffer b;
    b.U64(1, v);
    idlescope::ClockSnapshot m;
    m.set_monotonic_ns(v);
    // Serialize omits zero; U64 always writes.
    if (v != 0) {
      EXPECT_EQ(Bytes(b), Serialize(m)) << v;
    }
    EXPECT_EQ(wire::VarintSize(v) + 1, b.size());
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{-64}, int64_t{64},
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    Buffer b;
    b.OptS64(2, v);
    idlescope::Event e;
    e.set_ts(v);
    EXPECT_EQ(Bytes(b), Serialize(e)) << v;
  }
}

TEST(WireTest, NestedLengthsAreMinimalAtEveryBoundary) {
  // Bodies of 0, 127, 128, 16383, 16384 and 2 MB: the reserved 5 length bytes are compacted.
  for (size_t n : {size_t{0}, size_t{1}, size_t{125}, size_t{126}, size_t{127}, size_t{128},
                   size_t{16381}, size_t{16382}, size_t{16384}, size_t{2} << 20}) {
    std::string text(n, 'x');
    Buffer b;
    trace::WriteNoticePacket(b, {0, 0, "", text});
    idlescope::Packet p;
    p.mutable_notice()->set_text(text);
    EXPECT_EQ(Bytes(b), Framed(p)) << n;
  }
}

TEST(WireTest, ClockSnapshotAndRecorderConfig) {
  trace::Header h = FullHeader();
  Buffer c;
  trace::EncodeClockSnapshot(c, h.clock);
  idlescope::ClockSnapshot pc;
  pc.set_monotonic_ns(h.clock.monotonic_ns);
  pc.set_realtime_ns(h.clock.realtime_ns);
  EXPECT_EQ(Bytes(c), Serialize(pc));
  Buffer r;
  trace::EncodeRecorderConfig(r, h.config);
  idlescope::RecorderConfig pr;
  pr.set_flush_interval_ms(500);
  pr.set_buffer_bytes(786432);
  pr.set_stack_depth(24);
  for (const auto& f : h.config.families) pr.add_families(f);
  EXPECT_EQ(Bytes(r), Serialize(pr));
}

TEST(WireTest, HeaderPacket) {
  trace::Header h = FullHeader();
  Buffer b;
  trace::WriteHeaderPacket(b, h);
  idlescope::Packet p;
  FillProto(h, p.mutable_header());
  EXPECT_EQ(Bytes(b), Framed(p));

  // Absent optionals, empty strings, zero scalars.
  trace::Header sparse;
  sparse.pid = 7;
  Buffer s;
  trace::WriteHeaderPacket(s, sparse);
  idlescope::Packet ps;
  FillProto(sparse, ps.mutable_header());
  EXPECT_EQ(Bytes(s), Framed(ps));
}

TEST(WireTest, InternedPacketWithEveryKind) {
  trace::Interned in;
  in.strings = {{1, "cudaMemcpyAsync"}, {2, kNotUtf8}, {300, std::string(200, 'y')}};
  in.frames = {
      {1, 1, 2, 0x1234567, 0, 0}, {2, 0, 2, 0, 300, 4294967295u}, {1ull << 40, 5, 6, 7, 8, 9}};
  in.stack_nodes = {{1, 0, 1}, {2, 1, 2}, {1ull << 33, 2, 1ull << 40}};
  in.streams = {{1, 0, 0}, {2, 0x7f00deadbeef, 3}, {3, 2, -1}};
  in.threads = {{4242, "pt_data_worker"}, {1, ""}};
  Buffer b;
  trace::WriteInternedPacket(b, in);

  idlescope::Packet p;
  auto* pi = p.mutable_interned();
  for (const auto& s : in.strings) {
    auto* x = pi->add_strings();
    x->set_id(s.id);
    x->set_str(s.str);
  }
  for (const auto& f : in.frames) {
    auto* x = pi->add_frames();
    x->set_id(f.id);
    x->set_function(f.function);
    x->set_module(f.module);
    x->set_rel_pc(f.rel_pc);
    x->set_file(f.file);
    x->set_line(f.line);
  }
  for (const auto& n : in.stack_nodes) {
    auto* x = pi->add_stack_nodes();
    x->set_id(n.id);
    x->set_parent(n.parent);
    x->set_frame(n.frame);
  }
  for (const auto& s : in.streams) {
    auto* x = pi->add_streams();
    x->set_id(s.id);
    x->set_handle(s.handle);
    x->set_device(s.device);
  }
  for (const auto& t : in.threads) {
    auto* x = pi->add_threads();
    x->set_tid(t.tid);
    x->set_name(t.name);
  }
  EXPECT_EQ(Bytes(b), Framed(p));

  // Each submessage alone, too.
  Buffer one;
  trace::EncodeFrame(one, in.frames[1]);
  EXPECT_EQ(Bytes(one), Serialize(pi->frames(1)));
  one.clear();
  trace::EncodeStackNode(one, in.stack_nodes[2]);
  EXPECT_EQ(Bytes(one), Serialize(pi->stack_nodes(2)));
  one.clear();
  trace::EncodeInternedStream(one, in.streams[2]);
  EXPECT_EQ(Bytes(one), Serialize(pi->streams(2)));
  one.clear();
  trace::EncodeThreadName(one, in.threads[0]);
  EXPECT_EQ(Bytes(one), Serialize(pi->threads(0)));
  one.clear();
  trace::EncodeInternedString(one, 2, kNotUtf8);
  EXPECT_EQ(Bytes(one), Serialize(pi->strings(1)));
}

// RawEvents of every family, as hooks fill them, and the Event libprotobuf should see.
struct EventCase {
  RawEvent raw;
  int64_t delta;
  uint64_t stream_id;
  idlescope::Event expected;
};

std::vector<EventCase> EventCases() {
  std::vector<EventCase> cases;
  {  // pageable synchronous H2D copy
    EventCase c{};
    c.raw.ts = 1795970313299887616ull;
    c.raw.dur = 1834221;
    c.raw.bytes = 64ull << 20;
    c.raw.api = 3;
    c.raw.stack = 77;
    c.raw.type = ev::kCudaMemcpy;
    c.raw.result = 0;
    c.raw.u.cuda.stream = 0x5555deadbeef;
    c.raw.u.cuda.correlation = 912;
    c.raw.u.cuda.device = 1;
    c.raw.u.cuda.copy_kind = ev::kH2D;
    c.raw.u.cuda.host_mem = ev::kPageable;
    c.raw.u.cuda.async = 1;
    c.delta = 1795970313299887616ll;
    c.stream_id = 2;
    auto& e = c.expected;
    e.set_type(idlescope::CUDA_MEMCPY);
    e.set_ts(c.delta);
    e.set_dur(1834221);
    e.set_api(3);
    e.set_stack(77);
    e.set_bytes(64ull << 20);
    e.set_stream(2);
    e.set_device(1);
    e.set_copy_kind(idlescope::COPY_H2D);
    e.set_host_mem(idlescope::MEM_PAGEABLE);
    e.set_async(true);
    e.set_correlation(912);
    cases.push_back(c);
  }
  {  // failed device allocation, negative delta
    EventCase c{};
    c.raw.ts = 5;
    c.raw.dur = 12;
    c.raw.bytes = ~0ull;
    c.raw.api = 4;
    c.raw.type = ev::kCudaMalloc;
    c.raw.result = 2;  // cudaErrorMemoryAllocation
    c.raw.u.cuda.ptr = 0x7f0000000000;
    c.raw.u.cuda.device = 0;
    c.delta = -4096;
    auto& e = c.expected;
    e.set_type(idlescope::CUDA_MALLOC);
    e.set_ts(-4096);
    e.set_dur(12);
    e.set_api(4);
    e.set_bytes(~0ull);
    e.set_result(2);
    e.set_ptr(0x7f0000000000);
    cases.push_back(c);
  }
  {  // NCCL all-reduce in a group, rooted peer -1
    EventCase c{};
    c.raw.dur = 7000;
    c.raw.bytes = 4 << 20;
    c.raw.count = 1 << 20;
    c.raw.api = 9;
    c.raw.stack = 3;
    c.raw.type = ev::kNcclCollective;
    c.raw.u.nccl.comm = 0xabcdef0123456789ull;
    c.raw.u.nccl.parent_comm = 17;
    c.raw.u.nccl.seq = 1001;
    c.raw.u.nccl.stream = 0x1234;
    c.raw.u.nccl.peer = -1;
    c.raw.u.nccl.rank = 3;
    c.raw.u.nccl.nranks = 8;
    c.raw.u.nccl.op = 1;
    c.raw.u.nccl.dtype = 7;
    c.raw.u.nccl.redop = 0;
    c.raw.u.nccl.group_depth = 2;
    c.delta = 250;
    c.stream_id = 4;
    auto& e = c.expected;
    e.set_type(idlescope::NCCL_COLLECTIVE);
    e.set_ts(250);
    e.set_dur(7000);
    e.set_api(9);
    e.set_stack(3);
    e.set_bytes(4 << 20);
    e.set_stream(4);
    e.set_async(true);
    e.set_count(1 << 20);
    e.set_nccl_op(idlescope::NCCL_ALL_REDUCE);
    e.set_nccl_dtype(7);
    e.set_peer(-1);
    e.set_comm(0xabcdef0123456789ull);
    e.set_rank(3);
    e.set_nranks(8);
    e.set_seq(1001);
    e.set_group_depth(2);
    e.set_parent_comm(17);
    cases.push_back(c);
  }
  {  // checkpoint write burst with an errno result
    EventCase c{};
    c.raw.dur = 123456789;
    c.raw.bytes = 1ull << 33;
    c.raw.count = 4096;
    c.raw.api = 11;
    c.raw.stack = 12;
    c.raw.result = -28;  // -ENOSPC
    c.raw.type = ev::kFileWrite;
    c.raw.u.io.offset = 1ull << 32;
    c.raw.u.io.path = 13;
    c.raw.u.io.fd = 1005;
    c.raw.u.io.fs_type = 3;
    c.delta = 1;
    auto& e = c.expected;
    e.set_type(idlescope::FILE_WRITE);
    e.set_ts(1);
    e.set_dur(123456789);
    e.set_api(11);
    e.set_stack(12);
    e.set_bytes(1ull << 33);
    e.set_result(-28);
    e.set_path(13);
    e.set_count(4096);
    e.set_fs_type(idlescope::FS_NFS);
    e.set_fd(1005);
    e.set_offset(1ull << 32);
    cases.push_back(c);
  }
  {  // network receive
    EventCase c{};
    c.raw.dur = 99;
    c.raw.bytes = 1500;
    c.raw.type = ev::kNetRecv;
    c.raw.u.io.path = 20;
    c.raw.u.io.fd = -1;
    c.raw.u.io.net_scope = 3;
    c.delta = 0;
    auto& e = c.expected;
    e.set_type(idlescope::NET_RECV);
    e.set_dur(99);
    e.set_bytes(1500);
    e.set_path(20);
    e.set_fd(-1);
    e.set_net_scope(idlescope::NET_PUBLIC);
    cases.push_back(c);
  }
  {  // posix_spawn
    EventCase c{};
    c.raw.dur = 3;
    c.raw.type = ev::kProcSpawn;
    c.raw.u.proc.child_pid = 4194304;
    c.raw.u.proc.path = 30;
    c.raw.u.proc.argv = 31;
    c.delta = 10;
    auto& e = c.expected;
    e.set_type(idlescope::PROC_SPAWN);
    e.set_ts(10);
    e.set_dur(3);
    e.set_path(30);
    e.set_child_pid(4194304);
    e.set_argv(31);
    cases.push_back(c);
  }
  {  // exit with a negative status, and a marker
    EventCase c{};
    c.raw.type = ev::kProcExit;
    c.raw.result = -9;
    c.delta = 2;
    c.expected.set_type(idlescope::PROC_EXIT);
    c.expected.set_ts(2);
    c.expected.set_result(-9);
    cases.push_back(c);
    EventCase m{};
    m.raw.type = ev::kMark;
    m.raw.stack = 1;
    m.raw.u.io.path = 5;
    m.delta = 3;
    m.expected.set_type(idlescope::MARK);
    m.expected.set_ts(3);
    m.expected.set_stack(1);
    m.expected.set_path(5);
    cases.push_back(m);
  }
  return cases;
}

TEST(WireTest, EventsOfEveryFamily) {
  for (const EventCase& c : EventCases()) {
    Buffer b;
    trace::EncodeEvent(b, c.raw, c.delta, c.stream_id);
    EXPECT_EQ(Bytes(b), Serialize(c.expected)) << c.expected.DebugString();
  }
}

TEST(WireTest, EventBatchPacket) {
  std::vector<EventCase> cases = EventCases();
  Buffer b;
  {
    trace::PacketScope p(b, trace::kEvents);
    trace::EncodeEventBatchHeader(b, 4194303, 77, 12345);
    for (const EventCase& c : cases) {
      size_t t = b.BeginNested(trace::kEventBatchEventField);
      trace::EncodeEvent(b, c.raw, c.delta, c.stream_id);
      b.EndNested(t);
    }
  }
  idlescope::Packet p;
  auto* batch = p.mutable_events();
  batch->set_tid(4194303);
  batch->set_seq(77);
  batch->set_dropped(12345);
  for (const EventCase& c : cases) *batch->add_events() = c.expected;
  EXPECT_EQ(Bytes(b), Framed(p));

  // seq 0, no drops, no events: an empty batch is still a present submessage.
  Buffer e;
  {
    trace::PacketScope s(e, trace::kEvents);
    trace::EncodeEventBatchHeader(e, 0, 0, 0);
  }
  idlescope::Packet pe;
  pe.mutable_events();
  EXPECT_EQ(Bytes(e), Framed(pe));
}

TEST(WireTest, GpuBatchPacket) {
  RawGpuActivity k;
  k.start = 1000000000123ull;
  k.dur = 52000;
  k.correlation = 912;
  k.grid = 1ull << 31;
  k.name = 40;
  k.block = 1024;
  k.device = 7;
  k.stream = 13;
  k.graph = 2;
  k.shared_mem = 49152;
  k.registers = 255;
  k.kind = 1;
  k.nccl = 1;
  RawGpuActivity m;
  m.start = 1000000000000ull;  // earlier than the previous: negative delta
  m.dur = 1;
  m.bytes = 1ull << 40;
  m.device = 1;
  m.dst_device = 2;
  m.kind = 6;
  m.copy_kind = 5;
  m.src_kind = 3;
  m.dst_kind = 3;
  Buffer b;
  {
    trace::PacketScope p(b, trace::kGpu);
    int64_t prev = 0;
    for (const RawGpuActivity* a : {&k, &m}) {
      size_t t = b.BeginNested(trace::kGpuBatchActivityField);
      trace::EncodeGpuActivity(b, *a, static_cast<int64_t>(a->start) - prev);
      b.EndNested(t);
      prev = static_cast<int64_t>(a->start);
    }
    trace::EncodeGpuBatchDropped(b, 3);
  }
  idlescope::Packet p;
  auto* g = p.mutable_gpu();
  auto* pk = g->add_activities();
  pk->set_kind(idlescope::GPU_KERNEL);
  pk->set_start(1000000000123ll);
  pk->set_dur(52000);
  pk->set_device(7);
  pk->set_stream(13);
  pk->set_correlation(912);
  pk->set_name(40);
  pk->set_grid(1ull << 31);
  pk->set_block(1024);
  pk->set_nccl(true);
  pk->set_graph(2);
  pk->set_shared_mem(49152);
  pk->set_registers(255);
  auto* pm = g->add_activities();
  pm->set_kind(idlescope::GPU_PEER_COPY);
  pm->set_start(-123);
  pm->set_dur(1);
  pm->set_device(1);
  pm->set_bytes(1ull << 40);
  pm->set_copy_kind(idlescope::COPY_PEER);
  pm->set_src_kind(idlescope::MEM_DEVICE);
  pm->set_dst_kind(idlescope::MEM_DEVICE);
  pm->set_dst_device(2);
  g->set_dropped(3);
  EXPECT_EQ(Bytes(b), Framed(p));
}

TEST(WireTest, DeviceInfoPacket) {
  RawDeviceInfo d;
  d.device = 3;
  d.sm_count = 132;
  d.total_memory = 150ull << 30;
  d.visible_devices = 8;
  d.pci_bus = 0x9b;
  strcpy(d.name, "NVIDIA H200");
  memset(d.uuid, 'u', sizeof(d.uuid));  // not NUL-terminated: all 40 bytes are the uuid
  Buffer b;
  trace::WriteDevicePacket(b, d);
  idlescope::Packet p;
  auto* x = p.mutable_device();
  x->set_device(3);
  x->set_name("NVIDIA H200");
  x->set_sm_count(132);
  x->set_total_memory(150ull << 30);
  x->set_uuid(std::string(40, 'u'));
  x->set_pci_bus(0x9b);
  x->set_visible_devices(8);
  EXPECT_EQ(Bytes(b), Framed(p));
}

TEST(WireTest, ModuleMapPacket) {
  std::vector<trace::Module> mods = {{5, 0x555555554000, 16504, std::string("\xf6\xd2\x00g", 4)},
                                     {0, 0, 0, ""},
                                     {9, 0x7f0011220000, 1371392, ""}};
  Buffer b;
  {
    trace::PacketScope p(b, trace::kModules);
    for (const auto& m : mods) {
      size_t t = b.BeginNested(trace::kModuleMapModuleField);
      trace::EncodeModule(b, m);
      b.EndNested(t);
    }
  }
  idlescope::Packet p;
  for (const auto& m : mods) {
    auto* x = p.mutable_modules()->add_modules();
    x->set_path(m.path);
    x->set_base(m.base);
    x->set_size(m.size);
    x->set_build_id(m.build_id);
  }
  EXPECT_EQ(Bytes(b), Framed(p));
}

TEST(WireTest, NoticePacket) {
  trace::Notice n{987654321, 2, "trace_fd_closed", "the program closed the trace fd; reopened"};
  Buffer b;
  trace::WriteNoticePacket(b, n);
  idlescope::Packet p;
  auto* x = p.mutable_notice();
  x->set_ts(987654321);
  x->set_severity(idlescope::WARNING);
  x->set_code(n.code);
  x->set_text(n.text);
  EXPECT_EQ(Bytes(b), Framed(p));
}

TEST(WireTest, FooterPacket) {
  trace::Footer f{1ull << 50, 123456789, 42, 1000000, 7, 99, 1ull << 34, trace::kExitSignal, -15};
  Buffer b;
  trace::WriteFooterPacket(b, f);
  idlescope::Packet p;
  auto* x = p.mutable_footer();
  x->set_end_ns(1ull << 50);
  x->set_events(123456789);
  x->set_events_dropped(42);
  x->set_gpu_activities(1000000);
  x->set_gpu_dropped(7);
  x->set_batches(99);
  x->set_bytes(1ull << 34);
  x->set_reason(idlescope::EXIT_SIGNAL);
  x->set_exit_status(-15);
  EXPECT_EQ(Bytes(b), Framed(p));

  // An all-zero footer is an empty but present message.
  Buffer z;
  trace::WriteFooterPacket(z, {});
  idlescope::Packet pz;
  pz.mutable_footer();
  EXPECT_EQ(Bytes(z), Framed(pz));
}

TEST(WireTest, WholeTraceStreamIsOneTraceMessage) {
  // Concatenated packets parse as one Trace, the file's definition.
  Buffer b;
  trace::WriteHeaderPacket(b, FullHeader());
  trace::WriteNoticePacket(b, {1, 1, "x", "y"});
  trace::WriteFooterPacket(b, {2, 3, 0, 0, 0, 1, 4, trace::kExitNormal, 0});
  idlescope::Trace t;
  ASSERT_TRUE(t.ParseFromArray(b.data(), static_cast<int>(b.size())));
  ASSERT_EQ(t.packet_size(), 3);
  EXPECT_EQ(t.packet(0).header().magic(), "IDLESCOPE");
  EXPECT_EQ(Serialize(t), Bytes(b));
}

}  // namespace
}  // namespace idlescope
