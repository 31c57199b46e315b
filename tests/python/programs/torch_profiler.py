# torch.profiler inside a traced job (tests/python/torch_stacks_test.cc): it must still record and
# export its trace, Python stacks (with_stack) included; idlescope installs no profile or trace
# function that could take its place. Usage: torch_profiler.py TRACE_JSON
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def step(model):
    model(torch.randn(8, 64)).sum().backward()


model = torch.nn.Linear(64, 64)
with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
    for _ in range(3):
        step(model)
prof.export_chrome_trace(sys.argv[1])
# The profiler's own Python stacks: its events name this file's step() ("torch_profiler.py(12):
# step").
here = sum(1 for e in prof.events() if any("torch_profiler.py" in frame for frame in e.stack))
print("profiled", len(prof.key_averages()), "ops,", here, "with stacks in torch_profiler.py")
