"""grouped_conv_bwd_weight's ``shifted`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``shifted``), on ``llvm-cpu``:
a stride-1 problem of one group as one batch matmul per tap over contiguous slices of x and grad_out flattened on a
common grid of rows, no gather; channels-last operands are moved channels-first first (a matmul over channels-last
slices, both operands reduced along their outer dim, ran 1.2-1.9x slower: docs/perf/zen4-shifted). The rows past an
image's edge on the inner axes are computed too (grad_out is zero there): ``waste`` says how many."""

from __future__ import annotations

import itertools
import math

from .. import dtypes
from .. import render as mlir
from ..layouts import join_activation
from ..problem import ConvBwdWeightProblem


def applies(problem: ConvBwdWeightProblem) -> bool:
    """One group, stride and dilation 1, and a filter of several taps."""
    return (problem.groups == 1 and set(problem.stride) == {1} and set(problem.dilation) == {1}
            and math.prod(problem.filter_spatial) > 1)


def _grid(problem: ConvBwdWeightProblem) -> tuple[list[int], list[int]]:
    """(x's grid: the windows' extent per axis, one row more on the first; the row strides of grad_out's grid)."""
    outputs, filters = problem.output_spatial, problem.filter_spatial
    inner = [o + f - 1 for o, f in zip(outputs[1:], filters[1:])]
    strides = [math.prod(inner[a:]) for a in range(len(inner) + 1)]
    return [outputs[0] + filters[0], *inner], strides


def render(problem: ConvBwdWeightProblem, element: str) -> str:
    """The form's contraction, ``%acc`` in grad_w's order ((k, c, f..) or (k, f.., c)), float32."""
    rank, n, c, k = problem.rank, problem.batch, problem.in_channels, problem.out_channels
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    grid, strides = _grid(problem)
    rows = outputs[0] * strides[0]
    lows = [pad[0] for pad in problem.padding]
    x_high = [g - i - low for g, i, low in zip(grid, problem.input_spatial, lows)]
    taps = list(itertools.product(*(range(f) for f in filters)))
    tap_type = mlir.tensor([n, k, c], dtypes.ACCUMULATOR)
    names = dict(batch=n, channels=c, rows=rows, out_channels=k, tap_type=tap_type,
                 taps_type=mlir.tensor([len(taps), n, k, c], dtypes.ACCUMULATOR),
                 x_flat_type=mlir.tensor([n, c, math.prod(grid)], element),
                 x_tap_type=mlir.tensor([n, c, rows], element),
                 grad_out_flat_type=mlir.tensor([n, k, rows], element))
    tap_text = "\n".join(mlir.render(
        "grouped_conv_bwd_weight.shifted_tap", **names, tap=t, next=t, after=t + 1 if t + 1 < len(taps) else "empty",
        offset=sum(f * s for f, s in zip(tap, strides))) for t, tap in reversed(list(enumerate(taps))))
    f = mlir.dims("f", rank)
    domain = ["n", "k", "c", *f]
    grid_shape = [*filters, n, k, c]
    moves, x, grad_out = _channels_first(problem, element)
    return moves + mlir.render(
        "grouped_conv_bwd_weight.shifted", **names, element=element, taps=tap_text, x=x[0], x_cf_type=x[1],
        grad_out=grad_out[0], grad_out_cf_type=grad_out[1],
        x_low=mlir.index_list([0, 0, *lows]), x_high=mlir.index_list([0, 0, *x_high]),
        x_index_args=", ".join(f"%i{a}: index" for a in range(rank + 2)),
        x_grid_type=mlir.tensor([n, c, *grid], element),
        flat_reassociation=[[0], [1], list(range(2, rank + 2))],
        grad_out_low=mlir.index_list([0] * (rank + 2)),
        grad_out_high=mlir.index_list([0, 0, 0, *(fl - 1 for fl in filters[1:])]),
        grad_out_grid_type=mlir.tensor([n, k, outputs[0], *grid[1:]], element),
        taps_reassociation=[list(range(rank)), [rank], [rank + 1], [rank + 2]],
        taps_shape=mlir.index_list(grid_shape), taps_grid_type=mlir.tensor(grid_shape, dtypes.ACCUMULATOR),
        images_read=mlir.affine_map(domain, [*f, "n", "k", "c"]),
        images_map=mlir.affine_map(domain, ["k", *f, "c"] if problem.channels_last else domain[1:]),
        images_iterators=mlir.iterators(["reduction"] + ["parallel"] * (len(domain) - 1)),
    )


def _channels_first(problem: ConvBwdWeightProblem, element: str) -> tuple[str, tuple, tuple]:
    """(lines, (x, type), (grad_out, type)): the operands channels-first, moved there where they are not."""
    if not problem.channels_last:
        return "", ("%x", "!x"), ("%grad_out", "!grad_out")
    rank = problem.rank
    first = mlir.index_list([0, rank + 1, *range(1, rank + 1)])
    x_type = mlir.tensor(join_activation(problem.batch, problem.input_spatial, problem.in_channels, False), element)
    grad_out_type = mlir.tensor(join_activation(problem.batch, problem.output_spatial, problem.out_channels, False),
                                element)
    lines = [mlir.render("common.transpose", result="%x_cf", source="%x", source_type="!x", result_type=x_type,
                         permutation=first),
             mlir.render("common.transpose", result="%grad_out_cf", source="%grad_out", source_type="!grad_out",
                         result_type=grad_out_type, permutation=first)]
    return "\n".join(lines) + "\n", ("%x_cf", x_type), ("%grad_out_cf", grad_out_type)


def waste(problem: ConvBwdWeightProblem) -> float:
    """The share of the rows computed that lie past an image's edge (their grad_out is zero)."""
    _, strides = _grid(problem)
    return 1 - math.prod(problem.output_spatial) / (problem.output_spatial[0] * strides[0])
