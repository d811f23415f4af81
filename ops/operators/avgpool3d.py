"""3-D average pooling backward (CK example ``51_avgpool3d_bwd``), PyTorch's semantics plus CK's window dilation.

``grad_in = avgpool3d_bwd(grad_out, input_shape=..., kernel_size=...)`` is the gradient of
``torch.nn.functional.avg_pool3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
divisor_override)`` with respect to ``x``. The template is the pooling backward gather ``mlir/pool_bwd.mlir``
(its header derives the gather identity; ``pool_windows`` fills it) with average pooling's fragments.

PyTorch's rules, kept exactly: stride defaults to the kernel size; padding at most half the window; ceil_mode
windows must start inside the input or the left padding, and a window running past the padded end is clipped
there for its divisor; ``count_include_pad`` counts the padding taps; ``divisor_override`` replaces the count.
Window dilation is CK's extension (PyTorch's avg_pool3d has none): taps are counted the same way as without
it, so the count_include_pad divisor is the full window ``kd*kh*kw`` (as in CK) except for ceil_mode's
clipped last windows, and without count_include_pad it is the number of taps inside the input. A window
whose dilated taps all fall in the padding (it would divide by zero) is an error.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes, sweep_params
from .. import render as mlir
from .. import roles as axis_roles
from ..roles import Roles
from ..operator import Lowering, SingleForm as Form
from .. import reference as reference_ops
from ..layouts import activation_from_params, in_layout
from ..problem import AvgPoolProblem
from ..problem_checks import array_shape_dtype, avg_pool_fields, pool_problem
from ..validation import check, check_activation, check_type
from . import pool_windows as windows

OP = "avgpool3d_bwd"
Problem = AvgPoolProblem


def results(problem: AvgPoolProblem) -> list:
    return [(problem.input_shape, problem.dtype)]


# Named problems (CK's defaults and real layers) live in build_tools/manifests/ck_examples.json.


def normalize(grad_out, *, input_shape, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
              divisor_override, layout, relu_output=None) -> AvgPoolProblem:
    """Check every argument and build the problem, before anything is compiled. ``relu_output``: the output of
    a ReLU that was the pooled input, whose backward grad_in takes (``input_activation="relu"``)."""
    out_shape, out_dtype = array_shape_dtype(OP, "grad_out", grad_out)
    check(len(out_shape) == 5, f"{OP}: grad_out must be 5-D (N, C, D, H, W or N, D, H, W, C), but has shape {out_shape!r}")
    fields = avg_pool_fields(OP, count_include_pad, divisor_override)
    problem = pool_problem(
        AvgPoolProblem, OP, rank=3, layout=layout, dtype=out_dtype, input_shape=input_shape, output_shape=out_shape,
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode, **fields,
        input_activation=None if relu_output is None else "relu",
    )
    if relu_output is not None:
        shape, dtype = array_shape_dtype(OP, "relu_output", relu_output)
        check(shape == problem.input_shape,
              f"{OP}: relu_output has shape {shape!r}, but input_shape is {problem.input_shape!r}")
        check_type(dtype == out_dtype, f"{OP}: grad_out and relu_output must have the same dtype, but got {out_dtype} "
                                       f"and {dtype}")
    return problem


def render(problem: AvgPoolProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, dst)."""
    element = dtypes.mlir_element_type(problem.dtype)
    tables, divisor = windows.avg_divisor(problem, "%o_{x}_clamped")
    g_to_f32, g32 = windows.to_f32("%g", element)
    relu = problem.input_activation == "relu"
    return windows.render_gather(
        problem,
        title="Average-pool 3-D backward" + (" of a ReLU's output" if relu else ""),
        transients=mlir.transients(lowering.transients),
        inputs="grad_out" + (" and relu_output" if relu else ""),
        relu=relu,
        contribution_note=mlir.render("pool_bwd.avg_note"),
        prologue=tables,
        contribution=mlir.render(
            "pool_bwd.avg_contribution", divisor=divisor, window_indices=windows.window_indices(problem),
            g_to_f32=g_to_f32, g32=g32,
        ),
    )


# --- Problem construction, inputs and reference for the command line, the benchmarks and the tests -----


def random_params(rng, rank: int) -> dict:
    """The compile sweep's parameters (always 3-D, whatever ``rank``), with both padding-count rules and a divisor."""
    params = sweep_params.pool_params(rng, 3)
    count_include_pad = bool(rng.integers(2))
    return {**params, "count_include_pad": count_include_pad, "divisor_override": [None, None, 3][int(rng.integers(3))]}


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, count_include_pad=True, divisor_override=None, input_activation=None,
                        layout="NDHWC", dtype="float16") -> AvgPoolProblem:
    """A problem from parameters (no arrays needed), checked like a call's arguments."""
    fields = avg_pool_fields(OP, count_include_pad, divisor_override)
    check_activation(OP, input_activation)
    return pool_problem(
        AvgPoolProblem, OP, rank=3, layout=layout, dtype=dtype,
        input_shape=activation_from_params(batch, input_spatial, channels, layout),
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode, **fields,
        input_activation=input_activation,
    )


def random_inputs(problem: AvgPoolProblem, rng) -> list:
    """[grad_out] and, with a ReLU, [relu_output]: normal values (about half of them <= 0, which it zeroes)."""
    grad_out = dtypes.random_normal(rng, problem.output_shape, problem.dtype)
    if problem.input_activation is None:
        return [grad_out]
    return [grad_out, dtypes.random_normal(rng, problem.input_shape, problem.dtype)]


def reference(problem: AvgPoolProblem, inputs) -> np.ndarray:
    """float64 grad_in from the window-by-window definition, in the problem's layout; with a ReLU, zero where its
    output is <= 0 (PyTorch's threshold_backward: a NaN output keeps the gradient)."""
    def grad_in(grad_out, relu_output=None):
        gradient = reference_ops.avgpool_bwd(
            grad_out, problem.input_spatial, problem.kernel_size, problem.stride, problem.dilation, problem.padding,
            problem.count_include_pad, problem.divisor_override,
        )
        return gradient if relu_output is None else np.where(np.asarray(relu_output) <= 0, 0.0, gradient)

    return in_layout(problem.channels_last, grad_in, *inputs)


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

terms = windows.terms


def roles(problem: AvgPoolProblem) -> Roles:
    """grad_out and, with a ReLU, its output (input-shaped); grad_in: pooling mixes neither batch indices nor
    channels."""
    grad_in, grad_out = axis_roles.pooling(problem)
    return Roles((grad_out, *((grad_in,) if problem.input_activation == "relu" else ())), (grad_in,))


def magnitudes(problem, inputs: list, values: list) -> list:
    return windows.backward_magnitudes(reference, problem, inputs)
