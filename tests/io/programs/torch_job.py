"""A small real PyTorch training job (CPU): a Dataset that reads its samples from files, a
DataLoader with 2 worker processes, and torch.save of the model each epoch.
Usage: /usr/bin/python3 torch_job.py DATA_DIR CKPT_DIR"""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES = 64
FEATURES = 256


class FileDataset(Dataset):
    """One sample per file, read on every access (like an image folder)."""

    def __init__(self, root):
        self.paths = [os.path.join(root, f"sample{i:03d}.bin") for i in range(SAMPLES)]

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        x = torch.frombuffer(bytearray(data), dtype=torch.float32)
        return x, int(i % 10)


def main():
    data_dir, ckpt_dir = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    for i in range(SAMPLES):
        path = os.path.join(data_dir, f"sample{i:03d}.bin")
        if not os.path.exists(path):
            torch.randn(FEATURES).numpy().tofile(path)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(FileDataset(data_dir), batch_size=8, shuffle=True, num_workers=2)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        torch.save(model.state_dict(), os.path.join(ckpt_dir, f"epoch{epoch}.pt"))
    print("done", float(loss))


if __name__ == "__main__":
    main()
