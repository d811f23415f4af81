"""3-D average pooling's forward (of ``avgpool3d_bwd``), for ``ops.torch``'s ``avg_pool3d`` and its fused ReLU.

``y = avgpool3d_fwd(x, kernel_size=...)`` is ``torch.nn.functional.avg_pool3d(x, kernel_size, stride, padding,
ceil_mode, count_include_pad, divisor_override)``, with ``input_activation="relu"`` of ``relu(x)``, the ReLU
applied to each tap as it is read (so relu(x) is never stored). The rules are ``avgpool3d_bwd``'s (PyTorch's, and
CK's window dilation). Template: ``mlir/avgpool3d_fwd.mlir``; its taps are slices of the input padded once
(``mlir/pool_taps.mlir``: ``pool_windows.Form`` ``"slices"``, or ``"phases"`` in a channels-first layout whose W
the stride divides).
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes
from .. import reference as reference_ops
from .. import render as mlir
from .. import roles as axis_roles
from ..roles import Roles
from ..layouts import activation_from_params, in_layout
from ..operator import Lowering
from ..problem import AvgPoolProblem
from ..problem_checks import array_shape_dtype, avg_pool_fields, pool_problem
from ..validation import check, check_activation
from . import avgpool3d as backward, pool_windows as windows
from .pool_windows import Form

OP = "avgpool3d_fwd"
Problem = AvgPoolProblem


def normalize(x, *, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, count_include_pad=True,
              divisor_override=None, layout, input_activation=None) -> AvgPoolProblem:
    """Check every argument and build the problem, before anything is compiled."""
    x_shape, x_dtype = array_shape_dtype(OP, "x", x)
    check(len(x_shape) == 5, f"{OP}: x must be 5-D (N, C, D, H, W or N, D, H, W, C), but has shape {x_shape!r}")
    check_activation(OP, input_activation)
    return pool_problem(
        AvgPoolProblem, OP, rank=3, layout=layout, dtype=x_dtype, input_shape=x_shape, input_name="x",
        output_name="x", kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
        ceil_mode=ceil_mode, **avg_pool_fields(OP, count_include_pad, divisor_override),
        input_activation=input_activation,
    )


def results(problem: AvgPoolProblem) -> list:
    return [(problem.output_shape, problem.dtype)]


def render(problem: AvgPoolProblem, form: Form = Form(windows="slices"), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (x, y_dst)."""
    check(form.windows in ("slices", "phases"), f"{OP}: the forward reads its taps as slices or phases, but got "
                                                f"{form.windows!r}")
    element = dtypes.mlir_element_type(problem.dtype)
    relu = problem.input_activation == "relu"
    padded, tap_slice = windows.tap_source(problem, element, "%zero", form.windows == "phases")
    tables, divisor = windows.avg_divisor(problem, "%o_{x}")
    taps = list(itertools.product(*(range(k) for k in problem.kernel_size)))
    slices, body, total = [], [], "%sum"
    for number, f in enumerate(taps):
        t = f"_{number}"
        slices.append(tap_slice(t, f, "!y"))
        widen, value = windows.to_f32(f"%v{t}", element)
        lines = [widen] if widen else []
        if relu:
            lines.append(mlir.render("pool_taps.relu", element="f32", t=t, v=value))
            value = f"{value}_relu"
        lines.append(mlir.render("avgpool3d_fwd.add", result=f"%sum{t}", sum=total, value=value))
        body.append("\n".join(lines))
        total = f"%sum{t}"
    _, _, spatial = windows.grid_dims(problem)
    window_lines = [mlir.render("avgpool3d_fwd.window", x=x, dim=spatial[a])
                    for a, x in enumerate(windows.axis_letters(problem))]
    narrow = mlir.narrow("%mean", element, "%mean_out")
    return mlir.render(
        "avgpool3d_fwd",
        title_relu=" of relu(x)" if relu else "",
        summand=", each through the ReLU (0 below 0; -0 and NaN kept)" if relu else "",
        layout=problem.layout, form_note=mlir.render(f"avgpool3d_fwd.{form.windows}_note"),
        problem_name=problem.name, function=problem.name, element=element,
        x_type=mlir.tensor(problem.input_shape, element), y_type=mlir.tensor(problem.output_shape, element),
        transients=mlir.transients(lowering.transients), tables=mlir.indent(tables, 2),
        padded=mlir.indent(padded, 2), slices=mlir.indent("\n".join(slices), 2),
        maps=", ".join([windows.grid_map(problem)] * (len(taps) + 1)), iterators=windows.iterators(problem),
        tap_values=", ".join(f"%x_tap_{i}" for i in range(len(taps))), tap_types=", ".join(["!y"] * len(taps)),
        tap_arguments=", ".join(f"%v_{i}: {element}" for i in range(len(taps))),
        windows=mlir.indent("\n".join(window_lines), 4), taps=mlir.indent("\n".join(body), 4),
        divisor=mlir.indent(divisor, 4), last_sum=total, narrow=mlir.indent(narrow[0], 4) if narrow[0] else "",
        mean_out=narrow[1],
    )


# --- Problems from parameters, inputs and reference for the command line, the benchmarks and the tests ---------


random_params = backward.random_params


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, count_include_pad=True, divisor_override=None, input_activation=None,
                        layout="NDHWC", dtype="float16") -> AvgPoolProblem:
    """A problem from parameters, checked like a call's arguments."""
    check_activation(OP, input_activation)
    return pool_problem(
        AvgPoolProblem, OP, rank=3, layout=layout, dtype=dtype, input_name="x", output_name="x",
        input_shape=activation_from_params(batch, input_spatial, channels, layout), kernel_size=kernel_size,
        stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        **avg_pool_fields(OP, count_include_pad, divisor_override), input_activation=input_activation,
    )


def random_inputs(problem: AvgPoolProblem, rng) -> list:
    return [dtypes.random_normal(rng, problem.input_shape, problem.dtype)]


def reference(problem: AvgPoolProblem, inputs) -> np.ndarray:
    """float64 y of x, or of relu(x) (PyTorch's: 0 below 0, else x, -0 and NaN kept), from the window-by-window
    definition, in the problem's layout."""
    (x,) = inputs
    x = np.asarray(x, np.float64)
    if problem.input_activation == "relu":
        x = reference_ops.relu(x)
    return in_layout(problem.channels_last, lambda a: reference_ops.avgpool_fwd(
        a, problem.output_spatial, problem.kernel_size, problem.stride, problem.dilation, problem.padding,
        problem.count_include_pad, problem.divisor_override), x)


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

terms = windows.terms


def roles(problem: AvgPoolProblem) -> Roles:
    """x; y: pooling mixes neither batch indices nor channels."""
    x, y = axis_roles.pooling(problem)
    return Roles((x,), (y,))


def magnitudes(problem: AvgPoolProblem, inputs: list, values: list) -> list:
    """Each mean's sum of term magnitudes: the pooling of |x| (of |relu(x)|, no larger)."""
    return [reference(problem, [np.abs(np.asarray(inputs[0], np.float64))])]
