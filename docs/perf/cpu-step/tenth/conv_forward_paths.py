"""As conv_forward_paths_2d.py, on cnn3d's 3-D stem (4 x 3 x 8 x 32 x 32, 3 x 3 x 3 to 16 channels): medians and
10th percentiles of ROUNDS (argument, default 600) interleaved rounds (us).

    PYTHONPATH=. python docs/perf/cpu-step/tenth/conv_forward_paths.py [ROUNDS]
"""
import time, statistics, torch, torch.nn as nn, torch.nn.functional as F, sys
import ops.torch as otorch
from ops.torch import kernels, functional as Fn
torch.set_num_threads(2)
x = torch.randn(4, 3, 8, 32, 32)
conv = nn.Conv3d(3, 16, 3, padding=1, bias=False)
ours = otorch.convert(nn.Sequential(nn.Conv3d(3, 16, 3, padding=1, bias=False)))[0]
w = conv.weight
class Plain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv3d(x, w, None, 1, 1)
    @staticmethod
    def backward(ctx, g): return None, None
fs = {"F.conv3d": lambda: F.conv3d(x, w, None, 1, 1),
      "torch_conv": lambda: kernels.torch_conv(x, w, None, [1,1,1], [1,1,1,1,1,1], [1,1,1], 1),
      "Plain.apply": lambda: Plain.apply(x, w),
      "ConvFunction.apply": lambda: kernels._ConvFunction.apply(x, w, None, [1,1,1], [1,1,1,1,1,1], [1,1,1], 1, False),
      "kernels.conv": lambda: kernels.conv(x, ours.weight, None, [1,1,1], [1,1,1,1,1,1], [1,1,1], 1, False),
      "Fn.conv3d": lambda: Fn.conv3d(x, ours.weight, None, 1, 1),
      "ours._conv_forward": lambda: ours._conv_forward(x, ours.weight, None),
      "pt module": lambda: conv(x), "ours module": lambda: ours(x)}
v = {k: [] for k in fs}
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 600):
    for k, f in fs.items():
        s = time.perf_counter_ns(); y = f(); e = time.perf_counter_ns(); del y; v[k].append(e - s)
for k in fs: print(f"{k:20s} median {statistics.median(v[k][50:])/1e3:8.1f}  p10 {sorted(v[k][50:])[len(v[k][50:])//10]/1e3:8.1f} us")
import weakref
for name, m in (("pt", conv), ("ours", ours)):
    ptrs = []
    for _ in range(6):
        y = m(x); ptrs.append(y.data_ptr()); r = weakref.ref(y); del y
        ptrs.append("alive" if r() is not None else "freed")
    print(name, ptrs)
