"""A model's training step (SGD as build_tools.train) three ways in one process, taking turns step by step:
PyTorch's model, the converted model with each convolution's two gradients as two launches (as in stop 40), and
as one paired launch (kernels.paired_gradients, now). Medians of 40 steps, repeated; ms.

    PYTHONPATH=. python docs/perf/cpu-step/twelfth/paired_ab.py cnn3d|resnext2d [repeats]
"""
import copy, statistics, sys, time, torch
import torch.nn.functional as F
import ops.torch as otorch
from ops.torch import kernels
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "cnn3d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build()
ours = otorch.convert(copy.deepcopy(ref))
paired = kernels.paired_gradients
two = lambda input_args, weight_args: (kernels.conv_backward_input.run(*input_args),  # noqa: E731
                                       kernels.conv_backward_weight.run(*weight_args))
batch = train.BATCH["cpu"][name]
x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))
models = {"pytorch": (ref, None), "two launches": (ours, two), "paired": (ours, paired)}
optimizers = {k: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for k, (m, _) in models.items()}
otorch.precompile(ours, x, progress=False)
def step(k):
    model, gradients = models[k]
    if gradients is not None:
        kernels.paired_gradients = gradients
    t = time.perf_counter()
    optimizers[k].zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
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
          f"| two/pytorch {med['two launches'] / med['pytorch']:.3f}  paired/pytorch {med['paired'] / med['pytorch']:.3f}")
