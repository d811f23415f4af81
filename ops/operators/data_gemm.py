"""A float32 backward-data of a one-tap filter with no padding, as bfloat16 x 3, as the GEMM it is
(``mlir/data_gemm.mlir``): conv_bwd_data's ``gemm`` form, the one its split problems (``precision="bf16x3"``,
``"bf16x6"``) take. grad_out and the weight are split into bfloat16 parts (``split_precision.split``), one contraction
over the parts and the channels sums grad_out's rows times the weight, and the store puts the rows at the strided
positions of grad_in."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from .. import render as mlir
from ..problem import SCALED_PRECISIONS, ConvBwdDataProblem
from ..validation import check
from . import split_precision

OP = "conv_bwd_data"


def applies(problem: ConvBwdDataProblem) -> bool:
    """Whether the gemm form can take ``problem``: one group and one filter tap, no padding, no epilogue."""
    return problem.groups == 1 and problem.one_tap_unpadded and problem.epilogue is None


def takes_float32(problem: ConvBwdDataProblem) -> bool:
    """Whether the gemm form takes ``problem`` in float32: as ``applies``, a float32 problem, each input axis its
    stride times the output's (stride 1, or a whole number of strides: ``_render_float32``)."""
    return (applies(problem) and problem.dtype == "float32"
            and all(i == s * o for i, s, o in zip(problem.input_spatial, problem.stride, problem.output_spatial)))


def one_position(problem: ConvBwdDataProblem) -> bool:
    """Whether the float32 form's channels-first GEMM has one position an image (a squeeze-excite layer's, at stride
    1): its generic then leaves the position dim out, as IREE drops a configuration pinned on a generic with a unit
    dim. (Channels-last, the positions merge into the rows, and no unit dim is left.)"""
    return takes_float32(problem) and not problem.channels_last and set(problem.input_spatial) == {1}


def rows(problem: ConvBwdDataProblem) -> int:
    """The GEMM's rows: grad_out's (n, o)."""
    return problem.batch * math.prod(problem.output_spatial)


def render(problem: ConvBwdDataProblem, transients: str, copy=None, config: str | None = None) -> str:
    """The problem's module (a float32 problem computed as bf16x3; a transposing split tiled by ``copy``, the
    target's copy_config; or a float32 one, ``takes_float32``, its GEMM pinned to ``config`` where given)."""
    if problem.precision == "float32" and problem.dtype == "float32":
        check(takes_float32(problem), f"{OP}: the gemm form computes float32 one-tap, unpadded problems as bf16x3, "
                                      f"or in float32 where each input axis is its stride times the output's, but got "
                                      f"{problem.name}")
        return _render_float32(problem, transients, config)
    check(applies(problem) and problem.is_split,
          f"{OP}: the gemm form computes float32 one-tap, unpadded problems as bf16x3, but got {problem.name}")
    rank, c, k = problem.rank, problem.in_channels, problem.out_channels
    stacked = problem.split_products
    g_parts, w_parts = parts(problem, 0), parts(problem, 1)  # (hi, hi, mid..), (hi, mid, hi..); f16x1 one, scaled
    element = g_parts.element
    spatial = list(problem.output_spatial)
    rows_cl = [problem.batch, *spatial, c]
    unit = (1,) * rank
    return mlir.render(
        "data_gemm", rank=rank, layout=problem.layout, problem_name=problem.name, function=problem.name,
        grad_out_type=mlir.tensor(problem.output_shape, "f32"), weight_type=mlir.tensor(problem.weight_shape, "f32"),
        grad_in_type=mlir.tensor(problem.input_shape, "f32"), rows_type=mlir.tensor([rows(problem), c], "f32"),
        transients=transients,
        split_grad_out=split_precision.largest("grad_out", problem.output_shape, g_parts) + split_precision.split(
            "grad_out", problem.batch, problem.output_spatial, k, problem.channels_last, g_parts, copy=copy),
        split_weight=split_precision.largest("weight", problem.weight_shape, w_parts) + split_precision.split(
            "weight", k, unit, c, problem.channels_last, w_parts),
        grad_out3_merge=_merge(rank), grad_out3_type=mlir.tensor([stacked * problem.batch, *spatial, k], element),
        g3_merged_type=mlir.tensor([stacked * rows(problem), k], element), rows=rows(problem), k=k, c=c,
        g3_type=mlir.tensor([stacked, rows(problem), k], element), parts=stacked, element=element,
        weight3_merge=_merge(rank), weight3_type=mlir.tensor([stacked * k, *unit, c], element),
        w3_merged_type=mlir.tensor([stacked * k, c], element), w3_type=mlir.tensor([stacked, k, c], element),
        multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a="%g32", b="%w32"),
        rows_split=_merge(rank), rows_cl_shape=mlir.index_list(rows_cl),
        rows_cl_type=mlir.tensor(rows_cl, "f32"), store=store(problem, rows_cl),
    )


def parts(problem: ConvBwdDataProblem, operand: int) -> split_precision.Parts:
    """The split parts of grad_out (``operand`` 0) or the weight (1; f16x1: scaled by %grad_out_largest or
    %weight_largest), stacked (``split_precision.operand_parts``)."""
    return split_precision.operand_parts(problem.precision, operand, ("grad_out", "weight")[operand])


def _render_float32(problem: ConvBwdDataProblem, transients: str, config: str | None) -> str:
    """The float32 module (``mlir/data_gemm.mlir``'s ``float32``): channels-first (n, k, o) x (k, c) -> (n, c, o) (o
    left out where ``one_position``), channels-last (m, k) x (k, c) -> (m, c), m the rows (n, o); grad_in itself
    at stride 1, else placed by ``_residues``."""
    k, c = problem.out_channels, problem.in_channels
    gemm = _float32_gemm(problem)
    strided = problem.input_spatial != problem.output_spatial
    store = (_residues(problem, gemm.merge) if strided else
             mlir.render("data_gemm.float32_direct", positions_merge=gemm.merge,
                         grad_in_shape=mlir.index_list(problem.input_shape)))
    return mlir.render(
        "data_gemm.float32", problem_name=problem.name, function=problem.name, transients=transients,
        grad_out_type=mlir.tensor(problem.output_shape, "f32"), weight_type=mlir.tensor(problem.weight_shape, "f32"),
        grad_in_type=mlir.tensor(problem.input_shape, "f32"), rows_type=mlir.tensor(gemm.rows(c), "f32"),
        g_type=mlir.tensor(gemm.rows(k), "f32"), w_type=mlir.tensor([k, c], "f32"), dims=gemm.dims,
        g_index=gemm.g_index, rows_index=gemm.rows_index, iterators=gemm.iterators, positions_merge=gemm.merge,
        weight_rest=", ".join(map(str, range(1, problem.rank + 2))),
        rows_dst=("tensor.empty() : !rows" if strided else
                  f"tensor.collapse_shape %dst {gemm.merge} : !grad_in into !rows"),
        dispatch_config=f", compilation_info = {config}" if config else "",
        multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a="%gv", b="%wv"), store=store,
    )


@dataclasses.dataclass(frozen=True)
class _Float32Gemm:
    """The float32 GEMM's shape in the problem's layout: ``merge`` (grad_out, grad_in into their rows), ``rows``
    (channels -> the rows' shape), its generic's ``dims``, grad_out's and the rows' indices, and ``iterators``."""
    merge: list
    rows: Callable[[int], list[int]]
    dims: str
    g_index: str
    rows_index: str
    iterators: str


def _float32_gemm(problem: ConvBwdDataProblem) -> _Float32Gemm:
    """The float32 GEMM of ``problem``: channels-last over (m, c, k), m = (n, o) the rows; channels-first over
    (n, c, p, k), p an image's positions o merged (left out where ``one_position``)."""
    rank, n, positions = problem.rank, problem.batch, math.prod(problem.output_spatial)
    if problem.channels_last:
        return _Float32Gemm(_merge(rank), lambda channels: [rows(problem), channels], "m, c, k", "m, k", "m, c",
                            '"parallel", "parallel", "reduction"')
    if one_position(problem):
        return _Float32Gemm([[0], list(range(1, rank + 2))], lambda channels: [n, channels], "n, c, k", "n, k",
                            "n, c", '"parallel", "parallel", "reduction"')
    return _Float32Gemm([[0], [1], list(range(2, rank + 2))], lambda channels: [n, channels, positions],
                        "n, c, p, k", "n, k, p", "n, c, p", '"parallel", "parallel", "parallel", "reduction"')


def _residues(problem: ConvBwdDataProblem, merge: list[list[int]]) -> str:
    """The strided store of the float32 rows (``float32_residues``): grad_in as (n, c, o_1, r_1, ...) channels-first,
    (n, o_1, r_1, ..., c) channels-last, rows[n, c, o] (rows[n, o, c]) where every residue r_i (< s_i) is 0, zero
    elsewhere."""
    rank, n, c, last = problem.rank, problem.batch, problem.in_channels, problem.channels_last
    spatial = [mlir.dims(name, rank) for name in ("o", "r")]

    def ordered(batch, axes, channels):  # the problem's layout's order
        return [batch, *axes, channels] if last else [batch, channels, *axes]
    domain = ordered("n", [d for pair in zip(*spatial) for d in pair], "c")
    residues_shape = ordered(n, [d for pair in zip(problem.output_spatial, problem.stride) for d in pair], c)
    rows_spatial = ordered(n, list(problem.output_spatial), c)
    first = 1 if last else 2  # grad_in's dim of o_1
    pair_merge = [[first + 2 * i, first + 1 + 2 * i] for i in range(rank)]
    residue_merge = [[0], *pair_merge, [2 * rank + 1]] if last else [[0], [1], *pair_merge]
    indices = "\n".join(f"    %r{i} = linalg.index {pair_merge[i][1]} : index" for i in range(rank))
    residues = ", ".join(f"%r{i}" for i in range(rank))
    return mlir.render(
        "data_gemm.float32_residues", positions_merge=merge, rows_spatial_shape=mlir.index_list(rows_spatial),
        rows_spatial_type=mlir.tensor(rows_spatial, "f32"), residues_shape=mlir.index_list(residues_shape),
        residues_type=mlir.tensor(residues_shape, "f32"), residue_merge=residue_merge,
        read_map=mlir.affine_map(domain, ordered("n", spatial[0], "c")), write_map=mlir.affine_map(domain, domain),
        iterators=mlir.iterators(["parallel"] * len(domain)), residue_indices=indices,
        residue_sum=f"{mlir.affine_map(spatial[1], [' + '.join(spatial[1])])}({residues})",
    )


def _merge(rank: int) -> list[list[int]]:
    """The reassociation between (B, *spatial, C) and (B*spatial, C): the stacked parts' merge into rows, and the
    rows' split back into positions."""
    return [list(range(rank + 1)), [rank + 1]]


def store(problem: ConvBwdDataProblem, rows_cl: list[int]) -> str:
    """The rows %rows_cl (channels-last, float32, of shape ``rows_cl``) into grad_in: in the problem's layout, directly
    where they are all of grad_in, else at the positions s*o of a zero grad_in; scaled (f16x1), times 1 / (s_g s_w),
    grad_out's and the weight's scales."""
    rank = problem.rank
    domain = mlir.dims("d", rank + 2)  # the problem's layout's order
    n, rest = domain[0], domain[1:]
    read = [n, *rest] if problem.channels_last else [n, *rest[1:], rest[0]]
    placed = rows_cl if problem.channels_last else [rows_cl[0], rows_cl[-1], *rows_cl[1:-1]]
    maps = dict(read_map=mlir.affine_map(domain, read), write_map=mlir.affine_map(domain, domain),
                iterators=mlir.iterators(["parallel"] * (rank + 2)), rows_cl_type=mlir.tensor(rows_cl, "f32"),
                **_unscaled(problem, domain))
    if placed == list(problem.input_shape):
        return mlir.render("data_gemm.direct", **maps)
    strides = [1, *problem.stride, 1] if problem.channels_last else [1, 1, *problem.stride]
    return mlir.render("data_gemm.strided", **maps, placed_type=mlir.tensor(placed, "f32"),
                       offsets=mlir.index_list([0] * (rank + 2)), sizes=mlir.index_list(placed),
                       strides=mlir.index_list(strides))


def _unscaled(problem: ConvBwdDataProblem, domain: list[str]) -> dict:
    """The store's holes for its scales: grad_out's and the weight's largest magnitudes read beside the rows and the
    rows times 1 / (s_g s_w) (f16x1); nothing else."""
    if problem.precision not in SCALED_PRECISIONS:
        return dict(scale_maps="", scale_ins="", scale_types="", scale_args="", unscale="", result="%value")
    scalar = mlir.affine_map(domain, [])
    largest, most = split_precision.scale_operands("grad_out", "weight")
    return dict(scale_maps=f", {scalar}, {scalar}", scale_ins="".join(f", {v}" for v in largest),
                scale_types=", tensor<f32>, tensor<f32>", scale_args="".join(f", {v}" for v in most),
                unscale="\n" + split_precision.unscale("grad_out", "weight"), result="%unscaled")
