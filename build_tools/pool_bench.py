"""Pooling at memory speed, on the CPU: each pooling kernel of a converted step on a large layer, through
``ops.torch`` against PyTorch, and the bytes it moves over our time against the copy bandwidth of this run.

    python -m build_tools.pool_bench [--max 16,64,56,56] [--avg 4,32,16,64,64] [--repeat 40] [--threads 2]

Four calls, each checked against PyTorch's on the same tensors before it is timed:
- max pooling 3x3/2, padding 1, NCHW (``--max``; 12.8 MB at the default): its forward with the ReLU fused and int64
  indices, against PyTorch's ReLU then ``max_pool2d``; its backward from the indices (``iree_ck::max_pool2d_backward``
  against ``aten.max_pool2d_with_indices_backward``);
- average pooling 2x2x2/2, NCDHW (``--avg``; 33.6 MB): its forward with the ReLU fused, against PyTorch's ReLU then
  ``avg_pool3d``; its backward with the ReLU's mask (``iree_ck::avg_pool3d_backward`` with the saved input,
  against ``aten.avg_pool3d_backward`` then ``threshold_backward``).

Each call runs after a PyTorch parallel region (``layer_bench.between_ops``), as in a step; the two sides take
turns, the median of ``--repeat`` (ms). "of copy" is the call's tensors' bytes (read and written) over our time,
against the copy bandwidth ``bench.measure_ceilings`` measures in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

import ops.torch as otorch
from build_tools import bench
from build_tools.layer_bench import between_ops

MAX_SHAPE = (16, 64, 56, 56)
AVG_SHAPE = (4, 32, 16, 64, 64)
WARMUP = 5


@dataclass
class Case:
    """One pooling call: ours and PyTorch's (thunks), whether they agree, and the bytes ours must move."""

    name: str
    ours: Callable
    theirs: Callable
    agree: Callable[[], bool]
    moved: int


def nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def max_cases(shape: tuple) -> list[Case]:
    x = torch.randn(*shape)
    y, indices = otorch.max_pool2d(x, 3, 2, 1, return_indices=True, input_activation="relu")
    forward = Case("max_pool2d forward, ReLU fused",
                   lambda: otorch.max_pool2d(x, 3, 2, 1, return_indices=True, input_activation="relu"),
                   lambda: F.max_pool2d(torch.relu(x), 3, 2, 1, return_indices=True),
                   lambda: torch.equal(y, F.max_pool2d(torch.relu(x), 3, 2, 1)), nbytes(x, y, indices))
    g = torch.randn_like(y)
    ours = lambda: torch.ops.iree_ck.max_pool2d_backward(g, indices, None, list(x.shape), [3, 3], [2, 2], [1, 1],
                                                         [1, 1], False)
    theirs = lambda: torch.ops.aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False,
                                                                      indices)
    backward = Case("max_pool2d backward from the indices", ours, theirs, lambda: torch.equal(ours(), theirs()),
                    nbytes(g, indices, x))
    return [forward, backward]


def avg_cases(shape: tuple) -> list[Case]:
    v = torch.randn(*shape)
    a = otorch.avg_pool3d(v, 2, input_activation="relu")
    forward = Case("avg_pool3d forward, ReLU fused", lambda: otorch.avg_pool3d(v, 2, input_activation="relu"),
                   lambda: F.avg_pool3d(torch.relu(v), 2),
                   lambda: torch.allclose(a, F.avg_pool3d(torch.relu(v), 2), rtol=1e-6, atol=1e-7), nbytes(v, a))
    g = torch.randn_like(a)
    ours = lambda: torch.ops.iree_ck.avg_pool3d_backward(g, v, list(v.shape), [2, 2, 2], [2, 2, 2], [0, 0, 0], False,
                                                         True, None)
    theirs = lambda: torch.ops.aten.threshold_backward(
        torch.ops.aten.avg_pool3d_backward(g, v, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None), v, 0)
    backward = Case("avg_pool3d backward, ReLU fused", ours, theirs, lambda: torch.allclose(ours(), theirs()),
                    nbytes(g, v, v))
    return [forward, backward]


def median_seconds(call: Callable, repeat: int) -> float:
    times = []
    for _ in range(WARMUP + repeat):
        between_ops()
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times[WARMUP:])


def row(case: Case, repeat: int, copy_bytes_per_s: float) -> dict:
    """One case, checked, then timed: ours and PyTorch's (ms), the bytes, and our share of the copy bandwidth."""
    ok = bool(case.agree())
    ours, theirs = median_seconds(case.ours, repeat), median_seconds(case.theirs, repeat)
    return {"layer": case.name, "ok": ok, "ours_ms": 1e3 * ours, "torch_ms": 1e3 * theirs, "mb": case.moved / 1e6,
            "of_copy": case.moved / ours / copy_bytes_per_s}


def rows(max_shape: tuple = MAX_SHAPE, avg_shape: tuple = AVG_SHAPE, repeat: int = 40) -> tuple[float, list[dict]]:
    """The copy bandwidth measured now (bytes/s), and a row per case."""
    torch.manual_seed(0)
    copy = bench.measure_ceilings("local-task", "float32")["copy_bytes_per_s"]
    return copy, [row(case, repeat, copy) for case in (*max_cases(max_shape), *avg_cases(avg_shape))]


def line(r: dict) -> str:
    check = "ok" if r["ok"] else "DIFFERS from PyTorch"
    return (f"{r['layer']:40s} ours {r['ours_ms']:8.3f} ms  PyTorch {r['torch_ms']:8.3f} ms  "
            f"{r['torch_ms'] / r['ours_ms']:5.2f}x  {r['mb']:6.1f} MB  {100 * r['of_copy']:3.0f}% of copy  {check}")


def _shape(text: str) -> tuple:
    return tuple(int(n) for n in text.split(","))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=_shape, default=MAX_SHAPE, help="max pooling's input, N,C,H,W")
    parser.add_argument("--avg", type=_shape, default=AVG_SHAPE, help="average pooling's input, N,C,D,H,W")
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    copy, found = rows(args.max, args.avg, args.repeat)
    print(f"threads {args.threads}; copy bandwidth {copy / 1e9:.1f} GB/s")
    for r in found:
        print(line(r), flush=True)
    return 0 if all(r["ok"] for r in found) else 1


if __name__ == "__main__":
    sys.exit(main())
