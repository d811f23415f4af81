"""What the tiny call (build_tools.layer_bench --call: a 1x4x8x8 convolution, 3x3, forward+backward) is made of,
each call after between_ops, medians (us), in four sections run one after the other:
1. ours against PyTorch, taking turns: the forward, the backward, both;
2. a stand-in autograd.Function (the same inputs as ours, its forward PyTorch's conv2d) against PyTorch, taking
   turns: its backward returning empty gradients (what a Python autograd node costs in a backward with no kernel),
   and with PyTorch's own convolution_backward inside it;
3. ours alone with its backward's pieces timed by wrapping them (the wrappers add their own cost):
   kernels._conv_backward, the paired call, the runner's parallel region;
4. the runner's region for the tiny layer's two kernels (4 and 5 commands) on one thread and on two, taking turns.

    PYTHONPATH=. python docs/perf/cpu-step/thirteenth/tiny_call_limits.py
"""
import functools, statistics, time
import torch
import torch.nn.functional as F
from torch import nn
import ops.torch as otorch
from ops.launch import cpu as cpu_launch
from ops.torch import calls, kernels
from build_tools.layer_bench import between_ops

torch.set_num_threads(2)
torch.manual_seed(0)
T = {}


def note(label, seconds):
    T.setdefault(label, []).append(seconds)


def wrap(owner, name, label):
    f = getattr(owner, name)

    @functools.wraps(f)
    def timed(*a, **k):
        t0 = time.perf_counter(); r = f(*a, **k); note(label, time.perf_counter() - t0); return r
    setattr(owner, name, timed)


class Stub(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, conv):
        ctx.save_for_backward(input, weight)
        return F.conv2d(input, weight, bias, 1, 1)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return torch.empty_like(a), torch.empty_like(b), None, None


class StubConv(Stub):
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        grads = torch.ops.aten.convolution_backward(g, a, b, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                    [True, True, False])
        return grads[0], grads[1], None, None


theirs = nn.Conv2d(4, 4, 3, padding=1, bias=False)
ours = otorch.convert(nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False)))
w = nn.Parameter(theirs.weight.detach().clone())
x = torch.randn(1, 4, 8, 8, requires_grad=True)

def alternate(label: str, sides: dict, steps: int = 2200) -> None:
    """``sides`` taking turns, each call after between_ops: the forward, the backward and both, per side."""
    for step in range(steps):
        for side, model in sides.items():
            between_ops()
            t0 = time.perf_counter(); y = model(x); t1 = time.perf_counter()
            s = y.sum(); t2 = time.perf_counter(); s.backward(); t3 = time.perf_counter()
            if step >= 200:
                for part, seconds in (("forward", t1 - t0), ("backward", t3 - t2), ("all", t3 - t0)):
                    note(f"{label}: {side}: {part}", seconds)


ours(x).sum().backward()  # its first use: compiled, checked, paired
alternate("1 ours against PyTorch", {"pytorch": theirs, "ours": ours})
alternate("2 a Python autograd node against PyTorch's", {"pytorch": theirs, "stub Function": lambda x: Stub.apply(x, w, None, 0),
          "stub Function + convolution_backward": lambda x: StubConv.apply(x, w, None, 0)})
wrap(kernels, "_conv_backward", "3 ours, its pieces: _conv_backward (Python and the launch)")
wrap(calls.Paired, "__call__", "3 ours, its pieces: the paired call")
wrap(cpu_launch.Kernels, "then", "3 ours, its pieces: the runner's region (2 threads)")
alternate("3 ours, its pieces", {"ours": ours})
timed_then = cpu_launch.Kernels.then
for step in range(2200):  # the runner's region on one thread or two, taking turns
    threads = 1 + step % 2
    cpu_launch.Kernels.then = lambda self, second, bases, second_bases, _, n=threads: timed_then(
        self, second, bases, second_bases, n)
    note_as = f"4 the runner's region, {threads} thread{'s' if threads > 1 else ''}"
    between_ops()
    ours(x).sum().backward()
    T.setdefault(note_as, []).append(T["3 ours, its pieces: the runner's region (2 threads)"].pop())
for label in sorted(T):
    values = T[label][200:] if label[0] in "34" else T[label]
    print(f"{label:80s} {1e6 * statistics.median(values):7.1f} us")
