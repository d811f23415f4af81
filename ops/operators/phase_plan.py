"""The stride phases of convolution backward-data: which phases a module computes, and their iteration spaces.

``mlir/conv_bwd_data.mlir`` derives the form: one stride-1 convolution per stride phase (``geometry.bwd_data_phases``),
each storing its own positions of grad_in. This plan is what the renderer (``stride_phases``), the contraction
writers (``contractions``), the stores (``phase_stores``) and the tuner (``build_tools/tune.py``) read.
"""

from __future__ import annotations

import itertools
import math

from .. import geometry
from ..problem import ConvBwdDataProblem


def phases(problem: ConvBwdDataProblem) -> list[tuple[geometry.PhaseAxis, ...]]:
    """The stride phases with at least one tap on every axis (the cartesian product of the axes' phases)."""
    return list(itertools.product(*axis_phases(problem)))


def axis_phases(problem: ConvBwdDataProblem) -> list[list[geometry.PhaseAxis]]:
    return [
        geometry.bwd_data_phases(
            problem.input_spatial[a], problem.output_spatial[a], problem.filter_spatial[a],
            problem.stride[a], problem.dilation[a], problem.padding[a][0],
        )
        for a in range(problem.rank)
    ]


def fully_covered(problem: ConvBwdDataProblem) -> bool:
    """Whether the phases together reach every input position (then no position needs an initial value)."""
    return all(sum(p.rows for p in axis) == size for axis, size in zip(axis_phases(problem), problem.input_spatial))


def interleaves(problem: ConvBwdDataProblem, form) -> bool:
    """Whether the module stores through the phase-major tensor (``form.store``; only a stride > 1 has phases
    to interleave). Channels-last layouts only: IREE 3.13's CUDA backend computed wrong interleaves into 16-bit
    channels-first grad_in (a transposing gather; sweep seed 17017, problem 51, on the H100), and the
    channels-first problems keep the strided store."""
    return form.store == "interleave" and problem.strided and problem.channels_last


def transposes(problem: ConvBwdDataProblem, form) -> bool:
    """Whether a channels-first module stores through a phase-major tensor that one ``linalg.transpose`` turns into
    grad_in (``form.store == "transpose"``, stride > 1): only where that tensor is exactly grad_in's positions, each
    residue of the strided axes one phase's, and each phase ``size / s`` rows from its residue."""
    if form.store != "transpose" or problem.channels_last or not problem.strided:
        return False
    every = phases(problem)
    residues = {tuple(p.grad_in_offset for p in phase) for phase in every}
    return (len(every) == len(residues) == math.prod(problem.stride)
            and all(size % s == 0 for size, s in zip(problem.input_spatial, problem.stride))
            and all(p.grad_in_offset < s and p.rows == size // s
                    for phase in every for p, size, s in zip(phase, problem.input_spatial, problem.stride)))


def interleaved_rows(problem: ConvBwdDataProblem) -> list[int]:
    """Rows per axis of every phase's slot of the phase-major tensor: ceil(size / s), the most any phase has, and
    enough that i floordiv s of every position i is a row."""
    return [geometry.ceil_div(size, s) for size, s in zip(problem.input_spatial, problem.stride)]


def phase_list(problem: ConvBwdDataProblem, form) -> list[tuple[geometry.PhaseAxis, ...]]:
    """The phases the module computes: with ``form.single_taps == "zero_tap"``, a one-tap axis of a phase whose other
    axes have several taps gets one zero tap (see PhaseAxis.with_zero_taps); with the interleaved store, every phase
    computes ``interleaved_rows`` (its slot of the phase-major tensor)."""
    result = phases(problem)
    if interleaves(problem, form):
        rows = interleaved_rows(problem)
        result = [tuple(p.with_rows(r) for p, r in zip(phase, rows)) for phase in result]
    if form.single_taps == "as_is":
        return result
    return [
        tuple(p.with_zero_taps(1) if p.taps == 1 and any(q.taps > 1 for q in phase) else p for p in phase)
        for phase in result
    ]


def single_taps_beside_others(phase) -> bool:
    """Whether a phase has single-tap axes beside axes of several taps: IREE 3.13 rebuilds such a convolution
    without the single-tap axes (``_dense_tuned``)."""
    taps = [axis.filter_taps for axis in phase]
    return max(taps) > 1 and min(taps) == 1


def tuned_axes(phase) -> list[int]:
    """The tap axes a tuned phase of one group iterates (``contractions.dense_tuned``): those of several taps."""
    return [a for a, p in enumerate(phase) if p.filter_taps > 1]


def tuned_tap_axes(problem: ConvBwdDataProblem) -> list[int]:
    """Per phase, how many tap axes its tuned convolution iterates after the parallel dims (what a configuration's
    ``padding_conv`` covers, ``build_tools/tune.py``): one group, ``tuned_axes``; several groups, all of them, or 0
    where an axis has a single tap (IREE 3.13 folds that axis away with the configuration: such a phase takes none)."""
    counts = [len(tuned_axes(phase)) for phase in phases(problem)]
    if problem.groups > 1:
        return [count if count == problem.rank else 0 for count in counts]
    return counts
