"""3-D average pooling backward (CK example ``51_avgpool3d_bwd``), PyTorch's semantics plus CK's window dilation.

``grad_in = avgpool3d_bwd(grad_out, input_shape=..., kernel_size=...)`` is the gradient of
``torch.nn.functional.avg_pool3d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
divisor_override)`` with respect to ``x``. The template is ``mlir/avgpool3d_bwd.mlir`` (its header derives
the gather identity); the window arithmetic is spelled by ``pool_windows``.

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

from .. import dtypes, geometry, render, runtime
from .. import reference as reference_ops
from ..problem import LAYOUTS, PoolProblem, array_shape_dtype, channels_first, channels_last, join_activation, pool_problem
from ..validation import check
from . import pool_windows as windows

OP = "avgpool3d_bwd"

# Named problems (CK's example default first), for the catalog and the command line.
# Named problems (CK's defaults and real layers) live in build_tools/manifests/ck_examples.json.


def normalize(grad_out, *, input_shape, kernel_size, stride, padding, dilation, ceil_mode, count_include_pad,
              divisor_override, layout) -> PoolProblem:
    """Check every argument and build the problem, before anything is compiled."""
    out_shape, out_dtype = array_shape_dtype(OP, "grad_out", grad_out)
    check(len(out_shape) == 5, f"{OP}: grad_out must be 5-D (N, C, D, H, W or N, D, H, W, C), but has shape {out_shape!r}")
    return pool_problem(
        OP, rank=3, layout=layout, dtype=out_dtype, input_shape=input_shape, output_shape=out_shape,
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        count_include_pad=count_include_pad, divisor_override=divisor_override,
    )


def tap_counts(problem: PoolProblem) -> list[tuple[int, ...]]:
    """Per axis, per window: the taps the divisor counts (its product over the axes is the divisor)."""
    return [
        geometry.pool_tap_counts(
            problem.input_spatial[a], problem.output_spatial[a], problem.kernel[a], problem.stride[a],
            problem.dilation[a], *problem.padding[a], problem.count_include_pad,
        )
        for a in range(problem.rank)
    ]


def _divisor(problem: PoolProblem) -> tuple[str, list[str]]:
    """(function-level tables, body lines defining ``%divisor``): the override, or the product of the per-axis
    tap counts, folded into one constant over the axes where every window counts the same, and read from a
    table (indexed by the window) on the others."""
    if problem.divisor_override is not None:
        return (
            f"  // divisor_override: every window divides by {problem.divisor_override}",
            [f"%divisor = arith.constant {float(problem.divisor_override)} : f32"],
        )
    uniform, tables, lines = 1, [], []
    for x, counts in zip(windows.axis_letters(problem), tap_counts(problem)):
        if len(set(counts)) == 1:
            uniform *= counts[0]
            continue
        table_type = render.tensor([len(counts)], "f32")
        tables.append(f"  %tap_counts_{x} = arith.constant dense<[{', '.join(str(float(c)) for c in counts)}]> : {table_type}")
        lines.append(f"%divisor_{x} = tensor.extract %tap_counts_{x}[%o_{x}_clamped] : {table_type}")
    if not tables:
        return "  // every window counts the same taps", [f"%divisor = arith.constant {float(uniform)} : f32"]
    product = "%divisor_uniform"
    lines.insert(0, f"{product} = arith.constant {float(uniform)} : f32")
    factors = [line.split(" = ")[0] for line in lines[1:]]
    for k, factor in enumerate(factors):
        target = "%divisor" if k == len(factors) - 1 else f"%divisor_{k}"
        lines.append(f"{target} = arith.mulf {product}, {factor} : f32")
        product = target
    header = "  // Taps each window counts along the axes where windows differ (padding, ceil_mode); the divisor is their product"
    return "\n".join([header, *tables]), lines


def render_mlir(problem: PoolProblem) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, dst)."""
    element = dtypes.mlir_element_type(problem.dtype)
    window_lines, _, window_indices = windows.window_of_position_lines(problem)
    tables, divisor_lines = _divisor(problem)
    g_line, g32 = windows.to_f32("%g", element)
    reductions = windows.reductions(problem)
    return render.render(
        "avgpool3d_bwd",
        layout=problem.layout,
        problem_name=problem.name,
        function=problem.name,
        candidates=" x ".join(str(j) for j in problem.candidates),
        element=element,
        grad_out_type=render.tensor(problem.output_shape, element),
        grad_in_type=render.tensor(problem.input_shape, element),
        acc_type=render.tensor(problem.input_shape, dtypes.ACCUMULATOR),
        candidates_type=windows.candidates_type(problem),
        divisor_tables=tables,
        candidates_map=windows.trailing_map(problem, reductions),
        acc_map=windows.grid_map(problem, reductions),
        gather_iterators=windows.iterators(problem, reductions),
        windows_of_position=windows.body([*windows.grid_index_lines(problem), *window_lines]),
        divisor=windows.body(divisor_lines),
        window_indices=windows.layout_indices(problem, "%n", "%c", window_indices),
        g_to_f32=g_line,
        g32=g32,
        grid_map=windows.grid_map(problem),
        grid_iterators=windows.iterators(problem),
        store_body=windows.store_body(element),
    )


def avgpool3d_bwd(grad_out, *, input_shape, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                  count_include_pad=True, divisor_override=None, layout="NDHWC", device=None, out=None):
    """Gradient of 3-D average pooling with respect to its input.

    grad_out: one value per window, ``(N, OD, OH, OW, C)`` (``NDHWC``) or ``(N, C, OD, OH, OW)`` (``NCDHW``);
    ``input_shape``: the forward input's full shape in the same layout. ``kernel_size``/``stride`` (default:
    the kernel size)/``dilation`` (CK's extension): an int or one per spatial dim; ``padding``: an int, one per
    dim, or ``(low, high)`` pairs, each at most ``kernel_size // 2``. ``ceil_mode``, ``count_include_pad`` and
    ``divisor_override`` as in PyTorch. ``out``, optional: a DeviceArray of grad_in's shape and dtype.
    """
    problem = normalize(grad_out, input_shape=input_shape, kernel_size=kernel_size, stride=stride, padding=padding,
                        dilation=dilation, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                        divisor_override=divisor_override, layout=layout)
    return runtime.run(problem, render_mlir, [grad_out], results=[(problem.input_shape, problem.dtype)], device=device, out=out)


# --- Problem construction, inputs and reference for the command line, the benchmarks and the tests -----


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, count_include_pad=True, divisor_override=None, layout="NDHWC",
                        dtype="float16") -> PoolProblem:
    """A problem from parameters (no arrays needed), checked like a call's arguments."""
    channels_last_layout = LAYOUTS.get(layout, (3, True))[1]  # pool_problem reports a bad layout
    return pool_problem(
        OP, rank=3, layout=layout, dtype=dtype,
        input_shape=join_activation(batch, tuple(input_spatial), channels, channels_last_layout),
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        count_include_pad=count_include_pad, divisor_override=divisor_override,
    )


def random_inputs(problem: PoolProblem, rng) -> list:
    return [rng.standard_normal(problem.output_shape, dtype="float32").astype(dtypes.numpy_dtype(problem.dtype))]


def reference(problem: PoolProblem, inputs) -> np.ndarray:
    """float64 grad_in from the window-by-window definition, in the problem's layout."""
    (grad_out,) = inputs
    result = reference_ops.avgpool_bwd(
        grad_out if problem.channels_last else channels_last(grad_out), problem.input_spatial, problem.kernel,
        problem.stride, problem.dilation, problem.padding, problem.count_include_pad, problem.divisor_override,
    )
    return result if problem.channels_last else channels_first(result)


def call(problem: PoolProblem, inputs, device=None, out=None):
    (grad_out,) = inputs
    return avgpool3d_bwd(
        grad_out, input_shape=problem.input_shape, kernel_size=problem.kernel, stride=problem.stride,
        padding=problem.padding, dilation=problem.dilation, ceil_mode=problem.ceil_mode,
        count_include_pad=problem.count_include_pad, divisor_override=problem.divisor_override,
        layout=problem.layout, device=device, out=out,
    )
