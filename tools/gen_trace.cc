// gen_trace: writes realistic synthetic idlescope traces (proto/trace.proto, written with
// libprotobuf: this is an offline tool) of a data-parallel training job with a chosen mix of
// idle causes, for the analyzer's tests and benchmarks.
//
//   gen_trace --out DIR [--events N] [--ranks R] [--kernels-per-step K] [--seed S]
//             [--causes pageable,checkpoint,...] [--format 1|2|3|4] [--python]
//             [--duration-s S] [--kernel-us U] [--jobs J] [--short-lived N]
//   gen_trace --out DIR --hosts H --ranks R [--clock-error-ms E] [--end-jitter-us J] [--seed S]
//
// Scale (benchmarks of many ranks): --duration-s gives every rank S seconds of job time instead
// of a share of --events; --kernel-us sets the compute kernels' length (the event rate: about two
// records per kernel); --jobs writes the ranks from J processes at once; --short-lived adds N
// processes that live 50 ms each, one after another (DataLoader workers respawned every epoch, a
// test suite's processes). Every file is written as it is generated, never held in memory.
//
// The events are built in v1's one-Event-per-call shape and written in the format asked for
// (FormatCompactor, analyzer/trace/trace_format.h; v4's Compressed packets by FlushCompressor,
// analyzer/trace/compressed_packets.h); the same flags give the same events in any format. The
// default is 3, not the recorder's 4: the analyzer's benchmarks and tests that generate their
// traces measure and check the reader, which v4's decompression would blur (a v4 trace is v3
// compressed: --format 4 for that).
//
// One file per process: a rank process per rank (main thread launches on device 0), plus a
// DataLoader worker per rank (dataload, remote) and a pip process (install). A step is: wait for
// the batch, copy it to the device, K compute kernels, optionally an all-reduce, the CPU work and
// waits for a CPU the thread sampler sees (cpuwork, starved), then the periodic extras
// (checkpoint, metrics upload). With --python the stacks of the checkpoint
// writes, the batch copy, the wait for a batch and the workers' reads are those of a PyTorch
// script: Python frames (train.py's lines under torch's) with the interpreter's native frames, as
// the recorder writes them. Output is deterministic for given flags.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/trace/compressed_packets.h"
#include "analyzer/trace/trace_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "trace.pb.h"

namespace idlescope {
namespace {

using namespace std::string_view_literals;
using Ns = int64_t;
constexpr Ns kUs = 1000;
constexpr Ns kMs = 1000 * kUs;
constexpr Ns kS = 1000 * kMs;
constexpr uint64_t kGiB = 1ull << 30;

const std::set<std::string> kKnownCauses = {
    "pageable",  "pinned",   "checkpoint", "upload",  "dataload",   "remote",    "nccl",
    "straggler", "sync",     "download",   "install", "smallbatch", "tail",      "unused",
    "none",      "nogpu",    "prompt",     "popen",   "readback",   "asyncckpt", "mpi",
    "crowded",   "idlewait", "cpuwork",    "starved"};

// One trace file being written: framing, interning and batching.
class TraceFile {
 public:
  TraceFile(const std::string& path, const Header& header, uint32_t format)
      : format_(format), compactor_(format) {
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd_ < 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
    stream_ = std::make_unique<google::protobuf::io::FileOutputStream>(fd_);
    Packet p;
    *p.mutable_header() = header;
    Write(p);
  }
  ~TraceFile() {
    WriteHeldBack();
    stream_->Close();
  }

  uint64_t String(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, strings_.size() + 1);
    if (inserted) {
      InternedString* entry = interned_.mutable_interned()->add_strings();
      entry->set_id(it->second);
      entry->set_str(s);
    }
    return it->second;
  }

  // A stack from outermost to innermost function names; returns the innermost node id.
  uint64_t Stack(const std::vector<std::string>& outer_to_inner) {
    uint64_t parent = 0;
    for (const std::string& function : outer_to_inner) parent = Node(parent, NativeFrame(function));
    return parent;
  }

  struct PythonFrameSpec {
    std::string file;
    uint32_t line;
    std::string function;
    bool entry;  // the first frame its evaluation loop ran
  };
  // A stack taken on a Python thread as the recorder writes it (proto/trace.proto, StackNode):
  // the native frames, each "_PyEval_EvalFrameDefault" running Python frames up to the next
  // entry frame, then the Python frames as the inner part of the path; both outermost first.
  uint64_t PythonStack(const std::vector<std::string>& native,
                       const std::vector<PythonFrameSpec>& python) {
    uint64_t parent = Stack(native);
    for (const PythonFrameSpec& f : python) parent = Node(parent, PythonFrame(f));
    return parent;
  }

  // Host events of thread `tid`, in start order.
  Event* AddEvent(uint32_t tid, EventType type, Ns start, Ns dur) {
    EventBatch& batch = host_[tid];
    if (batch.events_size() == 0) {
      batch.set_tid(tid);
      batch.set_seq(seq_[tid]++);
      batch_start_[tid] = start;
      last_event_[tid] = 0;
    }
    Event* e = batch.add_events();
    e->set_type(type);
    e->set_ts(start - last_event_[tid]);
    e->set_dur(static_cast<uint64_t>(dur));
    last_event_[tid] = start;
    ++events_;
    return e;
  }

  GpuActivity* AddGpu(GpuActivityKind kind, Ns start, Ns dur) {
    if (gpu_.activities_size() == 0) {
      gpu_start_ = start;
      last_gpu_ = 0;
    }
    GpuActivity* a = gpu_.add_activities();
    a->set_kind(kind);
    a->set_start(start - last_gpu_);
    a->set_dur(static_cast<uint64_t>(dur));
    last_gpu_ = start;
    ++gpu_records_;
    return a;
  }

  void AddDevice(const DeviceInfo& info) {
    FlushInterned();
    Packet p;
    *p.mutable_device() = info;
    Write(p);
  }

  // Writes what is batched when a batch is big or old enough (the recorder flushes at least
  // every flush interval); host batches go first, so GPU records arrive a little late, as CUPTI's
  // do.
  void MaybeFlush(Ns now, bool force = false) {
    bool due = force;
    for (auto& [tid, batch] : host_) {
      if (batch.events_size() >= 4096 ||
          (batch.events_size() > 0 && now - batch_start_[tid] > 200 * kMs)) {
        due = true;
      }
    }
    if (gpu_.activities_size() >= 4096 ||
        (gpu_.activities_size() > 0 && now - gpu_start_ > 200 * kMs)) {
      due = true;
    }
    if (!due) return;
    FlushInterned();
    for (auto& [tid, batch] : host_) {
      if (batch.events_size() == 0) continue;
      Packet p;
      p.mutable_events()->Swap(&batch);
      Write(p);
      batch.Clear();
      ++batches_;
    }
    if (gpu_.activities_size() > 0) {
      Packet p;
      p.mutable_gpu()->Swap(&gpu_);
      Write(p);
      gpu_.Clear();
    }
  }

  void Finish(Ns end, bool footer) {
    MaybeFlush(end, true);
    if (!footer) return;
    Packet p;
    Footer* f = p.mutable_footer();
    f->set_end_ns(static_cast<uint64_t>(end));
    f->set_events(events_);
    f->set_gpu_activities(gpu_records_);
    f->set_batches(batches_);
    f->set_reason(EXIT_NORMAL);
    Write(p);
  }

  uint64_t events() const { return events_; }
  uint64_t gpu_records() const { return gpu_records_; }
  // Bytes written so far (framing included), v4's held-back packets written first.
  uint64_t bytes() {
    WriteHeldBack();
    return static_cast<uint64_t>(stream_->ByteCount());
  }
  // Appends the bytes of file `path` from `offset` on, as they are.
  void AppendFile(const std::string& path, uint64_t offset) {
    WriteHeldBack();
    int in = open(path.c_str(), O_RDONLY);
    if (in < 0 || lseek(in, static_cast<off_t>(offset), SEEK_SET) < 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
    google::protobuf::io::CodedOutputStream out(stream_.get());
    std::vector<char> chunk(1 << 20);
    for (ssize_t n; (n = read(in, chunk.data(), chunk.size())) > 0;) {
      out.WriteRaw(chunk.data(), static_cast<int>(n));
    }
    close(in);
  }

 private:
  uint64_t NativeFrame(const std::string& function) {
    auto [it, inserted] = frames_.try_emplace(function, frames_.size() + 1);
    if (inserted) {
      Frame* f = interned_.mutable_interned()->add_frames();
      f->set_id(it->second);
      f->set_function(String(function));
      f->set_module(String("/opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_python.so"));
      f->set_rel_pc(0x1000 * it->second);
    }
    return it->second;
  }
  uint64_t PythonFrame(const PythonFrameSpec& spec) {
    std::string key = "py:" + spec.file + ":" + std::to_string(spec.line) + ":" + spec.function +
                      (spec.entry ? ":entry" : "");
    auto [it, inserted] = frames_.try_emplace(key, frames_.size() + 1);
    if (inserted) {
      Frame* f = interned_.mutable_interned()->add_frames();
      f->set_id(it->second);
      f->set_kind(FRAME_PYTHON);
      f->set_function(String(spec.function));
      f->set_file(String(spec.file));
      f->set_line(spec.line);
      f->set_first_line(spec.line > 3 ? spec.line - 3 : 1);
      f->set_python_entry(spec.entry);
    }
    return it->second;
  }
  uint64_t Node(uint64_t parent, uint64_t frame) {
    auto [it, inserted] = nodes_.try_emplace({parent, frame}, nodes_.size() + 1);
    if (inserted) {
      StackNode* n = interned_.mutable_interned()->add_stack_nodes();
      n->set_id(it->second);
      n->set_parent(parent);
      n->set_frame(frame);
    }
    return it->second;
  }

  void FlushInterned() {
    if (interned_.ByteSizeLong() == 0) return;
    Write(interned_);
    interned_.Clear();
  }
  // Writes a v1-shaped packet in the file's format.
  void Write(const Packet& v1) {
    if (format_ == kTraceFormatV1) {
      WriteFramed(v1);
      return;
    }
    Packet p = v1;
    Interned comms;
    compactor_.Compact(&p, &comms);
    if (comms.comms_size() > 0) {  // communicator ids, defined before their first use
      Packet defs;
      *defs.mutable_interned() = std::move(comms);
      WriteFramed(defs);
    }
    WriteFramed(p);
  }
  void WriteFramed(const Packet& p) {
    if (format_ >= kTraceFormatV4) {
      std::string framed, bytes;
      google::protobuf::io::StringOutputStream string_stream(&framed);
      FrameInto(p, &string_stream);
      compressor_.Add(p.data_case(), framed, &bytes);
      WriteRaw(bytes);
      return;
    }
    FrameInto(p, stream_.get());
  }
  static void FrameInto(const Packet& p, google::protobuf::io::ZeroCopyOutputStream* stream) {
    google::protobuf::io::CodedOutputStream out(stream);
    out.WriteVarint32(0x0a);  // Trace.packet, length-delimited
    out.WriteVarint64(p.ByteSizeLong());
    p.SerializeWithCachedSizes(&out);
  }
  void WriteRaw(const std::string& bytes) {
    google::protobuf::io::CodedOutputStream out(stream_.get());
    out.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
  }
  // v4: the packets of the flush FlushCompressor holds back, compressed.
  void WriteHeldBack() {
    std::string bytes;
    compressor_.Finish(&bytes);
    WriteRaw(bytes);
  }

  const uint32_t format_;
  FormatCompactor compactor_;
  FlushCompressor compressor_;
  int fd_ = -1;
  std::unique_ptr<google::protobuf::io::FileOutputStream> stream_;
  std::map<std::string, uint64_t> strings_;
  std::map<std::string, uint64_t> frames_;  // by function name, or "py:file:line:function"
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> nodes_;
  Packet interned_;
  std::map<uint32_t, EventBatch> host_;
  std::map<uint32_t, uint64_t> seq_;
  std::map<uint32_t, Ns> batch_start_;
  std::map<uint32_t, Ns> last_event_;
  GpuBatch gpu_;
  Ns gpu_start_ = 0;
  Ns last_gpu_ = 0;
  uint64_t events_ = 0;
  uint64_t gpu_records_ = 0;
  uint64_t batches_ = 0;
};

struct Options {
  std::string out;
  uint64_t events = 100000;
  double duration_s = 0;  // > 0: each rank's job time, instead of a share of `events`
  double kernel_us = 400;
  int jobs = 1;
  int short_lived = 0;
  bool replicate = false;  // ranks other than the first and the slow one: copies of the first
  int ranks = 1;
  int kernels_per_step = 50;
  uint64_t seed = 1;
  uint32_t format = kTraceFormatV3;
  std::set<std::string> causes;
  bool python = false;  // stacks with Python frames (a PyTorch script, train.py)
  int hosts = 0;        // >= 2: the multi-host clock job (WriteMultiHostJob)
  double clock_error_ms = 50;
  double end_jitter_us = 20;
  bool Has(const char* cause) const { return causes.count(cause) > 0; }
};

Header MakeHeader(uint32_t pid, uint32_t ppid, int rank, int world, Ns start,
                  const std::vector<std::string>& cmdline, bool mpi = false) {
  Header h;
  h.set_magic("IDLESCOPE");
  h.set_format_version(1);
  h.set_pid(pid);
  h.set_ppid(ppid);
  h.set_host("gen-node0");
  h.set_exe(cmdline[0]);
  for (const std::string& arg : cmdline) h.add_cmdline(arg);
  if (rank >= 0) {
    h.set_rank(rank);
    h.set_local_rank(rank);
    h.set_world_size(world);
  }
  if (rank >= 0 && mpi) h.set_rank_variable("OMPI_COMM_WORLD_RANK");
  h.mutable_clock()->set_monotonic_ns(static_cast<uint64_t>(start));
  h.mutable_clock()->set_realtime_ns(static_cast<uint64_t>(start) + 1'700'000'000ull * kS);
  h.set_origin(ppid > 1 ? ORIGIN_FORK : ORIGIN_PRELOAD);
  h.set_tool_version("gen_trace");
  h.set_process_start_ns(static_cast<uint64_t>(start));
  h.set_main_tid(pid);
  h.set_boot_id("0b0b0b0b-gen-boot");
  return h;
}

// Where a rank's files go on after what differs between ranks (the header, the device packet),
// for --replicate.
struct RankLayout {
  uint64_t rank_rest = 0;    // offset in the rank's file after its device packet
  uint64_t worker_rest = 0;  // offset in its worker's file after its header (0: no worker)
};

std::string RankPath(const Options& o, uint32_t pid) {
  return o.out + "/gen-node0-" + std::to_string(pid) + ".idlescope";
}

DeviceInfo RankDevice(const Options& o, int rank) {
  DeviceInfo info;
  info.set_device(0);
  info.set_name("NVIDIA H100 80GB HBM3 (synthetic)");
  info.set_sm_count(132);
  info.set_total_memory(80 * kGiB);
  // crowded: every rank on the host's first GPU (no set_device(local_rank)), the others unused.
  info.set_uuid("GPU-0000000" + std::to_string(o.Has("crowded") ? 0 : rank));
  info.set_visible_devices(
      static_cast<uint32_t>(o.Has("unused") || o.Has("crowded") ? o.ranks + 1 : o.ranks));
  return info;
}

// Writes one rank (and its helper processes). Returns the events written.
uint64_t WriteRank(const Options& o, int rank, uint64_t target_events, RankLayout* layout) {
  std::mt19937_64 rng(o.seed * 1000 + static_cast<uint64_t>(rank));
  auto jitter = [&](Ns base, double spread) {
    std::uniform_real_distribution<double> d(1 - spread, 1 + spread);
    return static_cast<Ns>(static_cast<double>(base) * d(rng));
  };
  const uint32_t pid = 1000 + static_cast<uint32_t>(rank);
  const uint32_t tid = pid;
  const Ns t0 = 1000 * kS;
  const std::string dir = o.out + "/";
  TraceFile file(
      dir + "gen-node0-" + std::to_string(pid) + ".idlescope",
      MakeHeader(pid, 1, rank, o.ranks, t0, {"/usr/bin/python3", "train.py"}, o.Has("mpi")),
      o.format);
  std::unique_ptr<TraceFile> worker;
  const bool dataload = o.Has("dataload") || o.Has("remote");
  if (dataload) {
    worker =
        std::make_unique<TraceFile>(dir + "gen-node0-" + std::to_string(2000 + rank) + ".idlescope",
                                    MakeHeader(2000 + static_cast<uint32_t>(rank), pid, -1, o.ranks,
                                               t0 + 150 * kMs, {"/usr/bin/python3", "train.py"}),
                                    o.format);
  }

  if (o.Has("nogpu")) {
    // A non-DL job: reads and CPU work, no device at all.
    Ns now = t0 + 100 * kMs;
    int step = 0;
    while (file.events() < target_events) {
      Event* r = file.AddEvent(tid, FILE_READ, now, jitter(10 * kMs, 0.2));
      char path[64];
      std::snprintf(path, sizeof(path), "/data/table-%03d.parquet", step++ % 100);
      r->set_path(file.String(path));
      r->set_fs_type(FS_LOCAL);
      r->set_bytes(32 << 20);
      now += 30 * kMs;
      file.MaybeFlush(now);
    }
    file.Finish(now + 5 * kMs, true);
    return file.events();
  }
  file.AddDevice(RankDevice(o, rank));
  layout->rank_rest = file.bytes();
  if (worker) layout->worker_rest = worker->bytes();

  uint64_t stack_copy = file.Stack({"main", "train", "train_step", "Tensor.to", "copy_"});
  uint64_t stack_save = file.Stack({"main", "train", "save_checkpoint", "torch.save"});
  uint64_t stack_save_end = stack_save;  // the archive's end (Python frames: another native path)
  uint64_t stack_load = file.Stack({"main", "train", "DataLoader.__next__", "_recv"});
  uint64_t stack_worker_read = 0;
  if (o.python) {
    // train.py run by CPython 3.11 with torch from conda: the script's lines under torch's.
    const std::string torch = "/opt/conda/lib/python3.11/site-packages/torch/";
    const std::string stdlib = "/opt/conda/lib/python3.11/";
    const std::vector<std::string> interpreter = {"_start", "__libc_start_main", "Py_BytesMain",
                                                  "Py_RunMain", "_PyEval_EvalFrameDefault"};
    auto native = [&](std::vector<std::string> inner) {
      std::vector<std::string> frames = interpreter;
      frames.insert(frames.end(), inner.begin(), inner.end());
      return frames;
    };
    const std::vector<TraceFile::PythonFrameSpec> script = {
        {"/work/train.py", 120, "<module>", true}, {"/work/train.py", 104, "main", false}};
    auto python = [&](std::vector<TraceFile::PythonFrameSpec> inner) {
      std::vector<TraceFile::PythonFrameSpec> frames = script;
      frames.insert(frames.end(), inner.begin(), inner.end());
      return frames;
    };
    const std::vector<TraceFile::PythonFrameSpec> save = {
        {"/work/train.py", 62, "train", false},
        {"/work/train.py", 76, "save_checkpoint", false},
        {torch + "serialization.py", 652, "save", false},
        {torch + "serialization.py", 886, "_save", false}};
    stack_save = file.PythonStack(
        native({"_PyObject_MakeTpCall", "torch::jit::PyTorchStreamWriter::writeRecord",
                "mz_zip_writer_add_mem_ex_v2", "std::ostream::write", "write"}),
        python(save));
    stack_save_end = file.PythonStack(
        native({"_PyObject_MakeTpCall", "torch::jit::PyTorchStreamWriter::writeEndOfFile",
                "mz_zip_writer_finalize_archive", "std::ostream::write", "write"}),
        python(save));
    stack_copy = file.PythonStack(
        native({"THPVariable_to", "at::native::to", "at::native::copy_", "cudaMemcpyAsync"}),
        python(
            {{"/work/train.py", 62, "train", false}, {"/work/train.py", 41, "train_step", false}}));
    stack_load = file.PythonStack(
        native({"os_read", "_Py_read", "read"}),
        python(
            {{"/work/train.py", 55, "train", false},
             {torch + "utils/data/dataloader.py", 631, "_BaseDataLoaderIter.__next__", false},
             {torch + "utils/data/dataloader.py", 1328, "_MultiProcessingDataLoaderIter._next_data",
              false},
             {stdlib + "multiprocessing/queues.py", 113, "Queue.get", false},
             {stdlib + "multiprocessing/connection.py", 216, "_ConnectionBase.recv_bytes", false},
             {stdlib + "multiprocessing/connection.py", 395, "Connection._recv", false}}));
    if (worker) {
      // A forked worker: the parent's frames up to the fork, then the worker loop.
      stack_worker_read = worker->PythonStack(
          native({"_io_FileIO_readinto", "_Py_read", "read"}),
          python({{"/work/train.py", 55, "train", false},
                  {stdlib + "multiprocessing/process.py", 108, "BaseProcess.run", false},
                  {torch + "utils/data/_utils/worker.py", 308, "_worker_loop", false},
                  {torch + "utils/data/_utils/fetch.py", 52, "_MapDatasetFetcher.fetch", false},
                  {"/work/data.py", 31, "ShardDataset.__getitem__", false}}));
    }
  }
  const uint64_t stack_log = file.Stack({"main", "train", "log_metrics", "write"});
  const uint64_t stack_prompt = file.Stack({"main", "train", "input", "fgets"});
  const uint64_t stack_readline = file.Stack({"main", "train", "input", "rl_getc", "select"});
  const uint64_t stack_sleep = file.Stack({"main", "train", "wait_for_file", "nanosleep"});
  const uint64_t stack_popen = file.Stack({"main", "train", "install_extra", "popen"});
  const uint64_t stack_popen_read = file.Stack({"main", "train", "install_extra", "fgets"});
  const uint64_t stack_async_save = file.Stack({"main", "train", "save_async", "cudaMemcpy"});
  const uint64_t stack_writer =
      file.Stack({"start_thread", "writer_loop", "write_checkpoint", "fwrite"});
  const uint64_t stack_readback = file.Stack({"main", "train", "train_step", "loss.item"});
  const uint64_t stack_sync = file.Stack({"main", "train", "train_step", "Tensor.item"});
  const uint64_t stack_nccl = file.Stack({"main", "train", "allreduce_grads", "all_reduce"});
  const uint64_t stack_dl = file.Stack({"main", "from_pretrained", "hf_hub_download", "recv"});
  const uint64_t api_launch = file.String("cudaLaunchKernel");
  const uint64_t api_memcpy = file.String("cudaMemcpy");
  const uint64_t api_sync = file.String("cudaStreamSynchronize");
  const uint64_t kernel_names[4] = {
      file.String("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128>(Params)"),
      file.String("void at::native::vectorized_elementwise_kernel<4, GeluFunctor>(...)"),
      file.String("void at::native::reduce_kernel<512, 1>(ReduceOp)"),
      file.String("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>(...)")};
  const uint64_t nccl_kernel = file.String("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)");
  const uint64_t memcpy_name = file.String("Memcpy HtoD (Pageable)");

  Ns now = t0 + 300 * kMs;  // imports
  const bool small = o.Has("smallbatch");
  // Startup extras.
  if (o.Has("install")) {
    Ns begin = t0 + 20 * kMs;
    Ns len = 1500 * kMs;
    Event* spawn = file.AddEvent(tid, PROC_SPAWN, begin, 300 * kUs);
    spawn->set_child_pid(3000 + static_cast<uint32_t>(rank));
    spawn->set_path(file.String("/usr/bin/python3"));
    spawn->set_argv(file.String(std::string("python3\0-m\0pip\0install\0-r\0requirements.txt"sv)));
    TraceFile pip(
        dir + "gen-node0-" + std::to_string(3000 + rank) + ".idlescope",
        MakeHeader(3000 + static_cast<uint32_t>(rank), pid, -1, o.ranks, begin,
                   {"/usr/bin/python3", "-m", "pip", "install", "-r", "requirements.txt"}),
        o.format);
    for (int i = 0; i < 20; ++i) {
      Event* recv = pip.AddEvent(3000 + static_cast<uint32_t>(rank), NET_RECV,
                                 begin + i * (len / 20), len / 25);
      recv->set_path(pip.String("151.101.0.223:443"));
      recv->set_net_scope(NET_PUBLIC);
      recv->set_bytes(8 << 20);
    }
    pip.Finish(begin + len, true);
    now = std::max(now, begin + len + 50 * kMs);
  }
  if (o.Has("download")) {
    Ns len = 800 * kMs;
    for (int i = 0; i < 8; ++i) {
      Event* recv = file.AddEvent(tid, NET_RECV, now + i * (len / 8), len / 8);
      recv->set_path(file.String("huggingface.co:443"));
      recv->set_net_scope(NET_PUBLIC);
      recv->set_bytes(64 << 20);
      recv->set_stack(stack_dl);
    }
    now += len;
  }
  {
    Event* m = file.AddEvent(tid, CUDA_MALLOC, now, 2 * kMs);
    m->set_device(0);
    m->set_ptr(0x7f0000000000);
    m->set_bytes(small ? 6 * kGiB : 40 * kGiB);
    now += 2 * kMs;
  }

  const int k = o.kernels_per_step;
  const Ns kernel_len = small ? 30 * kUs : static_cast<Ns>(o.kernel_us * kUs);
  const Ns launch_gap = small ? 70 * kUs : 8 * kUs;
  const bool slow_rank = o.Has("straggler") && rank == o.ranks - 1;
  uint64_t correlation = 1;
  uint64_t nccl_seq = 0;
  Ns gpu_free = now;  // when the device finishes the work queued so far
  int step = 0;
  auto events_so_far = [&] {
    return file.events() + file.gpu_records() + (worker ? worker->events() : 0);
  };
  const Ns until = t0 + static_cast<Ns>(o.duration_s * kS);
  auto more = [&] { return o.duration_s > 0 ? now < until : events_so_far() < target_events; };
  while (more()) {
    ++step;
    // 1. The batch: from a worker process through a pipe, or already there.
    if (dataload) {
      Ns load = jitter(12 * kMs, 0.2);
      Event* wait = file.AddEvent(tid, FILE_READ, now, load);
      wait->set_fd(17);
      wait->set_fs_type(FS_PIPE);
      wait->set_path(file.String("pipe:[48213]"));
      wait->set_bytes(64 << 20);
      wait->set_stack(stack_load);
      Event* read = worker->AddEvent(2000 + static_cast<uint32_t>(rank), FILE_READ, now + 200 * kUs,
                                     load - 400 * kUs);
      char path[96];
      std::snprintf(path, sizeof(path), "%s/imagenet/train-%05d-of-01024.tar",
                    o.Has("remote") ? "/mnt/blobfuse" : "/data", (step * o.ranks + rank) % 1024);
      read->set_path(worker->String(path));
      read->set_fs_type(o.Has("remote") ? FS_FUSE : FS_LOCAL);
      read->set_bytes(48 << 20);
      read->set_count(12);
      if (stack_worker_read != 0) read->set_stack(stack_worker_read);
      now += load;
      worker->MaybeFlush(now);
    }
    // 2. Copy to the device.
    if (o.Has("pageable") || o.Has("pinned")) {
      bool pageable = o.Has("pageable");
      Ns len = jitter(pageable ? 9 * kMs : 4 * kMs, 0.1);
      now = std::max(now, gpu_free);  // a synchronous copy waits for the device
      Event* c = file.AddEvent(tid, CUDA_MEMCPY, now, len);
      c->set_api(api_memcpy);
      c->set_stack(stack_copy);
      c->set_bytes(96 << 20);
      c->set_device(0);
      c->set_copy_kind(COPY_H2D);
      c->set_host_mem(pageable ? MEM_PAGEABLE : MEM_PINNED);
      c->set_correlation(correlation);
      GpuActivity* a = file.AddGpu(GPU_MEMCPY, now + len / 10, len - len / 5);
      a->set_bytes(96 << 20);
      a->set_copy_kind(COPY_H2D);
      a->set_src_kind(pageable ? MEM_PAGEABLE : MEM_PINNED);
      a->set_dst_kind(MEM_DEVICE);
      a->set_correlation(correlation++);
      a->set_stream(7);
      a->set_name(memcpy_name);
      now += len;
      gpu_free = now;
    }
    // 3. Compute: launches run ahead of the device unless kernels are tiny.
    for (int i = 0; i < k; ++i) {
      Event* l = file.AddEvent(tid, CUDA_LAUNCH, now, 4 * kUs);
      l->set_async(true);  // as the recorder has every launch
      l->set_api(api_launch);
      l->set_device(0);
      l->set_stream(1);
      l->set_correlation(correlation);
      Ns start = std::max(now + 6 * kUs, gpu_free + 2 * kUs);
      Ns len = jitter(slow_rank ? kernel_len * 13 / 10 : kernel_len, 0.15);
      GpuActivity* a = file.AddGpu(GPU_KERNEL, start, len);
      a->set_device(0);
      a->set_stream(i % 3 == 2 ? 14 : 13);  // two streams
      a->set_correlation(correlation++);
      a->set_name(kernel_names[i % 4]);
      a->set_grid(small ? 24 : 4096);
      a->set_block(256);
      gpu_free = start + len;
      now += launch_gap;
    }
    // 4. Gradients: all-reduce after the backward pass, waited for by the host.
    if (o.Has("nccl") || o.Has("straggler")) {
      Ns compute_done = gpu_free;
      Event* s = file.AddEvent(tid, CUDA_SYNC, now, std::max<Ns>(compute_done - now, 2 * kUs));
      s->set_api(api_sync);
      s->set_device(0);
      s->set_stack(stack_sync);
      now = std::max(now, compute_done);
      // Every rank reaches the collective when its compute is done; the slow rank's compute
      // takes 30% longer (estimated from the step shape, identical across ranks).
      Ns step_compute = k * kernel_len;
      Ns slowest_extra = o.Has("straggler") ? step_compute * 3 / 10 : 0;
      Ns own_extra = slow_rank ? slowest_extra : 0;
      Ns wait = slowest_extra - own_extra;
      Ns reduce = jitter(3 * kMs, 0.1);
      Event* c = file.AddEvent(tid, NCCL_COLLECTIVE, now, wait + reduce);
      c->set_async(true);
      c->set_device(0);
      c->set_stack(stack_nccl);
      c->set_nccl_op(NCCL_ALL_REDUCE);
      c->set_comm(0x5eed);
      c->set_seq(++nccl_seq);
      c->set_rank(rank);
      c->set_nranks(o.ranks);
      c->set_bytes(100 << 20);
      c->set_count(25 << 20);
      GpuActivity* a = file.AddGpu(GPU_KERNEL, now + 5 * kUs, wait + reduce - 10 * kUs);
      a->set_nccl(true);
      a->set_stream(20);
      a->set_name(nccl_kernel);
      a->set_grid(32);
      a->set_block(640);
      now += wait + reduce;
      gpu_free = now;
    }
    // 5. loss.item(): the host waits for the device.
    if (o.Has("sync")) {
      Ns len = std::max<Ns>(gpu_free - now, 0) + jitter(3 * kMs, 0.1);
      Event* s = file.AddEvent(tid, CUDA_SYNC, now, len);
      s->set_api(api_sync);
      s->set_device(0);
      s->set_stack(stack_sync);
      now += len;
    }
    // 5b. loss.item() into pinned memory, then CPU work (metrics, logging) before the next
    // step's launches: the device runs dry while the host computes.
    if (o.Has("readback")) {
      Ns wait = std::max<Ns>(gpu_free - now, 0) + 20 * kUs;
      Event* c = file.AddEvent(tid, CUDA_MEMCPY, now, wait);
      c->set_api(api_memcpy);
      c->set_stack(stack_readback);
      c->set_bytes(4);
      c->set_device(0);
      c->set_copy_kind(COPY_D2H);
      c->set_host_mem(MEM_PINNED);
      c->set_correlation(correlation);
      GpuActivity* a = file.AddGpu(GPU_MEMCPY, now + wait - 10 * kUs, 5 * kUs);
      a->set_bytes(4);
      a->set_copy_kind(COPY_D2H);
      a->set_src_kind(MEM_DEVICE);
      a->set_dst_kind(MEM_PINNED);
      a->set_correlation(correlation++);
      a->set_stream(1);
      now += wait + jitter(4 * kMs, 0.1);  // host work, no traced call
      gpu_free = now;
    }
    // 5c. What the recorder's thread sampler sees between the traced calls (THREAD_SAMPLE runs in
    // the writer's batch, naming the training thread): CPU work (augmenting the next batch on the
    // training thread), and waits for a CPU (the machine oversubscribed).
    if (o.Has("cpuwork") || o.Has("starved")) {
      const uint32_t writer = tid + 1;
      auto run = [&](Ns len, double cpu, double wait, char state) {
        Event* e = file.AddEvent(writer, THREAD_SAMPLE, now, len);
        e->set_tid(tid);
        e->set_count(static_cast<uint64_t>(len / (5 * kMs)) + 1);
        e->set_cpu_ns(static_cast<uint64_t>(cpu * static_cast<double>(len)));
        e->set_wait_ns(static_cast<uint64_t>(wait * static_cast<double>(len)));
        e->set_thread_state(static_cast<uint32_t>(state));
        now += len;
      };
      if (o.Has("starved") && step % 3 == 0) run(jitter(3 * kMs, 0.2), 0.15, 0.8, 'R');
      if (o.Has("cpuwork")) run(jitter(25 * kMs, 0.1), 0.95, 0.02, 'R');
    }
    // 6. Periodic extras.
    // A prompt answered at the terminal (input(): fgets on stdin, a pty); with idlewait, as GNU
    // readline does: it waits in select() on the terminal, then reads the line.
    if (o.Has("prompt") && step % 25 == 0) {
      now = std::max(now, gpu_free);
      if (o.Has("idlewait")) {
        Ns wait = jitter(250 * kMs, 0.2);
        Event* w = file.AddEvent(tid, WAIT, now, wait);
        w->set_api(file.String("select"));
        w->set_path(file.String("/dev/pts/0"));
        w->set_fd(0);
        w->set_fs_type(FS_DEVICE);
        w->set_count(1);
        w->set_launch_device(0);
        w->set_stack(stack_readline);
        now += wait;
      }
      Ns len = jitter(300 * kMs, 0.2);
      Event* r = file.AddEvent(tid, FILE_READ, now, len);
      r->set_api(file.String("fgets"));
      r->set_path(file.String("/dev/pts/0"));
      r->set_fd(0);
      r->set_fs_type(FS_DEVICE);
      r->set_bytes(2);
      r->set_stack(stack_prompt);
      now += len;
    }
    // A sleep on the training thread holding the GPU (waiting for a file to appear, a barrier
    // by polling).
    if (o.Has("idlewait") && step == 35) {
      now = std::max(now, gpu_free);
      Ns len = 200 * kMs;
      Event* w = file.AddEvent(tid, WAIT, now, len);
      w->set_api(file.String("nanosleep"));
      w->set_fd(-1);
      w->set_count(1);
      w->set_launch_device(0);
      w->set_stack(stack_sleep);
      now += len;
    }
    // An installer run mid-job through popen("pip install ..."), its output read from the pipe;
    // the shell it started is traced as a child.
    if (o.Has("popen") && step == 30) {
      now = std::max(now, gpu_free);
      Event* spawn = file.AddEvent(tid, PROC_SPAWN, now, 400 * kUs);
      spawn->set_path(file.String("/bin/sh"));
      spawn->set_argv(file.String(std::string("sh\0-c\0pip install wandb"sv)));
      spawn->set_stack(stack_popen);
      const uint32_t sh = 4000 + static_cast<uint32_t>(rank);
      const Ns len = 600 * kMs;
      TraceFile child(
          dir + "gen-node0-" + std::to_string(sh) + ".idlescope",
          MakeHeader(sh, pid, -1, o.ranks, now + 200 * kUs, {"/bin/sh", "-c", "pip install wandb"}),
          o.format);
      for (int i = 0; i < 6; ++i) {
        Event* recv = child.AddEvent(sh, NET_RECV, now + 1 * kMs + i * (len / 6), len / 8);
        recv->set_path(child.String("151.101.0.223:443"));
        recv->set_net_scope(NET_PUBLIC);
        recv->set_bytes(4 << 20);
      }
      child.Finish(now + len + 2 * kMs, true);
      Event* r = file.AddEvent(tid, FILE_READ, now + 500 * kUs, len);
      r->set_api(file.String("fgets"));
      r->set_path(file.String("pipe:[77001]"));
      r->set_fd(19);
      r->set_fs_type(FS_PIPE);
      r->set_bytes(4096);
      r->set_stack(stack_popen_read);
      now += len + 3 * kMs;
    }
    // An asynchronous checkpoint: the snapshot copied on the training thread, written by a
    // writer thread while training goes on.
    if (o.Has("asyncckpt") && step % 40 == 0) {
      now = std::max(now, gpu_free);
      const uint64_t bytes = 1400ull << 20;
      const Ns copy = jitter(60 * kMs, 0.1);
      Event* c = file.AddEvent(tid, CUDA_MEMCPY, now, copy);
      c->set_api(api_memcpy);
      c->set_stack(stack_async_save);
      c->set_bytes(bytes);
      c->set_device(0);
      c->set_copy_kind(COPY_D2H);
      c->set_host_mem(MEM_PINNED);
      c->set_correlation(correlation);
      GpuActivity* a = file.AddGpu(GPU_MEMCPY, now + 100 * kUs, copy - 200 * kUs);
      a->set_bytes(bytes);
      a->set_copy_kind(COPY_D2H);
      a->set_src_kind(MEM_DEVICE);
      a->set_dst_kind(MEM_PINNED);
      a->set_correlation(correlation++);
      a->set_stream(1);
      now += copy;
      gpu_free = now;
      char path[64];
      std::snprintf(path, sizeof(path), "/ckpt/step%06d/model.safetensors", step);
      for (int i = 0; i < 4; ++i) {
        Event* w = file.AddEvent(tid + 7, FILE_WRITE, now + 1 * kMs + i * 50 * kMs, 45 * kMs);
        w->set_path(file.String(path));
        w->set_fs_type(FS_LOCAL);
        w->set_bytes(bytes / 4);
        w->set_count(88);
        w->set_fd(29);
        w->set_stack(stack_writer);
      }
    }
    if (o.Has("checkpoint") && step % 40 == 0) {
      now = std::max(now, gpu_free);
      char path[64];
      std::snprintf(path, sizeof(path), "/ckpt/step%06d/model.pt", step);
      Ns len = jitter(180 * kMs, 0.1);
      Event* w = file.AddEvent(tid, FILE_WRITE, now, len);
      w->set_path(file.String(path));
      w->set_fs_type(FS_LOCAL);
      w->set_bytes(1400ull << 20);
      w->set_count(350);
      w->set_fd(23);
      w->set_stack(step % 80 == 0 ? stack_save_end : stack_save);
      now += len;
      Event* f = file.AddEvent(tid, FILE_SYNC, now, 40 * kMs);
      f->set_path(file.String(path));
      f->set_fd(23);
      f->set_stack(stack_save);
      now += 40 * kMs;
    }
    if (o.Has("upload") && step % 10 == 0) {
      now = std::max(now, gpu_free);
      Ns len = jitter(25 * kMs, 0.2);
      Event* w = file.AddEvent(tid, FILE_WRITE, now, len);
      w->set_path(file.String("/runs/exp1/samples.jsonl"));
      w->set_fs_type(FS_NFS);
      w->set_bytes(4 << 20);
      w->set_stack(stack_log);
      now += len;
    }
    file.MaybeFlush(now);
  }
  now = std::max(now, gpu_free);
  Ns end = now + (o.Has("tail") ? 2 * kS : 20 * kMs);
  if (worker) worker->Finish(now, true);
  file.Finish(end, true);
  return events_so_far();
}

// Rank `rank` as a copy of rank `from` (written before, laid out as `layout`): its own header and
// device, the rest of the events byte for byte (their NCCL calls say `from`'s rank). Returns the
// events, as counted for `from`.
uint64_t ReplicateRank(const Options& o, int from, int rank, const RankLayout& layout,
                       uint64_t from_events) {
  const Ns t0 = 1000 * kS;
  const uint32_t pid = 1000 + static_cast<uint32_t>(rank);
  {
    TraceFile file(
        RankPath(o, pid),
        MakeHeader(pid, 1, rank, o.ranks, t0, {"/usr/bin/python3", "train.py"}, o.Has("mpi")),
        o.format);
    file.AddDevice(RankDevice(o, rank));
    file.AppendFile(RankPath(o, 1000 + static_cast<uint32_t>(from)), layout.rank_rest);
  }
  if (layout.worker_rest > 0) {
    TraceFile worker(RankPath(o, 2000 + static_cast<uint32_t>(rank)),
                     MakeHeader(2000 + static_cast<uint32_t>(rank), pid, -1, o.ranks,
                                t0 + 150 * kMs, {"/usr/bin/python3", "train.py"}),
                     o.format);
    worker.AppendFile(RankPath(o, 2000 + static_cast<uint32_t>(from)), layout.worker_rest);
  }
  return from_events;
}

// `n` processes, children of rank 0, living 50 ms each one after another from t0 + 1 s: each
// reads a file and ends. Returns the events written.
uint64_t WriteShortLived(const Options& o, int n) {
  const Ns t0 = 1000 * kS;
  uint64_t events = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t pid = 100000 + static_cast<uint32_t>(i);
    const Ns start = t0 + kS + i * 60 * kMs;
    TraceFile file(o.out + "/gen-node0-" + std::to_string(pid) + ".idlescope",
                   MakeHeader(pid, 1000, -1, o.ranks, start, {"/usr/bin/python3", "worker.py"}),
                   o.format);
    for (int r = 0; r < 4; ++r) {
      Event* e = file.AddEvent(pid, FILE_READ, start + 5 * kMs + r * 10 * kMs, 8 * kMs);
      e->set_path(file.String("/data/part-" + std::to_string(i % 997) + ".bin"));
      e->set_fs_type(FS_LOCAL);
      e->set_bytes(1 << 20);
    }
    file.Finish(start + 50 * kMs, true);
    events += file.events();
  }
  return events;
}

// --hosts H: a job of --ranks R ranks on H hosts (ranks split evenly, in order), for the clock
// alignment across hosts. Each host has its own CLOCK_MONOTONIC (a different boot time) and a
// CLOCK_REALTIME that is wrong by up to --clock-error-ms (NTP), so the headers' REALTIME snapshots
// place its events that far off. A step: every rank computes (a kernel launched on its stream,
// of a length shared by the ranks plus a little of its own), calls an all-reduce on the same
// stream, and the collective's NCCL kernel ends when the last rank arrived plus the transfer, on
// every rank within --end-jitter-us. Prints, per host, the error of its REALTIME clock against
// the first host's: what the alignment must find ("clock gen-node1 -12345678").
int WriteMultiHostJob(const Options& o) {
  const int per_host = (o.ranks + o.hosts - 1) / o.hosts;
  std::mt19937_64 shared(o.seed * 7919 + 1);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<Ns> boot(static_cast<size_t>(o.hosts)), error(static_cast<size_t>(o.hosts));
  for (int h = 0; h < o.hosts; ++h) {
    boot[h] = static_cast<Ns>(1000 + 37 * h) * kS + static_cast<Ns>(unit(shared) * 1e9);
    error[h] = static_cast<Ns>(unit(shared) * o.clock_error_ms * 1e6);
  }
  const int steps = o.duration_s > 0 ? static_cast<int>(o.duration_s * 1e3 / 12) : 200;
  // The schedule every rank shares (true time): step compute lengths, the transfer.
  std::vector<Ns> compute(static_cast<size_t>(steps)), transfer(static_cast<size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    compute[i] = static_cast<Ns>((8 + 2 * unit(shared)) * 1e6);
    transfer[i] = static_cast<Ns>((2 + 0.5 * unit(shared)) * 1e6);
  }
  std::vector<std::mt19937_64> own;
  for (int r = 0; r < o.ranks; ++r) own.emplace_back(o.seed * 1000 + static_cast<uint64_t>(r));
  auto own_unit = [&](int r) { return unit(own[static_cast<size_t>(r)]); };
  // Arrivals and ends per step and rank (true time), then each rank's file.
  const Ns t0 = 5 * kS;
  std::vector<std::vector<Ns>> arrival(static_cast<size_t>(o.ranks),
                                       std::vector<Ns>(static_cast<size_t>(steps)));
  std::vector<std::vector<Ns>> end = arrival;
  std::vector<Ns> step_start(static_cast<size_t>(steps));
  Ns now = t0 + 200 * kMs;
  for (int i = 0; i < steps; ++i) {
    step_start[i] = now;
    Ns last = 0;
    for (int r = 0; r < o.ranks; ++r) {
      arrival[r][i] = now + compute[i] + static_cast<Ns>(own_unit(r) * 0.3e6);
      last = std::max(last, arrival[r][i]);
    }
    const Ns done = last + transfer[i];
    for (int r = 0; r < o.ranks; ++r) {
      end[r][i] = done + static_cast<Ns>(own_unit(r) * o.end_jitter_us * 1e3);
    }
    now = done + o.end_jitter_us * 1000 + 200 * kUs;
  }
  uint64_t events = 0;
  for (int r = 0; r < o.ranks; ++r) {
    const int h = r / per_host;
    const int local = r % per_host;  // its own device of its host
    const std::string host = "gen-node" + std::to_string(h);
    // Host h's monotonic time of true time t: t + boot[h]; its REALTIME: t + epoch + error[h].
    const Ns shift = boot[h];
    const uint32_t pid = 1000 + static_cast<uint32_t>(r);
    Header header = MakeHeader(pid, 1, r, o.ranks, t0 + shift, {"python", "train.py"});
    header.set_host(host);
    header.set_boot_id("0b0b0b0b-gen-boot-" + std::to_string(h));
    header.set_local_rank(local);
    header.mutable_clock()->set_realtime_ns(
        static_cast<uint64_t>(t0 + 1'700'000'000ll * kS + error[h]));
    TraceFile file(o.out + "/" + host + "-" + std::to_string(pid) + ".idlescope", header, o.format);
    DeviceInfo device;
    device.set_device(local);
    device.set_name("NVIDIA H100 80GB HBM3 (synthetic)");
    device.set_sm_count(132);
    device.set_total_memory(80ull << 30);
    device.set_visible_devices(static_cast<uint32_t>(per_host));
    file.AddDevice(device);
    const uint64_t api_launch = file.String("cudaLaunchKernel");
    const uint64_t api_nccl = file.String("ncclAllReduce");
    const uint64_t kernel = file.String("void gemm_kernel<float>(float const*, float*, int)");
    const uint64_t nccl_kernel =
        file.String("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    uint64_t correlation = 1;
    for (int i = 0; i < steps; ++i) {
      const Ns start = step_start[i] + shift;
      Event* l = file.AddEvent(pid, CUDA_LAUNCH, start, 5 * kUs);
      l->set_async(true);
      l->set_api(api_launch);
      l->set_device(local);
      l->set_stream(1);
      l->set_correlation(correlation);
      GpuActivity* k =
          file.AddGpu(GPU_KERNEL, start + 10 * kUs, arrival[r][i] + shift - start - 20 * kUs);
      k->set_device(local);
      k->set_stream(13);
      k->set_correlation(correlation++);
      k->set_name(kernel);
      k->set_grid(4096);
      k->set_block(256);
      const Ns call = arrival[r][i] + shift - 30 * kUs;
      Event* c = file.AddEvent(pid, NCCL_COLLECTIVE, call, 25 * kUs);
      c->set_async(true);
      c->set_api(api_nccl);
      c->set_device(local);
      c->set_stream(1);
      c->set_nccl_op(NCCL_ALL_REDUCE);
      c->set_comm(0x5eed);
      c->set_seq(static_cast<uint64_t>(i) + 1);
      c->set_rank(r);
      c->set_nranks(o.ranks);
      c->set_bytes(100 << 20);
      c->set_count(25 << 20);
      const Ns kstart = arrival[r][i] + shift;
      GpuActivity* a = file.AddGpu(GPU_KERNEL, kstart, end[r][i] + shift - kstart);
      a->set_device(local);
      a->set_nccl(true);
      a->set_stream(13);
      a->set_name(nccl_kernel);
      a->set_grid(32);
      a->set_block(640);
      file.MaybeFlush(end[r][i] + shift, false);
    }
    file.Finish(end[r][steps - 1] + shift + 5 * kMs, true);
    events += file.events() + file.gpu_records();
  }
  for (int h = 0; h < o.hosts; ++h) {
    std::printf("clock gen-node%d %lld\n", h, static_cast<long long>(error[h] - error[0]));
  }
  std::fprintf(stderr, "gen_trace: %llu events for %d ranks on %d hosts in %s\n",
               static_cast<unsigned long long>(events), o.ranks, o.hosts, o.out.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gen_trace: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--out") {
      o.out = next();
    } else if (arg == "--events") {
      o.events = std::strtoull(next(), nullptr, 10);
    } else if (arg == "--ranks") {
      o.ranks = std::atoi(next());
    } else if (arg == "--kernels-per-step") {
      o.kernels_per_step = std::atoi(next());
    } else if (arg == "--seed") {
      o.seed = std::strtoull(next(), nullptr, 10);
    } else if (arg == "--duration-s") {
      o.duration_s = std::atof(next());
    } else if (arg == "--kernel-us") {
      o.kernel_us = std::atof(next());
    } else if (arg == "--jobs") {
      o.jobs = std::atoi(next());
    } else if (arg == "--short-lived") {
      o.short_lived = std::atoi(next());
    } else if (arg == "--replicate") {
      o.replicate = true;
    } else if (arg == "--format") {
      o.format = static_cast<uint32_t>(std::atoi(next()));
    } else if (arg == "--python") {
      o.python = true;
    } else if (arg == "--hosts") {
      o.hosts = std::atoi(next());
    } else if (arg == "--clock-error-ms") {
      o.clock_error_ms = std::atof(next());
    } else if (arg == "--end-jitter-us") {
      o.end_jitter_us = std::atof(next());
    } else if (arg == "--causes") {
      std::string list = next();
      size_t pos = 0;
      while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        std::string cause = list.substr(pos, comma - pos);
        if (!cause.empty()) {
          if (!kKnownCauses.count(cause)) {
            std::fprintf(stderr, "gen_trace: unknown cause '%s'\n", cause.c_str());
            return 2;
          }
          o.causes.insert(cause);
        }
        pos = comma + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: gen_trace --out DIR [--events N] [--ranks R] [--kernels-per-step K] "
                   "[--seed S] [--causes a,b,...] [--format 1|2|3|4] [--python] [--duration-s S] "
                   "[--kernel-us U] [--jobs J] [--short-lived N] [--replicate]\n"
                   "       gen_trace --out DIR --hosts H --ranks R [--clock-error-ms E] "
                   "[--end-jitter-us J]\ncauses:");
      for (const std::string& c : kKnownCauses) std::fprintf(stderr, " %s", c.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
  }
  if (o.out.empty() || o.ranks < 1 || o.kernels_per_step < 1 || o.format < kTraceFormatV1 ||
      o.format > kTraceFormatVersion || o.jobs < 1 || o.kernel_us <= 0 || o.short_lived < 0) {
    std::fprintf(stderr,
                 "gen_trace: --out DIR is required; --ranks, --kernels-per-step and --jobs >= 1; "
                 "--kernel-us > 0; --format 1 to 4\n");
    return 2;
  }
  mkdir(o.out.c_str(), 0755);
  if (o.hosts > 0) {
    if (o.hosts < 2 || o.ranks < o.hosts) {
      std::fprintf(stderr, "gen_trace: --hosts H needs H >= 2 and --ranks >= H\n");
      return 2;
    }
    return WriteMultiHostJob(o);
  }
  // Ranks are independent: job j writes ranks j, j + J, ... and reports its events in a pipe.
  // With --replicate, rank 0 and the last rank (the straggler's) are generated first, one per
  // job, and the other ranks are then copied from rank 0.
  int sums[2];
  if (pipe(sums) != 0) {
    std::perror("gen_trace: pipe");
    return 1;
  }
  const uint64_t per_rank = o.events / static_cast<uint64_t>(o.ranks);
  std::vector<int> generated;
  for (int rank = 0; rank < o.ranks; ++rank) {
    if (!o.replicate || rank == 0 || rank == o.ranks - 1) generated.push_back(rank);
  }
  // Runs job(j) for j in [0, jobs) in as many processes (one: in this one); false if one failed.
  auto in_jobs = [&](auto job) {
    std::vector<pid_t> children;
    for (int j = 0; j < o.jobs; ++j) {
      pid_t child = o.jobs == 1 ? 0 : fork();
      if (child < 0) {
        std::perror("gen_trace: fork");
        return false;
      }
      if (child > 0) {
        children.push_back(child);
        continue;
      }
      uint64_t events = job(j);
      if (write(sums[1], &events, sizeof events) != sizeof events) std::_Exit(1);
      if (o.jobs > 1) std::_Exit(0);
    }
    bool ok = true;
    for (pid_t child : children) {
      int status = 0;
      ok &= waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    return ok;
  };
  bool ok = in_jobs([&](int j) {
    uint64_t events = 0;
    for (size_t i = static_cast<size_t>(j); i < generated.size();
         i += static_cast<size_t>(o.jobs)) {
      RankLayout layout;
      events += WriteRank(o, generated[i], per_rank, &layout);
      if (o.replicate && generated[i] == 0) {
        // For the copies: where rank 0's files go on after what differs between ranks.
        FILE* f = std::fopen((o.out + "/.layout").c_str(), "w");
        if (f == nullptr) std::_Exit(1);
        std::fprintf(f, "%llu %llu %llu\n", static_cast<unsigned long long>(layout.rank_rest),
                     static_cast<unsigned long long>(layout.worker_rest),
                     static_cast<unsigned long long>(events));
        std::fclose(f);
      }
    }
    if (j == 0) events += WriteShortLived(o, o.short_lived);
    return events;
  });
  if (ok && o.replicate && o.ranks > 2) {
    RankLayout layout;
    unsigned long long rest = 0, worker_rest = 0, events = 0;
    FILE* f = std::fopen((o.out + "/.layout").c_str(), "r");
    ok = f != nullptr && std::fscanf(f, "%llu %llu %llu", &rest, &worker_rest, &events) == 3;
    if (f != nullptr) std::fclose(f);
    layout.rank_rest = rest;
    layout.worker_rest = worker_rest;
    ok = ok && in_jobs([&](int j) {
           uint64_t copied = 0;
           for (int rank = 1 + j; rank < o.ranks - 1; rank += o.jobs) {
             copied += ReplicateRank(o, 0, rank, layout, events);
           }
           return copied;
         });
  }
  std::remove((o.out + "/.layout").c_str());
  if (!ok) {
    std::fprintf(stderr, "gen_trace: a writer process failed\n");
    return 1;
  }
  close(sums[1]);
  uint64_t total = 0;
  for (uint64_t events = 0; read(sums[0], &events, sizeof events) == sizeof events;) {
    total += events;
  }
  std::printf("gen_trace: wrote %llu events for %d rank%s to %s\n",
              static_cast<unsigned long long>(total), o.ranks, o.ranks == 1 ? "" : "s",
              o.out.c_str());
  return 0;
}

}  // namespace
}  // namespace idlescope

int main(int argc, char** argv) { return idlescope::Main(argc, argv); }
