"""A float32 backward-data of several taps and a stride above 1 as float16 products of scaled operands (f16x1,
``mlir/data_scaled.mlir``): conv_bwd_data's stride phases (``stride_phases``) over float16 copies of grad_out and the
weight, each scaled by a power of two (``split_precision``'s scaled split), their stores unscaling each sum
(``Unscaled``). The stride-1 and one-tap problems of a split precision take ``data_split_conv`` and ``data_gemm``."""

from __future__ import annotations

import dataclasses
import math

from .. import render as mlir
from ..operator import Lowering
from ..problem import SCALED_PRECISIONS, ConvBwdDataProblem
from ..validation import check
from . import data_gemm, split_precision, stride_phases

OP = "conv_bwd_data"
SCALES, MOSTS = split_precision.scale_operands("grad_out", "weight")  # what the stores read, and as what


def applies(problem: ConvBwdDataProblem) -> bool:
    """Whether the scaled stride phases can take ``problem``: one group, no epilogue, several taps, a stride above 1."""
    return (problem.groups == 1 and problem.epilogue is None and problem.strided
            and math.prod(problem.filter_spatial) > 1)


def computes(problem: ConvBwdDataProblem, precision: str) -> bool:
    """Whether the scaled stride phases compute ``problem`` in ``precision``: a scaled one (f16x1) that ``applies``."""
    return precision in SCALED_PRECISIONS and applies(problem)


class Unscaled(stride_phases.Fusion):
    """What the phases' stores fuse: each sum times 1 / (s_g s_w), read from the operands' largest magnitudes
    (arguments of the phases' function)."""

    epilogue = True  # unreached positions hold 0 * 1 / (s_g s_w)

    def declarations(self) -> tuple[str, str, str]:
        return "", "".join(f", {v}: tensor<f32>" for v in SCALES), ""

    def operands(self, index_of: dict, phase=None, index: int | None = None,
                 d_read: str = "slice") -> stride_phases.Operands:
        """The largest magnitudes, rank 0: read whole by every point of a store."""
        return stride_phases.Operands(SCALES, ("tensor<f32>",) * 2, MOSTS, ((), ()))

    def body(self, acc: str) -> tuple[list[str], str]:
        return [split_precision.unscale("grad_out", "weight", acc)], "%unscaled"


def render(problem: ConvBwdDataProblem, form: stride_phases.Form, lowering: Lowering) -> str:
    """The problem's module: its function scales grad_out and the weight into float16 copies in their layouts
    (each one's largest magnitude first) and calls the stride phases' function (made private, rendered without the
    workspace argument, which ours takes where ``lowering.transients``) on them."""
    check(computes(problem, problem.precision),
          f"{OP}: the scaled stride phases compute float32 problems of one group, several taps and a stride above 1 "
          f"as {', '.join(SCALED_PRECISIONS)}, but got {problem.name}")
    phases = f"{problem.name}_phases"
    module = stride_phases.render_module(problem, form, dataclasses.replace(lowering, transients=False), Unscaled())
    g_parts, w_parts = data_gemm.parts(problem, 0), data_gemm.parts(problem, 1)
    return mlir.render(
        "data_scaled", rank=problem.rank, layout=problem.layout, stride="x".join(map(str, problem.stride)),
        problem_name=problem.name, function=problem.name, phases=phases,
        phases_module=mlir.private(module, problem.name, phases),
        grad_out_type=mlir.tensor(problem.output_shape, "f32"), weight_type=mlir.tensor(problem.weight_shape, "f32"),
        grad_in_type=mlir.tensor(problem.input_shape, "f32"),
        grad_out_scaled_type=mlir.tensor(problem.output_shape, g_parts.element),
        weight_scaled_type=mlir.tensor(problem.weight_shape, w_parts.element),
        scale_grad_out=_scaled("grad_out", problem.output_shape, g_parts),
        scale_weight=_scaled("weight", problem.weight_shape, w_parts), transients=mlir.transients(lowering.transients),
    )


def _scaled(v: str, shape: tuple, parts: split_precision.Parts) -> str:
    """%``v``'s largest magnitude, then %``v``3: %``v`` scaled and rounded to float16 in its own layout (one
    elementwise pass, IREE's own tiling)."""
    dims = mlir.dims("d", len(shape) + 1)
    return split_precision.largest(v, shape, parts) + split_precision.split_as(
        v, dims, dims[1:], shape, (1, *shape), 0, parts)
