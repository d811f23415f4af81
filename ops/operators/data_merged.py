"""A depthwise backward-data with every stride phase in one ``linalg.generic`` (``mlir/data_merged.mlir``):
grouped_conv_bwd_data's ``merged`` form. grad_in is viewed phase-major ((row, residue) per spatial axis, a free
reshape), and one depthwise contraction of the zero-padded grad_out with the phase filter writes it, each position
once (``geometry.merged_phase_axis``). The GPU targets take it (``policy._phase_forms``): one dispatch where the
stride-phase form took a convolution per phase and an interleave."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import render as mlir
from ..geometry import MergedAxis, merged_phase_axis
from ..layouts import join_activation
from ..problem import ConvBwdDataProblem
from ..validation import check

OP = "grouped_conv_bwd_data"


def applies(problem: ConvBwdDataProblem) -> bool:
    """Whether the merged form can take ``problem``: depthwise, no epilogue nor D tensors, dilation 1, and each
    input size a multiple of its stride (grad_in's phase-major view is then a reshape)."""
    return (problem.kind == "depthwise" and problem.epilogue is None and not problem.d_shapes
            and set(problem.dilation) == {1}
            and all(size % s == 0 for size, s in zip(problem.input_spatial, problem.stride)))


def axes(problem: ConvBwdDataProblem) -> list[MergedAxis]:
    return [merged_phase_axis(size, out, f, s, lo) for size, out, f, s, (lo, _) in
            zip(problem.input_spatial, problem.output_spatial, problem.filter_spatial, problem.stride, problem.padding)]


def phase_dims(problem: ConvBwdDataProblem, rows: list[int], residues: list[int]) -> list[list[int]]:
    """Each axis's dims of the phase-major view: (rows, residues) along a strided axis, (rows,) along one of stride
    1, whose one residue would be a unit dim (IREE folds unit dims away and rebuilds the contraction without its
    pinned configuration)."""
    return [[m, r] if s > 1 else [m] for m, r, s in zip(rows, residues, problem.stride)]


def view_dims(problem: ConvBwdDataProblem) -> list[int]:
    """grad_in's phase-major view: (n, (m, r) per axis, g) channels-last, (n, g, (m, r) per axis) channels-first;
    m alone along an axis of stride 1 (``phase_dims``)."""
    spatial = sum(phase_dims(problem, [a.rows for a in axes(problem)], list(problem.stride)), [])
    return list(join_activation(problem.batch, spatial, problem.groups, problem.channels_last))


def taps(problem: ConvBwdDataProblem) -> list[int]:
    """The contraction's reduced dims: each axis's taps."""
    return [a.taps for a in axes(problem)]


def render(problem: ConvBwdDataProblem, transients: str, config: str | None = None, in_place: bool = False) -> str:
    """The problem's module; ``config``: an ``#iree_codegen.compilation_info`` pinned on the contraction
    (``data_tiles.merged_tiles``); ``in_place``: grad_out read where it lies, not padded."""
    check(applies(problem), f"{OP}: the merged form takes depthwise problems of dilation 1 without an epilogue, "
                            f"each input size a multiple of its stride, but got {problem.name}")
    element = dtypes.mlir_element_type(problem.dtype)
    merged, rank = axes(problem), problem.rank
    padded = [o + a.pad[0] + a.pad[1] for o, a in zip(problem.output_spatial, merged)]
    padded_shape = join_activation(problem.batch, padded, problem.groups, problem.channels_last)
    view = view_dims(problem)
    first = 1 if problem.channels_last else 2  # the view's first spatial dim
    pairs = _axis_positions(problem, first)  # each axis's (m, r), or m
    on = _on(problem)
    masked = not on.all()
    read = "contraction_in_place" if in_place else "contraction" if masked else "contraction_every_tap"
    reassociation = [[0], *pairs, [len(view) - 1]] if problem.channels_last else [[0], [1], *pairs]
    return mlir.render(
        "data_merged", rank=rank, layout=problem.layout, problem_name=problem.name, function=problem.name,
        element=element, transients=transients,
        grad_out_type=mlir.tensor(problem.output_shape, element),
        weight_type=mlir.tensor(problem.weight_shape, element), grad_in_type=mlir.tensor(problem.input_shape, element),
        padded_type=mlir.tensor(padded_shape, element),
        filter_type=mlir.tensor(_filter_dims(problem), element), on_type=mlir.tensor(_tap_dims(problem), "i8"),
        on=mlir.render("data_merged.tap_mask", on_values=str(on.tolist()).replace(" ", "")) if masked
        else "  // every (r, u) is a tap on the filter: no mask",
        view_type=mlir.tensor(view, element),
        pad="  // grad_out is read where it lies (no padded copy)" if in_place else _zero_pad(problem, merged, element),
        **_filter(problem), reassociation=reassociation, view_shape=mlir.index_list(view),
        accumulate=_accumulate(problem, element, config, read, masked),
    )


def _zero_pad(problem: ConvBwdDataProblem, merged: list[MergedAxis], element: str) -> str:
    """grad_out zero-padded into %padded by each of the ``merged`` axes' pads."""
    pad = [join_activation(0, sides, 0, problem.channels_last) for sides in zip(*(a.pad for a in merged))]
    return mlir.indent(mlir.zero_pad("%padded", "%grad_out", pad[0], pad[1], element, "!grad_out", "!padded",
                                     zero="%zero"), 2)


def _axis_positions(problem: ConvBwdDataProblem, first: int) -> list[list[int]]:
    """Each axis's dim positions from ``first`` on: two ((m, r) or (r, u)) along a strided axis, one (no residue)
    along one of stride 1."""
    positions, at = [], first
    for s in problem.stride:
        count = 2 if s > 1 else 1
        positions.append(list(range(at, at + count)))
        at += count
    return positions


def _tap_dims(problem: ConvBwdDataProblem) -> list[int]:
    """(r, u) per axis: residues and taps; u alone along an axis of stride 1."""
    return [size for a, s in zip(axes(problem), problem.stride) for size in ((s, a.taps) if s > 1 else (a.taps,))]


def _filter_dims(problem: ConvBwdDataProblem) -> list[int]:
    """The phase filter: ((r, u) per axis, g) channels-last, (g, (r, u) per axis) channels-first."""
    return [*_tap_dims(problem), problem.groups] if problem.channels_last else [problem.groups, *_tap_dims(problem)]


def _on(problem: ConvBwdDataProblem) -> np.ndarray:
    """Which (r, u) per axis is a tap on the filter (1): 0 <= first_tap + r - s*u < F on every axis."""
    on = np.ones((), dtype=np.int8)
    for a, s, f in zip(axes(problem), problem.stride, problem.filter_spatial):
        axis = np.array([[0 <= a.first_tap + r - s * u < f for u in range(a.taps)] for r in range(s)], dtype=np.int8)
        on = np.multiply.outer(on, axis if s > 1 else axis[0])
    return on


def _on_filter(problem: ConvBwdDataProblem, first: int) -> tuple[str, str]:
    """(lines, i1 value): each axis's tap f = first_tap + r - s*u, from the gather's (r, u) dims (from ``first`` on;
    r = 0 along an axis of stride 1), and whether every one is on the filter."""
    dims = _axis_positions(problem, first)
    lines = [mlir.render("data_merged.filter_tap", axis=a, u_dim=d[-1], stride=s, first_tap=m.first_tap, window=f,
                         residue=f"linalg.index {d[0]}" if s > 1 else "arith.constant 0")
             for a, (m, s, f, d) in enumerate(zip(axes(problem), problem.stride, problem.filter_spatial, dims))]
    if problem.rank == 1:
        return "\n".join(lines), "%on0"
    lines.append(mlir.indent(mlir.fold("common.and", "%on_filter", [f"%on{a}" for a in range(problem.rank)]), 4))
    return "\n".join(lines), "%on_filter"


def _filter(problem: ConvBwdDataProblem) -> dict:
    """The phase filter's gather: its map, iterators, per-axis taps and the weight read."""
    rank, count = problem.rank, len(_filter_dims(problem))
    first = 0 if problem.channels_last else 1  # the filter's (r, u) dims follow
    taps, on = _on_filter(problem, first)
    group = f"    %g = linalg.index {count - 1 if problem.channels_last else 0} : index"
    read = [f"%f{a}_read" for a in range(rank)]
    extract = ["%g", *read, "%c0"] if problem.channels_last else ["%g", "%c0", *read]
    domain = mlir.dims("d", count)
    return dict(filter_map=mlir.affine_map(domain, domain), filter_iterators=mlir.iterators(["parallel"] * count),
                filter_taps=taps + "\n" + group, extract=mlir.index_list(extract), on_filter=on)


def _accumulate(problem: ConvBwdDataProblem, element: str, config: str | None, read: str, masked: bool) -> str:
    """The contraction over the taps, into grad_in's view: float32 sums straight into it, or (16-bit) into a
    float32 accumulator narrowed into it; ``read``: the contraction's fragment (the padded grad_out masked by the
    taps on the filter, ``contraction``; with no mask where every (r, u) is on it, ``contraction_every_tap``; or
    grad_out read where it lies, ``contraction_in_place``, the tap mask read beside it where ``masked``)."""
    rank, merged = problem.rank, axes(problem)
    count = len(view_dims(problem))
    view_domain = mlir.dims("d", count)
    u = mlir.dims("u", rank)
    n = "d0"
    positions = _axis_positions(problem, 1 if problem.channels_last else 2)  # (m, r), or m
    dims = [[view_domain[d] for d in axis] for axis in positions]
    g = view_domain[-1] if problem.channels_last else view_domain[1]
    rows = [mlir.term(f"{mr[0]} + {ua}", 1, ax.shift + ax.pad[0]) for mr, ua, ax in zip(dims, u, merged)]
    read_map = [n, *rows, g] if problem.channels_last else [n, g, *rows]
    taps = [d for mr, ua in zip(dims, u) for d in (*mr[1:], ua)]
    filter_read = [*taps, g] if problem.channels_last else [g, *taps]
    domain = [*view_domain, *u]
    narrow = element != "f32"
    acc_type = mlir.tensor(view_dims(problem), "f32") if narrow else "!view"
    widen_g, g32 = mlir.widen("%g", element, "%g32")
    widen_w, w32 = mlir.widen("%w", element, "%w32")
    contraction = mlir.render(
        f"data_merged.{read}", result="%result_acc" if narrow else "%result",
        read_map=mlir.affine_map(domain, read_map), filter_read_map=mlir.affine_map(domain, filter_read),
        view_map=mlir.affine_map(domain, view_domain), on_read_map=mlir.affine_map(domain, taps),
        iterators=mlir.iterators(["parallel"] * count + ["reduction"] * rank),
        acc_init="%acc_zero" if narrow else "%view_zero", acc_type=acc_type, element=element,
        config=f" attrs = {{compilation_info = {config}}}" if config else "",
        widen=mlir.indent("\n".join(line for line in (widen_g, widen_w) if line), 4),
        multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=g32, b=w32),
        **(_in_place(problem, [axis[0] for axis in positions], count,
                     (mlir.affine_map(domain, filter_read), mlir.affine_map(domain, taps)), masked)
           if read == "contraction_in_place" else {}))
    if not narrow:
        return mlir.render("data_merged.accumulate_f32", contraction=contraction)
    return mlir.render("data_merged.accumulate_narrow", contraction=contraction, acc_type=acc_type, element=element,
                       view_map_plain=mlir.affine_map(view_domain, view_domain),
                       view_iterators=mlir.iterators(["parallel"] * count))


def _in_place(problem: ConvBwdDataProblem, m_dims: list[int], count: int, maps: tuple[str, str],
              masked: bool) -> dict[str, str]:
    """contraction_in_place's reads: each axis's grad_out position m + u + shift (m at ``m_dims``, the taps u after
    the view's ``count`` dims), clamped, and whether all lie on grad_out; where ``masked`` (a tap off the filter
    somewhere: strided), also the tap mask, read as data through the second of ``maps`` (the filter's, the mask's)."""
    lines, on = [], [f"%on{a}" for a in range(problem.rank)]
    for a, (ax, m_dim, size) in enumerate(zip(axes(problem), m_dims, problem.output_spatial)):
        shift = f" + {ax.shift}" if ax.shift > 0 else f" - {-ax.shift}" if ax.shift < 0 else ""
        lines.append(mlir.render("data_merged.read_position", axis=a, m_dim=m_dim, u_dim=count + a,
                                 position=f"m + u{shift}", on_and_clamped=mlir.on_and_clamped(a, f"%o{a}", size,
                                                                                              f"%o{a}_read")))
    if masked:
        lines.append("    %tap_on = arith.trunci %on_byte : i8 to i1")
    name = "%read_on" if masked else "%on_grad_out"
    lines.append(mlir.indent(mlir.fold("common.and", name, on + (["%tap_on"] if masked else [])), 4))
    read = [f"%o{a}_read" for a in range(problem.rank)]
    return dict(positions="\n".join(lines), on_grad_out=name, group_dim=count - 1 if problem.channels_last else 1,
                grad_out_index=", ".join(["%n", *read, "%grp"] if problem.channels_last else ["%n", "%grp", *read]),
                in_place_maps=", ".join(maps if masked else maps[:1]),
                in_place_ins="%filter, %on : !filter, !on" if masked else "%filter : !filter",
                mask_arg=" %on_byte: i8," if masked else "")
