"""The Python cost of a convolution's forward through ops.torch, piece by piece, on a 1x1x4x4 input (the convolution
itself a few microseconds), against PyTorch's module (best of 5 loops):
    PYTHONPATH=. python docs/perf/cpu-step/sixth/forward_python.py
"""
import timeit

import torch
import torch.nn.functional as F
from torch import nn

import ops.torch as otorch
from ops.torch import functional, kernels

torch.set_num_threads(2)
ref = nn.Conv2d(1, 1, 1, bias=False)
ours = otorch.convert(nn.Sequential(nn.Conv2d(1, 1, 1, bias=False)))[0]
x = torch.randn(1, 1, 4, 4, requires_grad=True)
w = ours.weight


def t(name, f, n=20000):
    f()
    print(f"{name:40s} {min(timeit.repeat(f, number=n, repeat=5)) / n * 1e6:7.1f} us")


t("pytorch module", lambda: ref(x))
t("F.conv2d", lambda: F.conv2d(x, w, None, 1, 0, 1, 1))
t("F.conv2d no grad x", lambda: F.conv2d(x.detach(), w.detach(), None, 1, 0, 1, 1))
t("ours module", lambda: ours(x))
t("functional.convolution", lambda: functional.convolution(2, x, w, None, 1, 0, 1, 1, None))
t("kernels.conv", lambda: kernels.conv(x, w, None, [1, 1], [0, 0, 0, 0], [1, 1], 1, False))
t("_ConvFunction.apply", lambda: kernels._ConvFunction.apply(x, w, None, [1, 1], [0, 0, 0, 0], [1, 1], 1, False))
t("torch_conv", lambda: kernels.torch_conv(x, w, None, [1, 1], [0, 0, 0, 0], [1, 1], 1))
t("_direct", lambda: kernels._direct(x, w, None))
class Id(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a.view_as(a)
    @staticmethod
    def backward(ctx, g):
        return g, None
t("trivial Function.apply", lambda: Id.apply(x, w))
class Id8(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, c, d, e, f, g, h):
        return a.view_as(a)
    @staticmethod
    def backward(ctx, g):
        return g, None, None, None, None, None, None, None
t("trivial Function.apply 8 args", lambda: Id8.apply(x, w, None, [1, 1], [0, 0, 0, 0], [1, 1], 1, False))
class Id4(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, c, d):
        return a.view_as(a)
    @staticmethod
    def backward(ctx, g):
        return g, None, None, None
p = ([1, 1], [0, 0, 0, 0], [1, 1], 1, False)
t("trivial Function.apply 4 args", lambda: Id4.apply(x, w, None, p))
