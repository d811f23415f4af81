"""Ours with a layer's two gradients joined into one module call, against the same step with two calls, interleaved
step by step (needs joined_calls.patch applied: ops/joined.py, kernels.JoinedOp).

    PYTHONPATH=. python docs/perf/cpu-step/forms-tried/pair/joined_ab.py resnext2d 30
"""
import copy, statistics, sys, time, torch
from torch import nn
import ops.torch as otorch
from build_tools.train import BATCH, MODELS
from ops.torch import kernels
torch.set_num_threads(2)
joined_run = kernels.JoinedOp.run
def two_calls(self, a, b):
    return self.first.run(*a), self.second.run(*b)
name, steps = sys.argv[1], int(sys.argv[2])
build, shape = MODELS[name]
torch.manual_seed(0)
ref = build(); ours = otorch.convert(copy.deepcopy(ref))
x, y = torch.randn(BATCH["cpu"][name], *shape), torch.randint(0, 10, (BATCH["cpu"][name],))
otorch.precompile(ours, x)
loss = nn.CrossEntropyLoss()
opt = {m: torch.optim.SGD(m.parameters(), lr=0.001, momentum=0.9) for m in (ref, ours)}
times = {"pytorch": [], "ours_two_calls": [], "ours_joined": []}
for step in range(steps + 3):
    for label in times:
        model = ref if label == "pytorch" else ours
        kernels.JoinedOp.run = two_calls if label == "ours_two_calls" else joined_run
        t = time.perf_counter()
        opt[model].zero_grad(set_to_none=True); loss(model(x), y).backward(); opt[model].step()
        if step >= 3: times[label].append(time.perf_counter() - t)
print(name, " ".join(f"{k} {1e3*statistics.median(v):.2f}" for k, v in times.items()), flush=True)
