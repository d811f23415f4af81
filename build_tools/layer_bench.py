"""Every convolution and pooling layer of a converted training step, ours against PyTorch's own kernel, on the CPU.

    python -m build_tools.layer_bench [--models resnext2d,cnn3d,resnet,mobilenetv2] [--repeat 9] [--json out.json]

Each model (``train.py``'s two at their CPU batch; a ResNet-style and a MobileNetV2-style layer set at batch 16)
is converted with ``otorch.convert`` and runs one forward and backward while every kernel call is kept: the
kernel op (``iree_ck::conv_backward_input``, ``..._weight``, ``max_pool2d``, ...) and its very arguments. Then
each call is timed as the step makes it (``KernelOp.run``: our host path and IREE's CPU runtime, destinations
allocated) and as PyTorch's own kernel of the same op on the same tensors (the op's fallback: the gradient
``convolution_backward`` computes for that output mask, ``max_pool2d_with_indices``, ...), interleaved, the median
of ``--repeat``. Convolutions also get IREE's own batch_matmul of their implicit-GEMM shape (``bench.gemm_spec``;
the column "GEMM"), pooling layers the bytes they must move over the time, against the copy bandwidth measured in
the same run. Both sides use ``torch.get_num_threads()`` threads (IREE's local-task its own workers).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn

import ops.torch as otorch
from build_tools import bench
from build_tools.train import BATCH, MODELS
from ops.torch import kernels


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


def model_and_input(name: str, seed: int):
    if name in LAYER_SETS:
        build, shape, batch = LAYER_SETS[name]
    else:
        (build, shape), batch = MODELS[name], BATCH["cpu"][name]
    torch.manual_seed(seed)
    return otorch.convert(build()), torch.randn(batch, *shape)


def kernel_calls(model: nn.Module, x: torch.Tensor) -> list:
    """(kernel op, its arguments) of every kernel call of one forward and backward, in order."""
    seen, run = [], kernels.KernelOp.run

    def keep(self, *args):
        seen.append((self, args))
        return run(self, *args)

    kernels.KernelOp.run = keep
    try:
        model(x).sum().backward()
    finally:
        kernels.KernelOp.run = run
    return seen


def _median_ms(times: list) -> float:
    return 1e3 * statistics.median(times)


def time_call(op, args, repeat: int) -> tuple[float, float]:
    """(ours, PyTorch's) milliseconds of one call, interleaved, medians of ``repeat``."""
    op.run(*args), op.fallback(*args)
    ours, theirs = [], []
    for _ in range(repeat):
        for call, times in ((op.run, ours), (op.fallback, theirs)):
            started = time.perf_counter()
            call(*args)
            times.append(time.perf_counter() - started)
    return _median_ms(ours), _median_ms(theirs)


def layer_row(model: str, op, args, repeat: int, ceilings: dict, rng) -> dict:
    problem = op.ready[next(iter(k for k in op.ready if k == _signature(args)))].problem
    ours, theirs = time_call(op, args, repeat)
    row = {"model": model, "op": op.name, "problem": problem.name, "ours_ms": ours, "pytorch_ms": theirs,
           "speedup": theirs / ours}
    gemm = bench.gemm_shape(problem)
    if gemm is not None:
        groups, m, n, k = gemm
        row["gflops"] = 2 * groups * m * n * k / ours / 1e6
        row["gemm_ms"] = 1e3 * bench.iree_gemm_seconds(problem, "local-task", repeat, rng)
    else:
        moved = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
        moved += sum(math.prod(shape) * np.dtype(dtype).itemsize
                     for shape, dtype in _results(problem))
        row["gb_per_s"] = moved / ours / 1e6
        row["of_copy_bandwidth"] = moved / (ours / 1e3) / ceilings["copy_bytes_per_s"]
        row["megabytes"] = moved / 1e6
    return row


def _signature(args):
    from ops.torch import calls
    return calls.signature(args)


def _results(problem):
    from ops import registry
    return registry.module(problem).results(problem)


def bench_model(name: str, repeat: int, seed: int, ceilings: dict) -> list[dict]:
    model, x = model_and_input(name, seed)
    otorch.precompile(model, x)
    rows, done, rng = [], set(), np.random.default_rng(seed)
    for op, args in kernel_calls(model, x):
        key = (op.name, _signature(args))
        if key in done:
            continue
        done.add(key)
        rows.append(layer_row(name, op, args, repeat, ceilings, rng))
        print(_line(rows[-1]), flush=True)
    return rows


def _line(r: dict) -> str:
    extra = (f"GEMM {r['gemm_ms']:7.2f} ms  {r['gflops']:6.1f} GFLOP/s" if "gemm_ms" in r
             else f"{r['megabytes']:6.1f} MB  {r['gb_per_s']:6.1f} GB/s = {100 * r['of_copy_bandwidth']:4.0f}% of copy")
    return (f"{r['model']:<12} {r['op'].split('::')[-1]:<22} {r['ours_ms']:8.2f} {r['pytorch_ms']:8.2f} "
            f"{r['speedup']:6.2f}x  {extra}  {r['problem']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="resnext2d,cnn3d,resnet,mobilenetv2")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ceilings = bench.measure_ceilings("local-task", "float32")
    print(f"threads {args.threads}; copy bandwidth {ceilings['copy_bytes_per_s'] / 1e9:.1f} GB/s; seed {args.seed}")
    print(f"{'model':<12} {'kernel op':<22} {'ours ms':>8} {'torch ms':>8} {'torch/ours':>7}")
    rows = [row for name in args.models.split(",") for row in bench_model(name, args.repeat, args.seed, ceilings)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "ceilings": ceilings, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
