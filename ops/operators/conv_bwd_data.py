"""N-D convolution backward-data (CK example ``17_convnd_bwd_data``).

``grad_in = conv_bwd_data(grad_out, weight, input_shape=...)`` is the gradient of PyTorch's
``conv{1,2,3}d(input, weight, stride, padding, dilation)`` with respect to ``input``. The MLIR form is the stride
phases of ``mlir/conv_bwd_data.mlir`` (``stride_phases``): one stride-1 convolution per stride phase, each storing
its own positions of grad_in (see the template's header).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import dtypes, sweep_params
from .. import render as mlir
from .. import reference as reference_ops
from .. import roles as axis_roles
from ..operator import Lowering
from ..roles import Roles
from ..layouts import activation_from_params, in_layout
from ..problem import PRECISIONS, SCALED_PRECISIONS, ConvBwdDataProblem
from ..problem_checks import array_shape_dtype, conv_problem, conv_problem_from_params
from ..validation import check
from . import data_gemm, data_scaled, data_split_conv, stride_phases

OP = "conv_bwd_data"
Problem = ConvBwdDataProblem
Form = stride_phases.Form


def normalize(grad_out, weight, *, input_shape, stride, padding, dilation, layout, groups=1, op=OP,
              precision="float32") -> ConvBwdDataProblem:
    """Check every argument and build the problem, before anything is compiled (``op``: the operator named in
    messages; grouped_conv_bwd_data checks its convolution here). ``precision``: of a float32 problem's products,
    float32, ``"bf16x3"`` (each product a sum of three bfloat16 products) or ``"bf16x6"`` (six: float32 products;
    ``problem.SPLIT_PRODUCTS``): ``data_gemm`` for a one-tap, unpadded problem, ``data_split_conv`` for one of
    stride 1, and for ``"f16x1"`` ``data_scaled`` for one of several taps at a larger stride; ``splits``."""
    out_shape, out_dtype = array_shape_dtype(op, "grad_out", grad_out)
    weight_shape, weight_dtype = array_shape_dtype(op, "weight", weight)
    problem = conv_problem(
        ConvBwdDataProblem, op, layout=layout, dtype=out_dtype, input_shape=input_shape, output_shape=out_shape,
        weight_shape=weight_shape, groups=groups, stride=stride, padding=padding, dilation=dilation,
    )
    check(
        weight_dtype == out_dtype,
        f"{op}: grad_out and weight must have the same dtype, but got {out_dtype} and {weight_dtype}",
    )
    return with_precision(problem, precision) if precision != "float32" else problem


def with_precision(problem: ConvBwdDataProblem, precision) -> ConvBwdDataProblem:
    """``problem`` computed in ``precision``: float32 products, or a split one, bf16x3, bf16x6 or f16x1 (float32, one
    group: a one-tap filter with no padding, ``data_gemm``, or stride 1, ``data_split_conv``; f16x1 also several
    taps at a larger stride, ``data_scaled``)."""
    check(precision in PRECISIONS, f"{OP}: precision must be one of {', '.join(PRECISIONS)}, but got {precision!r}")
    scaled = " (f16x1 also of a stride above 1)" if precision in SCALED_PRECISIONS else ""
    check(precision == "float32" or (problem.dtype == "float32" and splits(problem, precision)),
          f"{OP}: precision {precision} takes float32 problems of one group with a one-tap filter and no padding, "
          f"or of several taps and stride 1 with padding within the filter's reach{scaled}, but got {problem.name}")
    return dataclasses.replace(problem, precision=precision)


def splits(problem: ConvBwdDataProblem, precision: str) -> bool:
    """Whether a form computes ``problem`` in the split ``precision``: the gemm form or the split_conv form takes
    it, or, scaled (f16x1), the stride phases of scaled operands (``data_scaled``)."""
    return data_gemm.applies(problem) or data_split_conv.applies(problem) or data_scaled.computes(problem, precision)


def results(problem: ConvBwdDataProblem) -> list:
    return [(problem.input_shape, problem.dtype)]


def render(problem: ConvBwdDataProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, weight, dst): the stride phases, or
    for split problems the gemm form, the split_conv form or the stride phases of scaled operands (``data_scaled``),
    or a float32 GEMM of a one-tap filter (the gemm form; the contraction of either pinned to
    ``lowering.configs[0]`` where given)."""
    if form.contraction == "gemm":
        return data_gemm.render(problem, mlir.transients(lowering.transients), lowering.copy, lowering.configs.get(0))
    if form.contraction == "split_conv":
        return data_split_conv.render(problem, mlir.transients(lowering.transients), form.weight_flip == "map",
                                      lowering.configs.get(0), lowering.copy)
    if problem.is_split:
        return data_scaled.render(problem, form, lowering)
    return stride_phases.render_module(problem, form, lowering)


# --- Problems from parameters, inputs and reference for the command line, the benchmarks and the tests ---------


def random_params(rng, rank: int) -> dict:
    """The compile sweep's parameters: the ungrouped operator (groups go to grouped_conv_bwd_data)."""
    return {**sweep_params.conv_params(rng, rank), "groups": 1}


def problem_from_params(*, batch, in_channels, out_channels, input_spatial, filter_spatial, stride=1, padding=0,
                        dilation=1, layout="NHWC", dtype="float16", groups=1, op=OP, **fields) -> ConvBwdDataProblem:
    """A problem from CK-style parameters (no arrays needed), checked like a call's arguments.

    ``in_channels`` (C) and ``out_channels`` (K) are per group, as in CK.
    """
    precision = fields.pop("precision", "float32")
    problem = conv_problem_from_params(
        ConvBwdDataProblem, op, layout=layout, dtype=dtype, output_channels=groups * out_channels,
        input_shape=activation_from_params(batch, input_spatial, groups * in_channels, layout),
        filter_spatial=filter_spatial, groups=groups, stride=stride, padding=padding, dilation=dilation, **fields,
    )
    return with_precision(problem, precision) if precision != "float32" else problem


def random_inputs(problem: ConvBwdDataProblem, rng) -> list:
    return [
        dtypes.random_normal(rng, problem.output_shape, problem.dtype),
        dtypes.random_normal(rng, problem.weight_shape, problem.dtype),
    ]


def reference(problem: ConvBwdDataProblem, inputs):
    """float64 grad_in from the direct definition, in the problem's layout."""
    return in_layout(problem.channels_last, lambda grad_out, weight: reference_ops.conv_bwd_data(
        grad_out, weight, problem.input_spatial, problem.stride, problem.dilation, problem.padding, problem.groups
    ), *inputs[:2])


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

def terms(problem: ConvBwdDataProblem) -> int:
    """The most terms summed into one grad_in position: a group's output channels times the taps."""
    return problem.out_channels * math.prod(problem.filter_spatial)


def roles(problem: ConvBwdDataProblem) -> Roles:
    """grad_out (N, (G, K), *O), the weight, the D tensors broadcast against grad_in, the parameter vector; grad_in
    (N, (G, C), *I): channel c of grad_in reads channel c of the weight (and of a D tensor) only, K is summed."""
    grad_in, grad_out, weight = axis_roles.convolution(problem)
    ds = tuple(axis_roles.broadcast(grad_in, shape) for shape in problem.d_shapes)
    names = problem.epilogue_params
    parameters = (((axis_roles.Index("p", "parameter", len(names)),),),) if names else ()
    return Roles((grad_out, weight, *ds, *parameters), (grad_in,))


def magnitudes(problem: ConvBwdDataProblem, inputs: list, values: list) -> list:
    """Each grad_in position's sum of term magnitudes: the reference on |grad_out| and |weight|."""
    return [reference(problem, [np.abs(np.asarray(a, np.float64)) for a in inputs[:2]])]
