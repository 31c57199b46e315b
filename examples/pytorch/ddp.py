"""Exposed communication (the paper's "data exchange", 7.1%): a blocking all-reduce per step vs DDP overlap.

Bad: 2 ranks (mp.spawn) train a replica each and, after backward, all-reduce every gradient one
by one with a blocking dist.all_reduce: the GPU computes nothing while the gradients travel.
Fix (--fix): DistributedDataParallel, which all-reduces gradient buckets during backward,
overlapping communication with compute. NCCL on GPUs (one per rank: needs 2 visible GPUs);
gloo on the CPU otherwise (said on stdout).

  ddp.py [--fix] [--ranks 2] [--steps 40] [--width 4096] [--slow-rank-ms 0] [--device ...]
"""
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import common


def allreduce_gradients_blocking(net, world):
    for p in net.parameters():
        dist.all_reduce(p.grad)  # one blocking collective per tensor, after the whole backward
        p.grad /= world


def worker(rank, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    use_cuda = args.backend == "nccl"
    device = torch.device("cuda", rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)
    dist.init_process_group(args.backend, rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    net = common.model(args.width).to(device)
    model = torch.nn.parallel.DistributedDataParallel(net) if args.fix else net
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, args.width, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    with common.Timer("ddp rank %d" % rank, args.fix, device) as timer:
        for _ in range(args.steps):
            if args.slow_rank_ms and rank == args.ranks - 1:
                time.sleep(args.slow_rank_ms / 1e3)  # a straggler: the others wait for it
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            if not args.fix:
                allreduce_gradients_blocking(net, args.ranks)
            opt.step()
    timer.report(args.steps)
    dist.destroy_process_group()


def main():
    p = common.parser(__doc__)
    p.set_defaults(steps=40)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--width", type=int, default=0, help="layer width (0: 4096 GPU, 256 CPU)")
    p.add_argument("--slow-rank-ms", type=float, default=0, help="make the last rank slower")
    p.add_argument("--port", type=int, default=29517)
    args = p.parse_args()
    gpus = torch.cuda.device_count() if args.device in ("auto", "cuda") else 0
    if gpus >= args.ranks and dist.is_nccl_available():
        args.backend = "nccl"
    else:
        if args.device == "cuda":
            raise SystemExit("ddp.py: %d ranks need %d GPUs and NCCL" % (args.ranks, args.ranks))
        args.backend = "gloo"
        print("ddp: %d GPU(s) for %d ranks: running on the CPU with gloo" % (gpus, args.ranks),
              flush=True)
    args.width = args.width or (4096 if args.backend == "nccl" else 256)
    mp.spawn(worker, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
