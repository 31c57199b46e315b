"""Synchronous checkpointing (the paper's 16.4% "model checkpointing"): torch.save on the training thread.

Bad: every --every steps the training thread calls torch.save(model.state_dict(), path) and the
GPU waits for the file write. Fix (--fix): the training thread only snapshots the weights to host
memory (a quick device-to-host copy) and a background thread writes the file (an "async save",
like torch.distributed.checkpoint.async_save), so training goes on while the file is written.

  checkpoint.py [--fix] [--steps 60] [--every 10] [--dir checkpoints] [--device auto|cuda|cpu]
"""
import os
import threading

import torch

import common


def save_checkpoint_sync(state, path):
    torch.save(state, path)


def snapshot(model):
    # Host copies, so the background writer never reads weights the next step is changing.
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def main():
    p = common.parser(__doc__)
    p.add_argument("--every", type=int, default=10, help="checkpoint every N steps")
    p.add_argument("--dir", default="checkpoints", help="where checkpoints go")
    p.add_argument("--width", type=int, default=0, help="layer width (0: 4096 GPU, 512 CPU)")
    args = p.parse_args()
    device = common.pick_device(args.device)
    args.width = args.width or common.on_gpu(device, 4096, 512)
    os.makedirs(args.dir, exist_ok=True)
    torch.manual_seed(0)
    net = common.model(args.width).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(common.on_gpu(device, 256, 32), args.width, device=device)
    y = torch.randint(0, 10, (x.shape[0],), device=device)
    writers = []
    with common.Timer("checkpoint", args.fix, device) as timer:
        for step in range(1, args.steps + 1):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            if step % args.every == 0:
                path = os.path.join(args.dir, "model_step%04d.pt" % step)
                if args.fix:
                    t = threading.Thread(target=torch.save, args=(snapshot(net), path),
                                         name="ckpt-writer")
                    t.start()
                    writers.append(t)
                else:
                    save_checkpoint_sync(net.state_dict(), path)
        for t in writers:
            t.join()
    timer.report(args.steps)


if __name__ == "__main__":
    main()
