"""The stride-phase form of convolution backward-data, shared by ``conv_bwd_data`` and ``grouped_conv_bwd_data``.

``mlir/conv_bwd_data.mlir`` derives it: one stride-1 convolution per stride phase (``geometry.bwd_data_phases``),
each storing its own positions of grad_in. This module computes the values its fragments take: each phase's
window of grad_out, its flipped sub-filter, its convolution and its store. What a store fuses (the D tensors and
the epilogue of ``grouped_conv_bwd_data``) comes in as a ``Fusion``; without one a store only casts.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from .. import dtypes, geometry
from .. import render as mlir
from ..operator import Lowering, one_of
from ..problem import ConvBwdDataProblem
from ..validation import check

_CONV_OPS = {1: "conv_1d_nwc_wcf", 2: "conv_2d_nhwc_hwcf", 3: "conv_3d_ndhwc_dhwcf"}
DEPTHWISE_OPS = {1: "depthwise_conv_1d_nwc_wc", 2: "depthwise_conv_2d_nhwc_hwc", 3: "depthwise_conv_3d_ndhwc_dhwc"}


def phases(problem: ConvBwdDataProblem) -> list[tuple[geometry.PhaseAxis, ...]]:
    """The stride phases with at least one tap on every axis (the cartesian product of the axes' phases)."""
    return list(itertools.product(*_axis_phases(problem)))


def _axis_phases(problem: ConvBwdDataProblem) -> list[list[geometry.PhaseAxis]]:
    return [
        geometry.bwd_data_phases(
            problem.input_spatial[a], problem.output_spatial[a], problem.filter_spatial[a],
            problem.stride[a], problem.dilation[a], problem.padding[a][0],
        )
        for a in range(problem.rank)
    ]


def fully_covered(problem: ConvBwdDataProblem) -> bool:
    """Whether the phases together reach every input position (then no position needs an initial value)."""
    return all(sum(p.rows for p in axis) == size for axis, size in zip(_axis_phases(problem), problem.input_spatial))


def interleaves(problem: ConvBwdDataProblem, form: "Form") -> bool:
    """Whether the module stores through the phase-major tensor (``form.store``; only a stride > 1 has phases
    to interleave). Channels-last layouts only: IREE 3.13's CUDA backend computed wrong interleaves into 16-bit
    channels-first grad_in (a transposing gather; sweep seed 17017, problem 51, on the H100), and the
    channels-first problems keep the strided store."""
    return form.store == "interleave" and any(s > 1 for s in problem.stride) and problem.channels_last


def interleaved_rows(problem: ConvBwdDataProblem) -> list[int]:
    """Rows per axis of every phase's slot of the phase-major tensor: ceil(size / s), the most any phase has, and
    enough that i floordiv s of every position i is a row."""
    return [geometry.ceil_div(size, s) for size, s in zip(problem.input_spatial, problem.stride)]


def phase_list(problem: ConvBwdDataProblem, form: "Form") -> list[tuple[geometry.PhaseAxis, ...]]:
    """The phases the module computes: with ``form.single_taps == "zero_tap"``, a one-tap axis of a phase whose other
    axes have several taps gets one zero tap (see PhaseAxis.with_zero_taps); with the interleaved store, every phase
    computes ``interleaved_rows`` (its slot of the phase-major tensor)."""
    result = phases(problem)
    if interleaves(problem, form):
        rows = interleaved_rows(problem)
        result = [tuple(p.with_rows(r) for p, r in zip(phase, rows)) for phase in result]
    if form.single_taps == "as_is":
        return result
    return [
        tuple(p.with_zero_taps(1) if p.taps == 1 and any(q.taps > 1 for q in phase) else p for p in phase)
        for phase in result
    ]


@dataclass(frozen=True)
class Form:
    """The stride-phase template's forms (which one a target takes, and why: ``ops/policy.py``).

    ``weight_flip``: each phase's taps flipped by a gather (index arithmetic in the body; handles zero taps) or by
    an indexing map with a negative coefficient (``"map"``).
    ``d_read``: a phase's store reads its rows of a D tensor by a strided slice or through its indexing map
    (``s*m + offset``).
    ``store`` (stride > 1, channels-last): each phase's result goes into grad_in by a strided ``tensor.insert_slice``
    (``"strided"``), or into its slot of a phase-major tensor that one ``linalg.generic`` interleaves into grad_in
    (``"interleave"``, see ``_interleave``).
    ``contraction`` (several groups; one group is always the named convolution): a convolution-form
    ``linalg.generic`` (``"generic"``), the taps gathered and contracted by ``linalg.batch_matmul`` (``"im2col"``),
    or, for depthwise problems, the named depthwise convolution (``"depthwise"``).
    ``single_taps``: a one-tap axis beside axes of several taps as it is, or given one zero tap (``"zero_tap"``).
    ``interleave_read``: the interleave reads the slots by ``tensor.extract`` or through its indexing map (``"map"``).
    """

    weight_flip: str = "gather"
    d_read: str = "map"
    store: str = "interleave"
    contraction: str = "generic"
    single_taps: str = "as_is"
    interleave_read: str = "extract"

    def __post_init__(self):
        for key, allowed in (("weight_flip", ("gather", "map")), ("d_read", ("map", "slice")),
                             ("store", ("interleave", "strided")), ("contraction", ("generic", "im2col", "depthwise")),
                             ("single_taps", ("as_is", "zero_tap")), ("interleave_read", ("extract", "map"))):
            one_of("conv_bwd_data", key, getattr(self, key), allowed)


@dataclass(frozen=True)
class Operands:
    """Extra operands of a linalg.generic: SSA values, their types, block arguments, and each one's indexing map
    results (dim names of the generic's domain), with the lines that define the values."""

    values: tuple = ()
    types: tuple = ()
    block_args: tuple = ()
    indices: tuple = ()
    lines: str = ""


class Fusion:
    """What the stores fuse: nothing (``conv_bwd_data``). ``grouped_conv_bwd_data`` overrides each method."""

    epilogue = False  # whether the stores compute more than a cast (then unreached positions hold f(0, d..))

    def declarations(self) -> tuple[str, str, str]:
        """(type aliases, function arguments, function-level lines) of the fused tensors."""
        return "", "", ""

    def operands(self, index_of: dict, phase=None, index: int | None = None, d_read: str = "slice") -> Operands:
        """The fused tensors as operands of a store over dims ``index_of`` (role -> index expression): a phase's
        store (``phase``), or the initial grad_in (no phase)."""
        return Operands()

    def body(self, acc: str) -> tuple[list[str], str]:
        """(lines, f32 value): what the store computes from the accumulator value ``acc``."""
        return [], acc


def _grad_out_window(index: int, phase, problem: ConvBwdDataProblem, element: str, grouped: bool) -> tuple[str, str, list[int]]:
    """Crop and zero-pad grad_out (channels-last) to the window phase ``index`` convolves: (lines, value, shape).

    ``grouped``: the window as (N, .., G, K), for a convolution over groups: cropped and padded after the split, so
    that the pad meets the convolution with no reshape between (IREE fuses a pad into its consumer only then)."""
    n = problem.batch
    channels = [problem.groups, problem.out_channels] if grouped else [problem.groups * problem.out_channels]
    crop_lo, crop_hi = ([p.grad_out_crop[side] for p in phase] for side in (0, 1))
    pad_lo, pad_hi = ([p.window_pad[side] for p in phase] for side in (0, 1))
    cropped = [o - lo - hi for o, lo, hi in zip(problem.output_spatial, crop_lo, crop_hi)]
    padded = [c + lo + hi for c, lo, hi in zip(cropped, pad_lo, pad_hi)]
    untouched = [0] * len(channels)
    lines = []
    value, value_type = ("%grad_out" if problem.channels_last else "%grad_out_cl"), "!grad_out_cl"
    if grouped:
        value, value_type = "%grad_out_groups", mlir.tensor([n, *problem.output_spatial, *channels], element)
    if any(crop_lo) or any(crop_hi):
        cropped_type = mlir.tensor([n, *cropped, *channels], element)
        lines.append(mlir.render(
            "common.slice", result=f"%go_{index}_cropped", source=value, offsets=mlir.index_list([0, *crop_lo, *untouched]),
            sizes=mlir.index_list([n, *cropped, *channels]), strides=mlir.index_list([1] * (problem.rank + 1 + len(channels))),
            source_type=value_type, result_type=cropped_type,
        ))
        value, value_type = f"%go_{index}_cropped", cropped_type
    if any(pad_lo) or any(pad_hi):
        lines.append(mlir.render(
            "common.zero_pad", result=f"%go_{index}", source=value, low=mlir.index_list([0, *pad_lo, *untouched]),
            high=mlir.index_list([0, *pad_hi, *untouched]),
            index_args=", ".join(f"%i{a}: index" for a in range(problem.rank + 1 + len(channels))),
            zero="%zero_element", element=element, source_type=value_type,
            result_type=mlir.tensor([n, *padded, *channels], element),
        ))
        value = f"%go_{index}"
    return mlir.indent("\n".join(lines), 2), value, [n, *padded, *channels]


def _phase_filter(index: int, phase, problem: ConvBwdDataProblem, gather: bool, copy: dict) -> tuple[str, list[int]]:
    """The phase's flipped sub-filter from the weight: (fragment, shape (U.., K, C), or (G, U.., K, C) grouped).

    ``gather``: by index arithmetic in the body (every target; handles zero taps); else through an indexing map
    with a negative coefficient (the GPU targets; tiled as the target's ``copy`` config says: IREE's default
    for a map it cannot vectorize is 32 threads a workgroup, one element each).
    """
    rank, k, c, groups = problem.rank, problem.out_channels, problem.in_channels, problem.groups
    element = dtypes.mlir_element_type(problem.dtype)
    grouped = groups > 1
    shape = [groups, *(p.filter_taps for p in phase), k, c] if grouped else [*(p.filter_taps for p in phase), k, c]
    dims = mlir.dims("d", len(shape))
    common = {
        "index": index, "element": element,
        "phase_filter_type": mlir.tensor(shape, element),
        "phase_filter_iterators": mlir.iterators(["parallel"] * len(shape)),
        "phase_filter_map": mlir.affine_map(dims, dims),
        # grouped: read the (G, K, ...) view of the weight (!weight_groups), so no index needs g*K + k
        "weight_view": "%weight_groups" if grouped else "%weight",
        "weight_view_type": "!weight_groups" if grouped else "!weight",
    }
    if not gather:
        u = dims[1:1 + rank] if grouped else dims[:rank]
        taps_read = [f"{p.flipped_first_tap} - {u[a]} * {p.tap_step}" for a, p in enumerate(phase)]
        rows = [dims[0], dims[-2]] if grouped else [dims[-2]]
        read = [*rows, *taps_read, dims[-1]] if problem.channels_last else [*rows, dims[-1], *taps_read]
        return mlir.render("conv_bwd_data.filter_flip", **common, weight_map=mlir.affine_map(dims, read),
                           copy_attrs=mlir.copy_attrs(shape, copy)), shape

    def index_line(result: str, dim: int) -> str:
        return mlir.render("conv_bwd_data.gather_index", result=result, dim=dim)

    first = 1 if grouped else 0
    lines = [index_line("%g", 0)] if grouped else []
    real = []  # per axis with zero taps, the i1 "u is a real tap"
    for a, p in enumerate(phase):
        lines.append(index_line(f"%u{a}", first + a))
        if p.zero_taps:
            lines.append(mlir.render("conv_bwd_data.gather_zero_taps", axis=a, taps=p.taps))
            real.append(f"%real{a}")
        lines.append(mlir.render("conv_bwd_data.gather_tap", axis=a, flipped_first_tap=p.flipped_first_tap,
                                   tap_step=p.tap_step, u=f"%u{a}_clamped" if p.zero_taps else f"%u{a}"))
    if real:
        lines.insert(0, mlir.render("conv_bwd_data.gather_zero_index"))
    lines += [index_line("%k", first + rank), index_line("%c", first + rank + 1)]
    row_values = ["%g", "%k"] if grouped else ["%k"]
    filter_taps = [f"%f{a}" for a in range(rank)]
    weight_indices = [*row_values, *filter_taps, "%c"] if problem.channels_last else [*row_values, "%c", *filter_taps]
    tap_value, select = "%tap", ""
    if real:
        all_real = real[0]
        for position, value in enumerate(real[1:]):
            lines.append(mlir.indent(mlir.render("common.and", result=f"%all_real{position}", a=all_real, b=value), 4))
            all_real = f"%all_real{position}"
        tap_value = "%tap_or_zero"
        select = mlir.render("conv_bwd_data.gather_select", real=all_real, element=element)
    return mlir.render(
        "conv_bwd_data.filter_gather", **common, tap_indices="\n".join(lines),
        weight_indices=mlir.index_list(weight_indices), zero_tap_select=select, tap_value=tap_value,
    ), shape


def _convolution(index: int, phase, problem: ConvBwdDataProblem, element: str, window_value: str, window_shape: list[int],
                 filter_shape: list[int], config: str | None, contraction: str) -> tuple[str, list[int], list[str]]:
    """The phase's stride-1 convolution into a zeroed f32 accumulator: a named op (one group), a grouped
    linalg.generic, or the grouped im2col form. Returns (text, the accumulator's shape, its dims' names)."""
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    rows = [p.rows for p in phase]
    m = mlir.dims("m", rank)
    if groups == 1:
        acc_shape = [problem.batch, *rows, c]
        if config and single_taps_beside_others(phase):
            return _dense_tuned(index, phase, problem, element, window_value, window_shape, filter_shape, acc_shape,
                                config), acc_shape, ["n", *m, "c"]
        return mlir.render(
            "conv_bwd_data.named",
            index=index, conv_op=_CONV_OPS[rank], window=window_value,
            window_type=mlir.tensor(window_shape, element), filter_type=mlir.tensor(filter_shape, element),
            acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
            sub_dilations=mlir.i64_array([p.sub_dilation for p in phase]), unit_strides=mlir.i64_array([1] * rank),
            dispatch_config=f", compilation_info = {config}" if config else "",
        ), acc_shape, ["n", *m, "c"]
    if contraction == "depthwise":
        check(problem.kind == "depthwise", f"{problem.op}: the depthwise form needs C = K = 1, but got {problem.name}")
        taps = [p.filter_taps for p in phase]
        acc_shape = [problem.batch, *rows, groups]
        return mlir.render(
            "conv_bwd_data.depthwise",
            index=index, conv_op=DEPTHWISE_OPS[rank], window=window_value, window_type=mlir.tensor(window_shape, element),
            filter_type=mlir.tensor(filter_shape, element), filter_taps_type=mlir.tensor([groups, *taps], element),
            filter_hwc_type=mlir.tensor([*taps, groups], element),
            filter_reassociation=[[a] for a in range(rank)] + [[rank, rank + 1, rank + 2]],
            filter_permutation=mlir.index_list([*range(1, rank + 1), 0]),
            acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
            sub_dilations=mlir.i64_array([p.sub_dilation for p in phase]), unit_strides=mlir.i64_array([1] * rank),
        ), acc_shape, ["n", *m, "g"]
    grouped_window = window_shape  # (N, .., G, K): _grad_out_window's grouped window
    window_groups = {
        "index": index, "element": element, "window": window_value,
        "grouped_window_type": mlir.tensor(grouped_window, element), "filter_type": mlir.tensor(filter_shape, element),
    }
    if contraction == "im2col":
        return _im2col(index, phase, problem, element, window_groups, grouped_window, filter_shape), \
            [groups, problem.batch, *rows, c], ["g", "n", *m, "c"]
    acc_shape = [problem.batch, *rows, groups, c]
    u = mlir.dims("u", rank)
    domain = ["n", *m, "g", "c", *u, "k"]
    window_index = ["n", *(f"{m[a]} + {u[a]} * {p.sub_dilation}" for a, p in enumerate(phase)), "g", "k"]
    return mlir.render("conv_bwd_data.grouped", contraction=_generic_contraction(
        window_groups, element, f"%w_{index}", acc_shape, domain, window_index, ["g", *u, "k", "c"], ["n", *m, "g", "c"],
        parallel=rank + 3, config=config,
    )), acc_shape, ["n", *m, "g", "c"]


def _generic_contraction(window_groups: dict, element: str, filter_value: str, acc_shape: list[int], domain: list[str],
                         window_index: list[str], filter_index: list[str], acc_index: list[str], parallel: int,
                         config: str | None) -> str:
    """A convolution as a ``linalg.generic`` of f32 multiply-adds over ``domain`` (its first ``parallel`` dims
    parallel, the rest reductions)."""
    widen_x, x = dtypes.widen("%x", element, "%x_f32")
    widen_w, w = dtypes.widen("%w", element, "%w_f32")
    return mlir.render(
        "conv_bwd_data.generic_contraction", **window_groups, filter=filter_value,
        acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
        window_map=mlir.affine_map(domain, window_index), filter_map=mlir.affine_map(domain, filter_index),
        acc_map=mlir.affine_map(domain, acc_index),
        iterators=mlir.iterators(["parallel"] * parallel + ["reduction"] * (len(domain) - parallel)),
        extend=mlir.indent("\n".join(line for line in (widen_x, widen_w) if line), 4), x=x, w=w,
        dispatch_config=f" attrs = {{compilation_info = {config}}}" if config else "",
    )


def single_taps_beside_others(phase) -> bool:
    """Whether a phase has single-tap axes beside axes of several taps: IREE 3.13 rebuilds such a convolution
    without the single-tap axes (``_dense_tuned``)."""
    taps = [axis.filter_taps for axis in phase]
    return max(taps) > 1 and min(taps) == 1


def _dense_tuned(index: int, phase, problem: ConvBwdDataProblem, element: str, window_value: str,
                 window_shape: list[int], filter_shape: list[int], acc_shape: list[int], config: str) -> str:
    """A tuned phase of one group with axes of a single tap: the convolution as a ``linalg.generic`` over the other
    axes' taps only, its filter (U.., K, C) collapsed to theirs. IREE 3.13 folds single-tap axes out of a
    convolution by rebuilding the op, which drops a ``compilation_info``; this is the op it would rebuild, so the
    tuned configuration reaches its dispatch (``build_tools/tune.py`` tiles exactly these dims)."""
    rank = problem.rank
    m, u = mlir.dims("m", rank), mlir.dims("u", rank)
    kept = [a for a, p in enumerate(phase) if p.filter_taps > 1]
    # each single-tap axis joins the next axis kept (or K) in the collapse
    reassociation, group = [], []
    for dim in range(rank + 2):
        group.append(dim)
        if dim in kept or dim >= rank:
            reassociation.append(group)
            group = []
    taps_filter = [phase[a].filter_taps for a in kept] + filter_shape[rank:]
    window_index = ["n", *(f"{m[a]} + {u[a]} * {p.sub_dilation}" if a in kept else m[a] for a, p in enumerate(phase)), "k"]
    window_groups = {"index": index, "element": element, "window": window_value,
                     "grouped_window_type": mlir.tensor(window_shape, element),
                     "filter_type": mlir.tensor(taps_filter, element)}
    return mlir.render(
        "conv_bwd_data.dense_tuned", **window_groups, filter_reassociation=reassociation,
        phase_filter_type=mlir.tensor(filter_shape, element),
        contraction=_generic_contraction(
            window_groups, element, f"%w_{index}_taps", acc_shape, ["n", *m, "c", *(u[a] for a in kept), "k"],
            window_index, [*(u[a] for a in kept), "k", "c"], ["n", *m, "c"], parallel=rank + 2, config=config,
        ),
    )


def _im2col_leading_axes(problem: ConvBwdDataProblem, phase) -> int:
    """How many leading tap axes each chunk fixes (``geometry.gather_leading_axes``): a tap's copy of the window
    against the inputs' bytes (grad_out, weight, D tensors)."""
    itemsize = dtypes.numpy_dtype(problem.dtype).itemsize
    inputs = sum(math.prod(s) * dtypes.numpy_dtype(t).itemsize
                 for s, t in [(problem.output_shape, problem.dtype), (problem.weight_shape, problem.dtype),
                              *zip(problem.d_shapes, problem.d_dtypes)])
    window = problem.batch * math.prod(p.rows for p in phase) * problem.groups * problem.out_channels * itemsize
    return geometry.gather_leading_axes([p.filter_taps for p in phase], window, inputs)


def _im2col(index: int, phase, problem: ConvBwdDataProblem, element: str, window_groups: dict, grouped_window: list[int],
            filter_shape: list[int]) -> str:
    """The grouped im2col form (``mlir/conv_bwd_data.mlir``'s ``im2col``): chunks of taps gathered, each contracted
    by a batch_matmul into the accumulator acc[g, (n, m), c]."""
    rank, groups, c, k, n = problem.rank, problem.groups, problem.in_channels, problem.out_channels, problem.batch
    rows, taps = [p.rows for p in phase], [p.filter_taps for p in phase]
    lead = _im2col_leading_axes(problem, phase)
    chunk_taps = math.prod(taps[lead:])
    m, u = mlir.dims("m", rank), mlir.dims("u", rank)
    acc_shape = [groups, n, *rows, c]
    acc_matrix = [groups, n * math.prod(rows), c]
    cols_shape = [groups, n, *rows, *taps[lead:], k]
    cols_matrix = [groups, n * math.prod(rows), chunk_taps * k]
    domain = ["g", "n", *m, *u[lead:], "k"]
    filter_chunk = [groups, *([1] * lead), *taps[lead:], k, c]
    # the fixed axes read rows [tap*dilation, tap*dilation + rows) of the window: a slice, then m itself
    window_index = ["n", *m[:lead], *(f"{m[a]} + {mlir.term(u[a], p.sub_dilation, 0)}" for a, p in enumerate(phase) if a >= lead), "g", "k"]
    chunk_window = [n, *rows[:lead], *grouped_window[1 + lead:]]
    chunks = list(itertools.product(*(range(t) for t in taps[:lead])))
    texts = []
    for number, fixed in enumerate(chunks):
        texts.append(mlir.render(
            "conv_bwd_data.im2col_chunk", **window_groups, chunk=number, next_chunk=number + 1,
            window_offsets=mlir.index_list([0, *(t * p.sub_dilation for t, p in zip(fixed, phase)), *([0] * (rank - lead + 2))]),
            window_sizes=mlir.index_list(chunk_window), window_strides=mlir.index_list([1] * len(chunk_window)),
            chunk_window_type=mlir.tensor(chunk_window, element),
            cols_type=mlir.tensor(cols_shape, element), cols_matrix_type=mlir.tensor(cols_matrix, element),
            window_map=mlir.affine_map(domain, window_index), cols_map=mlir.affine_map(domain, domain),
            cols_iterators=mlir.iterators(["parallel"] * len(domain)),
            cols_reassociation=[[0], list(range(1, rank + 2)), list(range(rank + 2, len(cols_shape)))],
            filter_offsets=mlir.index_list([0, *fixed, *([0] * (rank - lead)), 0, 0]),
            filter_sizes=mlir.index_list(filter_chunk), filter_strides=mlir.index_list([1] * len(filter_shape)),
            filter_chunk_type=mlir.tensor(filter_chunk, element),
            filter_matrix_type=mlir.tensor([groups, chunk_taps * k, c], element),
            filter_reassociation=[[0], list(range(1, rank + 2)), [rank + 2]],
            acc_matrix_type=mlir.tensor(acc_matrix, dtypes.ACCUMULATOR),
        ))
    return mlir.render(
        "conv_bwd_data.im2col", **window_groups, chunks=len(chunks), chunk_taps=chunk_taps,
        chunk_matmuls="\n".join(texts), acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
        acc_matrix_type=mlir.tensor(acc_matrix, dtypes.ACCUMULATOR), acc_shape=mlir.index_list(acc_shape),
        acc_reassociation=[[0], list(range(1, rank + 2)), [rank + 2]],
    )


@dataclass(frozen=True)
class Slots:
    """The phase-major tensor of the interleaved store: a slot per residue (i mod s) of each strided axis, each slot
    (N, rows.., G*C) channels-last. ``element``: the element type, or f32 when the interleave computes an epilogue
    (then the slots hold the accumulators, and the epilogue sees them unrounded)."""

    strided_axes: tuple[int, ...]
    shape: tuple[int, ...]
    element: str

    @classmethod
    def of(cls, problem: ConvBwdDataProblem, fusion: Fusion) -> "Slots":
        strided = tuple(a for a, s in enumerate(problem.stride) if s > 1)
        shape = (*(problem.stride[a] for a in strided), problem.batch, *interleaved_rows(problem),
                 problem.groups * problem.in_channels)
        return cls(strided, shape, dtypes.ACCUMULATOR if fusion.epilogue else dtypes.mlir_element_type(problem.dtype))

    @property
    def strided(self) -> int:
        return len(self.strided_axes)

    @property
    def type(self) -> str:
        return mlir.tensor(self.shape, self.element)

    def slot_of(self, phase) -> list[int]:
        """A phase's slot: the residues of its grad_in positions on the strided axes."""
        return [phase[a].grad_in_offset for a in self.strided_axes]


def _empty_slots(problem: ConvBwdDataProblem, slots: Slots, phase_list) -> tuple[str, str]:
    """(lines, value): the phase-major tensor, zeros in the slots no phase writes (residues no tap reaches)."""
    written = {tuple(slots.slot_of(phase)) for phase in phase_list}
    empty = [list(r) for r in itertools.product(*(range(problem.stride[a]) for a in slots.strided_axes)) if r not in written]
    slot_shape = slots.shape[slots.strided:]
    texts, current = [], "%slots_0"
    for number, residues in enumerate(empty):
        texts.append(mlir.render(
            "conv_bwd_data.zero_slot", inserted=f"%slots_z{number}", into=current, slots_type=slots.type,
            slot_type=mlir.tensor(slot_shape, slots.element),
            offsets=mlir.index_list([*residues, *([0] * len(slot_shape))]),
            sizes=mlir.index_list([1] * slots.strided + list(slot_shape)), strides=mlir.index_list([1] * len(slots.shape)),
        ))
        current = f"%slots_z{number}"
    zero = "%zero" if slots.element == dtypes.ACCUMULATOR else "%zero_element"
    fill = mlir.render("conv_bwd_data.zero_slot_fill", zero=zero, element=slots.element,
                       slot_type=mlir.tensor(slot_shape, slots.element)) if empty else ""
    return mlir.render(
        "conv_bwd_data.slots", slots_type=slots.type,
        slots_description=", ".join(f"axis {a}: {problem.stride[a]} slots" for a in slots.strided_axes),
        zero_slots="\n".join([fill, *texts]) if empty else "  // every slot is some phase's",
    ), current


def _interleave(problem: ConvBwdDataProblem, element: str, slots: Slots, value: str, fusion: Fusion, by_map: bool,
                copy: dict) -> str:
    """The interleave: grad_in position (.., i, ..) is row i floordiv s of slot i mod s on each strided axis,
    through the epilogue (when the slots hold accumulators) and the cast.

    ``by_map``: the slots are read through the generic's indexing map, tiled as the ``copy`` config says (IREE's
    GPU default there is 32 threads a workgroup, one element each, and need not divide the strides); else by
    ``tensor.extract``, which IREE collapses to one dim and tiles freely."""
    x = mlir.dims("i", problem.rank)
    domain = ["n", *x, "ch"]  # channels-last only (``interleaves``)
    fused = fusion.operands({"n": "n", "channel": "ch", **dict(enumerate(x))})
    if slots.element == dtypes.ACCUMULATOR:
        body, stored = _store_body(fusion, element, "%acc")
    else:
        body, stored = "", "%acc"  # the phases cast already; no epilogue
    common = {
        "element": element, "slots": value, "slots_type": slots.type, "slot_element": slots.element,
        "iterators": mlir.iterators(["parallel"] * len(domain)), "store_body": body, "stored": stored,
    }
    if by_map:  # the slots through the indexing map, tiled by the copy config
        rows = [f"{x[a]} floordiv {s}" if s > 1 else x[a] for a, s in enumerate(problem.stride)]
        read = [*(f"{x[a]} mod {problem.stride[a]}" for a in slots.strided_axes), "n", *rows, "ch"]
        steps = [1, *problem.stride, 1]
        return mlir.render(
            "conv_bwd_data.interleave_map", **common,
            maps=", ".join([mlir.affine_map(domain, read), *(mlir.affine_map(domain, i) for i in fused.indices),
                            mlir.affine_map(domain, domain)]),
            copy_attrs=mlir.copy_attrs(problem.input_shape, copy, steps),
            d_operands="".join(f", {v}" for v in fused.values), d_types="".join(f", {t}" for t in fused.types),
            d_block_args="".join(f", {b}" for b in fused.block_args),
        )
    lines = [mlir.render("conv_bwd_data.gather_index", result=f"%{d}", dim=position) for position, d in enumerate(domain)]
    lines += [mlir.render("conv_bwd_data.interleave_row", axis=a, stride=problem.stride[a]) for a in slots.strided_axes]
    rows = [f"%row{a}" if s > 1 else f"%i{a}" for a, s in enumerate(problem.stride)]
    read = [*(f"%slot{a}" for a in slots.strided_axes), "%n", *rows, "%ch"]
    return mlir.render(
        "conv_bwd_data.interleave", **common,
        maps=", ".join([*(mlir.affine_map(domain, i) for i in fused.indices), mlir.affine_map(domain, domain)]),
        position="\n".join(lines), read=mlir.index_list(read),
        ins=f"ins({', '.join(fused.values)} : {', '.join(fused.types)}) " if fused.values else "",
        block_args="".join(f"{b}, " for b in fused.block_args),
    )


def _store_body(fusion: Fusion, element: str, acc: str) -> tuple[str, str]:
    """(lines, stored value) of a store's body: the fused epilogue, then the cast to the stored dtype."""
    lines, value = fusion.body(acc)
    narrow, value = dtypes.narrow(value, element, "%stored")
    return "\n".join([*lines, *([mlir.indent(narrow, 4)] if narrow else [])]), value


def _store(index: int, phase, problem: ConvBwdDataProblem, element: str, acc_shape: list[int], acc_read: list[str],
           fusion: Fusion, into: str, d_read: str, slots: "Slots | None" = None) -> dict:
    """Epilogue and cast of one phase's accumulator (dims ``acc_read``), inserted with the phase's stride into grad_in;
    or, with ``slots`` (the interleaved store), cast to the slots' element and inserted into the phase's slot."""
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    rows = [p.rows for p in phase]
    m = mlir.dims("m", rank)
    if slots is not None:
        domain = ["n", *m, "g", "c"]
        store_shape = [problem.batch, *rows, groups, c]
        body, stored = _store_body(Fusion(), slots.element, "%acc")
        return {
            "d_views": "", "acc_type": mlir.tensor(acc_shape, dtypes.ACCUMULATOR), "store_element": slots.element,
            "inserted": f"%slots_{index + 1}", "into": into, "into_type": slots.type,
            "store_type": mlir.tensor(store_shape, slots.element), "stored_type": mlir.tensor(slots.shape[slots.strided:], slots.element),
            "reassociation": str([[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]]),
            "store_maps": ", ".join([mlir.affine_map(domain, acc_read), mlir.affine_map(domain, domain)]),
            "store_iterators": mlir.iterators(["parallel"] * len(domain)),
            "d_operands": "", "d_types": "", "d_block_args": "", "store_body": body, "stored": stored,
            "insert_offsets": mlir.index_list([*slots.slot_of(phase), *([0] * (rank + 2))]),
            "insert_sizes": mlir.index_list([1] * slots.strided + list(slots.shape[slots.strided:])),
            "insert_strides": mlir.index_list([1] * len(slots.shape)),
        }
    if problem.channels_last:
        domain = ["n", *m, "g", "c"]
        store_shape = [problem.batch, *rows, groups, c]
        reassociation = [[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]]
        stored_shape = [problem.batch, *rows, groups * c]
        offsets = [0, *(p.grad_in_offset for p in phase), 0]
        strides = [1, *problem.stride, 1]
    else:
        domain = ["n", "g", "c", *m]
        store_shape = [problem.batch, groups, c, *rows]
        reassociation = [[0], [1, 2]] + [[i] for i in range(3, rank + 3)]
        stored_shape = [problem.batch, groups * c, *rows]
        offsets = [0, 0, *(p.grad_in_offset for p in phase)]
        strides = [1, 1, *problem.stride]
    rows_of_d = {a: mlir.term(m[a], problem.stride[a], phase[a].grad_in_offset) if d_read == "map" else m[a] for a in range(rank)}
    fused = fusion.operands({"n": "n", "g": "g", "c": "c", **rows_of_d}, phase, index, d_read)
    maps = [mlir.affine_map(domain, acc_read), *(mlir.affine_map(domain, i) for i in fused.indices),
            mlir.affine_map(domain, domain)]
    body, stored = _store_body(fusion, element, "%acc")
    return {
        "d_views": fused.lines, "inserted": f"%grad_in_{index + 1}", "into_type": "!grad_in", "store_element": element,
        "into": into, "acc_type": mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
        "store_type": mlir.tensor(store_shape, element), "stored_type": mlir.tensor(stored_shape, element),
        "reassociation": str(reassociation), "store_maps": ", ".join(maps),
        "store_iterators": mlir.iterators(["parallel"] * len(domain)),
        "d_operands": "".join(f", {v}" for v in fused.values), "d_types": "".join(f", {t}" for t in fused.types),
        "d_block_args": "".join(f", {b}" for b in fused.block_args),
        "store_body": body, "stored": stored,
        "insert_offsets": mlir.index_list(offsets), "insert_sizes": mlir.index_list(stored_shape),
        "insert_strides": mlir.index_list(strides),
    }


def _initial_grad_in(problem: ConvBwdDataProblem, element: str, fusion: Fusion) -> tuple[str, str]:
    """What positions no phase writes hold: nothing to do if every position is reached; else 0, or f(0, d...)."""
    if fully_covered(problem) and phases(problem):
        return "  // every grad_in position is reached by exactly one phase: no initial value needed", "%dst"
    domain = mlir.dims("i", problem.rank + 2)
    spatial = domain[1:-1] if problem.channels_last else domain[2:]
    index_of = {"n": domain[0], "channel": domain[-1] if problem.channels_last else domain[1], **dict(enumerate(spatial))}
    if not fusion.epilogue:
        return mlir.render("conv_bwd_data.fill_zero", element=element), "%grad_in_0"
    fused = fusion.operands(index_of)
    body, stored = _store_body(fusion, element, "%zero")
    return mlir.render(
        "conv_bwd_data.fill_epilogue", element=element,
        maps=", ".join([*(mlir.affine_map(domain, i) for i in fused.indices), mlir.affine_map(domain, domain)]),
        iterators=mlir.iterators(["parallel"] * len(domain)),
        ins=f"ins({', '.join(fused.values)} : {', '.join(fused.types)}) " if fused.values else "",
        block_args="".join(f"{b}, " for b in fused.block_args), store_body=body, stored=stored,
    ), "%grad_in_0"


def _weight_groups(problem: ConvBwdDataProblem) -> tuple[str, str]:
    """(alias, lines): for grouped problems, the weight as (G, K, *filter, C) (or (G, K, C, *filter)), a free reshape."""
    if problem.groups == 1:
        return "", "  // one group: the phases read the weight as it is"
    shape = list(problem.weight_shape)
    view_shape = [problem.groups, problem.out_channels, *shape[1:]]
    alias = f"!weight_groups = {mlir.tensor(view_shape, dtypes.mlir_element_type(problem.dtype))}\n"
    return alias, mlir.indent(mlir.render(
        "common.expand", result="%weight_groups", source="%weight",
        reassociation=[[0, 1]] + [[i + 1] for i in range(1, len(shape))], shape=mlir.index_list(view_shape),
        source_type="!weight", result_type="!weight_groups",
    ), 2)


def render_module(problem: ConvBwdDataProblem, form: Form, lowering: Lowering, fusion: Fusion | None = None) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, weight, fused tensors.., dst), in
    ``form`` (``Form``). ``lowering.configs`` maps a phase index to an IREE ``#iree_codegen.compilation_info`` for
    that phase's convolution.
    """
    fusion = fusion or Fusion()
    element = dtypes.mlir_element_type(problem.dtype)
    rank = problem.rank
    if problem.channels_last:
        to_channels_last = "  // grad_out is channels-last already"
    else:
        to_channels_last = mlir.render("conv_bwd_data.channels_last", permutation=mlir.index_list([0, *range(2, rank + 2), 1]))
    over_groups = problem.groups > 1 and form.contraction != "depthwise"  # the convolution reads (.., G, K)
    if over_groups:
        to_channels_last += "\n" + mlir.indent(mlir.render(
            "common.expand", result="%grad_out_groups", source="%grad_out" if problem.channels_last else "%grad_out_cl",
            reassociation=[[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]],
            shape=mlir.index_list([problem.batch, *problem.output_spatial, problem.groups, problem.out_channels]),
            source_type="!grad_out_cl",
            result_type=mlir.tensor([problem.batch, *problem.output_spatial, problem.groups, problem.out_channels], element),
        ), 2)
    interleaved = interleaves(problem, form)
    phases_computed = phase_list(problem, form)
    slots = Slots.of(problem, fusion) if interleaved else None
    if slots:
        init, current = _empty_slots(problem, slots, phases_computed)
    else:
        init, current = _initial_grad_in(problem, element, fusion)
    phase_texts = []
    for index, phase in enumerate(phases_computed):
        phase_filter, filter_shape = _phase_filter(index, phase, problem, gather=form.weight_flip == "gather",
                                                   copy=lowering.copy)
        window_text, window_value, window_shape = _grad_out_window(index, phase, problem, element, over_groups)
        conv_text, acc_shape, acc_read = _convolution(index, phase, problem, element, window_value, window_shape,
                                                      filter_shape, lowering.configs.get(index), form.contraction)
        store_values = _store(index, phase, problem, element, acc_shape, acc_read, fusion, current, form.d_read, slots)
        current = store_values["inserted"]
        phase_texts.append(mlir.render(
            "conv_bwd_data.phase", index=index, element=element,
            tap_description=", ".join(
                f"{p.first_tap} + {p.tap_step}*t (t < {p.taps})" + (f" and {p.zero_taps} zero tap(s)" if p.zero_taps else "")
                for p in phase
            ),
            rows_description=", ".join(f"{p.grad_in_offset} + {s}*m (m < {p.rows})" for p, s in zip(phase, problem.stride)),
            phase_filter_type=mlir.tensor(filter_shape, element), phase_filter=phase_filter,
            grad_out_window=window_text, convolution=conv_text, **store_values,
        ))
    if slots:
        phase_texts.append(_interleave(problem, element, slots, current, fusion, form.interleave_read == "map",
                                       lowering.copy))
        current = "%grad_in_interleaved"
    aliases, arguments, views = fusion.declarations()
    weight_alias, weight_view = _weight_groups(problem)
    return mlir.render(
        "conv_bwd_data",
        rank=rank, layout=problem.layout, element=element, problem_name=problem.name, function=problem.name,
        groups=problem.groups, epilogue=problem.epilogue.text if problem.epilogue else "none (grad_in = acc)",
        grad_out_type=mlir.tensor(problem.output_shape, element),
        weight_type=mlir.tensor(problem.weight_shape, element),
        grad_in_type=mlir.tensor(problem.input_shape, element),
        grad_out_cl_type=mlir.tensor([problem.batch, *problem.output_spatial, problem.groups * problem.out_channels], element),
        extra_aliases=aliases + weight_alias, extra_arguments=arguments,
        grad_out_to_channels_last=to_channels_last, weight_view=weight_view, d_views=views,
        initial=init, phases="\n".join(phase_texts), result=current, transients=mlir.transients(lowering.transients),
    )
