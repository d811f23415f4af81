"""Grouped N-D convolution backward-weight (CK example ``20_grouped_conv_bwd_weight``).

``grad_w = grouped_conv_bwd_weight(x, grad_out, groups=..., filter_spatial=...)`` is the gradient of PyTorch's
``conv{1,2,3}d(x, weight, stride, padding, dilation, groups)`` with respect to ``weight``. Groups fold into
the channels as in PyTorch and CK's NHWGC: x holds ``G*C`` channels, grad_out ``G*K``, the weight is
``(G*K, *filter, C)`` channels-last or ``(G*K, C, *filter)`` channels-first. The MLIR form is
``mlir/grouped_conv_bwd_weight.mlir``: one convolution-form ``linalg.generic`` that reduces over the batch and
the output positions (the forward's identity ``s*o + d*f = i + p_lo`` read from the weight's side), on GPUs in
J batch chunks of partial sums that a second, small dispatch adds (``default_batch_split``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
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
from . import contractions, split_precision, weight_gemm
from .contractions import DEPTHWISE_OPS

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
    """``problem`` computed in ``precision``: float32 products, or bfloat16 x 3 (float32 in and out only)."""
    check(precision in PRECISIONS, f"{OP}: precision must be one of {', '.join(PRECISIONS)}, but got {precision!r}")
    check(precision == "float32" or problem.dtype == problem.out_dtype == "float32",
          f"{OP}: precision bf16x3 splits float32 x and grad_out into a float32 grad_w, but the dtype is "
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
    divide the batch; the gemm form's divide its rows, ``weight_gemm.rows``). ``contraction``: the
    convolution-form ``linalg.generic`` (``"generic"``), for one-tap filters with no padding the GEMM they are
    (``"gemm"``, ``weight_gemm``), the windows gathered and contracted by a batch_matmul per group
    (``"im2col"``), for channels-first layouts the windows
    contracted by a batch_matmul per image and group, then summed over the images (``"per_image"``; with one
    operand laid out (o, channels) first, so that no matmul reduces along a row: ``"per_image_nn"``), for
    channels-first layouts one sum per tap, image, group and (k, c) in one generic, then summed over the images
    (``"taps"``), or, for depthwise problems of 1 or 2 spatial axes, the named depthwise convolution
    (``"depthwise"``); all but the generic and gemm reduce the whole batch at once."""

    batch_split: int = 1
    contraction: str = "generic"

    def __post_init__(self):
        one_of(OP, "contraction", self.contraction,
               ("generic", "gemm", "im2col", "per_image", "per_image_nn", "depthwise", "taps"))


def form_candidates(problem: ConvBwdWeightProblem) -> list[Form]:
    """The template forms build_tools/tune.py times for a problem: every batch split."""
    return [Form(batch_split=j) for j in batch_split_choices(problem)]


def loop_names(problem: ConvBwdWeightProblem, split: bool = False) -> list[str]:
    """The convolution's iteration dims: the partial sums' (parallel: the chunk j when split, then the weight's),
    then the batch (within a chunk) and the output positions (reduced)."""
    rank = problem.rank
    filters = [f"f{a}" for a in range(rank)]
    chunk = ["j"] if split else []
    parallel = [*chunk, "g", "k", *filters, "c"] if problem.channels_last else [*chunk, "g", "k", "c", *filters]
    return [*parallel, "n", *(f"o{a}" for a in range(rank))]


@dataclass(frozen=True)
class _Geometry:
    """The sizes and index maps of one problem in one batch split (``chunks``): the convolution's loop dims
    (``loop_names``, named ``d0``.. in order), what of x the windows read per axis (``geometry.window_reads``), and
    x and grad_out split into (chunks.., batch chunk, .., G, C or K) views."""

    problem: ConvBwdWeightProblem
    chunks: int

    @property
    def split(self) -> bool:
        return self.chunks > 1

    @functools.cached_property
    def names(self) -> list[str]:
        return loop_names(self.problem, self.split)

    @functools.cached_property
    def d(self) -> dict[str, str]:
        return {name: f"d{i}" for i, name in enumerate(self.names)}

    @functools.cached_property
    def acc_dims(self) -> list[str]:
        return self.names[: self.problem.rank + 3 + self.split]

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
        windows = [f"{mlir.term(d[f'o{a}'], p.stride[a])} + {mlir.term(d[f'f{a}'], p.dilation[a])}" for a in range(p.rank)]
        outputs = [d[f"o{a}"] for a in range(p.rank)]
        chunk = [d["j"]] if self.split else []
        if p.channels_last:
            x, grad_out = [*chunk, d["n"], *windows, d["g"], d["c"]], [*chunk, d["n"], *outputs, d["g"], d["k"]]
        else:
            x, grad_out = [*chunk, d["n"], d["g"], d["c"], *windows], [*chunk, d["n"], d["g"], d["k"], *outputs]
        return x, grad_out, [d[name] for name in self.acc_dims]


def render(problem: ConvBwdWeightProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (x, grad_out, dst), in ``form`` (``Form``).

    ``lowering.configs`` may map 0 (the one convolution, as phase 0 of the tuning tables) to an IREE
    ``#iree_codegen.compilation_info`` pinned on the convolution (the generic form) or on the per-image matmul (the
    per_image_nn form); without one IREE picks the configuration.
    """
    if problem.computed_as is not problem:  # bfloat16 x 3: the bfloat16 problem's function, wrapped (inlined: its
        inner = render(problem.computed_as, form, dataclasses.replace(lowering, transients=False))  # in ours)
        return split_precision.render(problem, inner, lowering.transients)
    chunks = form.batch_split
    if form.contraction == "gemm":
        return weight_gemm.render(problem, chunks, dtypes.mlir_element_type(result_dtype(problem)),
                                  mlir.transients(lowering.transients), lowering.configs.get(0))
    check(
        isinstance(chunks, int) and chunks >= 1 and problem.batch % chunks == 0,
        f"{OP}: batch_split must divide the batch {problem.batch}, but got {chunks!r}",
    )
    if form.contraction != "generic":
        check(chunks == 1, f"{OP}: the {form.contraction} form reduces the whole batch at once (batch_split 1), "
                           f"but got {chunks}")
    check(form.contraction not in ("per_image", "per_image_nn", "taps") or not problem.channels_last,
          f"{OP}: the {form.contraction} form reads channels-first layouts (NCW, NCHW, NCDHW), but the layout is "
          f"{problem.layout}")
    shape = _Geometry(problem, chunks)
    element = dtypes.mlir_element_type(problem.dtype)
    pad_x, x_value = _pad_x(shape, element, form.contraction == "generic")
    contraction, summed = _contraction(shape, element, form.contraction, x_value, lowering.configs.get(0))
    return _module(shape, element, lowering, pad_x, x_value, contraction, summed)


def _module(shape: _Geometry, element: str, lowering: Lowering, pad_x: str, x_value: str | None, contraction: str,
            summed: str) -> str:
    """The module around the contraction: the function, x's padding and group split, grad_out's, the store."""
    problem, rank = shape.problem, shape.problem.rank
    out_element = dtypes.mlir_element_type(result_dtype(problem))
    narrow, stored = dtypes.narrow("%a", out_element, "%v")
    x_groups_shape = shape.groups_shape(shape.padded_spatial, problem.in_channels)
    grad_out_groups_shape = shape.groups_shape(problem.output_spatial, problem.out_channels)
    reassociation = _split_batch_and_channels(rank, problem.channels_last, shape.split)
    x_groups = "  // x_groups is x padded, above" if x_value is None else mlir.indent(mlir.render(
        "common.expand", result="%x_groups", source=x_value, reassociation=reassociation,
        shape=mlir.index_list(x_groups_shape), source_type="!x_padded", result_type="!x_groups",
    ), 2)
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
        partial_flat_type=mlir.tensor(([shape.chunks] if shape.split else []) + list(problem.weight_shape),
                                      dtypes.ACCUMULATOR),
        acc_flat_type=mlir.tensor(problem.weight_shape, dtypes.ACCUMULATOR), batch_split=shape.chunks,
        batch_chunk=shape.batch_chunk, reduction_length=problem.batch * math.prod(problem.output_spatial),
        pad_x=pad_x, x_groups=x_groups, grad_out_groups_reassociation=reassociation,
        grad_out_groups_shape=mlir.index_list(grad_out_groups_shape), contraction=contraction, summed=summed,
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


def _pad_x(shape: _Geometry, element: str, pad_on_groups: bool) -> tuple[str, str | None]:
    """(lines, value) of x as the windows read it: zeros where every window reads padding only (taps times zero,
    as PyTorch's reference kernels compute); else x, its unread end left out, zero-padded: with ``pad_on_groups``
    (the generic) after the split into groups, so that the pad meets the convolution with no reshape between (IREE
    fuses a pad into its consumer only then; the value is then None: x_groups is made here)."""
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
            lines.append(_pad_groups(shape, element, x_value, x_type, low, high))
            x_value = None
        else:
            lines.append(mlir.indent(mlir.render(
                "common.zero_pad", result="%x_padded", source=x_value, low=mlir.index_list(low),
                high=mlir.index_list(high), index_args=", ".join(f"%i{a}: index" for a in range(rank + 2)),
                zero="%zero_element", element=element, source_type=x_type, result_type="!x_padded",
            ), 2))
            x_value = "%x_padded"
    return ("\n".join(lines) if lines else "  // no padding is read: x is used as it is"), x_value


def _pad_groups(shape: _Geometry, element: str, x_value: str, x_type: str, low, high) -> str:
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
    pad = mlir.indent(mlir.render(
        "common.zero_pad", result="%x_groups", source="%x_unpadded_groups", low=mlir.index_list(on_groups(low)),
        high=mlir.index_list(on_groups(high)), index_args=", ".join(f"%i{a}: index" for a in range(len(unpadded))),
        zero="%zero_element", element=element, source_type=mlir.tensor(unpadded, element), result_type="!x_groups",
    ), 2)
    return f"{expand}\n{pad}"


def _contraction(shape: _Geometry, element: str, contraction: str, x_value: str | None, config: str | None) -> tuple[str, str]:
    """(text, the float32 sums' value) of the form's contraction; ``config`` (phase 0's) pins the generic's
    convolution or per_image_nn's matmul."""
    problem = shape.problem
    if contraction == "im2col":
        x_groups_shape = shape.groups_shape(shape.padded_spatial, problem.in_channels)
        return _im2col(problem, element, x_groups_shape), "%acc"
    if contraction == "depthwise":
        return _depthwise(problem, element, x_value, shape.padded_spatial), "%acc"
    if contraction == "per_image":
        return _per_image(problem, element), "%acc"
    if contraction == "per_image_nn":
        return _per_image_nn(problem, element, config), "%acc"
    if contraction == "taps":
        return _tap_sums(problem, element), "%acc"
    return _generic(shape, element, config), "%acc" if shape.split else "%partial_flat"


def _generic(shape: _Geometry, element: str, config: str | None) -> str:
    """The convolution-form generic: J partial sums (then their sum, when J > 1)."""
    rank, split = shape.problem.rank, shape.split
    domain = [shape.d[name] for name in shape.names]
    x_map, grad_out_map, acc_map = shape.maps()
    widen_x, x32 = dtypes.widen("%xv", element, "%x32")
    widen_g, g32 = dtypes.widen("%gv", element, "%g32")
    store_domain, chunks_domain = mlir.dims("d", rank + 2), mlir.dims("d", rank + 3)  # the weight's dims, then j
    sum_chunks = mlir.render(
        "grouped_conv_bwd_weight.chunk_sum", batch_split=shape.chunks,
        chunks_map=mlir.affine_map(chunks_domain, [chunks_domain[-1], *store_domain]),
        chunks_out_map=mlir.affine_map(chunks_domain, store_domain),
        chunks_iterators=mlir.iterators(["parallel"] * (rank + 2) + ["reduction"]),
    ) if split else "  // one chunk: the partial sum is grad_w's float32 value"
    return mlir.render(
        "grouped_conv_bwd_weight.generic", x_map=mlir.affine_map(domain, x_map),
        grad_out_map=mlir.affine_map(domain, grad_out_map), acc_map=mlir.affine_map(domain, acc_map),
        conv_iterators=mlir.iterators(["parallel"] * (rank + 3 + split) + ["reduction"] * (rank + 1)),
        dispatch_config=f" attrs = {{compilation_info = {config}}}" if config else "",
        to_accumulator=mlir.indent(f"{widen_x}\n{widen_g}", 4) if widen_x else "    // f32 inputs: no extension",
        element=element, multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=x32, b=g32),
        acc_flat_reassociation=[[0], [1, 2], *([i] for i in range(3, rank + 4))] if split
        else [[0, 1], *([i] for i in range(2, rank + 3))],
        sum_chunks=sum_chunks,
    )


def _depthwise(problem: ConvBwdWeightProblem, element: str, x_value: str, padded_spatial: list[int]) -> str:
    """The llvm-cpu form of depthwise problems (``mlir/grouped_conv_bwd_weight.mlir``'s ``depthwise``): a named
    depthwise convolution over (batch, spatial..) of x_padded with grad_out as the filter, into (1, 1, f.., g)."""
    rank, groups, n = problem.rank, problem.groups, problem.batch
    check(problem.kind == "depthwise" and rank + 1 in (2, 3),
          f"{OP}: the depthwise form needs C = K = 1 and at most 2 spatial axes, but got {problem.name}")
    x_cl_shape, grad_out_cl_shape = [n, *padded_spatial, groups], [n, *problem.output_spatial, groups]
    x_cl, grad_out_cl, moves = x_value, "%grad_out", []  # x_value (x, its slice or x_padded) has !x_padded's type
    x_cl_type, grad_out_cl_type = "!x_padded", "!grad_out"
    if not problem.channels_last:
        to_last = mlir.index_list([0, *range(2, rank + 2), 1])
        moves.append(mlir.render("common.transpose", result="%x_cl", source=x_value,
                                 source_type="!x_padded",
                                 result_type=mlir.tensor(x_cl_shape, element), permutation=to_last))
        moves.append(mlir.render("common.transpose", result="%grad_out_cl", source="%grad_out",
                                 source_type="!grad_out", result_type=mlir.tensor(grad_out_cl_shape, element),
                                 permutation=to_last))
        x_cl, grad_out_cl = "%x_cl", "%grad_out_cl"
        x_cl_type, grad_out_cl_type = mlir.tensor(x_cl_shape, element), mlir.tensor(grad_out_cl_shape, element)
    filters = list(problem.filter_spatial)
    acc_dw = [1, 1, *filters, groups]
    weight_last = [groups, *filters, 1] if problem.channels_last else [groups, 1, *filters]
    return mlir.render(
        "grouped_conv_bwd_weight.depthwise",
        to_channels_last="\n".join(moves) if moves else "  // channels-last already: x_padded and grad_out as they are",
        x_cl=x_cl, x_cl_type=x_cl_type, grad_out_cl=grad_out_cl, grad_out_cl_type=grad_out_cl_type,
        x_dw_reassociation=[[0, 1], *([a] for a in range(2, rank + 3))],
        x_dw_shape=mlir.index_list([1, *x_cl_shape]), x_dw_type=mlir.tensor([1, *x_cl_shape], element),
        acc_dw_type=mlir.tensor(acc_dw, dtypes.ACCUMULATOR), conv_op=DEPTHWISE_OPS[rank + 1],
        dilations=mlir.i64_array([1, *problem.stride]), strides=mlir.i64_array([1, *problem.dilation]),
        acc_taps_reassociation=[[0, 1, 2], *([a] for a in range(3, rank + 3))],
        acc_taps_type=mlir.tensor([*filters, groups], dtypes.ACCUMULATOR),
        acc_t_type=mlir.tensor([groups, *filters], dtypes.ACCUMULATOR),
        acc_permutation=mlir.index_list([rank, *range(rank)]),
        acc_reassociation=[[0], *([a] for a in range(1, rank)), [rank, rank + 1]] if problem.channels_last
        else [[0, 1], *([a] for a in range(2, rank + 2))],
        acc_shape=mlir.index_list(weight_last),
    )


def _im2col(problem: ConvBwdWeightProblem, element: str, x_groups_shape: list[int]) -> str:
    """The llvm-cpu form (``mlir/grouped_conv_bwd_weight.mlir``'s ``im2col``): grad_out with (g, k) first, the windows
    of x gathered in chunks of taps (``contractions.im2col_chunks``), a batch_matmul per chunk into the float32
    result (g, k, f.., c)."""
    rank, groups, c, k, n = problem.rank, problem.groups, problem.in_channels, problem.out_channels, problem.batch
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    itemsize = dtypes.numpy_dtype(problem.dtype).itemsize
    inputs = (math.prod(problem.input_shape) + math.prod(problem.output_shape)) * itemsize
    positions = n * math.prod(outputs)
    lead = geometry.gather_leading_axes(filters, groups * positions * c * itemsize, inputs)
    chunk_taps = math.prod(filters[lead:])
    taps_shape = [groups, k, *filters, c]
    chunk_product = [groups, k, *([1] * lead), *filters[lead:], c]
    cols_shape = [groups, n, *outputs, *filters[lead:], c]

    def chunk(number, fixed, gathered):
        return mlir.render(
            "grouped_conv_bwd_weight.im2col_chunk", chunk=number, next_chunk=number + 1, gather=gathered,
            cols_matrix_type=mlir.tensor([groups, positions, chunk_taps * c], element),
            grad_out_matrix_type=mlir.tensor([groups, k, positions], element),
            product_type=mlir.tensor([groups, k, chunk_taps * c], dtypes.ACCUMULATOR),
            product_reassociation=[[0], [1], list(range(2, rank + 3))],
            product_taps_shape=mlir.index_list(chunk_product),
            product_taps_type=mlir.tensor(chunk_product, dtypes.ACCUMULATOR),
            taps_offsets=mlir.index_list([0, 0, *fixed, *([0] * (rank - lead)), 0]),
            taps_strides=mlir.index_list([1] * len(taps_shape)), taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        )
    gather = functools.partial(_x_gather, problem, element, x_groups_shape, lead, cols_shape, chunk_taps)
    count, texts = contractions.im2col_chunks(filters, lead, gather, chunk)
    return mlir.render(
        "grouped_conv_bwd_weight.im2col", element=element, chunks=count, chunk_taps=chunk_taps,
        grad_out_t_type=mlir.tensor([groups, k, n, *outputs], element), chunk_matmuls=texts,
        taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR), taps_to_weight=_taps_to_weight(problem, count, taps_shape),
        **_grad_out_t(problem, element, positions),
    )


def _per_image_common(problem: ConvBwdWeightProblem) -> dict:
    """What the per_image forms share: x's windows gathered per (image, group), read s*o + d*f, the float32 sum of
    the images (g, k, c, f..)."""
    rank = problem.rank
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    windows = [f"{mlir.term(o[a], problem.stride[a])} + {mlir.term(f[a], problem.dilation[a])}" for a in range(rank)]
    images_domain = ["n", "g", "k", "c", *f]
    return dict(
        o=o, f=f, images_domain=images_domain, x_read=["n", "g", "c", *windows],
        images_map=mlir.affine_map(images_domain, images_domain[1:]),
        images_iterators=mlir.iterators(["reduction"] + ["parallel"] * (len(images_domain) - 1)),
        acc_groups_type=mlir.tensor([problem.groups, problem.out_channels, problem.in_channels,
                                     *problem.filter_spatial], dtypes.ACCUMULATOR),
        acc_groups_reassociation=[[0, 1], *([i] for i in range(2, rank + 3))],
    )


def _per_image(problem: ConvBwdWeightProblem, element: str) -> str:
    """The llvm-cpu form for channels-first layouts (``mlir/grouped_conv_bwd_weight.mlir``'s ``per_image``): x's
    windows gathered per (image, group) with the output positions last, a batch_matmul per (image, group) over the
    output positions, then the sum over the images into the float32 result (g, k, c, f..)."""
    rank, n, groups, c, k = problem.rank, problem.batch, problem.groups, problem.in_channels, problem.out_channels
    common = _per_image_common(problem)
    o, f = common["o"], common["f"]
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    cols_domain = ["n", "g", "c", *f, *o]
    cols_shape = [n, groups, c, *filters, *outputs]
    columns, positions = c * math.prod(filters), math.prod(outputs)
    taps_shape = [n, groups, c, *filters, k]
    return mlir.render(
        "grouped_conv_bwd_weight.per_image", element=element, cols_type=mlir.tensor(cols_shape, element),
        cols_read=mlir.affine_map(cols_domain, common["x_read"]),
        cols_map=mlir.affine_map(cols_domain, cols_domain), cols_iterators=mlir.iterators(["parallel"] * len(cols_domain)),
        cols_reassociation=[[0, 1], list(range(2, rank + 3)), list(range(rank + 3, 2 * rank + 3))],
        cols_matrix_type=mlir.tensor([n * groups, columns, positions], element),
        grad_out_reassociation=[[0, 1], [2], list(range(3, rank + 3))],
        grad_out_matrix_type=mlir.tensor([n * groups, k, positions], element),
        per_image_type=mlir.tensor([n * groups, columns, k], dtypes.ACCUMULATOR),
        per_image_reassociation=[[0, 1], list(range(2, rank + 3)), [rank + 3]],
        per_image_taps_shape=mlir.index_list(taps_shape), per_image_taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        images_read=mlir.affine_map(common["images_domain"], ["n", "g", "c", *f, "k"]),
        **{key: common[key] for key in ("images_map", "images_iterators", "acc_groups_type", "acc_groups_reassociation")},
    )


def grad_out_moved(problem: ConvBwdWeightProblem) -> bool:
    """Which operand the per_image_nn form lays out (o, channels): grad_out where the matmul's other side, the
    (c, f) columns, is at least as large as K (the matmul's rows are then (c, f)); else the gathered columns."""
    return problem.in_channels * math.prod(problem.filter_spatial) >= problem.out_channels


def _per_image_nn(problem: ConvBwdWeightProblem, element: str, config: str | None = None) -> str:
    """The per_image form with no reduction along a row (``mlir/grouped_conv_bwd_weight.mlir``'s ``per_image_nn``):
    grad_out laid out (o, k) (``grad_out_moved``), or the windows gathered (o, (c, f)), then a plain batch_matmul per
    (image, group), ``config`` pinned on it where given, and the sum over the images."""
    common = _per_image_common(problem)
    o, f = common["o"], common["f"]
    moved = grad_out_moved(problem)
    gathered = ["n", "g", "c", *f, *o] if moved else ["n", "g", *o, "c", *f]
    sizes = dict(n=problem.batch, g=problem.groups, c=problem.in_channels, **dict(zip(f, problem.filter_spatial)),
                 **dict(zip(o, problem.output_spatial)))
    layout = _nn_grad_out_moved if moved else _nn_cols_moved
    values, taps_shape = layout(problem, element, common)
    return mlir.render(
        "grouped_conv_bwd_weight.per_image_nn", element=element,
        matmul_config=f" {{compilation_info = {config}}}" if config else "",
        cols_type=mlir.tensor([sizes[d] for d in gathered], element), cols_read=mlir.affine_map(gathered, common["x_read"]),
        cols_map=mlir.affine_map(gathered, gathered), cols_iterators=mlir.iterators(["parallel"] * len(gathered)),
        per_image_taps_shape=mlir.index_list(taps_shape), per_image_taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        **{key: common[key] for key in ("images_map", "images_iterators", "acc_groups_type", "acc_groups_reassociation")},
        **values,
    )


def _nn_shape(problem: ConvBwdWeightProblem) -> tuple[int, int, int, int, int]:
    """(rank, images x groups, (c, f) columns, output positions, K) of the per-image matmuls."""
    return (problem.rank, problem.batch * problem.groups, problem.in_channels * math.prod(problem.filter_spatial),
            math.prod(problem.output_spatial), problem.out_channels)


def _nn_grad_out_moved(problem: ConvBwdWeightProblem, element: str, common: dict) -> tuple[dict, list[int]]:
    """per_image_nn's values where grad_out is laid out (o, k): cols[(n, g), (c, f), o] x grad_out_t[(n, g), o, k]."""
    rank, images, columns, positions, k = _nn_shape(problem)
    matrix, cols = mlir.tensor([images, positions, k], element), mlir.tensor([images, columns, positions], element)
    grad_out_t_shape = [problem.batch, problem.groups, *problem.output_spatial, k]
    return dict(
        moved="grad_out", rows="(c, f)", cols_matrix_type=cols,
        cols_reassociation=[[0, 1], list(range(2, rank + 3)), list(range(rank + 3, 2 * rank + 3))],
        grad_out_operand=mlir.render(
            "grouped_conv_bwd_weight.grad_out_moved", grad_out_t_type=mlir.tensor(grad_out_t_shape, element),
            grad_out_permutation=mlir.index_list([0, 1, *range(3, rank + 3), 2]), grad_out_matrix_type=matrix,
            grad_out_reassociation=[[0, 1], list(range(2, rank + 2)), [rank + 2]]),
        lhs="%cols_matrix", rhs="%grad_out_matrix", lhs_type=cols, rhs_type=matrix,
        per_image_type=mlir.tensor([images, columns, k], dtypes.ACCUMULATOR),
        per_image_reassociation=[[0, 1], list(range(2, rank + 3)), [rank + 3]],
        images_read=mlir.affine_map(common["images_domain"], ["n", "g", "c", *common["f"], "k"]),
    ), [problem.batch, problem.groups, problem.in_channels, *problem.filter_spatial, k]


def _nn_cols_moved(problem: ConvBwdWeightProblem, element: str, common: dict) -> tuple[dict, list[int]]:
    """per_image_nn's values where the windows are gathered (o, (c, f)): grad_out[(n, g), k, o] x cols_t[(n, g), o,
    (c, f)]."""
    rank, images, columns, positions, k = _nn_shape(problem)
    matrix, cols = mlir.tensor([images, k, positions], element), mlir.tensor([images, positions, columns], element)
    return dict(
        moved="the gathered columns", rows="k", cols_matrix_type=cols,
        cols_reassociation=[[0, 1], list(range(2, rank + 2)), list(range(rank + 2, 2 * rank + 3))],
        grad_out_operand=mlir.render(
            "grouped_conv_bwd_weight.grad_out_kept", grad_out_matrix_type=matrix,
            grad_out_reassociation=[[0, 1], [2], list(range(3, rank + 3))]),
        lhs="%grad_out_matrix", rhs="%cols_matrix", lhs_type=matrix, rhs_type=cols,
        per_image_type=mlir.tensor([images, k, columns], dtypes.ACCUMULATOR),
        per_image_reassociation=[[0, 1], [2], list(range(3, rank + 4))],
        images_read=mlir.affine_map(common["images_domain"], common["images_domain"]),
    ), [problem.batch, problem.groups, k, problem.in_channels, *problem.filter_spatial]


def _tap_sums(problem: ConvBwdWeightProblem, element: str) -> str:
    """The llvm-cpu form for channels-first problems of few channels a group (``mlir/grouped_conv_bwd_weight.mlir``'s
    ``tap_sums``): one sum per tap, image, group and (k, c), the output positions reduced, then the images summed."""
    rank, n, groups, c, k = problem.rank, problem.batch, problem.groups, problem.in_channels, problem.out_channels
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    taps = list(itertools.product(*(range(size) for size in filters)))
    row_type = mlir.tensor([n, groups, c, *outputs], element)
    per_tap_type = mlir.tensor([n, groups, k, c], dtypes.ACCUMULATOR)
    domain, images_domain = ["n", "g", "k", "c", *o], ["g", "k", "c", *f, "n"]
    widen_g, g = dtypes.widen("%gv", element, "%gv_f32")
    rows, products, picks, sums = [], [widen_g] if widen_g else [], [], []
    for number, tap in enumerate(taps):
        rows.append(mlir.render(
            "grouped_conv_bwd_weight.tap_sums_row", tap=number, row_type=row_type,
            offsets=mlir.index_list([0, 0, 0, *(d * t for d, t in zip(problem.dilation, tap))]),
            sizes=mlir.index_list([n, groups, c, *outputs]), strides=mlir.index_list([1, 1, 1, *problem.stride]),
        ))
        widen, x = dtypes.widen(f"%x{number}", element, f"%x{number}_f32")
        if widen:
            products.append(widen)
        products.append(mlir.render("grouped_conv_bwd_weight.tap_sums_product", tap=number, g=g, x=x))
        sums.append(f"%sum{number}_next")
        if number:
            picks.append(mlir.render("grouped_conv_bwd_weight.tap_sums_pick", tap=number,
                                     previous="%p0" if number == 1 else f"%picked{number - 1}"))
    count = len(taps)
    strides = [math.prod(filters[a + 1:]) for a in range(rank)]
    return mlir.render(
        "grouped_conv_bwd_weight.tap_sums", element=element, taps=count, x_rows="\n".join(rows),
        per_tap_type=per_tap_type, per_tap_types=", ".join([per_tap_type] * count),
        per_tap_maps=", ".join([mlir.affine_map(domain, ["n", "g", "k", *o])]
                               + [mlir.affine_map(domain, ["n", "g", "c", *o])] * count
                               + [mlir.affine_map(domain, ["n", "g", "k", "c"])] * count),
        per_tap_iterators=mlir.iterators(["parallel"] * 4 + ["reduction"] * rank),
        x_row_values=", ".join(f"%x_tap_{t}" for t in range(count)), x_row_types=", ".join([row_type] * count),
        per_tap_zeros=", ".join(["%per_tap_zero"] * count),
        x_row_args=", ".join(f"%x{t}: {element}" for t in range(count)),
        sum_args=", ".join(f"%sum{t}: f32" for t in range(count)), products="\n".join(products),
        sums=", ".join(sums), sum_types=", ".join(["f32"] * count),
        acc_groups_type=mlir.tensor([groups, k, c, *filters], dtypes.ACCUMULATOR),
        images_maps=", ".join([mlir.affine_map(images_domain, ["n", "g", "k", "c"])] * count
                              + [mlir.affine_map(images_domain, images_domain[:-1])]),
        images_iterators=mlir.iterators(["parallel"] * (rank + 3) + ["reduction"]),
        per_tap_results=", ".join(f"%per_tap#{t}" for t in range(count)),
        tap_args=", ".join(f"%p{t}: f32" for t in range(count)),
        tap_number=mlir.affine_map(f, [" + ".join(mlir.term(d, s) for d, s in zip(f, strides))]),
        tap_indices=", ".join(f"%f{a}_index" for a in range(rank)),
        tap_index_lines="\n".join(mlir.render("conv_bwd_data.gather_index", result=f"%f{a}_index", dim=3 + a)
                                  for a in range(rank)),
        pick="\n".join(picks),
        picked=f"%picked{count - 1}" if count > 1 else "%p0",
        acc_groups_reassociation=[[0, 1], *([i] for i in range(2, rank + 3))],
    )


def _x_gather(problem: ConvBwdWeightProblem, element: str, x_groups_shape: list[int], lead: int, cols_shape: list[int],
              chunk_taps: int, number: int, fixed: tuple) -> dict:
    """``common.im2col_gather``'s values for a chunk of x's windows: x rows s*o + d*f, on a fixed axis a strided
    slice from d*f, then o itself."""
    rank, groups, c, n = problem.rank, problem.groups, problem.in_channels, problem.batch
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    offsets, sizes, strides, windows = [], [], [], []
    for a in range(rank):
        s, dl = problem.stride[a], problem.dilation[a]
        if a < lead:
            offsets.append(dl * fixed[a]); sizes.append(problem.output_spatial[a]); strides.append(s); windows.append(o[a])
        else:
            offsets.append(0); sizes.append(x_groups_shape[1 + a] if problem.channels_last else x_groups_shape[3 + a])
            strides.append(1); windows.append(f"{mlir.term(o[a], s)} + {mlir.term(f[a], dl)}")
    if problem.channels_last:
        x_offsets, x_sizes, x_strides = [0, *offsets, 0, 0], [n, *sizes, groups, c], [1, *strides, 1, 1]
        x_read = ["n", *windows, "g", "c"]
    else:
        x_offsets, x_sizes, x_strides = [0, 0, 0, *offsets], [n, groups, c, *sizes], [1, 1, 1, *strides]
        x_read = ["n", "g", "c", *windows]
    domain = ["g", "n", *o, *f[lead:], "c"]
    return dict(
        rows="x", identity="s*o + d*f", piece=f"x_{number}", source="%x_groups", source_type="!x_groups",
        offsets=mlir.index_list(x_offsets), sizes=mlir.index_list(x_sizes), strides=mlir.index_list(x_strides),
        piece_type=mlir.tensor(x_sizes, element), cols=f"cols_{number}", cols_type=mlir.tensor(cols_shape, element),
        read_map=mlir.affine_map(domain, x_read), cols_map=mlir.affine_map(domain, domain),
        cols_iterators=mlir.iterators(["parallel"] * len(domain)), value="xv", element=element,
        cols_reassociation=[[0], list(range(1, rank + 2)), list(range(rank + 2, len(cols_shape)))],
        cols_matrix_type=mlir.tensor([groups, n * math.prod(problem.output_spatial), chunk_taps * c], element),
    )


def _grad_out_t(problem: ConvBwdWeightProblem, element: str, positions: int) -> dict:
    """The im2col form's grad_out_t[g, k, n, o..] = grad_out[n, o.., g, k] (channels-first: grad_out[n, g, k, o..])."""
    rank, o = problem.rank, mlir.dims("o", problem.rank)
    t_domain = ["g", "k", "n", *o]
    t_read = ["n", *o, "g", "k"] if problem.channels_last else ["n", "g", "k", *o]
    return dict(
        grad_out_t_read=mlir.affine_map(t_domain, t_read), grad_out_t_map=mlir.affine_map(t_domain, t_domain),
        grad_out_t_iterators=mlir.iterators(["parallel"] * len(t_domain)),
        grad_out_t_reassociation=[[0], [1], list(range(2, rank + 3))],
        grad_out_matrix_type=mlir.tensor([problem.groups, problem.out_channels, positions], element),
    )


def _taps_to_weight(problem: ConvBwdWeightProblem, chunks: int, taps_shape: list[int]) -> str:
    """The result (g, k, f.., c) as grad_w: a free reshape channels-last, a transpose to (g, k, c, f..) first."""
    rank = problem.rank
    flat = [[0, 1], *([i] for i in range(2, rank + 3))]
    if problem.channels_last:
        return mlir.render("grouped_conv_bwd_weight.taps_channels_last", chunks=chunks, taps_reassociation=flat,
                           taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR))
    return mlir.render(
        "grouped_conv_bwd_weight.taps_channels_first", chunks=chunks, taps_reassociation=flat,
        taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        taps_t_type=mlir.tensor([problem.groups, problem.out_channels, problem.in_channels, *problem.filter_spatial],
                                dtypes.ACCUMULATOR),
        permutation=mlir.index_list([0, 1, rank + 2, *range(2, rank + 2)]),
    )


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
