"""grouped_conv_bwd_weight's ``columns`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``columns``), for depthwise
problems on the GPU targets: partial sums kept along one side (channels-first the last output axis, channels-last the
groups), so that a workgroup's neighbouring threads read neighbouring elements of x and grad_out, then summed. x is
read where it lies (a select for its padding): no padded copy of it."""

from __future__ import annotations

import math

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdWeightProblem
from ..validation import check

OP = "grouped_conv_bwd_weight"


def applies(problem: ConvBwdWeightProblem) -> bool:
    """Whether the columns form can take ``problem``: depthwise (C = K = 1 a group)."""
    return problem.kind == "depthwise"


def dims(problem: ConvBwdWeightProblem) -> list[int]:
    """The partial sums' generic's dims, (plane, tap = the filter's taps, side) kept, then the reduced ones:
    channels-first plane = (n, g), side = o_last and, from two spatial axes, o_rest (the other output axes) reduced;
    channels-last plane = (n, o_rest), side = g, o_last reduced."""
    rest, last = math.prod(problem.output_spatial[:-1]), problem.output_spatial[-1]
    taps = math.prod(problem.filter_spatial)
    if problem.channels_last:
        return [problem.batch * rest, taps, problem.groups, last]
    return [problem.batch * problem.groups, taps, last, *([rest] if problem.rank > 1 else [])]


def render(problem: ConvBwdWeightProblem, element: str, config: str | None) -> str:
    """The two generics: columns[plane, f.., side] = sum over the rest of x[n, s*o + d*f - p_lo, g] (zero off x)
    * grad_out[n, o, g]; then grad_w[g, f.., 0] = sum over the planes (and o_last). ``config`` pins the first."""
    check(applies(problem), f"{OP}: the columns form takes depthwise problems, but got {problem.name}")
    rank, groups, last_layout = problem.rank, problem.groups, problem.channels_last
    plane, taps, side, *reduced = dims(problem)
    domain = ["p", "t", "g", "ol"] if last_layout else ["p", "t", "ol", *(["orest"] if reduced else [])]
    widen_x, x32 = mlir.widen("%xv", element, "%x32")
    widen_g, g32 = mlir.widen("%gv", element, "%g32")
    positions = [_position(problem, a) for a in range(rank)]
    positions.append(mlir.indent(mlir.fold("common.and", "%on_x", [f"%on{a}" for a in range(rank)]), 4))
    columns_type = mlir.tensor([plane, taps, side], dtypes.ACCUMULATOR)
    clamped = [f"%r{a}" for a in range(rank)]
    return mlir.render(
        "grouped_conv_bwd_weight.columns", element=element, **_layout_parts(problem, domain),
        planes_type=mlir.tensor([plane, *reduced, side], element), plane_images=plane // problem.batch,
        columns_map=mlir.affine_map(domain, domain[:3]), columns_type=columns_type,
        columns_iterators=mlir.iterators(["parallel"] * 3 + ["reduction"] * len(reduced)),
        dispatch_config=f", compilation_info = {config}" if config else "",
        positions="\n".join(positions), on_x="%on_x",
        x_index=", ".join(["%n", *clamped, "%g"] if last_layout else ["%n", "%g", *clamped]),
        to_accumulator=mlir.indent(f"{widen_x}\n{widen_g}", 4) if widen_x else "    // f32 inputs: no extension",
        multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=x32, b=g32),
        split_type=mlir.tensor(_split_shape(problem), dtypes.ACCUMULATOR),
        split_shape=mlir.index_list(_split_shape(problem)),
        taps_type=mlir.tensor([groups, taps], dtypes.ACCUMULATOR),
        acc_reassociation=[[0], list(range(1, rank + 2))] if last_layout else [[0, 1], list(range(2, rank + 2))],
        acc_shape=mlir.index_list(problem.weight_shape),
    )


def _layout_parts(problem: ConvBwdWeightProblem, domain: list[str]) -> dict[str, object]:
    """The template's parts that follow the layout: grad_out's view (plane, o_rest, o_last) or (plane, o_last, g)
    and its map, how a plane gives g, and how the second generic reads the partial sums split (n, ..)."""
    rank, groups = problem.rank, problem.groups
    if problem.channels_last:
        return dict(planes_reassociation=[list(range(rank)), [rank], [rank + 1]],
                    grad_out_map=mlir.affine_map(domain, ["p", "ol", "g"]), channel="    %g = linalg.index 2 : index",
                    split_read="affine_map<(g, t, n, o) -> (n, o, t, g)>")
    return dict(planes_reassociation=[[0, 1], *([list(range(2, rank + 1))] if rank > 1 else []), [rank + 1]],
                grad_out_map=mlir.affine_map(domain, ["p", *domain[3:], "ol"]),
                channel=f"    %g = affine.apply affine_map<(p) -> (p mod {groups})>(%plane)",
                split_read="affine_map<(g, t, n, o) -> (n, g, t, o)>")


def _split_shape(problem: ConvBwdWeightProblem) -> list[int]:
    """The partial sums split (n, ..): channels-first (n, g, tap, o_last), channels-last (n, o_rest, tap, g)."""
    plane, taps, side, *_ = dims(problem)
    return [problem.batch, plane // problem.batch, taps, side]


def _position(problem: ConvBwdWeightProblem, axis: int) -> str:
    """``columns_position`` of ``axis``: i = s*o + d*f - p_lo, o and f decoded from the merged dims (the output
    axes but the last row-major in o_rest, channels-first, or after n in the plane, channels-last; the taps
    row-major)."""
    rank, outputs, filters = problem.rank, problem.output_spatial, problem.filter_spatial
    last = axis == rank - 1
    o = "o" if last else _digit("o", math.prod(outputs[axis + 1:-1]), outputs[axis],
                                axis == 0 and not problem.channels_last)
    f = _digit("t", math.prod(filters[axis + 1:]), filters[axis], axis == 0)
    terms = [_times(o, problem.stride[axis]), _times(f, problem.dilation[axis])]
    position = " + ".join(terms) + (f" - {problem.padding[axis][0]}" if problem.padding[axis][0] else "")
    o_dim = (3 if last else 0) if problem.channels_last else (2 if last else 3)
    return mlir.render("grouped_conv_bwd_weight.columns_position", axis=axis, o_dim=o_dim, position=position,
                       on_and_clamped=mlir.on_and_clamped(axis, f"%i{axis}", problem.input_spatial[axis],
                                                          f"%r{axis}"))


def _digit(merged: str, below: int, size: int, leading: bool) -> str:
    """One axis's index in a row-major merged dim: ``merged`` over the product of the axes after it (``below``),
    modulo its ``size`` unless it is the ``leading`` axis."""
    quotient = merged if below == 1 else f"{merged} floordiv {below}"
    return quotient if leading else f"{merged} mod {size}" if below == 1 else f"({quotient}) mod {size}"


def _times(expression: str, factor: int) -> str:
    return expression if factor == 1 else f"{expression} * {factor}" if " " not in expression else \
        f"({expression}) * {factor}"


def tile(problem: ConvBwdWeightProblem, threads: int, reduction: int,
         channels: int = 32) -> tuple[list[int], list[int], int] | None:
    """(workgroup, reduction, threads) of the columns generic, one thread a partial sum: every tap by the side (the
    last output axis whole, channels-first; channels-last the largest power of two up to ``channels`` that divides
    the groups) by as many planes as bring a workgroup nearest ``threads`` threads (at least one), ``reduction``
    steps of the reduced dim; where the taps by the side pass 1024 threads, the largest divisor of the taps that
    fits. None where the side alone passes 1024 threads, where nothing is left to reduce, or where a dim is 1 (IREE
    folds a unit dim away and rebuilds the generic without its configuration)."""
    plane, taps, side, *reduced = dims(problem)
    if problem.channels_last:
        side = max(c for c in (1, 2, 4, 8, 16, 32, 64, 128, 256) if c <= max(channels, 1) and side % c == 0)
    row_taps = max((t for t in range(1, taps + 1) if taps % t == 0 and t * side <= 1024), default=0)
    if not row_taps or not reduced or 1 in (plane, taps, side, *reduced):
        return None
    planes = max(1, round(threads / (row_taps * side))) if row_taps == taps else 1
    while planes * row_taps * side > 1024:
        planes -= 1
    return [planes, row_taps, side], [reduction], planes * row_taps * side
