"""Inappropriate batch size (the paper's 25.6%): many small steps that leave the GPU mostly idle.

Bad: --batch 16 samples per step: every kernel has fewer blocks than the GPU has SMs and the step
is dominated by launch and Python overhead, so the GPU idles between short kernels. Fix (--fix):
the same samples in batches of --fixed-batch (1024): 64x fewer, fuller steps.

  batch_size.py [--fix] [--samples 16384] [--batch 16] [--fixed-batch 1024] [--device ...]
"""
import torch

import common


def main():
    p = common.parser(__doc__)
    p.add_argument("--samples", type=int, default=0, help="samples (0: 16384 GPU, 2048 CPU)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--fixed-batch", type=int, default=1024)
    args = p.parse_args()
    device = common.pick_device(args.device)
    samples = args.samples or common.on_gpu(device, 16384, 2048)
    batch = args.fixed_batch if args.fix else args.batch
    width = common.on_gpu(device, 1024, 256)
    net = common.model(width).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    data = torch.randn(samples, width, device=device)
    labels = torch.randint(0, 10, (samples,), device=device)
    steps = 0
    with common.Timer("batch_size", args.fix, device) as timer:
        for i in range(0, samples, batch):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(data[i:i + batch]), labels[i:i + batch])
            loss.backward()
            opt.step()
            steps += 1
    print("batch %d: %d samples in %d steps" % (batch, samples, steps))
    timer.report(steps)


if __name__ == "__main__":
    main()
