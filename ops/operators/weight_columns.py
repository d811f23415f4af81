"""grouped_conv_bwd_weight's ``columns`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``columns``), for depthwise
problems in channels-first layouts on the GPU targets: partial sums kept along the last output axis, so that a
workgroup's neighbouring threads read neighbouring positions of x's and grad_out's contiguous rows, then summed. x
is read where it lies (a select for its padding): no padded copy of it."""

from __future__ import annotations

import math

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdWeightProblem
from ..validation import check

OP = "grouped_conv_bwd_weight"


def applies(problem: ConvBwdWeightProblem) -> bool:
    """Whether the columns form can take ``problem``: depthwise (C = K = 1 a group), channels-first."""
    return problem.kind == "depthwise" and not problem.channels_last


def dims(problem: ConvBwdWeightProblem) -> list[int]:
    """The partial sums' generic's dims: (plane = (n, g), tap = the filter's taps, o_last) and, from two spatial
    axes, o_rest (the other output axes, reduced)."""
    rest = math.prod(problem.output_spatial[:-1])
    return [problem.batch * problem.groups, math.prod(problem.filter_spatial), problem.output_spatial[-1],
            *([rest] if problem.rank > 1 else [])]


def render(problem: ConvBwdWeightProblem, element: str, config: str | None) -> str:
    """The two generics: columns[(n, g), f.., o_last] = sum over o_rest of x[n, g, s*o + d*f - p_lo] (zero off x)
    * grad_out[n, g, o]; then grad_w[g, 0, f..] = sum over (n, o_last). ``config`` pins the first."""
    check(applies(problem), f"{OP}: the columns form takes depthwise problems in channels-first layouts, but got "
                            f"{problem.name}")
    rank, n, groups = problem.rank, problem.batch, problem.groups
    plane, taps, last, *rest = dims(problem)
    domain = ["p", "t", "ol", *(["orest"] if rest else [])]
    widen_x, x32 = mlir.widen("%xv", element, "%x32")
    widen_g, g32 = mlir.widen("%gv", element, "%g32")
    positions = [_position(problem, a) for a in range(rank)]
    positions.append(mlir.indent(mlir.fold("common.and", "%on_x", [f"%on{a}" for a in range(rank)]), 4))
    columns_type = mlir.tensor([plane, taps, last], dtypes.ACCUMULATOR)
    return mlir.render(
        "grouped_conv_bwd_weight.columns", element=element, groups=groups,
        planes_reassociation=[[0, 1], *([list(range(2, rank + 1))] if rest else []), [rank + 1]],
        planes_type=mlir.tensor([plane, *rest, last], element),
        grad_out_map=mlir.affine_map(domain, ["p", *domain[3:], "ol"]),
        columns_map=mlir.affine_map(domain, domain[:3]), columns_type=columns_type,
        columns_iterators=mlir.iterators(["parallel"] * 3 + ["reduction"] * len(rest)),
        dispatch_config=f", compilation_info = {config}" if config else "",
        positions="\n".join(positions), clamped=", ".join(f"%r{a}" for a in range(rank)), on_x="%on_x",
        to_accumulator=mlir.indent(f"{widen_x}\n{widen_g}", 4) if widen_x else "    // f32 inputs: no extension",
        multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=x32, b=g32),
        split_shape=mlir.index_list([n, groups, taps, last]),
        split_type=mlir.tensor([n, groups, taps, last], dtypes.ACCUMULATOR),
        taps_type=mlir.tensor([groups, taps], dtypes.ACCUMULATOR),
        acc_reassociation=[[0, 1], list(range(2, rank + 2))], acc_shape=mlir.index_list(problem.weight_shape),
    )


def _position(problem: ConvBwdWeightProblem, axis: int) -> str:
    """``columns_position`` of ``axis``: i = s*o + d*f - p_lo, o and f decoded from the merged dims (o_rest and the
    taps row-major)."""
    rank, outputs, filters = problem.rank, problem.output_spatial, problem.filter_spatial
    last = axis == rank - 1
    o = "o" if last else _digit("o", math.prod(outputs[axis + 1:-1]), outputs[axis], axis == 0)
    f = _digit("t", math.prod(filters[axis + 1:]), filters[axis], axis == 0)
    terms = [_times(o, problem.stride[axis]), _times(f, problem.dilation[axis])]
    position = " + ".join(terms) + (f" - {problem.padding[axis][0]}" if problem.padding[axis][0] else "")
    return mlir.render("grouped_conv_bwd_weight.columns_position", axis=axis, o_dim=2 if last else 3,
                       position=position, size=problem.input_spatial[axis])


def _digit(merged: str, below: int, size: int, leading: bool) -> str:
    """One axis's index in a row-major merged dim: ``merged`` over the product of the axes after it (``below``),
    modulo its ``size`` unless it is the ``leading`` axis."""
    quotient = merged if below == 1 else f"{merged} floordiv {below}"
    return quotient if leading else f"{merged} mod {size}" if below == 1 else f"({quotient}) mod {size}"


def _times(expression: str, factor: int) -> str:
    return expression if factor == 1 else f"{expression} * {factor}" if " " not in expression else \
        f"({expression}) * {factor}"


def tile(problem: ConvBwdWeightProblem, threads: int, reduction: int) -> tuple[list[int], list[int], int] | None:
    """(workgroup, reduction, threads) of the columns generic, one thread a partial sum: every tap by the last output
    axis whole by as many planes as bring a workgroup nearest ``threads`` threads (at least one), ``reduction``
    steps of o_rest; where the taps by the row pass 1024 threads, the largest divisor of the taps that fits. None
    where a row alone passes 1024 threads, where one spatial axis leaves nothing to reduce, or where a dim is 1
    (IREE folds a unit dim away and rebuilds the generic without its configuration)."""
    plane, taps, last, *rest = dims(problem)
    row_taps = max((t for t in range(1, taps + 1) if taps % t == 0 and t * last <= 1024), default=0)
    if not row_taps or not rest or 1 in (plane, taps, last, *rest):
        return None
    planes = max(1, round(threads / (row_taps * last))) if row_taps == taps else 1
    while planes * row_taps * last > 1024:
        planes -= 1
    return [planes, row_taps, last], [reduction], planes * row_taps * last
