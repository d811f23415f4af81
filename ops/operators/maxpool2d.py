"""2-D max pooling backward (CK example ``49_maxpool2d_bwd``), PyTorch's semantics; the forward is ``maxpool2d_fwd``.

``grad_in = maxpool2d_bwd(grad_out, input_shape=..., kernel_size=..., indices=...)`` (or ``x=...``, the argmax
recomputed) is the gradient of ``torch.nn.functional.max_pool2d(x, ..., return_indices=True)`` with respect to
``x``. Templates: ``mlir/maxpool2d_fwd.mlir``
(its window scan a fragment the backward reuses for ``x=...``) and the pooling backward gather ``mlir/pool_bwd.mlir``
(its header derives the gather identity) with max pooling's fragments.

PyTorch's rules, kept exactly: stride defaults to the kernel size; padding at most half the window
(``kernel_size // 2``); ``ceil_mode`` windows must start inside the input or the left padding; the first
maximum in scan order wins a tie and a NaN counts as the maximum (of several NaNs, the last: PyTorch's
``v > max or isnan(v)`` update). One decision of ours: a window whose dilated taps all fall in the
padding (possible only with dilation, where PyTorch returns -inf and an index outside the plane) is an error.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes, sweep_params
from .. import render as mlir
from ..operator import Lowering, SingleForm as Form
from .. import reference as reference_ops
from ..layouts import activation_from_params, channels_last, in_layout
from ..problem import POOL_INDEX_DTYPES, MaxPoolBwdProblem
from ..problem_checks import array_shape_dtype, pool_problem
from ..validation import check, check_type
from . import maxpool2d_fwd as fwd, pool_windows as windows
from .maxpool2d_fwd import window_max as reference_fwd

OP = "maxpool2d_bwd"
Problem = MaxPoolBwdProblem


def results(problem: MaxPoolBwdProblem) -> list:
    return [(problem.input_shape, problem.dtype)]


# --- Normalization --------------------------------------------------------------------------------------


def normalize(grad_out, *, input_shape, kernel_size, stride, padding, dilation, ceil_mode, indices, x, layout) -> MaxPoolBwdProblem:
    """Check every argument (indices' values too, for NumPy indices) before anything is compiled."""
    out_shape, out_dtype = array_shape_dtype(OP, "grad_out", grad_out)
    check(
        (indices is None) != (x is None),
        f"{OP}: pass exactly one of indices (from maxpool2d_fwd) or x (to recompute the argmax), but got "
        + ("both" if indices is not None else "neither"),
    )
    fwd.check_rank(OP, "grad_out", out_shape)
    source, index_dtype = ("x", None) if indices is None else ("indices", None)
    if indices is not None:
        index_shape, index_dtype = array_shape_dtype(OP, "indices", indices)
        check_type(
            index_dtype in POOL_INDEX_DTYPES,
            f"{OP}: indices must be {' or '.join(POOL_INDEX_DTYPES)}, but got {index_dtype}",
        )
        check(index_shape == out_shape, f"{OP}: indices has shape {index_shape!r}, but grad_out has shape {out_shape!r}")
    problem = pool_problem(
        MaxPoolBwdProblem, OP, rank=2, layout=layout, dtype=out_dtype, input_shape=input_shape, output_shape=out_shape,
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        source=source, index_dtype=index_dtype,
    )
    if x is not None:
        x_shape, x_dtype = array_shape_dtype(OP, "x", x)
        check(x_shape == problem.input_shape, f"{OP}: x has shape {x_shape!r}, but input_shape is {problem.input_shape!r}")
        check(x_dtype == out_dtype, f"{OP}: grad_out and x must have the same dtype, but got {out_dtype} and {x_dtype}")
    elif isinstance(indices, np.ndarray):  # values on the device (or shape-only descriptions) are not read back
        check_indices(problem, indices)
    return problem


def check_indices(problem: MaxPoolBwdProblem, indices: np.ndarray) -> None:
    """Every index must be a tap of its own window: the gather reads nothing else.

    (Indices already on the device are not copied back to be checked; an entry that is not a tap of its
    window routes no gradient.)"""
    if not problem.channels_last:
        indices = channels_last(indices)
    height, width = problem.input_spatial
    bad = (indices < 0) | (indices >= height * width)
    if bad.any():
        where = tuple(int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            f"{OP}: indices must be flat positions h*W + w in [0, {height * width}) of the {height}x{width} input "
            f"plane, but got {int(indices[where])} at {_layout_position(problem, where)}"
        )
    rows, cols = np.divmod(indices, width)
    ok = np.ones(indices.shape, dtype=bool)
    for axis, position in ((0, rows), (1, cols)):
        k, s, d, (p, _) = problem.kernel_size[axis], problem.stride[axis], problem.dilation[axis], problem.padding[axis]
        o = np.arange(problem.output_spatial[axis]).reshape((1, -1, 1, 1) if axis == 0 else (1, 1, -1, 1))
        offset = position + p - s * o  # d*f for a tap f < k of window o
        ok &= (offset >= 0) & (offset < d * (k - 1) + 1) & (offset % d == 0)
    if not ok.all():
        where = tuple(int(v) for v in np.argwhere(~ok)[0])
        raise ValueError(
            f"{OP}: indices must point into their own pooling window (as maxpool2d_fwd's do), but the entry at "
            f"{_layout_position(problem, where)} is {int(indices[where])}, position {divmod(int(indices[where]), width)} "
            f"(h, w), outside window {where[1:3]}"
        )


def _layout_position(problem: MaxPoolBwdProblem, channels_last_position: tuple[int, ...]) -> tuple[int, ...]:
    n, oh, ow, c = channels_last_position
    return (n, oh, ow, c) if problem.channels_last else (n, c, oh, ow)


# --- Rendering ------------------------------------------------------------------------------------------


def _source(problem: MaxPoolBwdProblem, element: str, index_type: str) -> dict[str, str]:
    """The gather's source of each window's argmax: the operand %indices, or the forward's scan of the operand %x."""
    indices_type = mlir.tensor(problem.output_shape, index_type)
    if problem.source == "indices":
        return dict(
            inputs="grad_out and the forward's indices",
            source_types=mlir.render("pool_bwd.max_indices_types", indices_type=indices_type),
            source_argument=", %indices: !argmax",
            prologue=mlir.render("pool_bwd.max_indices"),
        )
    return dict(
        inputs="grad_out and x (the argmax of every window recomputed, as the forward finds it)",
        source_types=mlir.render(
            "pool_bwd.max_x_types", indices_type=indices_type, x_type=mlir.tensor(problem.input_shape, element),
            window_max_type=mlir.tensor(problem.output_shape, element), taps_type=mlir.tensor(problem.kernel_size, "i8"),
        ),
        source_argument=", %x: !x",
        prologue=mlir.render(
            "pool_bwd.max_x", neg_inf=fwd.NEG_INF[element], element=element,
            no_position=problem.input_spatial[0] * problem.input_spatial[1], index_type=index_type,
            scan=fwd.window_scan(problem, element, index_type, "%max_empty", "%argmax_empty"),
        ),
    )


def render(problem: MaxPoolBwdProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, indices or x, dst)."""
    element = dtypes.mlir_element_type(problem.dtype)
    index_type = fwd.INDEX_TYPES["int64" if problem.source == "x" else problem.index_dtype]
    g_to_f32, g32 = windows.to_f32("%g", element)
    return windows.render_gather(
        problem,
        title="Max-pool 2-D backward",
        transients=mlir.transients(lowering.transients),
        contribution_note=mlir.render("pool_bwd.max_note"),
        contribution=mlir.render(
            "pool_bwd.max_contribution", width=problem.input_spatial[1], index_type=index_type,
            window_indices=windows.window_indices(problem), g_to_f32=g_to_f32, g32=g32,
        ),
        **_source(problem, element, index_type),
    )


# --- Public entry points --------------------------------------------------------------------------------


# --- Problem construction, inputs and reference for the command line, the benchmarks and the tests -----


def random_params(rng, rank: int) -> dict:
    """The compile sweep's parameters (always 2-D, whatever ``rank``): the argmax from indices or from x."""
    params = sweep_params.pool_params(rng, 2)
    return {**params, "source": str(rng.choice(["indices", "x"]))}


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, layout="NHWC", dtype="float16", source="indices", index_dtype="int64") -> MaxPoolBwdProblem:
    """A problem from parameters, checked like a call's arguments."""
    input_shape = activation_from_params(batch, input_spatial, channels, layout)
    check(source in ("indices", "x"), f"{OP}: source must be one of indices, x, but got {source!r}")
    check_type(
        source == "x" or index_dtype in POOL_INDEX_DTYPES,
        f"{OP}: indices must be {' or '.join(POOL_INDEX_DTYPES)}, but got {index_dtype}",
    )
    return pool_problem(MaxPoolBwdProblem, OP, rank=2, layout=layout, dtype=dtype, input_shape=input_shape,
                        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                        source=source, index_dtype=index_dtype if source == "indices" else None)


def random_inputs(problem: MaxPoolBwdProblem, rng) -> list:
    """[grad_out, indices or x]: normal values; indices are the forward's on a random x."""
    grad_out = dtypes.random_normal(rng, problem.output_shape, problem.dtype)
    x = dtypes.random_normal(rng, problem.input_shape, problem.dtype)
    if problem.source == "x":
        return [grad_out, x]
    return [grad_out, reference_fwd(problem, x)[1].astype(problem.index_dtype)]


def reference(problem: MaxPoolBwdProblem, inputs) -> np.ndarray:
    """float64 grad_in: the scatter-add of grad_out at each window's argmax, in the problem's layout."""
    grad_out, source = inputs
    indices = reference_fwd(problem, source)[1] if problem.source == "x" else np.asarray(source)
    return in_layout(problem.channels_last, lambda g, i: reference_ops.maxpool2d_bwd(g, i, problem.input_spatial),
                     grad_out, indices)


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

BATCH_SEPARABLE, terms, sample = windows.BATCH_SEPARABLE, windows.terms, windows.sample


def magnitudes(problem, inputs: list, values: list) -> list:
    return windows.backward_magnitudes(reference, problem, inputs)
