"""A 16 x 32 x 16 x 16, 3 x 3 convolution's forward through each layer of our path against PyTorch's, interleaved,
1500 rounds, medians (us): F.conv2d, a bare autograd.Function, our torch_conv, _ConvFunction, kernels.conv,
functional.conv2d, our module and PyTorch's.

    PYTHONPATH=. python docs/perf/cpu-step/tenth/conv_forward_paths_2d.py
"""
import time, statistics, torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(2)
x = torch.randn(16, 32, 16, 16)
w = nn.Parameter(torch.randn(32, 32, 3, 3))
class Plain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv2d(x, w, None, 1, 1)
    @staticmethod
    def backward(ctx, g): return None, None
class NoSave(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        return F.conv2d(x, w, None, 1, 1)
    @staticmethod
    def backward(ctx, g): return None, None
def nograd():
    with torch.no_grad():
        return F.conv2d(x, w, None, 1, 1)
fs = {"F.conv2d": lambda: F.conv2d(x, w, None, 1, 1), "no_grad": nograd, "Plain": lambda: Plain.apply(x, w),
      "NoSave": lambda: NoSave.apply(x, w), "F.conv2d detached w": lambda: F.conv2d(x, w.detach(), None, 1, 1)}
v = {k: [] for k in fs}
for i in range(1500):
    for k, f in fs.items():
        s = time.perf_counter_ns(); y = f(); v[k].append(time.perf_counter_ns() - s); del y
for k in fs: print(f"{k:22s} {statistics.median(v[k][100:])/1e3:8.1f} us")
import ops.torch as otorch
from ops.torch import kernels, functional as Fn
conv = nn.Conv2d(32, 32, 3, padding=1, bias=False)
ours = otorch.convert(nn.Sequential(nn.Conv2d(32, 32, 3, padding=1, bias=False)))[0]
fs = {"F.conv2d": lambda: F.conv2d(x, w, None, 1, 1), "pt module": lambda: conv(x), "ours module": lambda: ours(x),
      "Fn.conv2d": lambda: Fn.conv2d(x, w, None, 1, 1),
      "kernels.conv": lambda: kernels.conv(x, w, None, [1, 1], [1, 1, 1, 1], [1, 1], 1, False),
      "ConvFunction": lambda: kernels._ConvFunction.apply(x, w, None, [1, 1], [1, 1, 1, 1], [1, 1], 1, False),
      "torch_conv": lambda: kernels.torch_conv(x, w, None, [1, 1], [1, 1, 1, 1], [1, 1], 1), "Plain": lambda: Plain.apply(x, w)}
v = {k: [] for k in fs}
for i in range(1500):
    for k, f in fs.items():
        s = time.perf_counter_ns(); y = f(); v[k].append(time.perf_counter_ns() - s); del y
print("--")
for k in fs: print(f"{k:22s} {statistics.median(v[k][100:])/1e3:8.1f} us")
