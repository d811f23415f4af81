"""Grouped N-D convolution backward-weight (CK example ``20_grouped_conv_bwd_weight``).

``grad_w = grouped_conv_bwd_weight(x, grad_out, groups=..., filter_spatial=...)`` is the gradient of PyTorch's
``conv{1,2,3}d(x, weight, stride, padding, dilation, groups)`` with respect to ``weight``. Groups fold into
the channels as in PyTorch and CK's NHWGC: x holds ``G*C`` channels, grad_out ``G*K``, the weight is
``(G*K, *filter, C)`` channels-last or ``(G*K, C, *filter)`` channels-first. The MLIR form is
``mlir/grouped_conv_bwd_weight.mlir``: one convolution-form ``linalg.generic`` that reduces over the batch and
the output positions (the forward's identity ``s*o + d*f = i + p_lo`` read from the weight's side), on GPUs in
J batch chunks of partial sums that a second, small dispatch adds (``default_batch_split``). That generic and the
module around every form's contraction are here; the other forms have their modules: ``weight_gemm`` (one-tap
filters with no padding; or one group, x's windows gathered), ``weight_im2col``, ``weight_per_image``
(``per_image``, ``per_image_nn``), ``weight_taps``, ``weight_shifted``, ``weight_depthwise``, and
``split_precision`` (bfloat16 x 3) around any of them.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
import math

import numpy as np

from .. import dtypes, sweep_params, geometry
from .. import render as mlir
from .. import reference as reference_ops
from .. import roles as axis_roles
from ..operator import Lowering, one_of
from ..roles import Roles
from ..layouts import activation_from_params, in_layout, join_activation
from ..problem import PRECISIONS, ConvBwdWeightProblem
from ..problem_checks import array_shape_dtype, check_dtype, conv_problem, conv_problem_from_params
from ..validation import check, check_type
from . import (split_precision, weight_columns, weight_depthwise, weight_gemm, weight_im2col, weight_per_image,
               weight_shifted, weight_taps)

OP = "grouped_conv_bwd_weight"
Problem = ConvBwdWeightProblem


def result_dtype(problem: ConvBwdWeightProblem) -> str:
    """grad_w's dtype: ``out_dtype``, the inputs' dtype or float32."""
    return problem.out_dtype


def results(problem: ConvBwdWeightProblem) -> list:
    return [(problem.weight_shape, problem.out_dtype)]


def _out_dtype_name(out_dtype, dtype: str) -> str:
    if out_dtype is None:
        return dtype
    try:
        name = dtypes.dtype_name(out_dtype)
    except TypeError:
        name = None
    check_type(name is not None, f"{OP}: out_dtype must be a dtype such as 'float32', but got {out_dtype!r}")
    check(
        name in (dtype, "float32"),
        f"{OP}: out_dtype must be the inputs' dtype ({dtype}) or float32, but got {name}",
    )
    return name


def normalize(x, grad_out, *, groups, filter_spatial, stride, padding, dilation, layout, out_dtype=None,
              precision="float32") -> ConvBwdWeightProblem:
    """Check every argument and build the problem, before anything is compiled."""
    x_shape, x_dtype = array_shape_dtype(OP, "x", x)
    out_shape, grad_dtype = array_shape_dtype(OP, "grad_out", grad_out)
    check(
        len(x_shape) == len(out_shape),
        f"{OP}: x and grad_out must have the same rank, but x has shape {x_shape} and grad_out {out_shape}",
    )
    check(
        not x_shape or x_shape[0] == out_shape[0],
        f"{OP}: grad_out has batch {out_shape[0] if out_shape else None}, but x has batch {x_shape[0] if x_shape else None}",
    )
    problem = conv_problem(
        ConvBwdWeightProblem, OP, layout=layout, dtype=grad_dtype, input_shape=x_shape, output_shape=out_shape,
        filter_spatial=filter_spatial, groups=groups, stride=stride, padding=padding, dilation=dilation, out_dtype=grad_dtype,
    )
    check_dtype(OP, "x", x_dtype)
    check(
        x_dtype == grad_dtype,
        f"{OP}: x and grad_out must have the same dtype, but got {x_dtype} and {grad_dtype}",
    )
    return _with_precision(dataclasses.replace(problem, out_dtype=_out_dtype_name(out_dtype, grad_dtype)), precision)


def _with_precision(problem: ConvBwdWeightProblem, precision) -> ConvBwdWeightProblem:
    """``problem`` computed in ``precision``: float32 products, or a split one, bf16x3 or bf16x6, or scaled float16
    ones, f16x1 (float32 in and out only)."""
    check(precision in PRECISIONS, f"{OP}: precision must be one of {', '.join(PRECISIONS)}, but got {precision!r}")
    check(precision == "float32" or problem.dtype == problem.out_dtype == "float32",
          f"{OP}: precision {precision} splits float32 x and grad_out into a float32 grad_w, but the dtype is "
          f"{problem.dtype} and out_dtype {problem.out_dtype}")
    return dataclasses.replace(problem, precision=precision)


def _split_batch_and_channels(rank: int, channels_last: bool, split: bool) -> list[list[int]]:
    """Reassociation splitting an (N, *spatial, G*C) or (N, G*C, *spatial) array into (J, Nc, ..., G, C, ...),
    or, unsplit, into (N, ..., G, C, ...)."""
    batch = [[0, 1]] if split else [[0]]
    first = len(batch[0])
    if channels_last:
        return [*batch, *([i] for i in range(first, first + rank)), [first + rank, first + rank + 1]]
    return [*batch, [first, first + 1], *([i] for i in range(first + 2, first + rank + 2))]


def batch_split_choices(problem: ConvBwdWeightProblem) -> list[int]:
    """The chunk counts J the batch can split into (J divides N), smallest first."""
    return [j for j in range(1, problem.batch + 1) if problem.batch % j == 0]


@dataclass(frozen=True)
class Form:
    """The template's forms (which one a target takes: ``ops/policy.py``).

    ``batch_split``: J, the chunks the batch is reduced in (J partial sums in parallel, then their sum; it must
    divide the batch; the gemm form's divide its rows, ``weight_gemm.rows``, or cut each image's positions
    channels-first, ``weight_gemm.segments``). ``contraction``: the
    convolution-form ``linalg.generic`` (``"generic"``), the GEMM it is (``"gemm"``, ``weight_gemm``: of x's rows
    for one-tap filters with no padding, else, for one group, of x's windows gathered into columns), the windows
    gathered and contracted by a batch_matmul per group (``"im2col"``), for channels-first layouts the windows
    contracted by a batch_matmul per image and group, then summed over the images (``"per_image"``; with one
    operand laid out (o, channels) first, so that no matmul reduces along a row, in either layout:
    ``"per_image_nn"``), for problems of few channels a group one sum per tap, image, group and (k, c) in one
    generic, then summed over the images (``"taps"``), for depthwise problems of 1 or 2 spatial axes the named
    depthwise convolution (``"depthwise"``), or, for stride-1 problems of one group, one batch matmul per tap over
    contiguous slices of x and grad_out flattened channels-first (``"shifted"``, ``weight_shifted``), or, for
    depthwise problems channels-first on a GPU, partial sums along the last output axis (``"columns"``,
    ``weight_columns``); all but the generic and gemm reduce the whole batch at once. ``row_split`` (the generic):
    the first spatial axis's output rows are partial sums too (summed with the chunks), so that a reduction of few
    weights over many positions (a depthwise layer's) runs in parallel over them. ``transpose`` (the gemm form): a
    channels-first problem's activations are read transposed channels-last (``weight_gemm.twin``; a gathered one's
    always are)."""

    batch_split: int = 1
    contraction: str = "generic"
    row_split: bool = False
    transpose: bool = False

    def __post_init__(self):
        one_of(OP, "contraction", self.contraction,
               ("generic", "gemm", "im2col", "per_image", "per_image_nn", "depthwise", "taps", "shifted",
                "columns"))
        check(not self.row_split or self.contraction == "generic",
              f"{OP}: row_split takes the generic form, but the contraction is {self.contraction!r}")
        check(not self.transpose or self.contraction == "gemm",
              f"{OP}: transpose takes the gemm form, but the contraction is {self.contraction!r}")


def form_candidates(problem: ConvBwdWeightProblem) -> list[Form]:
    """The template forms build_tools/tune.py times for a problem: every batch split."""
    return [Form(batch_split=j) for j in batch_split_choices(problem)]


def loop_names(problem: ConvBwdWeightProblem, split: bool = False, rows: bool = False) -> list[str]:
    """The convolution's iteration dims: the partial sums' (parallel: the chunk j when split, the first axis's
    output row o0 with ``rows``, then the weight's), then the batch (within a chunk) and the output positions
    (reduced)."""
    rank = problem.rank
    filters = [f"f{a}" for a in range(rank)]
    chunk = ["j"] if split else []
    chunk += ["o0"] if rows else []
    parallel = [*chunk, "g", "k", *filters, "c"] if problem.channels_last else [*chunk, "g", "k", "c", *filters]
    return [*parallel, "n", *(f"o{a}" for a in range(rows, rank))]


@dataclass(frozen=True)
class _Geometry:
    """The sizes and index maps of one problem in one batch split (``chunks``): the convolution's loop dims
    (``loop_names``, named ``d0``.. in order), what of x the windows read per axis (``geometry.window_reads``), and
    x and grad_out split into (chunks.., batch chunk, .., G, C or K) views."""

    problem: ConvBwdWeightProblem
    chunks: int
    units: frozenset = frozenset()  # unit dims ("g", "n") left out of the generic's loops (``_pinned_units``)
    rows: bool = False  # the first axis's output rows are partial sums too (``Form.row_split``)

    @property
    def split(self) -> bool:
        return self.chunks > 1

    @property
    def partials(self) -> int:
        """The partial sums a second dispatch adds: the chunks, times the first axis's rows with ``rows``."""
        return self.chunks * (self.problem.output_spatial[0] if self.rows else 1)

    @property
    def summed(self) -> bool:
        """Whether the contraction leaves several partial sums, for a second dispatch to add."""
        return self.partials > 1

    @functools.cached_property
    def names(self) -> list[str]:
        return [name for name in loop_names(self.problem, self.split, self.rows) if name not in self.units]

    @functools.cached_property
    def d(self) -> dict[str, str]:
        return {name: f"d{i}" for i, name in enumerate(self.names)}

    @functools.cached_property
    def acc_dims(self) -> list[str]:
        parallel = loop_names(self.problem, self.split, self.rows)[: self.problem.rank + 3 + self.split + self.rows]
        return [name for name in parallel if name not in self.units]

    @property
    def batch_chunk(self) -> int:
        return self.problem.batch // self.chunks

    @functools.cached_property
    def reads(self) -> list[tuple[int, int, int]]:
        p = self.problem
        return [geometry.window_reads(p.input_spatial[a], p.output_spatial[a], p.filter_spatial[a], p.stride[a],
                                      p.dilation[a], p.padding[a][0]) for a in range(p.rank)]

    @functools.cached_property
    def padded_spatial(self) -> list[int]:
        return [sum(r) for r in self.reads]

    def activation(self, part: int) -> tuple[int, ...]:
        """x's shape from ``reads``' part (0: padding before, 1: rows taken, 2: padding after; None: all)."""
        p = self.problem
        spatial = tuple(self.padded_spatial if part is None else (r[part] for r in self.reads))
        batch, channels = (p.batch, p.groups * p.in_channels) if part in (None, 1) else (0, 0)
        return join_activation(batch, spatial, channels, p.channels_last)

    def groups_shape(self, spatial, channels: int) -> list[int]:
        """An activation split into (chunks.., batch chunk, .., G, channels) (channels-first: G, channels first)."""
        p = self.problem
        leading = [self.chunks] if self.split else []
        if p.channels_last:
            return [*leading, self.batch_chunk, *spatial, p.groups, channels]
        return [*leading, self.batch_chunk, p.groups, channels, *spatial]

    def maps(self) -> tuple[list[str], list[str], list[str]]:
        """(x's, grad_out's, the accumulator's) index lists over the loop dims: x at s*o + d*f per axis."""
        p, d = self.problem, self.d
        windows = [mlir.window(d[f"o{a}"], d[f"f{a}"], p.stride[a], p.dilation[a]) for a in range(p.rank)]
        outputs = [d[f"o{a}"] for a in range(p.rank)]
        chunk = [d["j"]] if self.split else []
        n, g = d.get("n"), d.get("g")  # None: a unit dim left out of the loops (its operand dim too)
        if p.channels_last:
            x, grad_out = [*chunk, n, *windows, g, d["c"]], [*chunk, n, *outputs, g, d["k"]]
        else:
            x, grad_out = [*chunk, n, g, d["c"], *windows], [*chunk, n, g, d["k"], *outputs]
        return x, grad_out, [d[name] for name in self.acc_dims]


def render(problem: ConvBwdWeightProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (x, grad_out, dst), in ``form`` (``Form``).

    ``lowering.configs`` may map 0 (the one convolution, as phase 0 of the tuning tables) to an IREE
    ``#iree_codegen.compilation_info`` pinned on the convolution (the generic form) or on the per-image matmul (the
    per_image_nn form); without one IREE picks the configuration.
    """
    if problem.computed_as is not problem:  # bfloat16 x 3: the bfloat16 problem's function, wrapped (inlined: its
        inner = render(problem.computed_as, form, dataclasses.replace(lowering, transients=False))  # in ours)
        return split_precision.render(problem, inner, lowering.transients, lowering.copy)
    chunks = form.batch_split
    if form.contraction == "gemm":
        return weight_gemm.render(problem, chunks, dtypes.mlir_element_type(result_dtype(problem)),
                                  mlir.transients(lowering.transients), lowering.configs.get(0), lowering.copy,
                                  form.transpose)
    check(
        isinstance(chunks, int) and chunks >= 1 and problem.batch % chunks == 0,
        f"{OP}: batch_split must divide the batch {problem.batch}, but got {chunks!r}",
    )
    if form.contraction != "generic":
        check(chunks == 1, f"{OP}: the {form.contraction} form reduces the whole batch at once (batch_split 1), "
                           f"but got {chunks}")
    check(form.contraction != "per_image" or not problem.channels_last,
          f"{OP}: the {form.contraction} form reads channels-first layouts (NCW, NCHW, NCDHW), but the layout is "
          f"{problem.layout}")
    check(not (form.row_split and lowering.configs.get(0)),
          f"{OP}: the row split keeps IREE's tiling; a pinned configuration fits the batch-split generic only")
    shape = _Geometry(problem, chunks, rows=form.row_split)
    element = dtypes.mlir_element_type(problem.dtype)
    if form.contraction == "columns":  # x read where it lies: no padding, no group split
        return _module(shape, element, lowering, "  // x is read where it lies (the columns form)", "%x",
                       weight_columns.render(problem, element, lowering.configs.get(0)), "%acc", split_x=False)
    pad_x, x_value = _pad_x(shape, element, form.contraction == "generic", mlir.gathers_pads(lowering.copy))
    contraction, summed = _contraction(shape, element, form.contraction, x_value, lowering.configs.get(0))
    return _module(shape, element, lowering, pad_x, x_value, contraction, summed)


def _module(shape: _Geometry, element: str, lowering: Lowering, pad_x: str, x_value: str | None, contraction: str,
            summed: str, split_x: bool = True) -> str:
    """The module around the contraction: the function, x's padding and the group split of x and grad_out
    (``split_x``; the columns form reads both as they lie), the store."""
    problem, rank = shape.problem, shape.problem.rank
    out_element = dtypes.mlir_element_type(result_dtype(problem))
    narrow, stored = mlir.narrow("%a", out_element, "%v")
    x_groups_shape = shape.groups_shape(shape.padded_spatial, problem.in_channels)
    grad_out_groups_shape = shape.groups_shape(problem.output_spatial, problem.out_channels)
    reassociation = _split_batch_and_channels(rank, problem.channels_last, shape.split)
    x_groups = "  // x_groups is x padded, above" if x_value is None else mlir.indent(mlir.render(
        "common.expand", result="%x_groups", source=x_value, reassociation=reassociation,
        shape=mlir.index_list(x_groups_shape), source_type="!x_padded", result_type="!x_groups",
    ), 2) if split_x else ""
    store_domain = mlir.dims("d", rank + 2)
    sizes = _sizes(shape)
    return mlir.render(
        "grouped_conv_bwd_weight", rank=rank, transients=mlir.transients(lowering.transients), layout=problem.layout,
        loop_names=", ".join(shape.names), acc_names=", ".join(name.upper() for name in shape.acc_dims),
        out_element=out_element, element=element, problem_name=problem.name, function=problem.name,
        x_type=mlir.tensor(problem.input_shape, element), grad_out_type=mlir.tensor(problem.output_shape, element),
        grad_w_type=mlir.tensor(problem.weight_shape, out_element),
        x_padded_type=mlir.tensor(shape.activation(None), element), x_groups_type=mlir.tensor(x_groups_shape, element),
        grad_out_groups_type=mlir.tensor(grad_out_groups_shape, element),
        acc_type=mlir.tensor([sizes[name] for name in shape.acc_dims], dtypes.ACCUMULATOR),
        partial_flat_type=mlir.tensor(([shape.partials] if shape.summed else []) + list(problem.weight_shape),
                                      dtypes.ACCUMULATOR),
        acc_flat_type=mlir.tensor(problem.weight_shape, dtypes.ACCUMULATOR), batch_split=shape.partials,
        batch_chunk=shape.batch_chunk, reduction_length=problem.batch * math.prod(problem.output_spatial),
        pad_x=pad_x, x_groups=x_groups, grad_out_groups=mlir.indent(mlir.render(
            "common.expand", result="%grad_out_groups", source="%grad_out", reassociation=reassociation,
            shape=mlir.index_list(grad_out_groups_shape), source_type="!grad_out", result_type="!grad_out_groups",
        ), 2) if split_x else "  // grad_out is read as it lies (the columns form)",
        contraction=contraction, summed=summed,
        store_map=mlir.affine_map(store_domain, store_domain), store_iterators=mlir.iterators(["parallel"] * (rank + 2)),
        narrow=mlir.indent(narrow, 4), stored=stored,
    )


def _sizes(shape: _Geometry) -> dict[str, int]:
    """Each loop dim's size."""
    p = shape.problem
    sizes = {"j": shape.chunks, "g": p.groups, "k": p.out_channels, "c": p.in_channels, "n": shape.batch_chunk}
    sizes.update({f"f{a}": p.filter_spatial[a] for a in range(p.rank)})
    sizes.update({f"o{a}": p.output_spatial[a] for a in range(p.rank)})
    return sizes


def _pad_x(shape: _Geometry, element: str, pad_on_groups: bool, gather: bool) -> tuple[str, str | None]:
    """(lines, value) of x as the windows read it: zeros where every window reads padding only (taps times zero,
    as PyTorch's reference kernels compute); else x, its unread end left out, zero-padded: with ``pad_on_groups``
    (the generic) after the split into groups, so that the pad meets the convolution with no reshape between (IREE
    fuses a pad into its consumer only then; the value is then None: x_groups is made here); with ``gather`` by a
    generic that reads x where it lies (``render.zero_pad``)."""
    problem, rank = shape.problem, shape.problem.rank
    if any(taken == 0 for _, taken, _ in shape.reads):
        return mlir.render("grouped_conv_bwd_weight.zeros", element=element), "%x_padded"
    lines, x_value, x_type = [], "%x", "!x"
    taken_shape = shape.activation(1)
    if taken_shape != problem.input_shape:  # the last windows end inside x: what no window reads is left out
        x_value, x_type = "%x_read", mlir.tensor(taken_shape, element)
        lines.append(mlir.indent(mlir.render(
            "common.slice", result="%x_read", source="%x", offsets=mlir.index_list([0] * (rank + 2)),
            sizes=mlir.index_list(taken_shape), strides=mlir.index_list([1] * (rank + 2)), source_type="!x",
            result_type=x_type,
        ), 2))
    low, high = shape.activation(0), shape.activation(2)
    if any(low) or any(high):
        lines.append(mlir.render("grouped_conv_bwd_weight.zero_element", element=element))
        if pad_on_groups:
            lines.append(_pad_groups(shape, element, x_value, x_type, low, high, gather))
            x_value = None
        else:
            lines.append(mlir.indent(mlir.zero_pad("%x_padded", x_value, low, high, element, x_type, "!x_padded",
                                                   gather_shape=taken_shape if gather else None), 2))
            x_value = "%x_padded"
    return ("\n".join(lines) if lines else "  // no padding is read: x is used as it is"), x_value


def _pad_groups(shape: _Geometry, element: str, x_value: str, x_type: str, low, high, gather: bool) -> str:
    """x split into (chunks.., N, .., G, C), then zero-padded there into %x_groups (x's pad ``low``/``high``, given
    per (N, spatial.., C) or (N, C, spatial..) dim, moved onto the split view)."""
    problem = shape.problem
    leading = [0] * shape.split
    unpadded = shape.groups_shape([taken for _, taken, _ in shape.reads], problem.in_channels)

    def on_groups(pad):
        return leading + ([*pad[:-1], 0, 0] if problem.channels_last else [0, 0, *pad[1:]])
    expand = mlir.indent(mlir.render(
        "common.expand", result="%x_unpadded_groups", source=x_value,
        reassociation=_split_batch_and_channels(problem.rank, problem.channels_last, shape.split),
        shape=mlir.index_list(unpadded), source_type=x_type, result_type=mlir.tensor(unpadded, element),
    ), 2)
    pad = mlir.indent(mlir.zero_pad("%x_groups", "%x_unpadded_groups", on_groups(low), on_groups(high), element,
                                    mlir.tensor(unpadded, element), "!x_groups",
                                    gather_shape=unpadded if gather else None), 2)
    return f"{expand}\n{pad}"


def _contraction(shape: _Geometry, element: str, contraction: str, x_value: str | None, config: str | None) -> tuple[str, str]:
    """(text, the float32 sums' value) of the form's contraction; ``config`` (phase 0's) pins the generic's
    convolution or per_image_nn's matmul."""
    problem = shape.problem
    if contraction == "im2col":
        x_groups_shape = shape.groups_shape(shape.padded_spatial, problem.in_channels)
        return weight_im2col.render(problem, element, x_groups_shape), "%acc"
    if contraction == "depthwise":
        return weight_depthwise.render(problem, element, x_value, shape.padded_spatial), "%acc"
    if contraction == "per_image":
        return weight_per_image.render(problem, element), "%acc"
    if contraction == "per_image_nn":
        return weight_per_image.render_nn(problem, element, config), "%acc"
    if contraction == "taps":
        return weight_taps.render(problem, element), "%acc"
    if contraction == "shifted":
        check(weight_shifted.applies(problem), f"{OP}: the shifted form takes problems of one group, stride and "
                                               f"dilation 1 and several taps, but got {problem.name}")
        return weight_shifted.render(problem, element), "%acc"
    return _generic(shape, element, config), "%acc" if shape.summed else "%partial_flat"


def _generic(shape: _Geometry, element: str, config: str | None) -> str:
    """The convolution-form generic: J partial sums (then their sum, when J > 1). With ``config``, its unit dims
    are left out of the loops (``_pinned_units``)."""
    problem, rank, summed = shape.problem, shape.problem.rank, shape.summed
    shape = dataclasses.replace(shape, units=_pinned_units(shape) if config else frozenset())
    chunk_dims = list(range(shape.split + shape.rows))  # j, o0: merged into the one dim the sum runs over
    domain = [shape.d[name] for name in shape.names]
    x_map, grad_out_map, acc_map = shape.maps()
    x_view = _unit_view("%x_groups", "!x_groups", x_map, shape.groups_shape(shape.padded_spatial, problem.in_channels),
                        element, "%x_conv")
    grad_out_shape = shape.groups_shape(problem.output_spatial, problem.out_channels)
    grad_out_view = _unit_view("%grad_out_groups", "!grad_out_groups", grad_out_map, grad_out_shape, element,
                               "%grad_out_conv")
    parallel = len(shape.acc_dims)
    widen_x, x32 = mlir.widen("%xv", element, "%x32")
    widen_g, g32 = mlir.widen("%gv", element, "%g32")
    store_domain, chunks_domain = mlir.dims("d", rank + 2), mlir.dims("d", rank + 3)  # the weight's dims, then j
    sum_chunks = mlir.render(
        "grouped_conv_bwd_weight.chunk_sum", batch_split=shape.partials,
        chunks_map=mlir.affine_map(chunks_domain, [chunks_domain[-1], *store_domain]),
        chunks_out_map=mlir.affine_map(chunks_domain, store_domain),
        chunks_iterators=mlir.iterators(["parallel"] * (rank + 2) + ["reduction"]),
    ) if summed else "  // one chunk: the partial sum is grad_w's float32 value"
    flat = "g" in shape.units  # G = 1 left out: the partial sums are partial_flat, K and G merged already
    flatten = "  // G = 1 is left out of the loops: the partial sums are partial_flat" if flat else mlir.render(
        "grouped_conv_bwd_weight.flatten", acc_flat_reassociation=_flattened(chunk_dims, rank, summed))
    return mlir.render(
        "grouped_conv_bwd_weight.generic", x_map=mlir.affine_map(domain, [e for e in x_map if e]),
        grad_out_map=mlir.affine_map(domain, [e for e in grad_out_map if e]), acc_map=mlir.affine_map(domain, acc_map),
        conv_iterators=mlir.iterators(["parallel"] * parallel + ["reduction"] * (len(domain) - parallel)),
        dispatch_config=f" attrs = {{compilation_info = {config}}}" if config else "",
        to_accumulator=mlir.indent(f"{widen_x}\n{widen_g}", 4) if widen_x else "    // f32 inputs: no extension",
        element=element, multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=x32, b=g32),
        unit_views="".join(f"\n{view[0]}" for view in (x_view, grad_out_view) if view[0]),
        x_operand=x_view[1], x_operand_type=x_view[2], grad_out_operand=grad_out_view[1],
        grad_out_operand_type=grad_out_view[2], partial="%partial_flat" if flat else "%partial",
        partial_type="!partial_flat" if flat else "!partial", flatten=flatten, sum_chunks=sum_chunks,
    )


def _flattened(chunk_dims: list[int], rank: int, summed: bool) -> list[list[int]]:
    """The reassociation of the partial sums (chunk dims, G, K, the weight's other rank + 1 dims) into partial_flat:
    the chunk dims merged into one where there are several partial sums, else (unit dims) into (G, K) with G and K."""
    gk = [len(chunk_dims), len(chunk_dims) + 1]
    leading = [chunk_dims, gk] if summed else [chunk_dims + gk]
    return [*leading, *([i] for i in range(gk[1] + 1, gk[1] + rank + 2))]


def _pinned_units(shape: _Geometry) -> frozenset:
    """The unit dims of the generic (G = 1, a batch chunk of 1) that a pinned configuration needs gone: IREE 3.13
    folds unit dims away by rebuilding the op, which drops its ``compilation_info`` (as ``contractions.dense_tuned``'s
    single-tap axes), so the generic is written as the op it would rebuild."""
    sizes = {"g": shape.problem.groups, "n": shape.batch_chunk}
    return frozenset(name for name, size in sizes.items() if size == 1)


def _unit_view(value: str, value_type: str, entries: list, full_shape: list[int], element: str,
               result: str) -> tuple[str, str, str]:
    """(lines, value, type) of a generic's operand with its unit dims left out of the loops (its map's None entries)
    collapsed away, each into the next dim kept (the last into the one before); unchanged where it has none."""
    if None not in entries:
        return "", value, value_type
    groups = mlir.folding_reassociation([entry is not None for entry in entries])
    view_type = mlir.tensor([math.prod(full_shape[i] for i in group) for group in groups], element)
    return (mlir.render("grouped_conv_bwd_weight.unit_view", result=result, source=value, reassociation=groups,
                        source_type=value_type, result_type=view_type), result, view_type)


# --- Problem construction, inputs and reference for the command line and the benchmarks ---------------


def random_params(rng, rank: int) -> dict:
    """The compile sweep's parameters: a convolution; half the 16-bit ones with float32 grad_w."""
    params = sweep_params.conv_params(rng, rank)
    out_dtype = "float32" if params["dtype"] != "float32" and rng.integers(2) else None
    return {**params, "out_dtype": out_dtype}


def problem_from_params(*, batch, in_channels, out_channels, input_spatial, filter_spatial, groups=1, stride=1,
                        padding=0, dilation=1, layout="NHWC", dtype="float16", out_dtype=None,
                        precision="float32") -> ConvBwdWeightProblem:
    """A problem from CK-style parameters (no arrays needed), checked like a call's arguments.

    As in CK's example (G, N, K, C), ``in_channels`` (C) and ``out_channels`` (K) are per group: x holds
    ``groups*in_channels`` channels and grad_out ``groups*out_channels``.
    """
    problem = conv_problem_from_params(
        ConvBwdWeightProblem, OP, layout=layout, dtype=dtype, output_channels=groups * out_channels,
        input_shape=activation_from_params(batch, input_spatial, groups * in_channels, layout),
        filter_spatial=filter_spatial, groups=groups, stride=stride, padding=padding, dilation=dilation, out_dtype=dtype,
    )
    return _with_precision(dataclasses.replace(problem, out_dtype=_out_dtype_name(out_dtype, problem.dtype)), precision)


def random_inputs(problem: ConvBwdWeightProblem, rng) -> list:
    return [dtypes.random_normal(rng, problem.input_shape, problem.dtype),
            dtypes.random_normal(rng, problem.output_shape, problem.dtype)]


def reference(problem: ConvBwdWeightProblem, inputs) -> np.ndarray:
    """float64 grad_w from the direct definition, in the problem's layout."""
    return in_layout(problem.channels_last, lambda x, grad_out: reference_ops.conv_bwd_weight(
        x, grad_out, problem.filter_spatial, problem.stride, problem.dilation, problem.padding, problem.groups
    ), *inputs)


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

def terms(problem: ConvBwdWeightProblem) -> int:
    """The most terms summed into one grad_w position: the batch times the output positions."""
    return problem.batch * math.prod(problem.output_spatial)


def roles(problem: ConvBwdWeightProblem) -> Roles:
    """x (N, (G, C), *I) and grad_out (N, (G, K), *O); grad_w ((G, K), .., C): grad_w[k, .., c] reads x's channel c
    and grad_out's channel k only, and sums over the batch."""
    x, grad_out, grad_w = axis_roles.convolution(problem)
    return Roles((x, grad_out), (grad_w,))


def magnitudes(problem: ConvBwdWeightProblem, inputs: list, values: list) -> list:
    """Each grad_w position's sum of term magnitudes: the reference on |x| and |grad_out|."""
    return [reference(problem, [np.abs(np.asarray(a, np.float64)) for a in inputs[:2]])]
