"""grouped_conv_bwd_weight's ``columns`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``columns``), for depthwise
problems in channels-first layouts on the GPU targets: partial sums kept along the last output axis, so that a
workgroup's neighbouring threads read neighbouring positions of x's and grad_out's contiguous rows, then summed."""

from __future__ import annotations

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdWeightProblem
from ..validation import check

OP = "grouped_conv_bwd_weight"


def applies(problem: ConvBwdWeightProblem) -> bool:
    """Whether the columns form can take ``problem``: depthwise (C = K = 1 a group), channels-first."""
    return problem.kind == "depthwise" and not problem.channels_last


def render(problem: ConvBwdWeightProblem, element: str, x_value: str, config: str | None) -> str:
    """The two generics: columns[n, g, f.., o_last] = sum over the other output axes of x_padded[n, g, s*o + d*f]
    * grad_out[n, g, o]; then grad_w[g, 0, f..] = sum over (n, o_last). ``config`` pins the first."""
    check(applies(problem), f"{OP}: the columns form takes depthwise problems in channels-first layouts, but got "
                            f"{problem.name}")
    rank, n, groups = problem.rank, problem.batch, problem.groups
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    domain = ["n", "g", *f, o[-1], *o[:-1]]
    x = ["n", "g", *map(mlir.window, o, f, problem.stride, problem.dilation)]
    columns = ["n", "g", *f, o[-1]]
    widen_x, x32 = mlir.widen("%xv", element, "%x32")
    widen_g, g32 = mlir.widen("%gv", element, "%g32")
    sum_domain = ["g", *f, "n", o[-1]]
    filters = list(problem.filter_spatial)
    return mlir.render(
        "grouped_conv_bwd_weight.columns", element=element, x_value=x_value,
        columns_type=mlir.tensor([n, groups, *filters, problem.output_spatial[-1]], dtypes.ACCUMULATOR),
        grad_out_map=mlir.affine_map(domain, ["n", "g", *o]), x_map=mlir.affine_map(domain, x),
        columns_map=mlir.affine_map(domain, columns),
        columns_iterators=mlir.iterators(["parallel"] * (rank + 3) + ["reduction"] * (rank - 1)),
        dispatch_config=f", compilation_info = {config}" if config else "",
        to_accumulator=mlir.indent(f"{widen_x}\n{widen_g}", 4) if widen_x else "    // f32 inputs: no extension",
        multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=x32, b=g32),
        sum_map=mlir.affine_map(sum_domain, columns), sum_out_map=mlir.affine_map(sum_domain, ["g", *f]),
        sum_iterators=mlir.iterators(["parallel"] * (rank + 1) + ["reduction"] * 2),
        taps_type=mlir.tensor([groups, *filters], dtypes.ACCUMULATOR),
        acc_reassociation=[[0, 1], *([a] for a in range(2, rank + 2))],
        acc_shape=mlir.index_list(problem.weight_shape),
    )


def tile(problem: ConvBwdWeightProblem, groups: int, reduction: int) -> tuple[list[int], list[int], int] | None:
    """(workgroup, reduction, threads) of the columns generic, one thread a partial sum: ``groups`` groups (1 where
    that would pass 1024 threads) by the first filter axis whole by the last output axis whole, ``reduction`` rows
    of the first output axis a step (the other reduced axes one). None where a row alone passes 1024 threads, where
    one spatial axis leaves nothing to reduce, or where a unit dim (one image) would be folded away with the
    configuration (IREE rebuilds such an op without it)."""
    taps, last = problem.filter_spatial[0], problem.output_spatial[-1]
    rank = problem.rank
    groups = next((g for g in (groups, 1) if g * taps * last <= 1024), 0)
    if not groups or problem.batch == 1 or rank == 1:
        return None
    workgroup = [1, groups, taps, *[1] * (rank - 1), last]
    return workgroup, [reduction] + [1] * (rank - 2), groups * taps * last
