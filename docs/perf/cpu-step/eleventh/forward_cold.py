"""A convolution's forward, each layer of the call path alone, with the caches cold: before each call an 8 MB NumPy
pass (no OpenMP region) evicts them, as a training step's kernels do. A tiny Conv3d (1 x 4 x 2 x 4 x 4, 1 x 3 x 3,
4 channels, a bias), medians of 300 calls, five rounds taking turns; the median of the rounds (us).
"minimal": an autograd.Function whose forward saves its inputs and calls F.conv3d, called through the C++ apply from
a module's forward: the floor for a forward with a custom backward.

    PYTHONPATH=. python docs/perf/cpu-step/eleventh/forward_cold.py
    (on the session's first commit, which has no kernels.Conv, it times the modules only)
"""
import copy
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

import ops.torch as otorch
from ops.torch import functional, kernels

torch.set_num_threads(2)
junk = np.zeros(8 << 20, dtype=np.uint8)
x = torch.randn(1, 4, 2, 4, 4)
reference = torch.nn.Conv3d(4, 4, (1, 3, 3), padding=(0, 1, 1))
ours = otorch.convert(torch.nn.Sequential(copy.deepcopy(reference)))[0]
w, b = ours.weight, ours.bias
START = not hasattr(kernels, "Conv")  # run on the session's first commit: only the modules' calls
conv = None if START else kernels.Conv([1, 1, 1], [0, 0, 1, 1, 1, 1], [1, 1, 1], 1, False)


class Minimal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return F.conv3d(x, w, b, 1, (0, 1, 1))

    @staticmethod
    def backward(ctx, g):
        return None, None, None


raw = torch._C._FunctionBase.__dict__["apply"]
minimal_apply, conv_apply = raw.__get__(None, Minimal), raw.__get__(None, kernels._ConvFunction)


class MinimalModule(torch.nn.Conv3d):
    def forward(self, x):
        return minimal_apply(x, self.weight, self.bias)


minimal = MinimalModule(4, 4, (1, 3, 3), padding=(0, 1, 1))


def cold_median_us(call, n: int = 300) -> float:
    for _ in range(20):
        call()
    times = []
    for _ in range(n):
        np.add(junk, 1, out=junk)
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1e6 * statistics.median(times)


CALLS = {
    "F.conv3d": lambda: F.conv3d(x, w, b, 1, (0, 1, 1)),
    "Conv.convolve": lambda: conv.convolve(x, w, b),
    "Function.apply (Python wrapper)": lambda: kernels._ConvFunction.apply(x, w, b, conv),
    "C++ apply": lambda: conv_apply(x, w, b, conv),
    "Conv() (the eager path)": lambda: conv(x, w, b),
    "functional.conv3d": lambda: functional.conv3d(x, w, b, 1, (0, 1, 1)),
    "PyTorch's module": lambda: reference(x),
    "our module": lambda: ours(x),
    "minimal module": lambda: minimal(x),
}

if START:
    CALLS = {label: CALLS[label] for label in ("F.conv3d", "PyTorch's module", "our module", "minimal module")}

if __name__ == "__main__":
    rounds = {label: [] for label in CALLS}
    for _ in range(5):
        for label, call in CALLS.items():
            rounds[label].append(cold_median_us(call))
    for label, values in rounds.items():
        print(f"{label:32s} {statistics.median(values):6.1f} us  ({' '.join(f'{v:.0f}' for v in values)})")
