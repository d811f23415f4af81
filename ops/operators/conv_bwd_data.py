"""N-D convolution backward-data (CK example ``17_convnd_bwd_data``).

``grad_in = conv_bwd_data(grad_out, weight, input_shape=...)`` is the gradient of PyTorch's
``conv{1,2,3}d(input, weight, stride, padding, dilation)`` with respect to ``input``. The MLIR form is the stride
phases of ``mlir/conv_bwd_data.mlir`` (``stride_phases``): one stride-1 convolution per stride phase, each storing
its own positions of grad_in (see the template's header).
"""

from __future__ import annotations

from .. import dtypes
from .. import reference as reference_ops
from ..operator import Choices, run
from ..layouts import activation_from_params, in_layout
from ..problem import ConvBwdDataProblem
from ..problem_checks import array_shape_dtype, conv_problem, conv_problem_from_params
from ..validation import check
from . import stride_phases

OP = "conv_bwd_data"
Problem = ConvBwdDataProblem
forms = stride_phases.forms


def normalize(grad_out, weight, *, input_shape, stride, padding, dilation, layout, groups=1, op=OP) -> ConvBwdDataProblem:
    """Check every argument and build the problem, before anything is compiled (``op``: the operator named in
    messages; grouped_conv_bwd_data checks its convolution here)."""
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
    return problem


def results(problem: ConvBwdDataProblem) -> list:
    return [(problem.input_shape, problem.dtype)]


def render(problem: ConvBwdDataProblem, choices: Choices = Choices()) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, weight, dst)."""
    return stride_phases.render_module(problem, choices, choices.choose(forms(problem, choices.target)))


def conv_bwd_data(grad_out, weight, *, input_shape, stride=1, padding=0, dilation=1, layout="NHWC", device=None, out=None):
    """Gradient of an N-D convolution with respect to its input.

    grad_out: ``(N, *out_spatial, K)`` for channels-last layouts (``NWC``, ``NHWC``, ``NDHWC``) or
    ``(N, K, *out_spatial)`` for PyTorch's (``NCW``, ``NCHW``, ``NCDHW``); weight: ``(K, *filter, C)``
    channels-last (CK's KYXC) or ``(K, C, *filter)`` channels-first (PyTorch's). ``input_shape`` is the
    forward input's full shape in the same layout. ``stride``/``dilation``: an int or one per spatial dim;
    ``padding``: an int, one per dim, or one ``(low, high)`` pair per dim.

    NumPy arrays in give a NumPy array out; IREE DeviceArrays in give a DeviceArray out (no host copy).
    ``device`` is an IREE driver name (``local-task`` by default; ``hip``, ``cuda``). ``out``, optional,
    is a DeviceArray of grad_in's shape and dtype that receives the result.
    """
    problem = normalize(grad_out, weight, input_shape=input_shape, stride=stride, padding=padding, dilation=dilation, layout=layout)
    return run(problem, [grad_out, weight], device, out)


# --- Problems from parameters, inputs and reference for the command line, the benchmarks and the tests ---------


def problem_from_params(*, batch, in_channels, out_channels, input_spatial, filter_spatial, stride=1, padding=0,
                        dilation=1, layout="NHWC", dtype="float16", groups=1, op=OP, **fields) -> ConvBwdDataProblem:
    """A problem from CK-style parameters (no arrays needed), checked like a call's arguments.

    ``in_channels`` (C) and ``out_channels`` (K) are per group, as in CK.
    """
    return conv_problem_from_params(
        ConvBwdDataProblem, op, layout=layout, dtype=dtype, output_channels=groups * out_channels,
        input_shape=activation_from_params(batch, input_spatial, groups * in_channels, layout),
        filter_spatial=filter_spatial, groups=groups, stride=stride, padding=padding, dilation=dilation, **fields,
    )


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
