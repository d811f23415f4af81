"""A model's training step (SGD as build_tools.train) three ways in one process, taking turns step by step:
PyTorch's model, the converted model as stop 40 converted it (each ReLU before a pooling layer stays PyTorch's),
and as now (that ReLU fused into the pooling's backward kernel). Medians of 40 steps, repeated; ms.

    PYTHONPATH=. python docs/perf/cpu-step/twelfth/relu_pool_ab.py cnn3d|resnext2d [repeats]
"""
import copy, statistics, sys, time, torch
from torch import nn
import torch.nn.functional as F
import ops.torch as otorch
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "cnn3d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build()
now = otorch.convert(copy.deepcopy(ref))
before = otorch.convert(copy.deepcopy(ref))
for i, layer in enumerate(before):  # undo the new fusion: the ReLU back in front of the pooling
    if isinstance(layer, (otorch.AvgPool3d, otorch.MaxPool2d)) and layer.input_activation == "relu":
        layer.input_activation, before[i - 1] = None, nn.ReLU()
batch = train.BATCH["cpu"][name]
x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))
models = {"pytorch": ref, "before": before, "now": now}
optimizers = {k: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for k, m in models.items()}
for m in models.values():
    otorch.precompile(m, x, progress=False)
def step(k):
    t = time.perf_counter()
    optimizers[k].zero_grad(set_to_none=True)
    F.cross_entropy(models[k](x), y).backward()
    optimizers[k].step()
    return time.perf_counter() - t
for _ in range(5):
    for k in models: step(k)
print(f"# {name}, batch {batch}")
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
    times = {k: [] for k in models}
    for _ in range(40):
        for k in models: times[k].append(step(k))
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print("  ".join(f"{k} {v:.3f}" for k, v in med.items()),
          f"| before/pytorch {med['before'] / med['pytorch']:.3f}  now/pytorch {med['now'] / med['pytorch']:.3f}")
