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

import itertools

import numpy as np

from .. import dtypes, sweep_params
from .. import render as mlir
from .. import roles as axis_roles
from ..roles import Roles
from ..operator import Lowering
from .. import reference as reference_ops
from ..layouts import activation_from_params, channels_last, in_layout
from ..problem import POOL_INDEX_DTYPES, MaxPoolBwdProblem
from ..problem_checks import array_shape_dtype, pool_problem
from ..validation import check, check_activation, check_type
from . import maxpool2d_fwd as fwd, pool_windows as windows
from .maxpool2d_fwd import window_max as reference_fwd
from .pool_windows import Form

OP = "maxpool2d_bwd"
Problem = MaxPoolBwdProblem


def results(problem: MaxPoolBwdProblem) -> list:
    return [(problem.input_shape, problem.dtype)]


# --- Normalization --------------------------------------------------------------------------------------


def normalize(grad_out, *, input_shape, kernel_size, stride, padding, dilation, ceil_mode, indices, x, layout,
              output=None) -> MaxPoolBwdProblem:
    """Check every argument (indices' values too, for NumPy indices) before anything is compiled. ``output``: the
    forward's output, where the pooled input was a ReLU's output whose backward grad_in takes
    (``input_activation="relu"``)."""
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
        source=source, index_dtype=index_dtype, input_activation=None if output is None else "relu",
    )
    if output is not None:
        shape, dtype = array_shape_dtype(OP, "output", output)
        check(shape == out_shape, f"{OP}: output has shape {shape!r}, but grad_out has shape {out_shape!r}")
        check_type(dtype == out_dtype, f"{OP}: grad_out and output must have the same dtype, but got {out_dtype} and {dtype}")
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


def _source(problem: MaxPoolBwdProblem, element: str, index_type: str, form: Form) -> dict[str, str]:
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
            scan=fwd.window_scan(problem, element, index_type, "%max_empty", "%argmax_empty",
                                 Form(windows="slices") if form.windows == "candidates" else form),
        ),
    )


def _activation(problem: MaxPoolBwdProblem, element: str, source: dict) -> dict:
    """``source`` with grad_out's argument: as given, or, after a ReLU (``input_activation``), masked by the ReLU's
    backward from the operand %output (the forward's output) before any form reads it (``pool_bwd.max_relu``)."""
    if problem.input_activation is None:
        return {**source, "grad_out_argument": "%grad_out", "activation_argument": ""}
    domain = mlir.dims("d", len(problem.output_shape))
    mask = mlir.render("pool_bwd.max_relu", element=element, map=mlir.affine_map(domain, domain),
                       iterators=mlir.iterators(["parallel"] * len(domain)))
    return {**source, "inputs": source["inputs"] + ", and the forward's output (of a ReLU's output)",
            "grad_out_argument": "%grad_out_given", "activation_argument": ", %output: !grad_out",
            "prologue": mask + "\n" + source["prologue"]}


def render(problem: MaxPoolBwdProblem, form: Form = Form(), lowering: Lowering = Lowering()) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, indices or x, dst), in ``form``
    (``pool_windows.Form``: the gather over candidate windows, or the stride phases of grad_in, each one
    elementwise pass over its taps' windows)."""
    check(form.windows not in ("phases", "gather"), f"{OP}: the {form.windows} form is the forward's; the backward "
                                                    f"reads its windows by extract, slices or candidates")
    element = dtypes.mlir_element_type(problem.dtype)
    index_type = fwd.INDEX_TYPES["int64" if problem.source == "x" else problem.index_dtype]
    source = _activation(problem, element, _source(problem, element, index_type, form))
    transients = mlir.transients(lowering.transients)
    if form.windows == "slices":
        return _render_slices(problem, element, index_type, source, transients)
    if form.windows == "candidates":
        return _render_candidates(problem, element, index_type, source, transients)
    g_to_f32, g32 = windows.to_f32("%g", element)
    return windows.render_gather(
        problem,
        title="Max-pool 2-D backward",
        transients=transients,
        contribution_note=mlir.render("pool_bwd.max_note"),
        contribution=mlir.render(
            "pool_bwd.max_contribution", width=problem.input_spatial[1], index_type=index_type,
            window_indices=windows.window_indices(problem), g_to_f32=g_to_f32, g32=g32,
        ),
        **source,
    )


def _render_slices(problem: MaxPoolBwdProblem, element: str, index_type: str, source: dict, transients: str) -> str:
    """``mlir/maxpool2d_bwd_slices.mlir``: each stride phase's slot of a phase-major float32 accumulator
    (``_PhaseMajor``) in one elementwise pass over its taps' windows; the phases put back in place are grad_in."""
    layout = _PhaseMajor(problem)
    narrow, stored = mlir.narrow("%a", element, "%v")
    f32, acc, texts, phases = dtypes.ACCUMULATOR, "%acc_empty", [], layout.phases()
    for number, phase in enumerate(phases):
        texts.append(_phase_slot(problem, layout, f"_{number}", phase, acc, element, index_type))
        acc = f"%acc_{number}"
    rank = len(problem.output_shape)
    return mlir.render(
        "maxpool2d_bwd_slices", layout=problem.layout, inputs=source["inputs"], problem_name=problem.name,
        function=problem.name, element=element, index_type=index_type, phase_count=len(texts),
        taps_per_phase=", ".join(str(len(taps)) for _, taps in phases),
        grad_out_type=mlir.tensor(problem.output_shape, element), grad_in_type=mlir.tensor(problem.input_shape, element),
        acc_type=mlir.tensor(layout.shape, f32), slot_type=mlir.tensor(layout.slot, f32),
        windows_g_type=mlir.tensor(layout.windows_shape, element), slot_g_type=mlir.tensor(layout.slot, element),
        windows_index_type=mlir.tensor(layout.windows_shape, index_type),
        source_types=source["source_types"],
        source_argument=source["source_argument"], activation_argument=source["activation_argument"],
        grad_out_argument=source["grad_out_argument"], transients=transients, prologue=mlir.indent(source["prologue"], 2),
        window_pad_low=mlir.index_list(layout.window_low),
        window_pad_high=mlir.index_list(layout.window_high), pad_indices=", ".join(f"%p{i}: index" for i in range(rank)),
        phases=mlir.indent("\n".join(texts), 2), last=acc, **layout.final(element),
        grid_map=windows.grid_map(problem), grid_iterators=windows.iterators(problem),
        transpose_iterators=mlir.iterators(["parallel"] * (2 + 2 * problem.rank)), narrow=mlir.indent(narrow, 4), stored=stored,
    )


def _render_candidates(problem: MaxPoolBwdProblem, element: str, index_type: str, source: dict, transients: str) -> str:
    """``mlir/maxpool2d_bwd_candidates.mlir``: grad_in's grid (``_PhaseMajor``) in one elementwise pass over the
    candidate windows q - c of every distinct tap shift c, in scan order (c descending on each axis)."""
    layout = _PhaseMajor(problem)
    grid_dims = layout.grid_dims()  # the loop dims, in the grid's own order (every read and write in place)
    domain = mlir.dims("d", len(grid_dims))
    slot_map = mlir.affine_map(domain, [domain[grid_dims.index(("slot", dim))] for dim in range(len(layout.slot))])
    shifts = [sorted({layout.shift(a, f) for f in range(k)}, reverse=True) for a, k in enumerate(problem.kernel_size)]
    slices, contributions = zip(*(_candidate(layout, k, candidate, element, index_type)
                                  for k, candidate in enumerate(itertools.product(*shifts))))
    count = len(slices)
    ins = [name for k in range(count) for name in (f"%windows_g_{k}", f"%windows_argmax_{k}")]
    types = ["!slot_g", mlir.tensor(layout.slot, index_type)] * count
    narrow, stored = mlir.narrow(f"%sum_{count}", element, "%v")
    dims = {f"q_{axis}": grid_dims.index(("slot", layout.spatial[a])) for a, axis in enumerate("hw")}
    dims.update({f"r_{axis}": grid_dims.index(("phase", a)) for a, axis in enumerate("hw")})
    position = mlir.render("maxpool2d_bwd_candidates.position", s_h=problem.stride[0], s_w=problem.stride[1],
                           width=problem.input_spatial[1], index_type=index_type, **dims)
    final = layout.final(element)
    return mlir.render(
        "maxpool2d_bwd_candidates", layout=problem.layout, inputs=source["inputs"], problem_name=problem.name,
        function=problem.name, element=element, index_type=index_type, candidates=count,
        shifts=" x ".join("{" + ", ".join(str(c) for c in axis) + "}" for axis in shifts),
        grad_out_type=mlir.tensor(problem.output_shape, element), grad_in_type=mlir.tensor(problem.input_shape, element),
        windows_g_type=mlir.tensor(layout.windows_shape, element), slot_g_type=mlir.tensor(layout.slot, element),
        windows_index_type=mlir.tensor(layout.windows_shape, index_type), source_types=source["source_types"],
        source_argument=source["source_argument"], activation_argument=source["activation_argument"],
        grad_out_argument=source["grad_out_argument"], transients=transients, prologue=mlir.indent(source["prologue"], 2),
        window_pad_low=mlir.index_list(layout.window_low), window_pad_high=mlir.index_list(layout.window_high),
        pad_indices=", ".join(f"%p{i}: index" for i in range(len(layout.slot))), slices=mlir.indent("\n".join(slices), 2),
        grid_destination=final["grid_destination"], grad_in=final["grad_in"], grid_type=final["grid_type"],
        maps=", ".join([slot_map] * len(ins) + [mlir.affine_map(domain, domain)]),
        iterators=mlir.iterators(["parallel"] * len(domain)), ins=", ".join(ins), types=", ".join(types),
        block_args="".join(f"%g_{k}: {element}, %argmax_{k}: {index_type}, " for k in range(count)),
        position=mlir.indent(position, 4), contributions=mlir.indent("\n".join(contributions), 4),
        narrow=mlir.indent(narrow, 4), stored=stored,
    )


def _candidate(layout: "_PhaseMajor", k: int, shifts: tuple, element: str, index_type: str) -> tuple[str, str]:
    """(its slices, its contribution) of candidate ``k``: the windows q - c of the grid's rows, c = ``shifts``."""
    offsets = [0] * len(layout.slot)
    for a, dim in enumerate(layout.spatial):
        offsets[dim] = layout.window_low[dim] - shifts[a]
    slices = mlir.render("maxpool2d_bwd_candidates.candidate_windows", k=k, offsets=mlir.index_list(offsets),
                         sizes=mlir.index_list(layout.slot), strides=mlir.index_list([1] * len(offsets)),
                         slot_index_type=mlir.tensor(layout.slot, index_type))
    widen, g32 = windows.to_f32(f"%g_{k}", element)
    return slices, mlir.render("maxpool2d_bwd_slices.contribution", f=f"_{k}", k=k, next=k + 1, index_type=index_type,
                               widen=widen, g32=g32)


def _phase_slot(problem: MaxPoolBwdProblem, layout: "_PhaseMajor", p: str, phase: tuple, acc: str, element: str,
                index_type: str) -> str:
    """``maxpool2d_bwd_slices.phase``: phase ``phase`` = (residues, taps)'s slot, inserted into ``acc``."""
    residues, taps = phase
    _, _, spatial = windows.grid_dims(problem)
    slices, contributions, ins, types = [], [], [], []
    for k, tap in enumerate(taps):
        f = f"_{k}"
        offsets = layout.window_offsets(tap)
        slices.append(mlir.render("maxpool2d_bwd_slices.tap_windows", p=p, f=f, offsets=mlir.index_list(offsets),
                                  sizes=mlir.index_list(layout.slot), strides=mlir.index_list([1] * len(offsets)),
                                  slot_index_type=mlir.tensor(layout.slot, index_type)))
        widen, g32 = windows.to_f32(f"%g{f}", element)
        contributions.append(mlir.render("maxpool2d_bwd_slices.contribution", f=f, k=k, next=k + 1, index_type=index_type,
                                         widen=widen, g32=g32))
        ins += [f"%g{p}{f}", f"%argmax{p}{f}"]
        types += ["!slot_g", mlir.tensor(layout.slot, index_type)]
    position = mlir.render("maxpool2d_bwd_slices.position", h_dim=spatial[0], w_dim=spatial[1], s_h=problem.stride[0],
                           s_w=problem.stride[1], r_h=residues[0], r_w=residues[1], width=problem.input_spatial[1],
                           index_type=index_type)
    grid = windows.grid_map(problem)
    return mlir.render(
        "maxpool2d_bwd_slices.phase", p=p, slices="\n".join(slices), maps=", ".join([grid] * (len(ins) + 1)),
        grid_iterators=windows.iterators(problem), taps=len(taps),
        ins=f"ins({', '.join(ins)} : {', '.join(types)}) " if ins else "",
        block_args="".join(f"%g{f}: {element}, %argmax{f}: {index_type}, " for f in (f"_{k}" for k in range(len(taps)))),
        position=mlir.indent(position, 2), contributions=mlir.indent("\n".join(contributions), 2), acc=acc,
        slot_offsets=mlir.index_list([*residues, *([0] * len(layout.slot))]),
        slot_sizes=mlir.index_list([1] * len(residues) + list(layout.slot)),
        slot_strides=mlir.index_list([1] * (len(residues) + len(layout.slot))),
    )


class _PhaseMajor:
    """The accumulator of the stride phases, phase major: acc[r_h, r_w, slot] holds input position s*q + r of each
    spatial axis at row q of slot r (Q = ceil(size / s) rows); a slot is laid out as the activation (N, C, Q_h, Q_w
    or N, Q_h, Q_w, C). Tap f lands in phase r = (d*f - p_lo) mod s, from window o = q - c, c = (d*f - p_lo - r) / s:
    a slot's rows read its taps' windows from grad_out and the indices padded by the largest shifts
    (``window_low``, ``window_high``), at offset ``window_offsets(f)``."""

    def __init__(self, problem: MaxPoolBwdProblem):
        _, _, spatial = windows.grid_dims(problem)
        self.problem, self.spatial = problem, spatial
        self.rows = [-(-problem.input_spatial[a] // s) for a, s in enumerate(problem.stride)]
        self.slot = list(problem.input_shape)
        for dim, q in zip(spatial, self.rows):
            self.slot[dim] = q
        self.shape = [*problem.stride, *self.slot]
        self.window_low, self.window_high = [0] * len(self.slot), [0] * len(self.slot)
        for a, dim in enumerate(spatial):
            shifts = [self.shift(a, f) for f in range(problem.kernel_size[a])]
            self.window_low[dim] = max(0, max(shifts))
            self.window_high[dim] = max(0, self.rows[a] - 1 - min(shifts) - (problem.output_spatial[a] - 1))
        self.windows_shape = [o + lo + hi for o, lo, hi in zip(problem.output_shape, self.window_low, self.window_high)]

    def shift(self, axis: int, f: int) -> int:
        """c of tap ``f`` along ``axis``: its window of row q is q - c (floor division: c may be negative)."""
        p = self.problem
        return (p.dilation[axis] * f - p.padding[axis][0]) // p.stride[axis]

    def phases(self) -> list[tuple[tuple[int, ...], list[tuple[int, ...]]]]:
        """(residues, taps) of every phase, in order: the taps (in scan order) whose d*f - p_lo mod s is the residue."""
        p = self.problem
        taps = list(itertools.product(*(range(k) for k in p.kernel_size)))
        return [(r, [f for f in taps if all((d * x - lo) % s == ra for d, x, s, (lo, _), ra
                                            in zip(p.dilation, f, p.stride, p.padding, r))])
                for r in itertools.product(*(range(s) for s in p.stride))]

    def window_offsets(self, tap: tuple[int, ...]) -> list[int]:
        """Where tap ``tap``'s windows of a slot's rows start in the padded grad_out and indices."""
        offsets = [0] * len(self.slot)
        for a, dim in enumerate(self.spatial):
            offsets[dim] = self.window_low[dim] - self.shift(a, tap[a])
        return offsets

    def grid_dims(self) -> list[tuple[str, int]]:
        """grad_in's grid (.., Q_h, s_h, Q_w, s_w, ..): each dim a slot dim ("slot", dim) or a phase ("phase", axis)."""
        return [d for dim in range(len(self.slot))
                for d in ([("slot", dim)] if dim not in self.spatial else [("slot", dim), ("phase", self.spatial.index(dim))])]

    def final(self, element: str) -> dict:
        """The transposing pass's values: the grid (.., Q_h, s_h, Q_w, s_w, ..), its map from the accumulator, and
        where it goes: into grad_in's own memory when s divides every axis, else into whole rows, sliced."""
        rank, grid_dims, reassociation = len(self.spatial), self.grid_dims(), []
        for dim in range(len(self.slot)):
            start = grid_dims.index(("slot", dim))
            reassociation.append([start] if dim not in self.spatial else [start, start + 1])
        grid_shape = [self.slot[i] if kind == "slot" else self.problem.stride[i] for kind, i in grid_dims]
        domain = mlir.dims("d", len(grid_dims))
        acc_read = [domain[grid_dims.index(("phase", a))] for a in range(rank)] + \
                   [domain[grid_dims.index(("slot", dim))] for dim in range(len(self.slot))]
        grid_type = mlir.tensor(grid_shape, element)
        divides = all(size % s == 0 for size, s in zip(self.problem.input_spatial, self.problem.stride))
        rows_shape = [size * (self.problem.stride[self.spatial.index(d)] if d in self.spatial else 1)
                      for d, size in enumerate(self.slot)]
        values = dict(reassociation=reassociation, grid_shape=mlir.index_list(grid_shape), grid_type=grid_type,
                      rows_type=mlir.tensor(rows_shape, element), zeros=mlir.index_list([0] * len(self.slot)),
                      input_shape=mlir.index_list(self.problem.input_shape), ones=mlir.index_list([1] * len(self.slot)))
        into = "into_dst" if divides else "into_rows"
        return dict(grid_type=grid_type, acc_read_map=mlir.affine_map(domain, acc_read),
                    grid_identity=mlir.affine_map(domain, domain),
                    grid_destination=mlir.render(f"maxpool2d_bwd_slices.{into}", **values),
                    grad_in=mlir.render(f"maxpool2d_bwd_slices.{into}_result", **values))


# --- Public entry points --------------------------------------------------------------------------------


# --- Problem construction, inputs and reference for the command line, the benchmarks and the tests -----


def random_params(rng, rank: int) -> dict:
    """The compile sweep's parameters (always 2-D, whatever ``rank``): the argmax from indices or from x."""
    params = sweep_params.pool_params(rng, 2)
    return {**params, "source": str(rng.choice(["indices", "x"]))}


def problem_from_params(*, batch, channels, input_spatial, kernel_size, stride=None, padding=0, dilation=1,
                        ceil_mode=False, layout="NHWC", dtype="float16", source="indices", index_dtype="int64",
                        input_activation=None) -> MaxPoolBwdProblem:
    """A problem from parameters, checked like a call's arguments."""
    input_shape = activation_from_params(batch, input_spatial, channels, layout)
    check(source in ("indices", "x"), f"{OP}: source must be one of indices, x, but got {source!r}")
    check_activation(OP, input_activation)
    check_type(
        source == "x" or index_dtype in POOL_INDEX_DTYPES,
        f"{OP}: indices must be {' or '.join(POOL_INDEX_DTYPES)}, but got {index_dtype}",
    )
    return pool_problem(MaxPoolBwdProblem, OP, rank=2, layout=layout, dtype=dtype, input_shape=input_shape,
                        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                        source=source, index_dtype=index_dtype if source == "indices" else None,
                        input_activation=input_activation)


def random_inputs(problem: MaxPoolBwdProblem, rng) -> list:
    """[grad_out, indices or x] and, after a ReLU, [output]: normal values; indices are the forward's on a random
    x (after a ReLU: a ReLU's output, zero where it stopped, so some windows hold only zeros), output its windows'
    maxima."""
    grad_out = dtypes.random_normal(rng, problem.output_shape, problem.dtype)
    x = dtypes.random_normal(rng, problem.input_shape, problem.dtype)
    if problem.input_activation == "relu":
        x = np.where(x > 0, x, np.zeros_like(x))
    y, indices = reference_fwd(problem, x)
    inputs = [grad_out, x if problem.source == "x" else indices.astype(problem.index_dtype)]
    return inputs + ([y.astype(x.dtype)] if problem.input_activation == "relu" else [])


def reference(problem: MaxPoolBwdProblem, inputs) -> np.ndarray:
    """float64 grad_in: the scatter-add of grad_out at each window's argmax, in the problem's layout; after a
    ReLU, zero where its output is <= 0 (PyTorch's threshold_backward). That output is x where x is given; from
    indices, it is known at each window's argmax only, where it is the window's output (the operand ``output``)."""
    grad_out, source, *output = inputs
    indices = reference_fwd(problem, source)[1] if problem.source == "x" else np.asarray(source)
    if output and problem.source == "indices":
        grad_out = np.where(np.asarray(output[0], np.float64) <= 0, 0.0, np.asarray(grad_out, np.float64))
    grad_in = in_layout(problem.channels_last, lambda g, i: reference_ops.maxpool2d_bwd(g, i, problem.input_spatial),
                        grad_out, indices)
    if output and problem.source == "x":
        grad_in = np.where(np.asarray(source, np.float64) <= 0, 0.0, grad_in)
    return grad_in


# --- The known-answer check's hooks (ops/known_answer.py) ------------------------------------------------------

terms = windows.terms


def roles(problem: MaxPoolBwdProblem) -> Roles:
    """grad_out, then indices (output-shaped) or x (input-shaped), then after a ReLU its output at the windows'
    maxima (output-shaped); grad_in: pooling mixes neither batch indices nor channels."""
    grad_in, grad_out = axis_roles.pooling(problem)
    source = grad_in if problem.source == "x" else grad_out
    relu = (grad_out,) if problem.input_activation == "relu" else ()
    return Roles((grad_out, source, *relu), (grad_in,))


def magnitudes(problem, inputs: list, values: list) -> list:
    return windows.backward_magnitudes(reference, problem, inputs)
