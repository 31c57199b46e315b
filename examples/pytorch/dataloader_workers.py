"""Data preprocessing on the training thread (the paper's "data preprocessing"): DataLoader workers 0 vs N.

Bad: DataLoader(num_workers=0) reads and transforms every sample on the training thread, and the
GPU waits. Fix (--fix): num_workers=N worker processes (and prefetching) prepare the next batches
while the GPU runs the current one.

  dataloader_workers.py [--fix] [--workers 2] [--steps 30] [--batch 16] [--data DIR]
"""
import os

import torch
from torch.utils.data import DataLoader, Dataset

import common

FEATURES = 1024


class FileDataset(Dataset):
    """One sample per file, read and transformed on every access, like an image folder."""

    def __init__(self, root, count):
        self.paths = [os.path.join(root, "sample%05d.bin" % i) for i in range(count)]

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            x = torch.frombuffer(bytearray(f.read()), dtype=torch.float32)
        # A costly CPU transform (decode/augment stands-in): a few FFT round trips.
        for _ in range(20):
            x = torch.fft.irfft(torch.fft.rfft(x), n=FEATURES)
        return x, i % 10


def make_data(root, count):
    os.makedirs(root, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(count):
        path = os.path.join(root, "sample%05d.bin" % i)
        if not os.path.exists(path):
            torch.randn(FEATURES, generator=g).numpy().tofile(path)


def main():
    p = common.parser(__doc__)
    p.set_defaults(steps=30)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers with --fix")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--data", default="data", help="dataset directory (created)")
    args = p.parse_args()
    device = common.pick_device(args.device)
    make_data(args.data, args.steps * args.batch)
    torch.manual_seed(0)
    net = common.model(FEATURES, depth=common.on_gpu(device, 4, 1)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loader = DataLoader(FileDataset(args.data, args.steps * args.batch), batch_size=args.batch,
                        shuffle=True, num_workers=args.workers if args.fix else 0,
                        **({"prefetch_factor": 4} if args.fix else {}),
                        pin_memory=device.type == "cuda")
    steps = 0
    with common.Timer("dataloader_workers", args.fix, device) as timer:
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            steps += 1
    timer.report(steps)


if __name__ == "__main__":
    main()
