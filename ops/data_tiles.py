"""The configurations the tuning tables' tile rules build for conv_bwd_data's convolutions (``policy.TILE_RULES``,
by rule key): the matrix-instruction tiles of 16-bit and split convolutions (``conv_tiles``) and the SIMT tiles of
depthwise (``depthwise_tiles``, ``merged_tiles``) and float32 (``gemm_tiles``, ``data_simt_tiles``) ones. Each takes
(problem, target, the rule's spec) and returns {phase index: ``#iree_codegen.compilation_info``}, empty where its
form does not take the problem; which problems a rule serves is the table's (``tables.rule_applies``)."""

from __future__ import annotations

import math

from . import dtypes, render, targets
from .operators import data_gemm, data_merged, data_split_conv, phase_plan
from .tables import copy_config
from .targets import Target


def conv_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """Phase index -> compilation_info for the convolutions of a one-group conv_bwd_data (rows: grad_in's images and
    spatial positions; columns: its C channels): the split_conv form's one (a split problem of stride 1), or each
    stride phase with taps of a 16-bit problem, by the rule ``spec``: a workgroup of ``m_tile`` rows in whole rows
    of ``inner`` (the phase's width rounded up to a power of two, 16 to 64; at most ``max_rows`` rows), 64 columns
    where C is at most 64, else ``n_tile``; ``warps`` subgroups of 32 rows each (two intrinsic tiles along a 64-wide
    row, else two rows of one), sharing the columns; ``k_tiles`` intrinsic tiles of the reduction a step,
    ``stages`` of prefetch. Empty where no such convolution computes the problem or the tiles do not divide."""
    split = problem.is_split
    element = dtypes.mlir_element_type(problem.parts_dtype if split else problem.dtype)
    if element not in ("bf16", "f16") or problem.groups != 1:
        return {}
    if split:  # one convolution over the whole grad_in, where the split_conv form takes the problem
        widths = {0: (problem.input_spatial[-1], problem.rank)} if data_split_conv.applies(problem) else {}
    else:  # each phase over its own rows, its axes of several taps reduced (phase_plan.tuned_axes)
        widths = {index: (phase[-1].rows, len(phase_plan.tuned_axes(phase)))
                  for index, phase in enumerate(phase_plan.phases(problem)) if phase_plan.tuned_axes(phase)}
    intrinsic = targets.mma_intrinsic(target, element)
    tiles = {index: _conv_tile(problem.rank, intrinsic, width, problem.in_channels, spec, taps)
             for index, (width, taps) in widths.items()}
    return {index: info for index, info in tiles.items() if info}


def _conv_tile(rank: int, intrinsic, width: int, channels: int, spec: dict, taps: int) -> str | None:
    """``conv_tiles``' configuration of one convolution of ``width`` columns of rows and ``taps`` tap axes."""
    _, m, n, _, _ = intrinsic
    inner = min(64, max(16, 1 << (width - 1).bit_length()))
    rows = max(1, min(spec["max_rows"], spec["m_tile"] // inner))
    columns = 64 if channels <= 64 else spec["n_tile"]
    sg_inner = 2 if inner == 64 else 1
    sg_rows = min(rows, 32 // (m * sg_inner))
    m_warps = rows // sg_rows * inner // (m * sg_inner)
    n_warps = spec["warps"] // m_warps
    if not n_warps or columns % (n * n_warps):
        return None
    return render.conv_compilation_info(rank, intrinsic, (rows, inner, columns),
                                        (sg_rows, sg_inner, columns // (n * n_warps)), spec["k_tiles"],
                                        spec["stages"], taps)


def depthwise_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """Phase index -> compilation_info for the depthwise convolution of each phase of ``problem`` with taps (its
    reduced dims those of several taps: ``contractions._depthwise`` writes a phase with single-tap axes without
    them), by the rule ``spec``: SIMT workgroups of ``rows`` positions along the last spatial axis by ``channels``
    groups, each thread ``thread_channels`` groups of one position."""
    if problem.kind != "depthwise" or not problem.channels_last or problem.groups % spec["channels"]:
        return {}
    rank, channels = problem.rank, spec["channels"]
    threads = spec["rows"] * channels // spec["thread_channels"]
    workgroup = [1] * rank + [spec["rows"], channels]
    thread = [1] * (rank + 1) + [spec["thread_channels"]]
    subgroup_size = copy_config(target)["subgroup_size"]
    return {index: render.simt_compilation_info(workgroup, thread, [p.filter_taps for p in phase if p.filter_taps > 1],
                                                threads, subgroup_size)
            for index, phase in enumerate(phase_plan.phases(problem)) if max(p.filter_taps for p in phase) > 1}


def merged_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{0: compilation_info} for the merged form's contraction (``data_merged``), by the rule ``spec``'s
    ``channels_last`` or ``channels_first`` part: a part with ``threads`` fits whole rows (``whole_rows``); else
    SIMT workgroups of every residue of ``rows`` x ``positions`` rows (the last two spatial axes); channels-last,
    ``channels`` groups (``narrow_channels`` where those do not divide them), ``thread_channels`` a thread;
    channels-first, one group, ``thread_positions`` rows of the last axis a thread, every residue of each. Empty where
    the form does not take ``problem``, the spec has no part for its layout (IREE's tiling), or a workgroup would
    exceed 1024 threads."""
    layout = spec.get("channels_last" if problem.channels_last else "channels_first")
    if not data_merged.applies(problem) or layout is None:
        return {}
    if "threads" in layout:
        workgroup, thread = whole_rows(problem, layout["threads"], layout["thread_positions"])
    else:
        workgroup, thread = _residue_tile(problem, spec["rows"], layout)
    threads = math.prod(workgroup) // math.prod(thread)
    if not workgroup or threads > 1024:
        return {}
    return {0: render.simt_compilation_info(workgroup, thread, data_merged.taps(problem), threads,
                                            copy_config(target)["subgroup_size"])}


def _residue_tile(problem, rows: int, layout: dict) -> tuple[list[int], list[int]]:
    """``merged_tiles``' (workgroup, thread) of ``rows`` x ``positions`` rows of every residue; ([], []) where no
    channel count of the spec divides the groups (channels-last)."""
    rank, stride = problem.rank, list(problem.stride)
    along = [1] * (rank - 2) + [rows, layout["positions"]][-rank:]
    spatial = sum(data_merged.phase_dims(problem, along, stride), [])
    if problem.channels_last:
        channels = next((c for c in (layout["channels"], layout["narrow_channels"]) if problem.groups % c == 0), 0)
        return ([1, *spatial, channels], [1] * (len(spatial) + 1) + [layout["thread_channels"]]) if channels else \
            ([], [])
    per_thread = data_merged.phase_dims(problem, [1] * (rank - 1) + [layout["thread_positions"]],
                                        [1] * (rank - 1) + stride[-1:])
    return [1, 1, *spatial], [1, 1, *sum(per_thread, [])]


def whole_rows(problem, threads: int, thread_positions: int) -> tuple[list[int], list[int]]:
    """(workgroup, thread) over a channels-first stride-1 problem's grad_in (n, g, spatial..): the last axis whole,
    ``thread_positions`` of it a thread (one where that does not divide it), as many rows of the axis before it as
    bring a workgroup nearest ``threads`` threads without passing it (at least one), then as many groups (a divisor
    of the groups). A rule that carries to any image size: small images get several rows or groups a workgroup, where
    a fixed tile of rows of 64 positions left most of its threads idle. ([], []) for strided or channels-last
    problems (their residue dims: ``_residue_tile``)."""
    if problem.channels_last or set(problem.stride) != {1}:
        return [], []
    *lead, width = problem.input_spatial
    per_thread = thread_positions if width % thread_positions == 0 else 1
    row_threads = width // per_thread
    rows = max(1, min(lead[-1], threads // row_threads)) if lead else 1
    groups = max(1, threads // (rows * row_threads))
    while problem.groups % groups:
        groups -= 1
    along = [*[1] * max(len(lead) - 1, 0), *([rows] if lead else []), width]
    return [1, groups, *along], [1, 1, *[1] * len(lead), per_thread]


def gemm_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{0: compilation_info} for the float32 gemm form's GEMM (``data_gemm.takes_float32``: rows (n, c, o)
    channels-first, (m, c) channels-last), by the rule ``spec``: SIMT workgroups of the first ``positions`` entry
    (workgroup positions, thread positions, workgroup channels, fitted to the problem's as ``fit`` says:
    ``fit_side``) whose workgroup positions divide grad_out's image's (channels-last, its rows m = (n, o)),
    ``thread_channels`` channels a thread, ``reduction`` channels k a step (with one position an image, over (n, c):
    ``data_gemm.one_position``). Empty where the form does not take ``problem`` or no entry divides."""
    positions = data_gemm.rows(problem) if problem.channels_last else math.prod(problem.output_spatial)
    tile = next((t for t in spec["positions"] if positions % t[0] == 0), None)
    if not (problem.precision == "float32" and data_gemm.takes_float32(problem) and tile):
        return {}
    (along, per_thread, side), thread_channels = tile, spec["thread_channels"]
    channels = spec.get("fit") and fit_side(problem.in_channels, side, thread_channels, side // 2, spec["fit"]) or side
    if problem.channels_last:  # over (m, c)
        workgroup, thread = [along, channels], [per_thread, thread_channels]
    else:  # over (n, c, p), or (n, c) without the unit position dim
        dims = 2 if data_gemm.one_position(problem) else 3
        workgroup, thread = [1, channels, along][:dims], [1, thread_channels, per_thread][:dims]
    return {0: render.simt_compilation_info(workgroup, thread, [spec["reduction"]],
                                            channels // thread_channels * (along // per_thread),
                                            copy_config(target)["subgroup_size"])}


def fit_side(channels: int, side: int, thread: int, least: int, fit: str | None) -> int | None:
    """A SIMT workgroup's side of ``side`` over ``channels``: the largest common divisor of the two, where at least
    ``least``; with ``fit: divisor`` where ``side`` does not divide the channels, the divisor of them nearest ``side``
    (the larger of two) among the multiples of ``thread`` from ``least`` to twice ``side`` (RegNet's 440 channels,
    40 for 32; 208, 16). None where there is none."""
    if fit == "divisor" and channels % side:
        fits = [d for d in range(least, 2 * side + 1) if channels % d == 0 and d % thread == 0]
        return min(fits, key=lambda d: (abs(d - side), -d), default=None)
    tile = math.gcd(side, channels)
    return tile if tile >= least else None


def data_simt_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{phase: compilation_info} for the float32 convolutions of a conv_bwd_data computed in float32 on IREE's SIMT
    pipeline, each stride phase of several taps along every axis (at stride 1, the one), by the rule ``spec``:
    workgroups of ``images`` images (fewer where they do not divide the batch; with ``whole_batch``, only where they
    are the whole batch; none where they are fewer than ``min_images``) x the first of ``positions`` dividing the
    phase's last axis x ``channels`` channels c, a thread the images x ``thread_channels``, and ``reduction``
    channels k a step; a phase that would have fewer than ``min_workgroups`` workgroups keeps IREE's default. Empty
    where the problem is grouped or its channels do not come in whole workgroups."""
    if (problem.is_split or problem.dtype != "float32" or problem.groups != 1
            or problem.in_channels % spec["channels"]):
        return {}
    images, units = math.gcd(spec["images"], problem.batch), [1] * (problem.rank - 1)
    if (spec.get("whole_batch") and images != problem.batch) or images < spec.get("min_images", 1):
        return {}
    tiles = {}
    for index, phase in enumerate(phase_plan.phases(problem)):
        if len(phase_plan.tuned_axes(phase)) < problem.rank:
            continue
        along = next((p for p in spec["positions"] if phase[-1].rows % p == 0), 1)
        workgroups = problem.batch // images * math.prod(p.rows for p in phase) // along * (
            problem.in_channels // spec["channels"])
        if workgroups >= spec.get("min_workgroups", 0):
            tiles[index] = render.simt_compilation_info(
                [images, *units, along, spec["channels"]], [images, *units, 1, spec["thread_channels"]],
                [1] * problem.rank + [spec["reduction"]], along * spec["channels"] // spec["thread_channels"],
                copy_config(target)["subgroup_size"])
    return tiles
