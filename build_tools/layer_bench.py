"""Every convolution and pooling layer of a converted training step, ours against PyTorch's own kernel, on the CPU.

    python -m build_tools.layer_bench [--models resnext2d,cnn3d,resnet,mobilenetv2] [--repeat 9] [--json out.json]
    python -m build_tools.layer_bench --models resnet50,mobilenet_v2 --config f32_nchw|f32_cl --batch 4   # torchvision
    python -m build_tools.layer_bench --call       # a tiny convolution's forward+backward: what a call costs
    python -m build_tools.layer_bench --in-step [--models resnext2d,cnn3d]   # the same calls alone and in a step

Each model (``train.py``'s two at their CPU batch; a ResNet-style and a MobileNetV2-style layer set at batch 16;
torchvision's models of ``model_layers.MODELS`` built by ``model_layers.build`` in ``--config`` at ``--batch``,
their layer subclasses given back their base class, ``model_layers.converted``) is converted with
``otorch.convert`` and runs one forward and backward while every kernel call is kept: the
kernel op (``iree_ck::conv_backward_input``, ``..._weight``, ``max_pool2d``, ...) and its very arguments. The
calls are grouped by layer (a convolution's input and weight gradients share grad_output), and each distinct
layer is timed as the step runs it (``KernelOp.run``: our host path and IREE's CPU runtime, destinations
allocated) and as PyTorch's step runs it (one ``aten.convolution_backward`` for the gradients we compute, with
ReLU's mask where ours fuses it; the pooling ops' own aten kernels, and ReLU's backward after them where ours
fuses it), on the same tensors, interleaved, the median
of ``--repeat``. Convolutions also get IREE's own batch_matmul of each gradient's implicit-GEMM shape
(``bench.gemm_spec``, summed: the column "GEMM"), pooling layers the bytes they must move over the time, against
the copy bandwidth measured in the same run. Both sides use ``--threads`` threads (IREE's local-task its own
workers).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
import time
from typing import Callable

import numpy as np
import torch
from torch import nn

import ops.torch as otorch
from build_tools import bench, model_layers
from build_tools.train import BATCH, MODELS
from ops import registry
from ops.torch import calls as calls_module, kernels


def resnet(classes: int = 10) -> nn.Module:
    """ResNet-style layers: a 7x7/2 stem, 3x3 convolutions, strided 3x3 and 1x1 shortcuts (7-32 spatial)."""
    def block(cin, cout, stride):
        return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.ReLU()]
    return nn.Sequential(
        nn.Conv2d(3, 32, 7, stride=2, padding=3, bias=False), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1),
        *block(32, 32, 1), *block(32, 64, 2), nn.Conv2d(64, 64, 1, bias=False), *block(64, 128, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes),
    )


def mobilenetv2(classes: int = 10) -> nn.Module:
    """MobileNetV2-style inverted residual layers: 1x1 expansions, depthwise 3x3 (strided and not), 1x1 projections."""
    def inverted(cin, cout, expand, stride):
        hidden = cin * expand
        return [nn.Conv2d(cin, hidden, 1, bias=False), nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, groups=hidden, bias=False), nn.ReLU6(),
                nn.Conv2d(hidden, cout, 1, bias=False)]
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.ReLU6(),
        *inverted(16, 24, 6, 2), *inverted(24, 24, 6, 1), *inverted(24, 32, 6, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes),
    )


LAYER_SETS = {"resnet": (resnet, (3, 64, 64), 16), "mobilenetv2": (mobilenetv2, (3, 64, 64), 16)}


def model_and_input(name: str, seed: int, config: str = "f32_nchw", batch: int | None = None):
    """(the converted model, one batch of its input) of ``name``: a layer set of ours, one of ``train.py``'s models
    (float32 NCHW, ``batch`` or its CPU batch), or torchvision's (``model_layers.MODELS``) in ``config`` at ``batch``
    (or the model's own)."""
    if name in model_layers.MODELS:
        reference, x = model_layers.build(name, config, "cpu", seed, batch)
        return model_layers.converted(reference)[0], x
    if name in LAYER_SETS:
        build, shape, default_batch = LAYER_SETS[name]
    else:
        (build, shape), default_batch = MODELS[name], BATCH["cpu"][name]
    torch.manual_seed(seed)
    return otorch.convert(build()), torch.randn(batch or default_batch, *shape)


@contextlib.contextmanager
def each_launch(wrap: Callable, wrap_pair: Callable):
    """``KernelOp.run`` replaced by ``wrap(run)`` and ``kernels.paired_gradients`` (a layer's two gradients in one
    launch) by ``wrap_pair(paired_gradients)`` (each the original) while the block runs."""
    run, paired = kernels.KernelOp.run, kernels.paired_gradients
    kernels.KernelOp.run, kernels.paired_gradients = wrap(run), wrap_pair(paired)
    try:
        yield
    finally:
        kernels.KernelOp.run, kernels.paired_gradients = run, paired


def kernel_calls(model: nn.Module, x: torch.Tensor) -> list:
    """(kernel op, its arguments) of every kernel call of one forward and backward, in order (a paired launch as
    its two calls, the input gradient's first)."""
    seen = []

    def keeping(run):
        def keep(self, *args):
            seen.append((self, args))
            return run(self, *args)
        return keep

    def keeping_pair(paired):
        def keep(input_args, weight_args):
            seen.extend([(kernels.conv_backward_input, input_args), (kernels.conv_backward_weight, weight_args)])
            return paired(input_args, weight_args)
        return keep

    with each_launch(keeping, keeping_pair):
        model(x).sum().backward()
    return seen


def problem_of(op, args):
    """The problem of kernel op ``op``'s call with ``args``, once that call has run (its ready call's)."""
    return op.ready[calls_module.signature(args)].problem


def _median_ms(times: list) -> float:
    return 1e3 * statistics.median(times)


class Layer:
    """One layer's kernel calls: a pooling call, or a convolution's gradient calls (the input's and the weight's,
    which share grad_output), with PyTorch's own kernel for the same gradients."""

    def __init__(self, calls: list):
        self.calls = calls

    @property
    def problems(self) -> list:
        return [problem_of(op, args) for op, args in self.calls]

    def ours(self) -> None:
        """The layer's calls as its backward makes them: a convolution's two as one paired call
        (``kernels.paired_gradients``: one launch, or through IREE's runtime two queued behind each other)."""
        if len(self.calls) == 2:
            kernels.paired_gradients(self.calls[0][1], self.calls[1][1])
            return
        for op, args in self.calls:
            op.run(*args)

    def pytorch(self) -> Callable:
        """``aten.convolution_backward`` computing the gradients the layer's calls compute, in one call (and ReLU's
        mask, where our input gradient fuses it), as PyTorch's step runs it; a pooling op's own aten kernel (its
        fallback); a convolution with asymmetric padding, its calls' fallbacks."""
        names = {op.name: args for op, args in self.calls}
        if not names.keys() <= {"conv_backward_input", "conv_backward_weight"}:
            steps = [_pytorch_pooling(op, args) for op, args in self.calls]
            return lambda: [step() for step in steps]
        # the kernel ops' leading arguments; the last, the split precision ours may take in float32, is ours alone
        # (PyTorch's kernel computes as PyTorch's own settings say)
        weight_args, input_args = names.get("conv_backward_weight"), names.get("conv_backward_input")
        if input_args:
            grad_output, weight, relu_output, input_size, stride, padding, dilation, groups = input_args[:8]
        else:
            relu_output, weight = None, torch.empty(weight_args[2], dtype=weight_args[0].dtype)
        if weight_args:
            x, grad_output, _, stride, padding, dilation, groups = weight_args[:7]
        else:
            x = torch.empty(input_size, dtype=grad_output.dtype).to(memory_format=_format_of(grad_output))
        pairs = list(zip(padding[::2], padding[1::2]))
        if any(lo != hi for lo, hi in pairs):
            return lambda: [op.fallback(*args) for op, args in self.calls]
        mask = [input_args is not None, weight_args is not None, False]
        symmetric = [lo for lo, _ in pairs]

        def call():
            grad_input, grad_weight, _ = torch.ops.aten.convolution_backward(
                grad_output, x, weight, None, stride, symmetric, dilation, False, [0] * len(pairs), groups, mask)
            if relu_output is not None:
                grad_input = torch.where(relu_output <= 0, 0, grad_input)
            return grad_input, grad_weight
        return call


def _pytorch_pooling(op, args) -> Callable:
    """A pooling call as PyTorch's step runs it: its aten kernel (our op's fallback), and where ours fuses the ReLU
    before the pooling, PyTorch's ReLU backward after it (``threshold_backward`` on the ReLU's output, which has the
    input's size: a stand-in of that size here, as max pooling's call holds only the pooled output)."""
    relu = {"max_pool2d_backward": 2, "avg_pool3d_backward": 1}.get(op.name)
    if relu is None or args[relu] is None:
        return lambda: op.fallback(*args)
    plain = list(args)
    plain[relu] = None
    grad_output = args[0]
    relu_output = torch.rand(plain[relu + 1], dtype=grad_output.dtype).contiguous(memory_format=_format_of(grad_output))
    return lambda: torch.ops.aten.threshold_backward(op.fallback(*plain), relu_output, 0)


def layers(calls: list) -> list[Layer]:
    """The step's calls by layer, each distinct layer once (``by_layer``)."""
    distinct, seen = [], set()
    for layer in by_layer(calls):
        names = tuple(p.name for p in layer.problems)
        if names not in seen:
            seen.add(names)
            distinct.append(layer)
    return distinct


def by_layer(calls: list) -> list[Layer]:
    """The step's calls by layer, in order: a convolution's backward calls its input gradient and then its weight
    gradient on the same grad_output (one paired launch)."""
    grouped, index = [], 0
    while index < len(calls):
        op, args = calls[index]
        following = calls[index + 1] if index + 1 < len(calls) else None
        if (op.name == "conv_backward_input" and following is not None and following[0].name == "conv_backward_weight"
                and following[1][1] is args[0]):
            grouped.append(Layer([calls[index], following]))
            index += 2
        else:
            grouped.append(Layer([calls[index]]))
            index += 1
    return grouped


def _format_of(t: torch.Tensor):
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
        return torch.channels_last_3d
    return torch.contiguous_format


_BETWEEN = torch.empty(1 << 19)
_SETTLED_S = 1e-3  # a 2 MB relu on a pool whose threads run where they should takes about 0.1 ms here


def between_ops() -> None:
    """What runs between two kernels of a step (a batch norm's or a ReLU's parallel region): PyTorch's OpenMP pool
    made and just used, as each side finds it in its own step. (Our calls release the pool; without this, PyTorch's
    next op would pay for making it again.) The region is run again until it is fast, at most 50 times: on some
    virtual machines a pool made right after the calling thread slept (our call's wait) puts its new thread on the
    calling thread's core, and every region stalls for a scheduler tick until the thread migrates
    (measured for stop 36: a relu on 2 MB took 92-95 us right after the release, 7.5 ms when the calling thread
    slept 0.5 ms between them, 64 times in 100); PyTorch's own step never makes its pool again."""
    for _ in range(50):
        started = time.perf_counter()
        torch.relu_(_BETWEEN)
        if time.perf_counter() - started < _SETTLED_S:
            return


def time_layer(layer: Layer, repeat: int) -> tuple[float, float]:
    """(ours, PyTorch's) milliseconds of the layer, interleaved, medians of ``repeat``, each after a parallel region
    of PyTorch's (``between_ops``)."""
    theirs_call = layer.pytorch()
    layer.ours(), theirs_call()
    ours, theirs = [], []
    for _ in range(repeat):
        for call, times in ((layer.ours, ours), (theirs_call, theirs)):
            between_ops()
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
    return _median_ms(ours), _median_ms(theirs)


def layer_row(model: str, layer: Layer, repeat: int, ceilings: dict, rng) -> dict:
    problems = layer.problems
    ours, theirs = time_layer(layer, repeat)
    row = {"model": model, "ops": [op.name for op, _ in layer.calls], "problems": [p.name for p in problems],
           "ours_ms": ours, "pytorch_ms": theirs, "speedup": theirs / ours}
    gemms = [bench.gemm_shape(p) for p in problems]
    if all(g is not None for g in gemms):
        row["gflops"] = sum(2 * math.prod(g) for g in gemms) / ours / 1e6
        row["gemm_ms"] = sum(1e3 * bench.iree_gemm_seconds(p, "local-task", repeat, rng) for p in problems)
    else:
        moved = sum(a.numel() * a.element_size() for _, args in layer.calls for a in args if isinstance(a, torch.Tensor))
        moved += sum(math.prod(shape) * np.dtype(dtype).itemsize for p in problems for shape, dtype in _results(p))
        row["gb_per_s"] = moved / ours / 1e6
        row["of_copy_bandwidth"] = moved / (ours / 1e3) / ceilings["copy_bytes_per_s"]
        row["megabytes"] = moved / 1e6
    return row


def _results(problem):
    return registry.module(problem).results(problem)


def bench_model(name: str, repeat: int, seed: int, ceilings: dict, config: str = "f32_nchw",
                batch: int | None = None) -> list[dict]:
    """A row (``layer_row``) per distinct layer of ``name``'s converted step (``model_and_input``), printed as it
    comes."""
    model, x = model_and_input(name, seed, config, batch)
    otorch.precompile(model, x)
    rows, rng = [], np.random.default_rng(seed)
    for layer in layers(kernel_calls(model, x)):
        rows.append(layer_row(name, layer, repeat, ceilings, rng))
        print(_line(rows[-1]), flush=True)
    return rows


def _line(r: dict) -> str:
    extra = (f"GEMM {r['gemm_ms']:7.2f} ms  {r['gflops']:6.1f} GFLOP/s" if "gemm_ms" in r
             else f"{r['megabytes']:6.1f} MB  {r['gb_per_s']:6.1f} GB/s = {100 * r['of_copy_bandwidth']:4.0f}% of copy")
    what = "+".join(op.split("_")[-1] if op.startswith("conv") else op for op in r["ops"])
    return (f"{r['model']:<15} {what:<20} {r['ours_ms']:8.2f} {r['pytorch_ms']:8.2f} {r['speedup']:6.2f}x  {extra}  "
            f"{r['problems'][0]}")


def tiny_call(repeat: int = 1000) -> tuple[float, float]:
    """(PyTorch's, ours) microseconds of a tiny convolution's forward and backward (1x4x8x8 input, 3x3, 4 channels):
    what a call costs beside its arithmetic. Medians of ``repeat``, interleaved, each after ``between_ops``."""
    torch.manual_seed(0)
    theirs = nn.Conv2d(4, 4, 3, padding=1, bias=False)
    ours = otorch.convert(nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False)))
    x = torch.randn(1, 4, 8, 8, requires_grad=True)
    times = {"pytorch": [], "ours": []}
    for step in range(repeat + 50):
        for label, model in (("pytorch", theirs), ("ours", ours)):
            between_ops()
            started = time.perf_counter()
            model(x).sum().backward()
            if step >= 50:  # after a warm-up (and the modules' first use)
                times[label].append(time.perf_counter() - started)
    return 1e6 * statistics.median(times["pytorch"]), 1e6 * statistics.median(times["ours"])


def _timed(record: list):
    """A wrapper (``each_launch``) that appends each launch's wall and calling-thread CPU time to ``record``."""
    def timing(run):
        def timed(*args):
            started, cpu = time.perf_counter(), time.thread_time()
            result = run(*args)
            record.append((time.perf_counter() - started, time.thread_time() - cpu))
            return result
        return timed
    return timing


def in_step(name: str, steps: int, seed: int, config: str = "f32_nchw", batch: int | None = None) -> dict:
    """The kernel launches of one forward and backward (a convolution's two gradients one paired launch), in
    milliseconds a step: alone (each launch back to back, the sum of medians) and inside ``steps`` whole steps
    (PyTorch's ops between them): the sum of each launch's median and the mean a step, with the calling thread's
    CPU time inside the launches."""
    model, x = model_and_input(name, seed, config, batch)
    otorch.precompile(model, x)
    launches = by_layer(kernel_calls(model, x))
    alone = sum(_median_ms([_timed_launch(layer) for _ in range(15)]) for layer in launches)
    record, step_times = [], []
    with each_launch(_timed(record), _timed(record)):
        for _ in range(steps + 1):
            started = time.perf_counter()
            model(x).sum().backward()
            step_times.append(time.perf_counter() - started)
    per_launch = [record[i::len(launches)][1:] for i in range(len(launches))]  # the first step left out
    return {"model": name, "launches": len(launches), "step_ms": _median_ms(step_times[1:]), "alone_ms": alone,
            "in_step_median_ms": sum(_median_ms([w for w, _ in c]) for c in per_launch),
            "in_step_mean_ms": 1e3 * sum(w for c in per_launch for w, _ in c) / steps,
            "calling_thread_cpu_ms": 1e3 * sum(t for c in per_launch for _, t in c) / steps}


def _timed_launch(layer: Layer) -> float:
    started = time.perf_counter()
    layer.ours()
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnext2d,cnn3d,resnet,mobilenetv2",
                        help=f"comma-separated: {', '.join([*MODELS, *LAYER_SETS])}, or torchvision's "
                             f"{', '.join(model_layers.MODELS)}")
    parser.add_argument("--config", default="f32_nchw", choices=list(model_layers.CONFIGS),
                        help="torchvision models' configuration (model_layers.CONFIGS; the others are float32 NCHW)")
    parser.add_argument("--batch", type=int, help="batch size (default: each model's own)")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--call", action="store_true", help="only time a tiny convolution's forward and backward")
    parser.add_argument("--in-step", action="store_true", help="only time the kernel calls alone and inside steps")
    parser.add_argument("--steps", type=int, default=20, help="steps for --in-step")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.call:
        pytorch, ours = tiny_call()
        print(f"a tiny convolution's forward+backward (1x4x8x8, 3x3): PyTorch {pytorch:.0f} us, ours {ours:.0f} us")
        return 0
    if args.in_step:
        for name in args.models.split(","):
            r = in_step(name, args.steps, args.seed, args.config, args.batch)
            print(f"{name}: forward+backward {r['step_ms']:.2f} ms; its {r['launches']} kernel launches: alone "
                  f"{r['alone_ms']:.2f} ms, in the step {r['in_step_median_ms']:.2f} ms (medians) and "
                  f"{r['in_step_mean_ms']:.2f} ms (mean), the calling thread's CPU inside them "
                  f"{r['calling_thread_cpu_ms']:.2f} ms")
        return 0
    ceilings = bench.measure_ceilings("local-task", "float32")
    print(f"threads {args.threads}; copy bandwidth {ceilings['copy_bytes_per_s'] / 1e9:.1f} GB/s; seed {args.seed}")
    print(f"{'model':<15} {'layer (calls)':<20} {'ours ms':>8} {'torch ms':>8} {'torch/ours':>7}")
    rows = [row for name in args.models.split(",")
            for row in bench_model(name, args.repeat, args.seed, ceilings, args.config, args.batch)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "ceilings": ceilings, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
