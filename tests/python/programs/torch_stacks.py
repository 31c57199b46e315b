# A small PyTorch training loop (CPU) run under the tracer by tests/python/torch_stacks_test.cc:
# DataLoader workers read sample files and the loop checkpoints with torch.save every step; the
# test checks that those events carry the lines marked "MARK:name".
# Usage: torch_stacks.py DATA_DIR CKPT_DIR [--spawn]  (--spawn: workers started by spawn, not fork)
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

# The tracer takes at most one stack per 50 us on a thread: the open() before the marked read took
# it, so wait out the interval.
STACK_INTERVAL_S = 0.001


class FileDataset(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        with open(self.paths[index], "rb") as f:
            time.sleep(STACK_INTERVAL_S)
            data = f.read()  # MARK:dataset-read
        return torch.frombuffer(bytearray(data), dtype=torch.float32)


def train(data_dir, ckpt_dir, context):
    paths = []
    for i in range(8):
        path = os.path.join(data_dir, "sample%d.bin" % i)
        with open(path, "wb") as f:
            f.write(torch.full((256,), float(i)).numpy().tobytes())
        paths.append(path)
    model = torch.nn.Linear(256, 256)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(FileDataset(paths), batch_size=2, num_workers=2,
                        multiprocessing_context=context)
    for step, batch in enumerate(loader):
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()
        time.sleep(STACK_INTERVAL_S)
        torch.save(model.state_dict(), os.path.join(ckpt_dir, "step%d.pt" % step))  # MARK:save
    print("trained", step + 1, "steps")


if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2], "spawn" if "--spawn" in sys.argv[3:] else "fork")
