// Issue 2, Done-when 6: the hand-written encoder (interpose/wire.h, trace_encoder.cc) produces
// exactly libprotobuf's bytes for every message of proto/trace.proto, with non-trivial values
// (large and negative numbers, empty and non-UTF-8 bytes, packed/repeated fields, nesting), and
// its format-v2 batches (launch runs, correlation deltas, communicator ids) are exactly what the
// libprotobuf-side FormatCompactor makes of the same events, and expand back to them.
#include "interpose/wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "analyzer/trace/trace_format.h"
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
  h.rank_variable = "OMPI_COMM_WORLD_RANK";
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
  h.config.redacted = {"paths", "cmdline"};
  h.config.python_version = "3.11.2";
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
  p->set_rank_variable(h.rank_variable);
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
  for (const auto& r : h.config.redacted) c->add_redacted(r);
  c->set_python_version(h.config.python_version);
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
  for (const auto& x : h.config.redacted) pr.add_redacted(x);
  pr.set_python_version("3.11.2");
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
  // Paths that share directories (format v3 writes them against the earlier ones).
  in.strings = {{1, "cudaMemcpyAsync"},
                {2, kNotUtf8},
                {300, std::string(200, 'y')},
                {301, "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py"},
                {302, "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"},
                {303, "/usr/lib/python3/dist-packages/torch/functional.py"},
                {304, "/tmp/x/y"},
                {305, "/tmp/x/z"}};
  in.frames = {{1, 1, 2, 0x1234567, 0, 0},
               {2, 0, 2, 0, 300, 4294967295u},
               {1ull << 40, 5, 6, 7, 8, 9},
               // Python frames: an entry frame, an inner one, one with no line, first line 0.
               {3, 1, 0, 0, 300, 42, trace::kFramePython, 40, true},
               {4, 2, 0, 0, 300, 4294967295u, trace::kFramePython, 4294967295u, false},
               {5, 1, 0, 0, 2, 0, trace::kFramePython, 0, true}};
  // Chains: 1-2-3, 1ull << 33 alone, 4 (not 3's child), 5.
  in.stack_nodes = {{1, 0, 1}, {2, 1, 2}, {3, 2, 3}, {1ull << 33, 2, 1ull << 40},
                    {4, 2, 4}, {5, 4, 5}};
  in.streams = {{1, 0, 0}, {2, 0x7f00deadbeef, 3}, {3, 2, -1}};
  in.threads = {{4242, "pt_data_worker"}, {1, ""}};
  in.comms = {{1, 0x9e3779b97f4a7c15ull}, {2, 1}};
  Buffer b;
  format::PathPrefixes prefixes;
  trace::WriteInternedPacket(b, in, prefixes);

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
    x->set_kind(static_cast<idlescope::FrameKind>(f.kind));
    x->set_first_line(f.first_line);
    x->set_python_entry(f.python_entry);
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
  for (const auto& c : in.comms) {
    auto* x = pi->add_comms();
    x->set_id(c.id);
    x->set_comm(c.comm);
  }
  // The v1 shape above, written as v3 by libprotobuf's side; expanded back, the v1 shape again.
  const idlescope::Packet whole = p;
  idlescope::FormatCompactor compactor;
  idlescope::Interned no_comms;
  compactor.Compact(&p, &no_comms);
  EXPECT_EQ(Bytes(b), Framed(p));
  ASSERT_EQ(pi->stack_chains_size(), 3);
  EXPECT_EQ(pi->stack_chains(0).frames_size(), 3);
  EXPECT_EQ(pi->stack_chains(2).first(), 4u);
  EXPECT_EQ(pi->stack_chains(2).frames_size(), 2);
  EXPECT_EQ(pi->strings(4).str(), "/linear.py");
  EXPECT_EQ(pi->strings(4).prefix(), 301u);
  EXPECT_EQ(pi->strings(5).str(), "/functional.py");
  EXPECT_EQ(pi->strings(7).prefix(), 0u) << "a directory under 8 bytes is written whole";
  idlescope::FormatExpander expander(idlescope::kTraceFormatVersion);
  std::string error;
  ASSERT_TRUE(expander.Expand(&p, &error)) << error;
  EXPECT_EQ(p.SerializeAsString(), whole.SerializeAsString());

  // Each submessage alone, too.
  Buffer one;
  trace::EncodeFrame(one, in.frames[1]);
  EXPECT_EQ(Bytes(one), Serialize(pi->frames(1)));
  one.clear();
  for (int i : {3, 4, 5}) {
    trace::EncodeFrame(one, in.frames[i]);
    EXPECT_EQ(Bytes(one), Serialize(pi->frames(i))) << "python frame " << i;
    one.clear();
  }
  compactor = idlescope::FormatCompactor();
  compactor.Compact(&p, &no_comms);
  trace::EncodeStackChain(one, &in.stack_nodes[4], &in.stack_nodes[6]);
  EXPECT_EQ(Bytes(one), Serialize(pi->stack_chains(2)));
  one.clear();
  trace::EncodeInternedString(one, 302, in.strings[4].str, {301, 47});
  EXPECT_EQ(Bytes(one), Serialize(pi->strings(4)));
  one.clear();
  trace::EncodeInternedStream(one, in.streams[2]);
  EXPECT_EQ(Bytes(one), Serialize(pi->streams(2)));
  one.clear();
  trace::EncodeThreadName(one, in.threads[0]);
  EXPECT_EQ(Bytes(one), Serialize(pi->threads(0)));
  one.clear();
  trace::EncodeInternedString(one, 2, kNotUtf8);
  EXPECT_EQ(Bytes(one), Serialize(pi->strings(1)));
  one.clear();
  trace::EncodeInternedComm(one, in.comms[0]);
  EXPECT_EQ(Bytes(one), Serialize(pi->comms(0)));
}

// RawEvents of every family, as hooks fill them, their references, and the (format v2) Event
// libprotobuf should see.
struct EventCase {
  RawEvent raw;
  trace::EventRefs refs;
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
    c.refs.ts_delta = 1795970313299887616ll;
    c.refs.stream_id = 2;
    c.refs.correlation_delta = 912;  // the batch's first correlation id
    auto& e = c.expected;
    e.set_type(idlescope::CUDA_MEMCPY);
    e.set_ts(c.refs.ts_delta);
    e.set_dur(1834221);
    e.set_api(3);
    e.set_stack(77);
    e.set_bytes(64ull << 20);
    e.set_stream(2);
    e.set_device(1);
    e.set_copy_kind(idlescope::COPY_H2D);
    e.set_host_mem(idlescope::MEM_PAGEABLE);
    e.set_async(true);
    e.set_correlation_delta(912);
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
    c.raw.u.cuda.correlation = 7;  // a correlation id repeated: a present zero delta
    c.refs.ts_delta = -4096;
    c.refs.correlation_delta = 0;
    auto& e = c.expected;
    e.set_type(idlescope::CUDA_MALLOC);
    e.set_ts(-4096);
    e.set_dur(12);
    e.set_api(4);
    e.set_bytes(~0ull);
    e.set_result(2);
    e.set_ptr(0x7f0000000000);
    e.set_correlation_delta(0);
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
    c.refs.ts_delta = 250;
    c.refs.stream_id = 4;
    c.refs.comm_id = 1;
    c.refs.parent_comm_id = 300;
    auto& e = c.expected;  // `async` is implied by the type
    e.set_type(idlescope::NCCL_COLLECTIVE);
    e.set_ts(250);
    e.set_dur(7000);
    e.set_api(9);
    e.set_stack(3);
    e.set_bytes(4 << 20);
    e.set_stream(4);
    e.set_count(1 << 20);
    e.set_nccl_op(idlescope::NCCL_ALL_REDUCE);
    e.set_nccl_dtype(7);
    e.set_peer(-1);
    e.set_rank(3);
    e.set_nranks(8);
    e.set_seq(1001);
    e.set_group_depth(2);
    e.set_comm_id(1);
    e.set_parent_comm_id(300);
    cases.push_back(c);
  }
  {  // a failed launch (a plain Event, not a run): `async` implied, negative correlation delta
    EventCase c{};
    c.raw.dur = 4100;
    c.raw.api = 2;
    c.raw.result = 98;  // cudaErrorInvalidDeviceFunction
    c.raw.type = ev::kCudaLaunch;
    c.raw.u.cuda.stream = 1;
    c.raw.u.cuda.correlation = 3;
    c.raw.u.cuda.device = 2;
    c.raw.u.cuda.async = 1;
    c.refs.ts_delta = 7;
    c.refs.stream_id = 1;
    c.refs.correlation_delta = -1000;
    auto& e = c.expected;
    e.set_type(idlescope::CUDA_LAUNCH);
    e.set_ts(7);
    e.set_dur(4100);
    e.set_api(2);
    e.set_stream(1);
    e.set_device(2);
    e.set_result(98);
    e.set_correlation_delta(-1000);
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
    c.refs.ts_delta = 1;
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
    auto& e = c.expected;
    e.set_type(idlescope::NET_RECV);
    e.set_dur(99);
    e.set_bytes(1500);
    e.set_path(20);
    e.set_fd(-1);
    e.set_net_scope(idlescope::NET_PUBLIC);
    cases.push_back(c);
  }
  {  // long waits: a poll of a terminal by a thread that launched on device 0 (written although
     // 0), a sleep by a thread that feeds no GPU (launch_device absent, no descriptor)
    EventCase c{};
    c.raw.dur = 2'500'000;
    c.raw.count = 1;
    c.raw.api = 21;
    c.raw.stack = 22;
    c.raw.result = -4;  // -EINTR
    c.raw.type = ev::kWait;
    c.raw.u.io.path = 23;
    c.raw.u.io.fs_type = 10;
    c.raw.u.io.launch_device = 1;
    auto& e = c.expected;
    e.set_type(idlescope::WAIT);
    e.set_dur(2'500'000);
    e.set_api(21);
    e.set_stack(22);
    e.set_result(-4);
    e.set_path(23);
    e.set_count(1);
    e.set_fs_type(idlescope::FS_DEVICE);
    e.set_launch_device(0);
    cases.push_back(c);
    EventCase s{};
    s.raw.dur = 300'000'000;
    s.raw.count = 1;
    s.raw.api = 24;
    s.raw.type = ev::kWait;
    s.raw.u.io.fd = -1;
    s.refs.ts_delta = 7;
    s.expected.set_type(idlescope::WAIT);
    s.expected.set_ts(7);
    s.expected.set_dur(300'000'000);
    s.expected.set_api(24);
    s.expected.set_count(1);
    s.expected.set_fd(-1);
    cases.push_back(s);
  }
  {  // identity fields (idlescope 0.4): a rename with its source, a writable file mapping, a
     // socket's identity with its local address and SO_PEERCRED pid
    EventCase r{};
    r.raw.dur = 50;
    r.raw.count = 1;
    r.raw.type = ev::kFileRename;
    r.raw.u.io.path = 40;
    r.raw.u.io.fd = -1;
    r.raw.u.io.source = 41;
    r.expected.set_type(idlescope::FILE_RENAME);
    r.expected.set_dur(50);
    r.expected.set_path(40);
    r.expected.set_count(1);
    r.expected.set_fd(-1);
    r.expected.set_source(41);
    cases.push_back(r);
    EventCase m{};
    m.raw.bytes = 1ull << 30;
    m.raw.type = ev::kFileMmap;
    m.raw.u.io.path = 42;
    m.raw.u.io.fd = 7;
    m.raw.u.io.offset = 4096;
    m.raw.u.io.fs_type = 1;
    m.raw.u.io.writable = 1;
    m.raw.u.io.addr = 0x7f0000000000;
    m.refs.ts_delta = 3;
    m.expected.set_type(idlescope::FILE_MMAP);
    m.expected.set_ts(3);
    m.expected.set_bytes(1ull << 30);
    m.expected.set_path(42);
    m.expected.set_fs_type(idlescope::FS_LOCAL);
    m.expected.set_fd(7);
    m.expected.set_offset(4096);
    m.expected.set_writable(true);
    m.expected.set_addr(0x7f0000000000);
    cases.push_back(m);
    EventCase k{};
    k.raw.type = ev::kNetSocket;
    k.raw.u.io.path = 43;
    k.raw.u.io.fd = 9;
    k.raw.u.io.net_scope = 1;
    k.raw.u.io.local = 44;
    k.raw.u.io.peer_pid = 4194303;
    k.expected.set_type(idlescope::NET_SOCKET);
    k.expected.set_path(43);
    k.expected.set_fd(9);
    k.expected.set_net_scope(idlescope::NET_LOOPBACK);
    k.expected.set_local(44);
    k.expected.set_peer_pid(4194303);
    cases.push_back(k);
  }
  {  // a wait for a child, and a signal handler that ran inside a call
    EventCase w{};
    w.raw.dur = 2'000'000'000;
    w.raw.count = 1;
    w.raw.type = ev::kProcWait;
    w.raw.u.proc.child_pid = 4242;
    w.expected.set_type(idlescope::PROC_WAIT);
    w.expected.set_dur(2'000'000'000);
    w.expected.set_count(1);
    w.expected.set_child_pid(4242);
    cases.push_back(w);
    EventCase h{};
    h.raw.dur = 1'500'000;
    h.raw.count = 1;
    h.raw.result = 10;  // SIGUSR1
    h.raw.type = ev::kSignalHandler;
    h.raw.u.proc.path = 45;
    h.expected.set_type(idlescope::SIGNAL_HANDLER);
    h.expected.set_dur(1'500'000);
    h.expected.set_result(10);
    h.expected.set_path(45);
    h.expected.set_count(1);
    cases.push_back(h);
  }
  {  // posix_spawn
    EventCase c{};
    c.raw.dur = 3;
    c.raw.type = ev::kProcSpawn;
    c.raw.u.proc.child_pid = 4194304;
    c.raw.u.proc.path = 30;
    c.raw.u.proc.argv = 31;
    c.refs.ts_delta = 10;
    auto& e = c.expected;
    e.set_type(idlescope::PROC_SPAWN);
    e.set_ts(10);
    e.set_dur(3);
    e.set_path(30);
    e.set_child_pid(4194304);
    e.set_argv(31);
    cases.push_back(c);
  }
  {  // a sampled run of a worker process's thread (Event.sampled_pid), blocked reading a file
    EventCase c{};
    c.raw.dur = 250'000'000;
    c.raw.count = 13;
    c.raw.type = ev::kThreadSample;
    c.raw.u.sample.tid = 4194300;
    c.raw.u.sample.pid = 4194299;
    c.raw.u.sample.cpu_ns = 1'000'000;
    c.raw.u.sample.wait_ns = 2'000'000;
    c.raw.u.sample.path = 46;
    c.raw.u.sample.fd = 7;
    c.raw.u.sample.syscall = 17;  // pread64
    c.raw.u.sample.state = 'D';
    auto& e = c.expected;
    e.set_type(idlescope::THREAD_SAMPLE);
    e.set_dur(250'000'000);
    e.set_count(13);
    e.set_path(46);
    e.set_fd(7);
    e.set_tid(4194300);
    e.set_cpu_ns(1'000'000);
    e.set_wait_ns(2'000'000);
    e.set_thread_state('D');
    e.set_syscall(17);
    e.set_sampled_pid(4194299);
    cases.push_back(c);
  }
  {  // exit with a negative status, and a marker
    EventCase c{};
    c.raw.type = ev::kProcExit;
    c.raw.result = -9;
    c.refs.ts_delta = 2;
    c.expected.set_type(idlescope::PROC_EXIT);
    c.expected.set_ts(2);
    c.expected.set_result(-9);
    cases.push_back(c);
    EventCase m{};
    m.raw.type = ev::kMark;
    m.raw.stack = 1;
    m.raw.u.io.path = 5;
    m.refs.ts_delta = 3;
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
    trace::EncodeEvent(b, c.raw, c.refs);
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
      trace::EncodeEvent(b, c.raw, c.refs);
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

TEST(WireTest, LaunchRunAndSite) {
  trace::LaunchRun r;
  r.ts = {1795970313299887616ll, 4000, -12, 0};
  r.dur = {3100, 0, 1ull << 40, 2500};
  r.correlation_delta = {1000001, 1, 0, -5};
  r.site = {0, 1, 1, 0};
  r.sites = {{1, 1, 0, 0}, {300, 2, 7, 1ull << 33}};
  Buffer b;
  trace::EncodeLaunchRun(b, r);
  idlescope::LaunchRun p;
  for (int64_t v : r.ts) p.add_ts(v);
  for (uint64_t v : r.dur) p.add_dur(v);
  for (int64_t v : r.correlation_delta) p.add_correlation_delta(v);
  for (uint32_t v : r.site) p.add_site(v);
  for (const trace::LaunchSite& s : r.sites) {
    auto* x = p.add_sites();
    x->set_api(s.api);
    x->set_stream(s.stream);
    x->set_device(s.device);
    x->set_stack(s.stack);
  }
  EXPECT_EQ(Bytes(b), Serialize(p));
  Buffer one;
  trace::EncodeLaunchSite(one, r.sites[1]);
  EXPECT_EQ(Bytes(one), Serialize(p.sites(1)));

  // One site and no correlation ids: those columns are absent, an empty site is present.
  r.correlation_delta.clear();
  r.site.clear();
  r.sites = {{}};
  p.clear_correlation_delta();
  p.clear_site();
  p.clear_sites();
  p.add_sites();
  b.clear();
  trace::EncodeLaunchRun(b, r);
  EXPECT_EQ(Bytes(b), Serialize(p));
}

// Format v2 by hand: the same batch, expected message by message.
RawEvent Launch(uint64_t ts, uint64_t dur, uint32_t api, uint64_t correlation) {
  RawEvent e;
  e.ts = ts;
  e.dur = dur;
  e.api = api;
  e.type = ev::kCudaLaunch;
  e.u.cuda.stream = 0x5555aa00;
  e.u.cuda.correlation = correlation;
  e.u.cuda.async = 1;
  return e;
}

TEST(WireTest, EventBatchEncoderWritesRunsDeltasAndIds) {
  std::vector<RawEvent> raw;
  std::vector<uint64_t> stream_ids;
  auto add = [&](const RawEvent& e, uint64_t stream_id) {
    raw.push_back(e);
    stream_ids.push_back(stream_id);
  };
  add(Launch(1000000, 3000, 5, 100), 1);
  add(Launch(1005000, 3100, 5, 101), 1);
  add(Launch(1009000, 3200, 6, 103), 2);  // another site: cudaLaunchKernel_ptsz, stream 2
  RawEvent copy;
  copy.ts = 1020000;
  copy.dur = 9000;
  copy.api = 7;
  copy.stack = 4;
  copy.bytes = 4 << 20;
  copy.type = ev::kCudaMemcpy;
  copy.u.cuda.stream = 0x5555aa00;
  copy.u.cuda.correlation = 104;
  copy.u.cuda.copy_kind = ev::kH2D;
  copy.u.cuda.host_mem = ev::kPinned;
  copy.u.cuda.async = 1;
  add(copy, 1);
  add(Launch(1030000, 2900, 5, 106), 1);  // alone: a plain Event
  RawEvent nccl;
  nccl.ts = 1040000;
  nccl.dur = 15000;
  nccl.api = 8;
  nccl.type = ev::kNcclCollective;
  nccl.u.nccl.comm = 0x9e3779b97f4a7c15ull;
  nccl.u.nccl.seq = 1;
  nccl.u.nccl.nranks = 8;
  add(nccl, 3);
  add(Launch(1050000, 2800, 5, 0), 1);  // CUPTI not attached: no correlation ids
  add(Launch(1054000, 2700, 5, 0), 1);

  trace::CommIds comms;
  trace::Interned interned;
  Buffer b;
  {
    trace::PacketScope p(b, trace::kEvents);
    trace::EncodeEventBatchHeader(b, 77, 3, 0);
    trace::EventBatchEncoder events(b, comms, interned);
    for (size_t i = 0; i < raw.size(); ++i) events.Add(raw[i], stream_ids[i]);
    events.Finish();
  }
  ASSERT_EQ(interned.comms.size(), 1u);
  EXPECT_EQ(interned.comms[0].id, 1u);
  EXPECT_EQ(interned.comms[0].comm, 0x9e3779b97f4a7c15ull);

  idlescope::Packet p;
  auto* batch = p.mutable_events();
  batch->set_tid(77);
  batch->set_seq(3);
  auto* run = batch->add_events()->add_launches();
  for (int64_t v : {1000000, 5000, 4000}) run->add_ts(v);
  for (uint64_t v : {3000, 3100, 3200}) run->add_dur(v);
  for (int64_t v : {100, 1, 2}) run->add_correlation_delta(v);
  for (uint32_t v : {0, 0, 1}) run->add_site(v);
  auto* site = run->add_sites();
  site->set_api(5);
  site->set_stream(1);
  site = run->add_sites();
  site->set_api(6);
  site->set_stream(2);
  auto* e = batch->add_events();
  e->set_type(idlescope::CUDA_MEMCPY);
  e->set_ts(11000);
  e->set_dur(9000);
  e->set_api(7);
  e->set_stack(4);
  e->set_bytes(4 << 20);
  e->set_stream(1);
  e->set_copy_kind(idlescope::COPY_H2D);
  e->set_host_mem(idlescope::MEM_PINNED);
  e->set_async(true);
  e->set_correlation_delta(1);
  e = batch->add_events();
  e->set_type(idlescope::CUDA_LAUNCH);
  e->set_ts(10000);
  e->set_dur(2900);
  e->set_api(5);
  e->set_stream(1);
  e->set_correlation_delta(2);
  e = batch->add_events();
  e->set_type(idlescope::NCCL_COLLECTIVE);
  e->set_ts(10000);
  e->set_dur(15000);
  e->set_api(8);
  e->set_stream(3);
  e->set_nranks(8);
  e->set_seq(1);
  e->set_comm_id(1);
  run = batch->add_events()->add_launches();
  for (int64_t v : {10000, 4000}) run->add_ts(v);
  for (uint64_t v : {2800, 2700}) run->add_dur(v);
  site = run->add_sites();
  site->set_api(5);
  site->set_stream(1);
  EXPECT_EQ(Bytes(b), Framed(p));
}

// The v1 Event of a RawEvent (what the reader must give back), written out independently of the
// encoder, for the families the round trip below uses.
idlescope::Event V1Event(const RawEvent& r, int64_t ts_delta, uint64_t stream_id) {
  idlescope::Event e;
  e.set_type(static_cast<idlescope::EventType>(r.type));
  e.set_ts(ts_delta);
  e.set_dur(r.dur);
  e.set_api(r.api);
  e.set_stack(r.stack);
  e.set_bytes(r.bytes);
  e.set_stream(stream_id);
  e.set_result(r.result);
  e.set_count(r.count);
  if (r.type == ev::kNcclCollective) {
    e.set_async(true);
    e.set_comm(r.u.nccl.comm);
    e.set_seq(r.u.nccl.seq);
    e.set_rank(r.u.nccl.rank);
    e.set_nranks(r.u.nccl.nranks);
  } else if (r.type == ev::kFileWrite) {
    e.set_path(r.u.io.path);
    e.set_fd(r.u.io.fd);
  } else {
    e.set_device(r.u.cuda.device);
    e.set_copy_kind(static_cast<idlescope::CopyKind>(r.u.cuda.copy_kind));
    e.set_host_mem(static_cast<idlescope::MemKind>(r.u.cuda.host_mem));
    e.set_async(r.u.cuda.async != 0);
    e.set_correlation(r.u.cuda.correlation);
  }
  return e;
}

// A long random mix, as threads record it: the recorder's batch (hand encoder) is byte for byte
// the libprotobuf serialization of what FormatCompactor makes of the v1 events, and
// FormatExpander turns it back into exactly those v1 events.
TEST(WireTest, EventBatchEncoderMatchesCompactorAndExpandsBack) {
  uint64_t seed = 42;
  auto next = [&seed](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  std::vector<RawEvent> raw;
  std::vector<uint64_t> stream_ids;
  uint64_t ts = 5'000'000'000, correlation = 1'000'000;
  for (int i = 0; i < 3000; ++i) {
    RawEvent e;
    uint64_t stream_id = 0;
    const uint64_t kind = next(20);
    if (i >= 1000 && i < 1300) {  // 300 launches from 300 call sites: more than a run can hold
      e = Launch(0, 3000 + next(500), 5, ++correlation);
      e.stack = static_cast<uint32_t>(i);
      stream_id = 1;
    } else if (kind < 13) {
      e = Launch(0, 2000 + next(3000), next(4) == 0 ? 6 : 5, 0);
      if (next(10) != 0) e.u.cuda.correlation = correlation += 1 + next(30);  // else: none
      if (next(50) == 0) e.result = 700;                                      // failed
      e.u.cuda.device = static_cast<uint32_t>(next(2));
      stream_id = 1 + next(3);
    } else if (kind < 15) {
      e.type = ev::kCudaMemcpy;
      e.api = 7;
      e.stack = 4;
      e.dur = 9000 + next(1000);
      e.bytes = 4 << 20;
      e.u.cuda.copy_kind = ev::kH2D;
      e.u.cuda.host_mem = ev::kPinned;
      e.u.cuda.async = static_cast<uint8_t>(next(2));
      e.u.cuda.correlation = next(4) == 0 ? 0 : (correlation += 2);
      stream_id = 1;
    } else if (kind < 17) {
      e.type = ev::kCudaSync;
      e.api = 9;
      e.dur = 4'000'000 + next(100000);
      e.u.cuda.correlation = next(2) == 0 ? 0 : ++correlation;
    } else if (kind < 19) {
      e.type = ev::kNcclCollective;
      e.api = 8;
      e.dur = 15000;
      e.bytes = 100 << 20;
      e.count = 25 << 20;
      e.u.nccl.comm = 0x9e3779b97f4a7c15ull + next(3);
      e.u.nccl.seq = static_cast<uint64_t>(i);
      e.u.nccl.rank = 3;
      e.u.nccl.nranks = 8;
      stream_id = 4;
    } else {
      e.type = ev::kFileWrite;
      e.api = 10;
      e.dur = 2'000'000;
      e.bytes = 64 << 20;
      e.count = 64;
      e.u.io.path = 11;
      e.u.io.fd = 7;
    }
    ts += 500 + next(5000);
    e.ts = next(100) == 0 ? ts - 200000 : ts;  // now and then out of order
    raw.push_back(e);
    stream_ids.push_back(stream_id);
  }

  // The recorder's way, in batches of up to 1024 events; one CommIds for the file.
  trace::CommIds comms;
  idlescope::FormatCompactor compactor;
  idlescope::FormatExpander expander(idlescope::kTraceFormatVersion);
  size_t runs = 0;
  for (size_t begin = 0; begin < raw.size(); begin += 1024) {
    const size_t end = std::min(raw.size(), begin + 1024);
    trace::Interned interned;
    Buffer b;
    {
      trace::PacketScope p(b, trace::kEvents);
      trace::EncodeEventBatchHeader(b, 4242, begin / 1024, 0);
      trace::EventBatchEncoder events(b, comms, interned);
      for (size_t i = begin; i < end; ++i) events.Add(raw[i], stream_ids[i]);
      events.Finish();
    }
    idlescope::Packet v1;
    v1.mutable_events()->set_tid(4242);
    v1.mutable_events()->set_seq(begin / 1024);
    uint64_t prev = 0;
    for (size_t i = begin; i < end; ++i) {
      *v1.mutable_events()->add_events() =
          V1Event(raw[i], static_cast<int64_t>(raw[i].ts - prev), stream_ids[i]);
      prev = raw[i].ts;
    }

    idlescope::Packet compacted = v1;
    idlescope::Interned new_comms;
    compactor.Compact(&compacted, &new_comms);
    ASSERT_EQ(Bytes(b), Framed(compacted)) << "batch at " << begin;
    ASSERT_EQ(static_cast<int>(interned.comms.size()), new_comms.comms_size());
    for (size_t k = 0; k < interned.comms.size(); ++k) {
      EXPECT_EQ(interned.comms[k].id, new_comms.comms(static_cast<int>(k)).id());
      EXPECT_EQ(interned.comms[k].comm, new_comms.comms(static_cast<int>(k)).comm());
    }
    for (const idlescope::Event& e : compacted.events().events()) runs += e.launches_size();

    idlescope::Packet comm_packet;
    *comm_packet.mutable_interned() = new_comms;
    std::string error;
    ASSERT_TRUE(expander.Expand(&comm_packet, &error)) << error;
    idlescope::Trace t;
    ASSERT_TRUE(t.ParseFromArray(b.data(), static_cast<int>(b.size())));
    idlescope::Packet read = t.packet(0);
    ASSERT_TRUE(expander.Expand(&read, &error)) << error;
    ASSERT_EQ(read.events().events_size(), v1.events().events_size());
    for (int i = 0; i < v1.events().events_size(); ++i) {
      ASSERT_EQ(read.events().events(i).SerializeAsString(),
                v1.events().events(i).SerializeAsString())
          << "event " << begin + static_cast<size_t>(i) << ":\n"
          << read.events().events(i).DebugString() << "expected\n"
          << v1.events().events(i).DebugString();
    }
  }
  EXPECT_GT(runs, 50u);  // the mix does form runs
  EXPECT_EQ(expander.undefined_comm_ids(), 0u);
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
      std::optional<int64_t> correlation;
      if (a->correlation != 0) correlation = static_cast<int64_t>(a->correlation);
      trace::EncodeGpuActivity(b, *a, static_cast<int64_t>(a->start) - prev, correlation);
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
  pk->set_correlation_delta(912);
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

TEST(WireTest, KernelRunAndSite) {
  trace::KernelRun r;
  r.start = {1795970313299887616ll, 7000, -300000, 0};
  r.dur = {52000, 0, 1ull << 40, 9};
  r.correlation_delta = {1000001, 12, 0, -5};
  r.site = {0, 1, 1, 0};
  r.sites = {{0, 7, 40, 132, 256, false, 0, 0, 0},
             {3, 13, 1ull << 33, 1ull << 31, 1024, true, 2, 49152, 255}};
  Buffer b;
  trace::EncodeKernelRun(b, r);
  idlescope::KernelRun p;
  for (int64_t v : r.start) p.add_start(v);
  for (uint64_t v : r.dur) p.add_dur(v);
  for (int64_t v : r.correlation_delta) p.add_correlation_delta(v);
  for (uint32_t v : r.site) p.add_site(v);
  for (const trace::KernelSite& s : r.sites) {
    auto* x = p.add_sites();
    x->set_device(s.device);
    x->set_stream(s.stream);
    x->set_name(s.name);
    x->set_grid(s.grid);
    x->set_block(s.block);
    x->set_nccl(s.nccl);
    x->set_graph(s.graph);
    x->set_shared_mem(s.shared_mem);
    x->set_registers(s.registers);
  }
  EXPECT_EQ(Bytes(b), Serialize(p));
  Buffer one;
  trace::EncodeKernelSite(one, r.sites[1]);
  EXPECT_EQ(Bytes(one), Serialize(p.sites(1)));

  r.correlation_delta.clear();
  r.site.clear();
  r.sites.resize(1);
  p.clear_correlation_delta();
  p.clear_site();
  p.mutable_sites()->RemoveLast();
  b.clear();
  trace::EncodeKernelRun(b, r);
  EXPECT_EQ(Bytes(b), Serialize(p));
}

// CUPTI's records as the writer gets them: kernels of a few configurations on two streams (out
// of start order across streams), copies, syncs and overhead records between them, some without
// correlation ids. The hand encoder's batches are what FormatCompactor makes of the v1 records,
// byte for byte, and expand back to them.
TEST(WireTest, GpuBatchEncoderMatchesCompactorAndExpandsBack) {
  uint64_t seed = 7;
  auto next = [&seed](uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  std::vector<RawGpuActivity> raw;
  uint64_t start = 9'000'000'000, correlation = 500;
  for (int i = 0; i < 5000; ++i) {
    RawGpuActivity a;
    const uint64_t kind = next(30);
    if (i >= 2000 && i < 2200) {  // 200 distinct configurations: more than a run can hold
      a.kind = 1;
      a.name = 100 + static_cast<uint32_t>(i);
      a.correlation = correlation += 12;
    } else if (kind < 26) {
      a.kind = 1;
      a.name = 40 + static_cast<uint32_t>(next(6));
      a.grid = next(3) == 0 ? 132 : 4096;
      a.block = 256;
      a.stream = next(4) == 0 ? 14 : 13;
      a.registers = a.name == 41 ? 255 : 32;
      a.shared_mem = a.name == 42 ? 49152 : 0;
      a.nccl = a.name == 45;
      a.graph = next(40) == 0 ? 3 : 0;
      if (next(20) != 0) a.correlation = correlation += 1 + next(30);
    } else if (kind < 28) {
      a.kind = 2;
      a.bytes = 4 << 20;
      a.copy_kind = 1;
      a.src_kind = 2;
      a.dst_kind = 3;
      a.stream = 7;
      a.correlation = correlation += 3;
    } else if (kind < 29) {
      a.kind = 4;
      a.name = 50;
      a.correlation = next(2) == 0 ? 0 : ++correlation;
    } else {
      a.kind = 5;
      a.name = 51;
    }
    start += 1000 + next(20000);
    a.start = next(10) == 0 ? start - 300000 : start;
    a.dur = 2000 + next(400000);
    a.device = static_cast<uint32_t>(next(8) == 0);
    raw.push_back(a);
  }

  idlescope::FormatCompactor compactor;
  idlescope::FormatExpander expander(idlescope::kTraceFormatVersion);
  idlescope::Interned unused;
  for (size_t begin = 0; begin < raw.size(); begin += 2048) {
    const size_t end = std::min(raw.size(), begin + 2048);
    Buffer b;
    {
      trace::PacketScope p(b, trace::kGpu);
      trace::GpuBatchEncoder activities(b);
      for (size_t i = begin; i < end; ++i) activities.Add(raw[i]);
      activities.Finish();
      trace::EncodeGpuBatchDropped(b, begin);
    }
    idlescope::Packet v1;
    uint64_t prev = 0;
    for (size_t i = begin; i < end; ++i) {  // the v1 record, written out field by field
      const RawGpuActivity& r = raw[i];
      idlescope::GpuActivity* a = v1.mutable_gpu()->add_activities();
      a->set_kind(static_cast<idlescope::GpuActivityKind>(r.kind));
      a->set_start(static_cast<int64_t>(r.start - prev));
      prev = r.start;
      a->set_dur(r.dur);
      a->set_device(r.device);
      a->set_stream(r.stream);
      a->set_correlation(r.correlation);
      a->set_name(r.name);
      a->set_grid(r.grid);
      a->set_block(r.block);
      a->set_bytes(r.bytes);
      a->set_copy_kind(static_cast<idlescope::CopyKind>(r.copy_kind));
      a->set_src_kind(static_cast<idlescope::MemKind>(r.src_kind));
      a->set_dst_kind(static_cast<idlescope::MemKind>(r.dst_kind));
      a->set_nccl(r.nccl != 0);
      a->set_graph(r.graph);
      a->set_shared_mem(r.shared_mem);
      a->set_registers(r.registers);
    }
    v1.mutable_gpu()->set_dropped(begin);

    idlescope::Packet compacted = v1;
    compactor.Compact(&compacted, &unused);
    ASSERT_EQ(Bytes(b), Framed(compacted)) << "batch at " << begin;
    idlescope::Trace t;
    ASSERT_TRUE(t.ParseFromArray(b.data(), static_cast<int>(b.size())));
    idlescope::Packet read = t.packet(0);
    std::string error;
    ASSERT_TRUE(expander.Expand(&read, &error)) << error;
    ASSERT_EQ(read.SerializeAsString(), v1.SerializeAsString()) << "batch at " << begin;
  }
  EXPECT_EQ(unused.comms_size(), 0);
  EXPECT_GT(expander.kernel_runs(), 100u);
  EXPECT_GT(expander.run_kernels(), 3000u);
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
