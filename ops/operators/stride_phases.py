"""The stride-phase form of convolution backward-data, shared by ``conv_bwd_data`` and ``grouped_conv_bwd_data``.

``mlir/conv_bwd_data.mlir`` derives it: one stride-1 convolution per stride phase (``phase_plan``), each storing
its own positions of grad_in. This module holds the form's keys (``Form``), each phase's operands (its window of
grad_out, its flipped sub-filter) and the module; the convolutions are ``contractions``', the stores
``phase_stores``'. What a store fuses (the D tensors and the epilogue of ``grouped_conv_bwd_data``, the unscaling
of ``data_scaled``, whose phases read float16 operands: ``operand_element``) comes in as a ``Fusion``; without one a
store only casts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .. import dtypes
from .. import render as mlir
from ..operator import Lowering, one_of
from ..validation import check
from ..problem import SCALED_PRECISIONS, ConvBwdDataProblem
from .contractions import DEPTHWISE_OPS, convolution
from .phase_plan import interleaves, phase_list, transposes
from .phase_stores import Fusion, Operands, PhaseMajor, Slots, empty_slots, initial_grad_in, interleave, store

__all__ = ["DEPTHWISE_OPS", "Form", "Fusion", "Operands", "render_module"]


@dataclass(frozen=True)
class Form:
    """The stride-phase template's forms (which one a target takes, and why: ``ops/policy.py``).

    ``weight_flip``: each phase's taps flipped by a gather (index arithmetic in the body; handles zero taps), by
    an indexing map with a negative coefficient (``"map"``), or plane by plane, slices of the weight transposed taps
    first (``"planes"``: copies where the gather reads an element at a time).
    ``d_read``: a phase's store reads its rows of a D tensor by a strided slice or through its indexing map
    (``s*m + offset``).
    ``store`` (stride > 1): each phase's result goes into grad_in by a strided ``tensor.insert_slice``
    (``"strided"``), or into its slot of a phase-major tensor that one ``linalg.generic`` interleaves into grad_in
    (``"interleave"``, channels-last, see ``interleave``), or, channels-first, into its slot of a phase-major tensor
    that one ``linalg.transpose`` turns into grad_in (``"transpose"``, see ``phase_plan.transposes``).
    ``contraction``: a convolution-form ``linalg.generic`` (``"generic"``; one group: the named convolution), for
    depthwise problems every phase in one generic over grad_in viewed phase-major (``"merged"``, ``data_merged``), for
    conv_bwd_data's bf16x3 problems the GEMM of a one-tap filter (``"gemm"``, ``data_gemm``: no stride phases) or
    the forward convolution of a stride-1 one (``"split_conv"``, ``data_split_conv``), the
    taps gathered and contracted by ``linalg.batch_matmul`` (``"im2col"``, one group too), for depthwise
    problems the named depthwise convolution (``"depthwise"``), or, for channels-first layouts, an elementwise
    ``linalg.generic`` with one operand per (tap, output channel), vectorized along the last spatial axis (``"taps"``).
    ``single_taps``: a one-tap axis beside axes of several taps as it is, or given one zero tap (``"zero_tap"``).
    ``interleave_read``: the interleave reads the slots by ``tensor.extract`` or through its indexing map (``"map"``).
    ``grad_out_read`` (the merged form): grad_out zero-padded (``"padded"``: IREE copies the pad, or fuses
    it with its flag) or read where it lies, a select for the padding (``"in_place"``, ``data_merged``).
    """

    weight_flip: str = "gather"
    d_read: str = "map"
    store: str = "interleave"
    contraction: str = "generic"
    single_taps: str = "as_is"
    interleave_read: str = "extract"
    grad_out_read: str = "padded"

    def __post_init__(self):
        for key, allowed in (("weight_flip", ("gather", "map", "planes")), ("d_read", ("map", "slice")),
                             ("store", ("interleave", "strided", "transpose")),
                             ("contraction", ("generic", "gemm", "split_conv", "im2col", "depthwise", "taps", "merged")),
                             ("single_taps", ("as_is", "zero_tap")), ("interleave_read", ("extract", "map")),
                             ("grad_out_read", ("padded", "in_place"))):
            one_of("conv_bwd_data", key, getattr(self, key), allowed)
        check(self.grad_out_read == "padded" or self.contraction == "merged",
              f"conv_bwd_data: grad_out_read 'in_place' takes the merged form, but the contraction is "
              f"{self.contraction!r}")


def operand_element(problem: ConvBwdDataProblem) -> str:
    """The MLIR element type of the phases' operands: the problem's, or for a scaled precision (f16x1) its parts'
    (``problem.PART_DTYPES``: float16 copies of grad_out and the weight, ``data_scaled``), whose products the phases
    sum in float32 into grad_in's dtype."""
    return dtypes.mlir_element_type(problem.parts_dtype if problem.precision in SCALED_PRECISIONS else problem.dtype)


def weight_groups(problem: ConvBwdDataProblem, form: Form) -> bool:
    """Whether the phases read the weight's (G, K, ..) view: several groups, or the im2col and taps forms, which
    iterate over the groups (one or more)."""
    return problem.groups > 1 or form.contraction in ("im2col", "taps")


def reads_groups(problem: ConvBwdDataProblem, form: Form) -> bool:
    """Whether the phases' convolutions read grad_out's (.., G, K) view: as the weight's, but the depthwise form."""
    return weight_groups(problem, form) and form.contraction != "depthwise"


def channels_first_window(form: Form) -> bool:
    """Whether the phases read grad_out as it is, channels-first, as (N, G, K, *spatial): the taps form, whose
    operands are rows of the last spatial axis."""
    return form.contraction == "taps"


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
        lines.append(mlir.zero_pad(f"%go_{index}", value, [0, *pad_lo, *untouched], [0, *pad_hi, *untouched], element,
                                   value_type, mlir.tensor([n, *padded, *channels], element)))
        value = f"%go_{index}"
    return mlir.indent("\n".join(lines), 2), value, [n, *padded, *channels]


def _window_span(problem: ConvBwdDataProblem, phase) -> list[tuple[int, int]]:
    """Per axis, the phase's window in grad_out's coordinates: [crop_lo - pad_lo, size - crop_hi + pad_hi)."""
    return [(p.grad_out_crop[0] - p.window_pad[0], size - p.grad_out_crop[1] + p.window_pad[1])
            for p, size in zip(phase, problem.output_spatial)]


def shared_pad(problem: ConvBwdDataProblem, phases) -> tuple[list[int], list[int]]:
    """(low, high) zeros per axis around grad_out that hold every phase's window (``_window_span``): the channels-first
    phases read slices of one padded grad_out (one pad, where a pad per phase is a copy dispatch each)."""
    spans = [_window_span(problem, phase) for phase in phases]
    low = [max(0, -min(span[a][0] for span in spans)) for a in range(problem.rank)]
    high = [max(0, max(span[a][1] for span in spans) - size) for a, size in enumerate(problem.output_spatial)]
    return low, high


def _padded_window(index: int, phase, problem: ConvBwdDataProblem, element: str, low: list[int]) -> tuple[str, str, list[int]]:
    """The phase's window as a slice of the shared padded grad_out (N, G, K, ..) (``shared_pad``'s ``low``): a view."""
    n, g, k = problem.batch, problem.groups, problem.out_channels
    spans = _window_span(problem, phase)
    sizes = [end - start for start, end in spans]
    shape = [n, g, k, *sizes]
    text = mlir.render(
        "common.slice", result=f"%go_{index}", source="%grad_out_padded", source_type="!grad_out_padded",
        offsets=mlir.index_list([0, 0, 0, *(start + lo for (start, _), lo in zip(spans, low))]),
        sizes=mlir.index_list(shape), strides=mlir.index_list([1] * len(shape)), result_type=mlir.tensor(shape, element),
    )
    return mlir.indent(text, 2), f"%go_{index}", shape


def _phase_filter(index: int, phase, problem: ConvBwdDataProblem, flip: str, copy: dict,
                  grouped: bool) -> tuple[str, list[int]]:
    """The phase's flipped sub-filter from the weight: (fragment, shape (U.., K, C), or (G, U.., K, C) ``grouped``).
    ``flip`` (``Form.weight_flip``): ``gather`` by index arithmetic in the body (every target; handles zero taps);
    ``planes`` by slices of the weight's taps-first transpose (``_planes``); ``map`` through an indexing map
    with a negative coefficient (the GPU targets; tiled as the target's ``copy`` config says: IREE's default
    for a map it cannot vectorize is 32 threads a workgroup, one element each).
    """
    rank, k, c, groups = problem.rank, problem.out_channels, problem.in_channels, problem.groups
    element = operand_element(problem)
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
    if flip == "planes":
        return _planes(index, phase, problem, grouped, common), shape
    if flip == "map":
        u = dims[1:1 + rank] if grouped else dims[:rank]
        taps_read = [f"{p.flipped_first_tap} - {u[a]} * {p.tap_step}" for a, p in enumerate(phase)]
        rows = [dims[0], dims[-2]] if grouped else [dims[-2]]
        read = [*rows, *taps_read, dims[-1]] if problem.channels_last else [*rows, dims[-1], *taps_read]
        return mlir.render("conv_bwd_data.filter_flip", **common, weight_map=mlir.affine_map(dims, read),
                           copy_attrs=mlir.copy_attrs(shape, copy)), shape
    return _gathered(phase, problem, grouped, common), shape


def _gathered(phase, problem: ConvBwdDataProblem, grouped: bool, common: dict) -> str:
    """The gather flip (``filter_gather``): each element of the phase's filter read by ``tensor.extract`` at its
    flipped tap; a zero tap's selected zero."""
    rank = problem.rank

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
        select = mlir.render("conv_bwd_data.gather_select", real=all_real, element=common["element"])
    return mlir.render(
        "conv_bwd_data.filter_gather", **common, tap_indices="\n".join(lines),
        weight_indices=mlir.index_list(weight_indices), zero_tap_select=select, tap_value=tap_value,
    )


def _planes(index: int, phase, problem: ConvBwdDataProblem, grouped: bool, common: dict) -> str:
    """The planes flip (``filter_planes``): plane u.. of the phase's filter is the weight's tap f = flipped_first_tap
    - tap_step*u on each axis, a slice of %weight_taps (``weight_taps``); a zero tap's plane stays zero."""
    lead, size = ([0], [problem.groups]) if grouped else ([], [])
    plane = [*size, *([1] * problem.rank), problem.out_channels, problem.in_channels]
    taps_type = mlir.tensor(_weight_taps_shape(problem, grouped), common["element"])
    zero_taps = any(p.zero_taps for p in phase)
    into, lines = (f"%w_{index}_zeros" if zero_taps else f"%w_{index}_empty"), []
    real = list(itertools.product(*(range(p.taps) for p in phase)))
    for number, u in enumerate(real):
        result = f"%w_{index}" if number == len(real) - 1 else f"%w_{index}_plane_{number}"
        lines.append(mlir.render(
            "conv_bwd_data.filter_plane", index=index, plane=number, result=result, into=into, taps_type=taps_type,
            tap_offsets=mlir.index_list([*lead, *(p.flipped_first_tap - p.tap_step * t for t, p in zip(u, phase)), 0, 0]),
            plane_offsets=mlir.index_list([*lead, *u, 0, 0]), plane_sizes=mlir.index_list(plane),
            unit_strides=mlir.index_list([1] * len(plane)), plane_type=mlir.tensor(plane, common["element"]),
            phase_filter_type=common["phase_filter_type"]))
        into = result
    zeroed = mlir.render("conv_bwd_data.filter_zeroed", **common) + "\n" if zero_taps else ""
    return mlir.render("conv_bwd_data.filter_planes", **common, zeroed=zeroed, planes="\n".join(lines))


def _weight_taps_shape(problem: ConvBwdDataProblem, grouped: bool) -> list[int]:
    """The weight taps first, (G.., F.., K, C): the planes flip's transpose."""
    return [*([problem.groups] if grouped else []), *problem.filter_spatial, problem.out_channels,
            problem.in_channels]


def _weight_taps(problem: ConvBwdDataProblem, grouped: bool) -> str:
    """%weight_taps, the weight's view (``_weight_groups``) transposed taps first (``weight_taps``)."""
    rank, lead = problem.rank, [0] if grouped else []
    first = len(lead)  # the view's K, then (C, F..) channels-first or (F.., C) channels-last
    taps = (range(first + 2, first + 2 + rank) if not problem.channels_last else range(first + 1, first + 1 + rank))
    channel = first + 1 if not problem.channels_last else first + 1 + rank
    return mlir.render("conv_bwd_data.weight_taps", weight_view="%weight_groups" if grouped else "%weight",
                       weight_view_type="!weight_groups" if grouped else "!weight",
                       taps_type=mlir.tensor(_weight_taps_shape(problem, grouped), operand_element(problem)),
                       permutation=mlir.index_list([*lead, *taps, first, channel]))


def _weight_groups(problem: ConvBwdDataProblem, grouped: bool) -> tuple[str, str]:
    """(alias, lines): when the phases read it ``grouped``, the weight as (G, K, *filter, C) (or (G, K, C, *filter)),
    a free reshape."""
    if not grouped:
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
    scaled = problem.precision in SCALED_PRECISIONS
    check(form.contraction != "gemm" and (problem.precision == "float32" or scaled),
          f"{problem.op}: the stride phases compute float32 products or scaled float16 ones (the gemm form computes "
          f"bf16x3), but got the {form.contraction} form of {problem.name}")
    check(not scaled or (fusion is not None and fusion.epilogue),
          f"{problem.op}: the stride phases of scaled operands unscale in their stores (data_scaled's fusion), but "
          f"got {problem.name} without")
    check(form.contraction != "merged", f"{problem.op}: the merged form takes depthwise problems of "
                                        f"grouped_conv_bwd_data, but got {problem.name}")
    fusion = fusion or Fusion()
    element, operand = dtypes.mlir_element_type(problem.dtype), operand_element(problem)
    over_groups = reads_groups(problem, form)
    computed = phase_list(problem, form)
    pads = shared_pad(problem, computed) if channels_first_window(form) else None
    slots, init, current = _store_start(problem, form, fusion, computed)
    phase_texts = []
    for index, phase in enumerate(computed):
        text, current = _phase(index, phase, problem, form, lowering, fusion, over_groups, current, slots, pads)
        phase_texts.append(text)
    if isinstance(slots, PhaseMajor):
        phase_texts.append(slots.finish(current))
        current = "%grad_in_interleaved"
    elif slots:
        phase_texts.append(interleave(problem, element, slots, current, fusion, form.interleave_read == "map",
                                      lowering.copy))
        current = "%grad_in_interleaved"
    aliases, arguments, views = fusion.declarations()
    grouped = weight_groups(problem, form)
    weight_alias, weight_view = _weight_groups(problem, grouped)
    if form.weight_flip == "planes" and form.contraction != "taps":
        weight_view += "\n" + _weight_taps(problem, grouped)
    if isinstance(slots, PhaseMajor):
        weight_alias += f"!slots = {slots.type}\n"
    if pads:
        padded_alias, grad_out_view = _grad_out_padded(problem, operand, pads)
        weight_alias += padded_alias
    else:
        grad_out_view = _grad_out_to_channels_last(problem, operand, over_groups)
    return mlir.render(
        "conv_bwd_data",
        rank=problem.rank, layout=problem.layout, element=element, operand=operand, problem_name=problem.name,
        function=problem.name,
        groups=problem.groups, epilogue=problem.epilogue.text if problem.epilogue else "none (grad_in = acc)",
        grad_out_type=mlir.tensor(problem.output_shape, operand),
        weight_type=mlir.tensor(problem.weight_shape, operand),
        grad_in_type=mlir.tensor(problem.input_shape, element),
        grad_out_cl_type=mlir.tensor([problem.batch, *problem.output_spatial, problem.groups * problem.out_channels],
                                     operand),
        extra_aliases=aliases + weight_alias, extra_arguments=arguments,
        grad_out_to_channels_last=grad_out_view, weight_view=weight_view,
        d_views=views, initial=init, phases="\n".join(phase_texts), result=current,
        transients=mlir.transients(lowering.transients),
    )


def _store_start(problem: ConvBwdDataProblem, form: Form, fusion: Fusion, computed) -> tuple:
    """(the phase-major tensor or None, its lines, the value the first phase inserts into): the interleaved store's
    slots (channels-last), the transposed store's (channels-first), or grad_in's initial value."""
    if interleaves(problem, form):
        slots = Slots.of(problem, fusion)
        return (slots, *empty_slots(problem, slots, computed))
    if transposes(problem, form):
        return PhaseMajor(problem), mlir.render("conv_bwd_data.phase_major"), "%slots_0"
    return (None, *initial_grad_in(problem, dtypes.mlir_element_type(problem.dtype), fusion))


def _grad_out_padded(problem: ConvBwdDataProblem, element: str, pads) -> tuple[str, str]:
    """(alias, lines): grad_out as it is, channels-first, viewed as (N, G, K, ..) (a free reshape) and zero-padded once
    by ``pads`` (``shared_pad``'s (low, high)) into !grad_out_padded, whose slices are every phase's window."""
    rank, (low, high) = problem.rank, pads
    grouped = [problem.batch, problem.groups, problem.out_channels, *problem.output_spatial]
    padded = [*grouped[:3], *(size + lo + hi for size, lo, hi in zip(problem.output_spatial, low, high))]
    expand = mlir.render(
        "common.expand", result="%grad_out_groups_cf", source="%grad_out",
        reassociation=[[0], [1, 2]] + [[i + 1] for i in range(2, rank + 2)], shape=mlir.index_list(grouped),
        source_type="!grad_out", result_type=mlir.tensor(grouped, element),
    )
    pad = mlir.zero_pad("%grad_out_padded", "%grad_out_groups_cf", [0, 0, 0, *low], [0, 0, 0, *high], element,
                        mlir.tensor(grouped, element), "!grad_out_padded")
    return f"!grad_out_padded = {mlir.tensor(padded, element)}\n", mlir.indent(f"{expand}\n{pad}", 2)


def _grad_out_to_channels_last(problem: ConvBwdDataProblem, element: str, over_groups: bool) -> str:
    """grad_out channels-last (a transpose where it is not), and, for a convolution over groups, as (N, .., G, K)."""
    rank = problem.rank
    if problem.channels_last:
        text = "  // grad_out is channels-last already"
    else:
        text = mlir.render("conv_bwd_data.channels_last", permutation=mlir.index_list([0, *range(2, rank + 2), 1]))
    if not over_groups:
        return text
    grouped = [problem.batch, *problem.output_spatial, problem.groups, problem.out_channels]
    return text + "\n" + mlir.indent(mlir.render(
        "common.expand", result="%grad_out_groups", source="%grad_out" if problem.channels_last else "%grad_out_cl",
        reassociation=[[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]], shape=mlir.index_list(grouped),
        source_type="!grad_out_cl", result_type=mlir.tensor(grouped, element),
    ), 2)


def _phase(index: int, phase, problem: ConvBwdDataProblem, form: Form, lowering: Lowering, fusion: Fusion,
           over_groups: bool, current: str, slots: Slots | None, pads) -> tuple[str, str]:
    """(text, the value it inserts into) of phase ``index``: its flipped sub-filter, its window of grad_out (a slice
    of the padded grad_out, with ``pads``, ``shared_pad``'s), its convolution (``contractions``) and its store
    (``phase_stores``) into ``current``."""
    element, operand = dtypes.mlir_element_type(problem.dtype), operand_element(problem)
    if form.contraction == "taps":
        phase_filter, filter_shape = mlir.render("conv_bwd_data.no_phase_filter"), []
    else:
        phase_filter, filter_shape = _phase_filter(index, phase, problem, form.weight_flip, copy=lowering.copy,
                                                   grouped=weight_groups(problem, form))
    if pads:
        window_text, window_value, window_shape = _padded_window(index, phase, problem, operand, pads[0])
    else:
        window_text, window_value, window_shape = _grad_out_window(index, phase, problem, operand, over_groups)
    conv_text, acc_shape, acc_read = convolution(index, phase, problem, operand, window_value, window_shape,
                                                 filter_shape, lowering.configs.get(index), form.contraction)
    store_values = store(index, phase, problem, element, acc_shape, acc_read, fusion, current, form.d_read, slots)
    text = mlir.render(
        "conv_bwd_data.phase", index=index, element=element,
        tap_description=", ".join(
            f"{p.first_tap} + {p.tap_step}*t (t < {p.taps})" + (f" and {p.zero_taps} zero tap(s)" if p.zero_taps else "")
            for p in phase
        ),
        rows_description=", ".join(f"{p.grad_in_offset} + {s}*m (m < {p.rows})" for p, s in zip(phase, problem.stride)),
        phase_filter=phase_filter,
        grad_out_window=window_text, convolution=conv_text, **store_values,
    )
    return text, store_values["inserted"]
