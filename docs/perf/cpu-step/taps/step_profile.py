"""Where a step's time goes, ours against PyTorch's: torch.profiler over 10 steps of each (after 3 warm-up steps),
the self CPU time of each op summed and divided by the steps, largest differences first.

    PYTHONPATH=. python docs/perf/cpu-step/taps/step_profile.py resnext2d
"""
import copy
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import ops.torch as otorch
from build_tools import train

torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "resnext2d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
reference = build()
ours = otorch.convert(copy.deepcopy(reference))
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(ours, x)
STEPS = 10


LAYER_EVENTS = ("aten::convolution_backward", "_ConvFunctionBackward", "aten::max_pool2d_with_indices_backward",
                "_MaxPoolFunctionBackward", "aten::avg_pool3d_backward", "_AvgPoolFunctionBackward")


def per_op(model):
    for _ in range(3):
        model.zero_grad(); model(x).sum().backward()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(STEPS):
            model.zero_grad(); model(x).sum().backward()
    layers = [e for e in prof.events() if e.name in LAYER_EVENTS]
    per_step = len(layers) // STEPS
    inclusive = [sum(layers[s * per_step + i].cpu_time_total for s in range(STEPS)) / STEPS / 1e3 for i in range(per_step)]
    return {e.key: e.self_cpu_time_total / STEPS / 1e3 for e in prof.key_averages()}, inclusive


(theirs, their_layers), (mine, my_layers) = per_op(reference), per_op(ours)
print("backward layers in the step's order, inclusive CPU ms per step (PyTorch, ours):")
for i, (a, b) in enumerate(zip(their_layers, my_layers)):
    print(f"  {i:2d} {a:7.2f} {b:7.2f} {b - a:+7.2f}")
keys = sorted(set(theirs) | set(mine), key=lambda k: -abs(mine.get(k, 0) - theirs.get(k, 0)))
print(f"{name}: self CPU ms per step (the calling thread), {STEPS} steps")
print(f"{'op':58s} {'PyTorch':>8s} {'ours':>8s} {'diff':>8s}")
for k in keys[:25]:
    print(f"{k[:58]:58s} {theirs.get(k, 0):8.2f} {mine.get(k, 0):8.2f} {mine.get(k, 0) - theirs.get(k, 0):+8.2f}")
print(f"{'total':58s} {sum(theirs.values()):8.2f} {sum(mine.values()):8.2f}")
