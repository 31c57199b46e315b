"""Inefficient host-GPU transfer (the paper's top cause, 27.9%): pageable batches copied synchronously.

Bad: batches live in pageable host memory and `.to("cuda")` copies them synchronously: the copy
goes through a driver staging buffer at lower bandwidth, and the training thread (so the GPU's
next kernel) waits for it. Fix (--fix): pinned batches (DataLoader(pin_memory=True) does this)
copied with non_blocking=True on a side stream, overlapping the next batch's copy with compute.
On the CPU there is no host-GPU copy: the script says so and runs the loop only.

  pin_memory.py [--fix] [--steps 60] [--batch-mb 64] [--device auto|cuda|cpu]
"""
import torch

import common


def main():
    p = common.parser(__doc__)
    p.add_argument("--batch-mb", type=int, default=64, help="size of one input batch")
    args = p.parse_args()
    device = common.pick_device(args.device)
    width = common.on_gpu(device, 1024, 256)
    rows = max(1, (args.batch_mb << 20) // (4 * width))
    if device.type == "cpu":
        print("pin_memory: no host-GPU copies without a GPU; --fix changes nothing here")
        rows = min(rows, 256)
    pinned = args.fix and device.type == "cuda"
    # A few host batches, reused round robin, stand for the DataLoader's output.
    host = [torch.randn(rows, width, pin_memory=pinned) for _ in range(3)]
    net = common.model(width).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    copy_stream = torch.cuda.Stream(device) if pinned else None

    def load(i):
        if not pinned:
            return host[i % len(host)].to(device)  # pageable: synchronous copy
        with torch.cuda.stream(copy_stream):
            return host[i % len(host)].to(device, non_blocking=True)

    with common.Timer("pin_memory", args.fix, device) as timer:
        nxt = load(0)
        for step in range(args.steps):
            x = nxt
            if pinned:
                torch.cuda.current_stream(device).wait_stream(copy_stream)
                x.record_stream(torch.cuda.current_stream(device))
            if step + 1 < args.steps:
                nxt = load(step + 1)  # overlaps with this step's compute when pinned
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
    timer.report(args.steps)


if __name__ == "__main__":
    main()
