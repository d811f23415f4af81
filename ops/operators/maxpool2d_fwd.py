"""2-D max pooling's forward with PyTorch's indices (the forward of CK example ``49_maxpool2d_bwd``).

``y, indices = maxpool2d_fwd(x, kernel_size=...)`` is ``torch.nn.functional.max_pool2d(x, ..., return_indices=True)``.
Template: ``mlir/maxpool2d_fwd.mlir``, whose window scan (PyTorch's tie and NaN rules as a total order) is also
the argmax that ``maxpool2d_bwd`` recomputes from ``x``.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes, sweep_params
from .. import reference as reference_ops
from .. import render as mlir
from .. import roles as axis_roles
from ..roles import Roles
from ..operator import Lowering
from ..layouts import activation_from_params, in_layout
from ..problem import MaxPoolProblem, PoolProblem
from ..problem_checks import array_shape_dtype, pool_problem
from ..validation import check, check_activation
from . import pool_windows as windows
from .pool_windows import Form

OP = "maxpool2d_fwd"
Problem = MaxPoolProblem
INDEX_TYPES = {"int64": "i64", "int32": "i32"}
NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}  # -inf, spelled as its bits


def check_rank(op: str, name: str, shape: tuple[int, ...]) -> None:
    """Max-pool arrays are 4-D (both directions)."""
    check(len(shape) == 4, f"{op}: {name} must be 4-D (N, C, H, W or N, H, W, C), but has shape {shape!r}")


def normalize(x, *, kernel_size, stride, padding, dilation, ceil_mode, layout, input_activation=None) -> MaxPoolProblem:
    x_shape, x_dtype = array_shape_dtype(OP, "x", x)
    check_rank(OP, "x", x_shape)
    check_activation(OP, input_activation)
    return pool_problem(
        MaxPoolProblem, OP, rank=2, layout=layout, dtype=x_dtype, input_shape=x_shape, input_name="x", output_name="x",
        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
        index_dtype="int64", input_activation=input_activation,
    )


def results(problem: MaxPoolProblem) -> list:
    return [(problem.output_shape, problem.dtype), (problem.output_shape, "int64")]


def window_scan(problem: PoolProblem, element: str, index_type: str, max_destination: str, argmax_destination: str,
                form: Form = Form(), relu: bool = False) -> str:
    """The forward's window scan, defining ``%max`` and ``%indices`` in the destinations: by ``tensor.extract``
    per tap (``maxpool2d_fwd.scan``) or over slices of the input padded once, strided or split by phase
    (``maxpool2d_fwd.tap_scan``); with ``relu``, of relu(x), each tap through the ReLU as it is read
    (``pool_taps.relu``)."""
    if form.windows in ("slices", "phases"):
        return _tap_scan(problem, element, index_type, max_destination, argmax_destination, relu,
                         form.windows == "phases")
    if form.windows == "gather":
        return _gather_scan(problem, element, index_type, max_destination, argmax_destination, relu)
    batch, channel, spatial = windows.grid_dims(problem)
    letters = windows.axis_letters(problem)
    taps = []
    for a, x in enumerate(letters):
        size = problem.input_spatial[a]
        taps += [
            mlir.render("maxpool2d_fwd.tap", x=x, window_dim=spatial[a], tap_dim=problem.rank + 2 + a,
                          s=problem.stride[a], d=problem.dilation[a], p_lo=problem.padding[a][0], size=size),
            mlir.render("common.clamp", value=f"%i_{x}", last=size - 1, zero="%c0"),
        ]
    return mlir.render(
        "maxpool2d_fwd.scan",
        element=element,
        index_type=index_type,
        max_destination=max_destination,
        argmax_destination=argmax_destination,
        taps_map=windows.trailing_map(problem, 2),
        grid_map=windows.grid_map(problem, 2),
        scan_iterators=windows.iterators(problem, 2),
        batch_dim=batch,
        channel_dim=channel,
        taps=mlir.indent("\n".join(taps), 2),
        pick=mlir.indent(_pick(element, index_type, "", "%v", "%best", "%best_position", "%position", "%inside",
                               "%new_best", "%new_position", relu), 2),
        width=problem.input_spatial[1],
        x_indices=windows.layout_indices(problem, "%n", "%c", [f"%i_{x}_clamped" for x in letters]),
    )


def _pick(element: str, index_type: str, t: str, v: str, best: str, best_position: str, position: str, inside: str,
          new_best: str, new_position: str, relu: bool = False, taken: str | None = None) -> str:
    """A tap's pick: in any order (``maxpool2d_fwd.pick``), or, where ``taken`` names whether a tap inside the input
    came before, in scan order (``maxpool2d_fwd.pick_in_order``)."""
    lines = [mlir.render("pool_taps.relu", element=element, t=t, v=v)] if relu else []
    values = dict(element=element, index_type=index_type, t=t, v=f"{v}_relu" if relu else v, best=best,
                  best_position=best_position, position=position, inside=inside, new_best=new_best,
                  new_position=new_position)
    if taken is None:
        lines.append(mlir.render("maxpool2d_fwd.pick", **values))
    else:
        lines.append(mlir.render("maxpool2d_fwd.pick_in_order", **values, taken=taken))
    return "\n".join(lines)


def _tap_scan(problem: PoolProblem, element: str, index_type: str, max_destination: str, argmax_destination: str,
              relu: bool = False, phases: bool = False) -> str:
    """``maxpool2d_fwd.tap_scan``: the taps (in PyTorch's scan order, h then w) as slices of the input padded once,
    picked one after another in one elementwise ``linalg.generic``: strided slices of the input padded by
    ``windows.tap_padding``, or, with ``phases``, unit-stride slices of its split by stride phase along W
    (``windows.phase_split``)."""
    padded, tap_slice = windows.tap_source(problem, element, "%neg_inf", phases)
    taps = _taps(problem)
    slices = [tap_slice(f"_{number}", f, "!window_max") for number, f in enumerate(taps)]
    picks, best, best_position = _scan_order_picks(problem, element, index_type, relu)
    return mlir.render(
        "maxpool2d_fwd.tap_scan", element=element, index_type=index_type, max_destination=max_destination,
        argmax_destination=argmax_destination, padded=padded, slices="\n".join(slices),
        tap_maps=", ".join([windows.grid_map(problem)] * (len(taps) + 2)), grid_iterators=windows.iterators(problem),
        tap_values=", ".join(f"%x_tap_{i}" for i in range(len(taps))), tap_types=", ".join(["!window_max"] * len(taps)),
        tap_arguments=", ".join(f"%v_{i}: {element}" for i in range(len(taps))),
        neg_inf=NEG_INF[element], no_position=problem.input_spatial[0] * problem.input_spatial[1],
        axes=mlir.indent(_tap_axes(problem), 2), picks=mlir.indent(picks, 2),
        last_best=best, last_position=best_position,
    )


def _gather_scan(problem: PoolProblem, element: str, index_type: str, max_destination: str, argmax_destination: str,
                 relu: bool = False) -> str:
    """``maxpool2d_fwd.gather_scan``: the taps (in PyTorch's scan order) read by ``tensor.extract`` at positions
    clamped into the input and picked one after another in one elementwise ``linalg.generic`` over the windows."""
    batch, channel, _ = windows.grid_dims(problem)
    letters = windows.axis_letters(problem)

    def read(t: str, f: tuple) -> list[str]:
        at = [f"%i_{x}_{tap}_clamped" for x, tap in zip(letters, f)]
        return [mlir.render("maxpool2d_fwd.tap_read", t=t, indices=windows.layout_indices(problem, "%n", "%c", at))]
    picks, best, best_position = _scan_order_picks(problem, element, index_type, relu, read)
    return mlir.render(
        "maxpool2d_fwd.gather_scan", element=element, index_type=index_type, max_destination=max_destination,
        argmax_destination=argmax_destination, grid_maps=", ".join([windows.grid_map(problem)] * 2),
        grid_iterators=windows.iterators(problem), neg_inf=NEG_INF[element],
        no_position=problem.input_spatial[0] * problem.input_spatial[1], batch_dim=batch, channel_dim=channel,
        axes=mlir.indent(_tap_axes(problem, clamped=True), 2), picks=mlir.indent(picks, 2), last_best=best,
        last_position=best_position)


def _taps(problem: PoolProblem) -> list[tuple]:
    """The window's taps in PyTorch's scan order (h, then w)."""
    return list(itertools.product(*(range(k) for k in problem.kernel_size)))


def _scan_order_picks(problem: PoolProblem, element: str, index_type: str, relu: bool,
                      read=lambda t, f: []) -> tuple[str, str, str]:
    """Each tap in scan order: ``read``'s lines (tap ``t`` of offsets ``f``, defining %v``t`` where the block does
    not), its flat position (``tap_position``) and its pick after the taps before (``_pick``, in order). The lines,
    and the last pick's best value and position."""
    best, best_position, taken = "%best", "%best_position", "%taken"
    lines = []
    for number, (fh, fw) in enumerate(_taps(problem)):
        t = f"_{number}"
        lines += [*read(t, (fh, fw)),
                  mlir.render("maxpool2d_fwd.tap_position", t=t, fh=f"_{fh}", fw=f"_{fw}",
                              width=problem.input_spatial[1], index_type=index_type),
                  _pick(element, index_type, t, f"%v{t}", best, best_position, f"%position{t}", f"%inside{t}",
                        f"%best{t}", f"%best_position{t}", relu, taken)]
        best, best_position, taken = f"%best{t}", f"%best_position{t}", f"%taken{t}"
    return "\n".join(lines), best, best_position


def _tap_axes(problem: PoolProblem, clamped: bool = False) -> str:
    """Each axis's window (``tap_window``) and each of its taps' positions and whether they lie inside the input
    (``tap_axis``), ``clamped`` into the input where asked (``common.clamp``)."""
    lines, (_, _, spatial) = [], windows.grid_dims(problem)
    for a, x in enumerate(windows.axis_letters(problem)):
        s, d, p_lo = problem.stride[a], problem.dilation[a], problem.padding[a][0]
        lines.append(mlir.render("maxpool2d_fwd.tap_window", x=x, window_dim=spatial[a], size=problem.input_spatial[a]))
        for f in range(problem.kernel_size[a]):
            offset = d * f - p_lo
            lines.append(mlir.render("maxpool2d_fwd.tap_axis", x=x, f=f"_{f}", s=s,
                                     offset=f"+ {offset}" if offset >= 0 else f"- {-offset}"))
            if clamped:
                lines.append(mlir.render("common.clamp", value=f"%i_{x}_{f}", last=problem.input_spatial[a] - 1,
                                         zero="%c0"))
    return "\n".join(lines)


def render(problem: MaxPoolProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (x, y_dst, indices_dst)."""
    check(form.windows != "candidates", f"{OP}: the candidates form is the backward's; the forward reads its windows "
                                        f"by extract or slices, but got {form.windows!r}")
    element = dtypes.mlir_element_type(problem.dtype)
    index_type = INDEX_TYPES[problem.index_dtype]
    return mlir.render(
        "maxpool2d_fwd",
        layout=problem.layout,
        transients=mlir.transients(lowering.transients),
        problem_name=problem.name,
        function=problem.name,
        element=element,
        index_type=index_type,
        x_type=mlir.tensor(problem.input_shape, element),
        y_type=mlir.tensor(problem.output_shape, element),
        indices_type=mlir.tensor(problem.output_shape, index_type),
        taps_type=mlir.tensor(problem.kernel_size, "i8"),
        neg_inf=NEG_INF[element],
        no_position=problem.input_spatial[0] * problem.input_spatial[1],
        scan=mlir.indent(window_scan(problem, element, index_type, "%y_dst", "%indices_dst", form,
                                     problem.input_activation == "relu"), 2),
        form_note=mlir.render(f"maxpool2d_fwd.{form.windows}_note"),
    )


# --- Problems from parameters, inputs and reference for the command line, the benchmarks and the tests ---------


def random_params(rng, rank: int) -> dict:
    """Random parameters (always 2-D, whatever ``rank``)."""
    return sweep_params.pool_params(rng, 2)


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, layout="NHWC", dtype="float16", input_activation=None) -> MaxPoolProblem:
    """A problem from parameters, checked like a call's arguments."""
    check_activation(OP, input_activation)
    return pool_problem(MaxPoolProblem, OP, rank=2, layout=layout, dtype=dtype, input_name="x", output_name="x",
                        input_shape=activation_from_params(batch, input_spatial, channels, layout),
                        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                        index_dtype="int64", input_activation=input_activation)


def random_inputs(problem: MaxPoolProblem, rng) -> list:
    return [dtypes.random_normal(rng, problem.input_shape, problem.dtype)]


def window_max(problem: PoolProblem, x) -> tuple[np.ndarray, np.ndarray]:
    """float64 (y, indices) from PyTorch's window scan, in the problem's layout (of any max-pooling problem)."""
    return in_layout(problem.channels_last, lambda a: reference_ops.maxpool2d_fwd(
        a, problem.kernel_size, problem.stride, problem.dilation, problem.padding, problem.output_spatial), x)


def reference(problem: MaxPoolProblem, inputs) -> tuple[np.ndarray, np.ndarray]:
    """float64 (y, indices) of x, or of relu(x) (PyTorch's: 0 below 0, else x, -0 and NaN kept)."""
    (x,) = inputs
    return window_max(problem, reference_ops.relu(x) if problem.input_activation == "relu" else x)


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

terms = windows.terms


def roles(problem: MaxPoolProblem) -> Roles:
    """x; y and its indices: pooling mixes neither batch indices nor channels."""
    x, y = axis_roles.pooling(problem)
    return Roles((x,), (y, y))


def magnitudes(problem: MaxPoolProblem, inputs: list, values: list) -> list:
    """A maximum is one of its window's values (its own magnitude); the indices are exact."""
    return [np.abs(values[0]), np.zeros(np.shape(values[1]))]
