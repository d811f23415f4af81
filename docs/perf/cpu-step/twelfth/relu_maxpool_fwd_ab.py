"""resnext2d's training step (SGD as build_tools.train) three ways in one process, taking turns step by step:
PyTorch's model; the converted model with the ReLU before its MaxPool2d as PyTorch's torch.relu in front of the
max-pooling forward kernel (the ReLU's backward fused, as in this session's earlier commits); and with the ReLU
also inside the forward kernel, applied to each tap as it is read (now). Medians of 40 steps, repeated; ms.

    PYTHONPATH=. python docs/perf/cpu-step/twelfth/relu_maxpool_fwd_ab.py [repeats]
"""
import copy, statistics, sys, time, torch
import torch.nn.functional as F
import ops.torch as otorch
from ops.torch import kernels
from build_tools import train
torch.set_num_threads(2)
torch.manual_seed(0)
ref = train.resnext2d()
ours = otorch.convert(copy.deepcopy(ref))
fused_run = kernels.max_pool2d.run
def relu_first(input, kernel_size, stride, padding, dilation, ceil_mode, relu):  # PyTorch's ReLU, then the kernel
    return fused_run(torch.relu(input) if relu else input, kernel_size, stride, padding, dilation, ceil_mode, False)
x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
models = {"pytorch": (ref, None), "relu first": (ours, relu_first), "relu in kernel": (ours, fused_run)}
optimizers = {k: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for k, (m, _) in models.items()}
otorch.precompile(ours, x, progress=False)
def step(k):
    model, run = models[k]
    if run is not None:
        kernels.max_pool2d.run = run
    t = time.perf_counter()
    optimizers[k].zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    optimizers[k].step()
    return time.perf_counter() - t
for _ in range(5):
    for k in models: step(k)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    times = {k: [] for k in models}
    for _ in range(40):
        for k in models: times[k].append(step(k))
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print("  ".join(f"{k} {v:.3f}" for k, v in med.items()),
          f"| first/pytorch {med['relu first'] / med['pytorch']:.3f}  in kernel/pytorch {med['relu in kernel'] / med['pytorch']:.3f}")
