#include "analyzer/model/causes.h"

#include <array>
#include <string>

namespace idlescope {
namespace {

constexpr std::array<CauseInfo, kCauseCount> kCauseInfo = {{
    {"host_gpu_transfer", "data", "Inefficient host-GPU data transfer",
     "Copy from pinned memory (DataLoader(pin_memory=True), cudaMallocHost/cudaHostRegister) and "
     "issue copies with non_blocking=True / cudaMemcpyAsync so they overlap compute."},
    {"communication", "data", "Data exchange (communication)",
     "Overlap communication with compute (DDP gradient bucketing, bucket_cap_mb), compress or "
     "reduce exchanged data; when a rank is waited for, fix that rank's own idle cause."},
    {"checkpointing", "model", "Model checkpointing",
     "Checkpoint asynchronously (copy the state to host memory, write it from a background "
     "thread: torch.distributed.checkpoint.async_save) and less often."},
    {"intermediate_upload", "data", "Intermediate results uploading",
     "Write logs, samples and metrics from a background thread or process, and less often."},
    {"data_loading", "data", "Data preprocessing / remote data reading",
     "Load data in parallel and ahead of time (DataLoader num_workers, prefetch_factor, "
     "persistent_workers); preprocess offline; copy remote datasets to local disk first."},
    {"external_download", "data", "External data usage",
     "Download models and datasets before the job starts (or into a shared cache) instead of "
     "from inside the training run."},
    {"library_installation", "library", "Long library installation",
     "Use a prebuilt environment or container image instead of installing packages at job "
     "start."},
    {"interactive", "job", "Interactive job",
     "The job waited for input from a person (input(), a breakpoint, a prompt), or idled holding "
     "the GPU (a sleep, a notebook or server waiting in its event loop): run it as a batch job, "
     "and release the GPU while waiting."},
    {"synchronization", "model", "Inappropriate batch size / API misuse (explicit sync)",
     "Remove host-device synchronizations from the training loop (.item(), .cpu(), print of a "
     "tensor, cudaDeviceSynchronize); use events or stream waits where ordering is needed."},
    {"small_batch", "model", "Inappropriate batch size",
     "Increase the batch size: kernels are short and launch gaps dominate while device memory "
     "is mostly free."},
    {"insufficient_memory", "model", "Insufficient GPU memory",
     "Memory is nearly full, which forces small batches: use mixed precision, activation "
     "checkpointing or gradient accumulation to afford a larger effective batch."},
    {"launch_bound", "model", "Inappropriate batch size (launch-bound)",
     "The CPU cannot issue kernels fast enough: fuse kernels (torch.compile), capture the step "
     "in a CUDA Graph, or raise the work per kernel."},
    {"startup", "job", "Job startup",
     "Idle before the first kernel (imports, initialization): preload and cache what startup "
     "builds; keep the GPU allocation for less time before work begins."},
    {"tail", "job", "Unreleased job",
     "The job kept running after its last kernel: exit (or release the GPU) when training ends; "
     "do post-processing on a CPU node."},
    {"unknown", "none", "Unknown (CPU work on the launching thread)",
     "The launching thread was not in any traced call: it computed on the CPU (Python, "
     "preprocessing) or waited in an untraced call. Profile the CPU (py-spy) during these gaps."},
    {"unused_gpus", "job", "GPU oversubscription",
     "Request only the GPUs the job uses (or make the job use all it requests)."},
    {"no_gpu_work", "job", "Non-DL job", "The job ran no kernel at all: run it on a CPU pool."},
}};

}  // namespace

const CauseInfo& InfoOf(Cause cause) { return kCauseInfo[Index(cause)]; }

}  // namespace idlescope
