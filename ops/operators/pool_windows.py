"""MLIR spelling of pooling windows, shared by the pooling operators' templates.

Every pooling kernel loops over an activation in the problem's own layout (so channels-first layouts need
no transposes) and spells the window identity of one spatial axis (s stride, d dilation, p_lo low padding)

    s*o + d*f = i + p_lo        (o window, f tap, i input position)

in a ``linalg.generic`` body, as ``affine.apply`` on ``linalg.index`` values: never in an indexing map,
where the negative ``-p_lo`` would break llvm-cpu tiling. Every index a ``tensor.extract`` reads is
clamped into its tensor, masked or not. Names of SSA values carry the axis letter (``%o_h``, ``%i_w``).
"""

from __future__ import annotations

from .. import dtypes, render
from ..problem import PoolProblem


def axis_letters(problem: PoolProblem) -> list[str]:
    """``['h', 'w']`` for NHWC/NCHW, ``['d', 'h', 'w']`` for NDHWC/NCDHW."""
    return [letter.lower() for letter in problem.layout if letter not in "NC"]


def grid_dims(problem: PoolProblem) -> tuple[int, int, list[int]]:
    """Loop dims (batch, channel, spatial axes) of a loop nest over an activation in the problem's layout."""
    rank = problem.rank
    if problem.channels_last:
        return 0, rank + 1, [1 + a for a in range(rank)]
    return 0, 1, [2 + a for a in range(rank)]


def layout_indices(problem: PoolProblem, batch: str, channel: str, spatial: list[str]) -> str:
    values = [batch, *spatial, channel] if problem.channels_last else [batch, channel, *spatial]
    return render.index_list(values)


def grid_index_lines(problem: PoolProblem) -> list[str]:
    batch, channel, _ = grid_dims(problem)
    return [f"%n = linalg.index {batch} : index", f"%c = linalg.index {channel} : index"]


def grid_map(problem: PoolProblem, extra_dims: int = 0) -> str:
    """The identity on the activation grid, in a domain with ``extra_dims`` trailing (reduction) dims."""
    domain = render.dims("d", problem.rank + 2 + extra_dims)
    return render.affine_map(domain, domain[: problem.rank + 2])


def trailing_map(problem: PoolProblem, extra_dims: int) -> str:
    """The trailing dims only (``()`` when there are none): the map of a shape-only operand sizing them."""
    domain = render.dims("d", problem.rank + 2 + extra_dims)
    return render.affine_map(domain, domain[problem.rank + 2:])


def iterators(problem: PoolProblem, reductions: int = 0) -> str:
    return render.iterators(["parallel"] * (problem.rank + 2) + ["reduction"] * reductions)


def _and_all(name: str, values: list[str]) -> list[str]:
    """``%name`` = the conjunction of i1 ``values`` (at least one)."""
    if len(values) == 1:
        return [f"{name} = arith.andi {values[0]}, {values[0]} : i1"]
    lines, acc = [], values[0]
    for k, value in enumerate(values[1:]):
        target = name if k == len(values) - 2 else f"{name}_{k}"
        lines.append(f"{target} = arith.andi {acc}, {value} : i1")
        acc = target
    return lines


def _clamp(value: str, last: int) -> list[str]:
    """``<value>_clamped`` = ``value`` clamped into [0, last]."""
    return [
        f"{value}_last = arith.constant {last} : index",
        f"{value}_low = arith.maxsi {value}, %c0 : index",
        f"{value}_clamped = arith.minsi {value}_low, {value}_last : index",
    ]


def tap_position_lines(problem: PoolProblem) -> tuple[list[str], list[str]]:
    """Forward scan body: for window ``o`` (grid dims) and tap ``f`` (trailing dims, one per axis), the input
    position ``i = s*o + d*f - p_lo`` per axis. Defines ``%inside`` (every axis in the input), the clamped
    positions ``%i_<x>_clamped`` and returns (lines, clamped position names)."""
    _, _, spatial = grid_dims(problem)
    lines, inside, clamped = ["%c0 = arith.constant 0 : index"], [], []
    for a, x in enumerate(axis_letters(problem)):
        s, d, (p, _) = problem.stride[a], problem.dilation[a], problem.padding[a]
        size = problem.input_spatial[a]
        lines += [
            f"%o_{x} = linalg.index {spatial[a]} : index",
            f"%f_{x} = linalg.index {problem.rank + 2 + a} : index",
            f"%i_{x} = affine.apply affine_map<(o, f) -> (o * {s} + f * {d} - {p})>(%o_{x}, %f_{x})",
            f"%i_{x}_size = arith.constant {size} : index",
            f"%i_{x}_ge = arith.cmpi sge, %i_{x}, %c0 : index",
            f"%i_{x}_lt = arith.cmpi slt, %i_{x}, %i_{x}_size : index",
            f"%inside_{x} = arith.andi %i_{x}_ge, %i_{x}_lt : i1",
            *_clamp(f"%i_{x}", size - 1),
        ]
        inside.append(f"%inside_{x}")
        clamped.append(f"%i_{x}_clamped")
    lines += _and_all("%inside", inside)
    return lines, clamped


def window_of_position_lines(problem: PoolProblem) -> tuple[list[str], list[str], list[str]]:
    """Backward gather body: for input position ``i`` (grid dims) and candidate ``j`` (a trailing dim for
    each axis with more than one candidate), window ``o = (i + p_lo) floordiv s - j`` (``o = 0`` on an axis with
    one window) and tap offset ``r = i + p_lo - s*o``; the candidate is a real window holding ``i`` when
    ``0 <= o < O`` and ``r`` is ``d*f`` for a tap ``f < k``. Defines ``%in_window`` and the clamped ``%o_<x>_clamped``; returns
    (lines, input position names, clamped window names)."""
    _, _, spatial = grid_dims(problem)
    lines, conditions, positions, windows = [], [], [], []
    candidate_dim = problem.rank + 2
    for a, x in enumerate(axis_letters(problem)):
        k, s, d, (p, _) = problem.kernel[a], problem.stride[a], problem.dilation[a], problem.padding[a]
        count, span = problem.output_spatial[a], d * (k - 1) + 1
        lines.append(f"%i_{x} = linalg.index {spatial[a]} : index")
        if problem.candidates[a] > 1:
            lines += [
                f"%j_{x} = linalg.index {candidate_dim} : index",
                f"%o_{x} = affine.apply affine_map<(i, j) -> ((i + {p}) floordiv {s} - j)>(%i_{x}, %j_{x})",
                f"%r_{x} = affine.apply affine_map<(i, j) -> ((i + {p}) mod {s} + j * {s})>(%i_{x}, %j_{x})",
                f"%o_{x}_ge = arith.cmpi sge, %o_{x}, %c0 : index",
            ]
            conditions.append(f"%o_{x}_ge")
            candidate_dim += 1
        elif count == 1:  # one window, o = 0 (a candidate loop here trips IREE's GPU reduction codegen)
            lines += [
                f"%o_{x} = arith.constant 0 : index",
                f"%r_{x} = affine.apply affine_map<(i) -> (i + {p})>(%i_{x})",
            ]
        else:
            lines += [
                f"%o_{x} = affine.apply affine_map<(i) -> ((i + {p}) floordiv {s})>(%i_{x})",
                f"%r_{x} = affine.apply affine_map<(i) -> ((i + {p}) mod {s})>(%i_{x})",
            ]
        lines += [
            f"%o_{x}_size = arith.constant {count} : index",
            f"%span_{x} = arith.constant {span} : index",
            f"%o_{x}_lt = arith.cmpi slt, %o_{x}, %o_{x}_size : index",
            f"%r_{x}_lt = arith.cmpi slt, %r_{x}, %span_{x} : index",
        ]
        conditions += [f"%o_{x}_lt", f"%r_{x}_lt"]
        if d > 1:
            lines += [
                f"%dilation_{x} = arith.constant {d} : index",
                f"%r_{x}_rem = arith.remui %r_{x}, %dilation_{x} : index",
                f"%r_{x}_tap = arith.cmpi eq, %r_{x}_rem, %c0 : index",
            ]
            conditions.append(f"%r_{x}_tap")
        lines += _clamp(f"%o_{x}", count - 1)
        positions.append(f"%i_{x}")
        windows.append(f"%o_{x}_clamped")
    lines += _and_all("%in_window", conditions)
    return lines, positions, windows


def candidates_type(problem: PoolProblem) -> str:
    """The shape-only operand sizing the candidate dims: ``tensor<J_h x J_w x i8>``, 0-D when none overlap."""
    return render.tensor([j for j in problem.candidates if j > 1], "i8")


def reductions(problem: PoolProblem) -> int:
    return sum(1 for j in problem.candidates if j > 1)


def flat_position(problem: PoolProblem, positions: list[str]) -> tuple[str, str]:
    """(map, operands) of PyTorch's flat index ``h*W + w`` inside one (n, c) plane."""
    width = problem.input_spatial[-1]
    return f"affine_map<(h, w) -> (h * {width} + w)>", render.index_list(positions)


def to_f32(value: str, element: str) -> tuple[str, str]:
    """(line, name): ``value`` widened to the float32 accumulator (no line for f32)."""
    line, name = dtypes.widen(value, element, f"{value}32")
    return render.indent(line, 4), name


def store_body(element: str) -> str:
    line, value = dtypes.narrow("%a", element, "%v")
    return "\n".join([*([render.indent(line, 4)] if line else []), f"    linalg.yield {value} : {element}"])


def body(lines: list[str], spaces: int = 4) -> str:
    return "\n".join(" " * spaces + line for line in lines)
