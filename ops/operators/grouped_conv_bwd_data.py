"""Grouped convolution backward-data with fused elementwise "D" tensors (CK example ``38_grouped_conv_bwd_data_multiple_d``).

``grad_in = f(acc, d0, d1, ...)`` where ``acc`` is the grouped backward-data result in float32 and the
``ds`` broadcast (NumPy rules) to grad_in's shape. The convolution and ``f`` share one MLIR form with
``conv_bwd_data`` (``mlir/conv_bwd_data.mlir``): ``f`` runs in the dispatch that computes each stride
phase, so an epilogue costs no extra pass over grad_in.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import dtypes, epilogue as epilogues, runtime
from ..problem import ConvProblem, array_shape_dtype, check_dtype
from ..validation import check, check_type
from . import conv_bwd_data as conv

OP = "grouped_conv_bwd_data"
render_mlir = conv.render_mlir
phases = conv.phases


def normalize(grad_out, weight, ds, *, groups, input_shape, stride, padding, dilation, epilogue, layout, params):
    """Check every argument (D shapes and the epilogue too) before anything is compiled.

    Returns the problem and the epilogue's parameter values, in the problem's ``epilogue_params`` order.
    """
    check_type(
        isinstance(ds, (tuple, list)),
        f"{OP}: ds must be a tuple of arrays (d0, d1, ...), but got {type(ds).__name__}",
    )
    problem = conv.normalize(grad_out, weight, input_shape=input_shape, stride=stride, padding=padding,
                             dilation=dilation, layout=layout, groups=groups, op=OP)
    d_shapes, d_dtypes = [], []
    for j, d in enumerate(ds):
        shape, dtype = array_shape_dtype(OP, f"ds[{j}]", d)
        check_dtype(OP, f"ds[{j}]", dtype)
        try:
            broadcast = np.broadcast_shapes(shape, problem.input_shape)
        except ValueError:
            broadcast = None
        check(
            broadcast == problem.input_shape,
            f"{OP}: ds[{j}] has shape {shape}, which does not broadcast to grad_in's shape {problem.input_shape}",
        )
        d_shapes.append(shape)
        d_dtypes.append(dtype)
    parsed, values = epilogues.parse(OP, epilogue, len(ds), params)
    problem = dataclasses.replace(
        problem,
        epilogue=parsed.text if parsed else None,
        epilogue_params=parsed.param_names if parsed else (),
        d_shapes=tuple(d_shapes),
        d_dtypes=tuple(d_dtypes),
    )
    return problem, values


def grouped_conv_bwd_data(grad_out, weight, ds=(), *, groups, input_shape, stride=1, padding=0, dilation=1,
                          epilogue=None, layout="NHWC", device=None, out=None, **params):
    """Gradient of a grouped N-D convolution with respect to its input, with a fused epilogue.

    Layouts as in ``conv_bwd_data``, groups folded into channels (PyTorch's and CK's NHWGC): channels-last
    grad_out ``(N, *out_spatial, G*K)``, weight ``(G*K, *filter, C)``, grad_in ``(N, *spatial, G*C)``;
    channels-first layouts are PyTorch's. ``epilogue``: ``None``, a name (``"add"``, ``"bilinear"``,
    ``"scale"``, ``"add_relu"``, ``"relu_grad"``) or an expression over ``acc``, ``d0``, ``d1``, ... and
    named float parameters given as keyword arguments, e.g. ``"where(d1 > 0, acc + d0, 0) * alpha"``.
    """
    problem, values = normalize(grad_out, weight, ds, groups=groups, input_shape=input_shape, stride=stride,
                                padding=padding, dilation=dilation, epilogue=epilogue, layout=layout, params=params)
    return runtime.run(problem, render_mlir, _arguments([grad_out, weight, *ds], values),
                       results=[(problem.input_shape, problem.dtype)], device=device, out=out)


def _arguments(inputs: list, values: tuple[float, ...]) -> list:
    """The module function's arguments: grad_out, weight, the D tensors, then the parameters as one f32 vector."""
    return [*inputs, np.asarray(values, dtype=np.float32)] if values else list(inputs)


def module_arguments(problem: ConvProblem, inputs: list) -> list:
    """The arguments of ``problem``'s module function for the benchmark's inputs (parameter values as in ``call``)."""
    return _arguments(list(inputs), tuple(param_values(problem)[name] for name in problem.epilogue_params))


# --- Problem construction, inputs and reference for the command line and the benchmarks ---------------

# parameter values the command line and benchmarks use (others: 1.0)
_PARAMETER_DEFAULTS = {"alpha": 0.5, "beta": 2.0}


def problem_from_params(*, groups, epilogue=None, d_kinds=(), **params) -> ConvProblem:
    """A problem from CK-style parameters; ``d_kinds`` lists each D tensor as ``"full"`` or ``"channel"``."""
    problem = dataclasses.replace(conv.problem_from_params(**params, groups=groups), op=OP)
    d_shapes = tuple(problem.input_shape if kind == "full" else _channel_shape(problem) for kind in d_kinds)
    values = {name: _PARAMETER_DEFAULTS.get(name, 1.0) for name in epilogues.parameter_names(OP, epilogue)} if epilogue else {}
    parsed, _ = epilogues.parse(OP, epilogue, len(d_kinds), values)
    return dataclasses.replace(
        problem, epilogue=parsed.text if parsed else None, epilogue_params=parsed.param_names if parsed else (),
        d_shapes=d_shapes, d_dtypes=(problem.dtype,) * len(d_shapes),
    )


def _channel_shape(problem: ConvProblem) -> tuple[int, ...]:
    """A per-channel D (a bias) broadcast against grad_in: (G*C,) channels-last, (G*C, 1, ..) channels-first."""
    channels = problem.groups * problem.in_channels
    return (channels,) if problem.channels_last else (channels, *([1] * problem.rank))


def param_values(problem: ConvProblem) -> dict:
    """The epilogue parameter values the command line, the benchmarks and ``call`` use (alpha 0.5, beta 2, others 1)."""
    return {name: _PARAMETER_DEFAULTS.get(name, 1.0) for name in problem.epilogue_params}


def random_inputs(problem: ConvProblem, rng) -> list:
    ds = [rng.standard_normal(shape, dtype="float32").astype(dtypes.numpy_dtype(t)) for shape, t in zip(problem.d_shapes, problem.d_dtypes)]
    return conv.random_inputs(problem, rng) + ds


def reference(problem: ConvProblem, inputs) -> np.ndarray:
    """float64: the direct-definition grouped backward-data, then the epilogue evaluated by NumPy."""
    acc = conv.reference(problem, inputs[:2])
    if problem.epilogue is None:
        return acc
    values = {"acc": acc, **{f"d{j}": np.asarray(d, np.float64) for j, d in enumerate(inputs[2:])}, **param_values(problem)}
    return np.broadcast_to(epilogues.evaluate(epilogues.parse_canonical(problem.epilogue), values), acc.shape)


def call(problem: ConvProblem, inputs, device=None, out=None):
    grad_out, weight, *ds = inputs
    return grouped_conv_bwd_data(
        grad_out, weight, tuple(ds), groups=problem.groups, input_shape=problem.input_shape, stride=problem.stride,
        padding=problem.padding, dilation=problem.dilation, epilogue=problem.epilogue, layout=problem.layout, device=device,
        out=out, **param_values(problem),
    )

