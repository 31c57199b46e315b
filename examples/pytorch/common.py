"""Shared pieces of the PyTorch root-cause examples: device choice, a small model, timing.

Every example is a short training loop with one root cause of idle GPU time (Gao et al., ICSE'24)
and a --fix flag for its fix. On a machine with a CUDA GPU they run there; otherwise they fall
back to the CPU where the cause still exists on the host side (DataLoader, torch.save), and say so.
"""
import argparse
import sys
import time

import torch


def parser(doc):
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--fix", action="store_true", help="apply the fix")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cuda or cpu")
    p.add_argument("--steps", type=int, default=60, help="training steps")
    return p


def pick_device(choice):
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device (torch %s)" % torch.__version__)
    if choice == "cpu":
        # One intra-op thread: the CPU fallback shows the host side of the cause, and must not
        # fight the DataLoader workers or other jobs for cores.
        torch.set_num_threads(1)
        print("running on the CPU (no CUDA device): only the host side of the cause is shown",
              flush=True)
    return torch.device(choice)


def on_gpu(device, gpu_value, cpu_value):
    """Sizes for a GPU, and smaller ones for the CPU fallback (same shape, seconds not minutes)."""
    return gpu_value if device.type == "cuda" else cpu_value


def model(width=1024, depth=4):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, 10))
    return torch.nn.Sequential(*layers)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Timer:
    """Wall time of the training loop, printed as `NAME bad|fixed: N steps in S s`."""

    def __init__(self, name, fix, device):
        self.name, self.fix, self.device = name, fix, device

    def __enter__(self):
        sync(self.device)
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.monotonic() - self.start
        return False

    def report(self, steps):
        print("%s %s on %s: %d steps in %.3f s (%.2f ms/step)" %
              (self.name, "fixed" if self.fix else "bad", self.device.type, steps, self.seconds,
               1e3 * self.seconds / max(steps, 1)), flush=True)
