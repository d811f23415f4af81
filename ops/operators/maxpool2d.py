"""2-D max pooling, forward with indices and backward (CK example ``49_maxpool2d_bwd``), PyTorch's semantics.

``y, indices = maxpool2d_fwd(x, kernel_size=...)`` is ``torch.nn.functional.max_pool2d(x, ...,
return_indices=True)``; ``grad_in = maxpool2d_bwd(grad_out, input_shape=..., kernel_size=..., indices=...)``
(or ``x=...``, the argmax recomputed) is its gradient with respect to ``x``. Templates:
``mlir/maxpool2d_fwd.mlir`` and ``mlir/maxpool2d_bwd.mlir`` around the shared window scan
``mlir/maxpool2d_argmax.mlir``; the gather identity is derived in ``maxpool2d_bwd.mlir``'s header.

PyTorch's rules, kept exactly: stride defaults to the kernel size; padding at most half the window
(``kernel_size // 2``); ``ceil_mode`` windows must start inside the input or the left padding; the first
maximum in scan order wins a tie and a NaN counts as the maximum (of several NaNs, the last: PyTorch's
``v > max or isnan(v)`` update). One decision of ours: a window whose dilated taps all fall in the
padding (possible only with dilation, where PyTorch returns -inf and an index outside the plane) is an error.
"""

from __future__ import annotations

import numpy as np

import iree.runtime as rt

from .. import dtypes, render, runtime
from .. import reference as reference_ops
from ..problem import (
    LAYOUTS, POOL_INDEX_DTYPES, PoolProblem, array_shape_dtype, channels_first, channels_last, join_activation, pool_problem,
)
from ..validation import check, check_type
from . import pool_windows as windows

FWD, BWD = "maxpool2d_fwd", "maxpool2d_bwd"
_INDEX_TYPES = {"int64": "i64", "int32": "i32"}
_NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}  # -inf, spelled as its bits

# Named problems (CK's example defaults first), for the catalog and the command line: maxpool2d_bwd.
# Named problems (CK's defaults and real layers) live in build_tools/manifests/ck_examples.json.


# --- Normalization --------------------------------------------------------------------------------------


def _check_rank(op: str, name: str, shape: tuple[int, ...]) -> None:
    check(len(shape) == 4, f"{op}: {name} must be 4-D (N, C, H, W or N, H, W, C), but has shape {shape!r}")


def normalize_fwd(x, *, kernel_size, stride, padding, dilation, ceil_mode, layout) -> PoolProblem:
    x_shape, x_dtype = array_shape_dtype(FWD, "x", x)
    _check_rank(FWD, "x", x_shape)
    return pool_problem(
        FWD, rank=2, layout=layout, dtype=x_dtype, input_shape=x_shape, input_name="x", output_name="x",
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        index_dtype="int64",
    )


def normalize_bwd(grad_out, *, input_shape, kernel_size, stride, padding, dilation, ceil_mode, indices, x, layout) -> PoolProblem:
    """Check every argument (indices' values too, for NumPy indices) before anything is compiled."""
    out_shape, out_dtype = array_shape_dtype(BWD, "grad_out", grad_out)
    check(
        (indices is None) != (x is None),
        f"{BWD}: pass exactly one of indices (from maxpool2d_fwd) or x (to recompute the argmax), but got "
        + ("both" if indices is not None else "neither"),
    )
    _check_rank(BWD, "grad_out", out_shape)
    source, index_dtype = ("x", "") if indices is None else ("indices", "")
    if indices is not None:
        index_shape, index_dtype = array_shape_dtype(BWD, "indices", indices)
        check_type(
            index_dtype in POOL_INDEX_DTYPES,
            f"{BWD}: indices must be {' or '.join(POOL_INDEX_DTYPES)}, but got {index_dtype}",
        )
        check(index_shape == out_shape, f"{BWD}: indices has shape {index_shape!r}, but grad_out has shape {out_shape!r}")
    problem = pool_problem(
        BWD, rank=2, layout=layout, dtype=out_dtype, input_shape=input_shape, output_shape=out_shape,
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        source=source, index_dtype=index_dtype,
    )
    if x is not None:
        x_shape, x_dtype = array_shape_dtype(BWD, "x", x)
        check(x_shape == problem.input_shape, f"{BWD}: x has shape {x_shape!r}, but input_shape is {problem.input_shape!r}")
        check(x_dtype == out_dtype, f"{BWD}: grad_out and x must have the same dtype, but got {out_dtype} and {x_dtype}")
    elif isinstance(indices, np.ndarray):  # values on the device (or shape-only descriptions) are not read back
        check_indices(problem, indices)
    return problem


def check_indices(problem: PoolProblem, indices: np.ndarray) -> None:
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
            f"{BWD}: indices must be flat positions h*W + w in [0, {height * width}) of the {height}x{width} input "
            f"plane, but got {int(indices[where])} at {_layout_position(problem, where)}"
        )
    rows, cols = np.divmod(indices, width)
    ok = np.ones(indices.shape, dtype=bool)
    for axis, position in ((0, rows), (1, cols)):
        k, s, d, (p, _) = problem.kernel[axis], problem.stride[axis], problem.dilation[axis], problem.padding[axis]
        o = np.arange(problem.output_spatial[axis]).reshape((1, -1, 1, 1) if axis == 0 else (1, 1, -1, 1))
        offset = position + p - s * o  # d*f for a tap f < k of window o
        ok &= (offset >= 0) & (offset < d * (k - 1) + 1) & (offset % d == 0)
    if not ok.all():
        where = tuple(int(v) for v in np.argwhere(~ok)[0])
        raise ValueError(
            f"{BWD}: indices must point into their own pooling window (as maxpool2d_fwd's do), but the entry at "
            f"{_layout_position(problem, where)} is {int(indices[where])}, position {divmod(int(indices[where]), width)} "
            f"(h, w), outside window {where[1:3]}"
        )


def _layout_position(problem: PoolProblem, channels_last_position: tuple[int, ...]) -> tuple[int, ...]:
    n, oh, ow, c = channels_last_position
    return (n, oh, ow, c) if problem.channels_last else (n, c, oh, ow)


# --- Rendering ------------------------------------------------------------------------------------------


def _argmax_fragment(problem: PoolProblem, element: str, index_type: str, max_destination: str, argmax_destination: str) -> str:
    tap_lines, clamped = windows.tap_position_lines(problem)
    position_map, operands = windows.flat_position(problem, clamped)
    tap_lines += [
        f"%position_index = affine.apply {position_map}({operands})",
        f"%position = arith.index_cast %position_index : index to {index_type}",
    ]
    tap_lines = [*windows.grid_index_lines(problem), *tap_lines]
    return render.render(
        "maxpool2d_argmax",
        element=element,
        index_type=index_type,
        max_destination=max_destination,
        argmax_destination=argmax_destination,
        taps_map=windows.trailing_map(problem, 2),
        grid_map=windows.grid_map(problem, 2),
        scan_iterators=windows.iterators(problem, 2),
        tap_positions=windows.body(tap_lines),
        x_indices=windows.layout_indices(problem, "%n", "%c", clamped),
    )


def _scan_types(problem: PoolProblem, element: str) -> str:
    return "\n".join([
        f"!x = {render.tensor(problem.input_shape, element)}",
        f"!window_max = {render.tensor(problem.output_shape, element)}",
        f"!taps = {render.tensor(problem.kernel, 'i8')}",
    ])


def render_fwd(problem: PoolProblem) -> str:
    element = dtypes.mlir_element_type(problem.dtype)
    index_type = _INDEX_TYPES[problem.index_dtype]
    return render.render(
        "maxpool2d_fwd",
        layout=problem.layout,
        problem_name=problem.name,
        function=problem.name,
        element=element,
        index_type=index_type,
        x_type=render.tensor(problem.input_shape, element),
        y_type=render.tensor(problem.output_shape, element),
        indices_type=render.tensor(problem.output_shape, index_type),
        taps_type=render.tensor(problem.kernel, "i8"),
        neg_inf=_NEG_INF[element],
        no_position=problem.input_spatial[0] * problem.input_spatial[1],
        argmax=_argmax_fragment(problem, element, index_type, "%y_dst", "%indices_dst"),
    )


def render_bwd(problem: PoolProblem) -> str:
    element = dtypes.mlir_element_type(problem.dtype)
    from_x = problem.source == "x"
    index_type = _INDEX_TYPES["int64" if from_x else problem.index_dtype]
    if from_x:
        source_types = _scan_types(problem, element)
        source_argument = "%x: !x"
        argmax_source = "\n".join([
            "  // The argmax of every window, recomputed by the forward's scan (its own dispatch: the gather",
            "  // reads it with tensor.extract, which no producer fuses into).",
            f"  %neg_inf = arith.constant {_NEG_INF[element]} : {element}",
            f"  %no_position = arith.constant {problem.input_spatial[0] * problem.input_spatial[1]} : {index_type}",
            "  %max_empty = tensor.empty() : !window_max",
            "  %argmax_empty = tensor.empty() : !argmax",
            _argmax_fragment(problem, element, index_type, "%max_empty", "%argmax_empty"),
        ])
        description = "x (the argmax of every window recomputed, as the forward finds it)"
    else:
        source_types = ""
        source_argument = "%indices: !argmax"
        argmax_source = "  // indices: each window's argmax, from maxpool2d_fwd"
        description = "the forward's indices"
    window_lines, positions, window_indices = windows.window_of_position_lines(problem)
    position_map, position_operands = windows.flat_position(problem, positions)
    g_line, g32 = windows.to_f32("%g", element)
    reductions = windows.reductions(problem)
    return render.render(
        "maxpool2d_bwd",
        layout=problem.layout,
        problem_name=problem.name,
        function=problem.name,
        source_description=description,
        candidates=" x ".join(str(j) for j in problem.candidates),
        element=element,
        index_type=index_type,
        grad_out_type=render.tensor(problem.output_shape, element),
        grad_in_type=render.tensor(problem.input_shape, element),
        indices_type=render.tensor(problem.output_shape, index_type),
        acc_type=render.tensor(problem.input_shape, dtypes.ACCUMULATOR),
        candidates_type=windows.candidates_type(problem),
        source_types=source_types,
        source_argument=source_argument,
        argmax_source=argmax_source,
        candidates_map=windows.trailing_map(problem, reductions),
        acc_map=windows.grid_map(problem, reductions),
        gather_iterators=windows.iterators(problem, reductions),
        windows_of_position=windows.body([*windows.grid_index_lines(problem), *window_lines]),
        position_map=position_map,
        position_operands=position_operands,
        window_indices=windows.layout_indices(problem, "%n", "%c", window_indices),
        g_to_f32=g_line,
        g32=g32,
        grid_map=windows.grid_map(problem),
        grid_iterators=windows.iterators(problem),
        store_body=windows.store_body(element),
    )


def render_mlir(problem: PoolProblem) -> str:
    return render_fwd(problem) if problem.op == FWD else render_bwd(problem)


# --- Public entry points --------------------------------------------------------------------------------


def maxpool2d_fwd(x, *, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, layout="NHWC", device=None, out=None):
    """2-D max pooling with PyTorch's indices: ``(y, indices)``.

    x: ``(N, H, W, C)`` (``NHWC``) or ``(N, C, H, W)`` (``NCHW``); y and indices (int64, the flat position
    ``h*W + w`` of each window's maximum inside its (n, c) plane) have the output's shape in the same layout.
    ``kernel_size``/``stride`` (default: the kernel size)/``dilation``: an int or one per spatial dim;
    ``padding``: an int, one per dim, or ``(low, high)`` pairs, each at most ``kernel_size // 2``.
    ``out``, optional: a pair of DeviceArrays (y, indices) that receive the results.
    """
    problem = normalize_fwd(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                            ceil_mode=ceil_mode, layout=layout)
    return runtime.run(
        problem, render_mlir, [x],
        results=[(problem.output_shape, problem.dtype), (problem.output_shape, "int64")], device=device, out=out,
    )


def maxpool2d_bwd(grad_out, *, input_shape, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  indices=None, x=None, layout="NHWC", device=None, out=None):
    """Gradient of 2-D max pooling with respect to its input.

    grad_out: one value per window, in ``layout``; ``input_shape``: the forward input's full shape. Give
    exactly one of ``indices`` (maxpool2d_fwd's, int64 or int32) or ``x`` (the forward input: the argmax is
    recomputed with the forward's rules). Each window's gradient goes to its argmax; overlapping windows
    add up. Other parameters as in :func:`maxpool2d_fwd`. ``out``, optional: a DeviceArray for grad_in.
    """
    problem = normalize_bwd(grad_out, input_shape=input_shape, kernel_size=kernel_size, stride=stride, padding=padding,
                            dilation=dilation, ceil_mode=ceil_mode, indices=indices, x=x, layout=layout)
    source = indices if indices is not None else x
    return runtime.run(
        problem, render_mlir, [grad_out, source], results=[(problem.input_shape, problem.dtype)], device=device, out=out,
    )


# --- Problem construction, inputs and reference for the command line, the benchmarks and the tests -----


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, layout="NHWC", dtype="float16", source="indices", index_dtype="int64",
                        op=BWD) -> PoolProblem:
    """A maxpool2d_bwd (or, with ``op="maxpool2d_fwd"``, forward) problem from parameters, checked like a call."""
    channels_last_layout = LAYOUTS.get(layout, (2, True))[1]  # pool_problem reports a bad layout
    input_shape = join_activation(batch, tuple(input_spatial), channels, channels_last_layout)
    if op == FWD:
        return pool_problem(FWD, rank=2, layout=layout, dtype=dtype, input_shape=input_shape, input_name="x",
                            output_name="x", kernel_size=kernel_size, stride=stride, padding=padding,
                            dilation=dilation, ceil_mode=ceil_mode, index_dtype="int64")
    return pool_problem(BWD, rank=2, layout=layout, dtype=dtype, input_shape=input_shape, kernel_size=kernel_size,
                        stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode, source=source,
                        index_dtype=index_dtype if source == "indices" else "")


def reference_fwd(problem: PoolProblem, x) -> tuple[np.ndarray, np.ndarray]:
    """float64 (y, indices) from PyTorch's window scan, in the problem's layout."""
    y, indices = reference_ops.maxpool2d_fwd(
        x if problem.channels_last else channels_last(x),
        problem.kernel, problem.stride, problem.dilation, problem.padding, problem.output_spatial,
    )
    return (y, indices) if problem.channels_last else (channels_first(y), channels_first(indices))


def random_inputs(problem: PoolProblem, rng) -> list:
    """[grad_out, indices or x]: normal values; indices are the forward's on a random x."""
    numpy_dtype = dtypes.numpy_dtype(problem.dtype)
    grad_out = rng.standard_normal(problem.output_shape, dtype="float32").astype(numpy_dtype)
    x = rng.standard_normal(problem.input_shape, dtype="float32").astype(numpy_dtype)
    if problem.source == "x":
        return [grad_out, x]
    return [grad_out, reference_fwd(problem, x)[1].astype(problem.index_dtype)]


def reference(problem: PoolProblem, inputs) -> np.ndarray:
    """float64 grad_in: the scatter-add of grad_out at each window's argmax, in the problem's layout."""
    grad_out, source = inputs
    indices = reference_fwd(problem, source)[1] if problem.source == "x" else np.asarray(source)
    if not problem.channels_last:
        grad_out, indices = channels_last(grad_out), channels_last(indices)
    grad_in = reference_ops.maxpool2d_bwd(grad_out, indices, problem.input_spatial)
    return grad_in if problem.channels_last else channels_first(grad_in)


def call(problem: PoolProblem, inputs, device=None, out=None):
    grad_out, source = inputs
    return maxpool2d_bwd(
        grad_out, input_shape=problem.input_shape, kernel_size=problem.kernel, stride=problem.stride,
        padding=problem.padding, dilation=problem.dilation, ceil_mode=problem.ceil_mode,
        indices=source if problem.source == "indices" else None, x=source if problem.source == "x" else None,
        layout=problem.layout, device=device, out=out,
    )
