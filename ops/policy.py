"""Every target rule in one place: the forms a target compiles, in order; the flags and fallback flag sets; the
tuned configurations; and the IREE 3.13 workarounds, each with its reason and
its measurement (``WORKAROUNDS``). Two modules hold parts of it for length: ``ops/gemm_policy.py`` the rules of the
backward-weight gemm form (where a GPU takes it, its chunks), ``ops/data_tiles.py`` the backward-data tile rules.

The operators render a form they are given (``ops/operator.py``) and never ask which target it is for; IREE keeps
the choice of lowering configuration apart from the passes that apply it the same way (``KernelConfig.cpp`` in its
LLVMGPU and LLVMCPU codegen). The per-target data lives in ``mlir/tuning/<target>.json`` (read by ``ops/tables.py``,
which also says what narrows a rule):

- ``rules``: per operator (narrowed to ``dtypes`` and ``kinds``, leaving out problems by function name with
  ``except``): compile ``flags``, and the ``form`` put first;
- ``entries``: per problem (by function name): a ``compilation_info`` per stride phase found by
  ``build_tools/tune.py`` (timed on CUDA; set by hand for ROCm, which cannot be timed here: such entries say so),
  extra ``flags``, and a ``render`` form that replaces the target's choice;
- ``fallback_flags``: flag sets to compile with, in order, when no form compiles with IREE's defaults;
- ``copy_config``: how a GPU tiles a data-movement ``linalg.generic`` (``ops/render.py`` ``copy_attrs``).

A new target touches ``ops/targets.py`` (its flags and capabilities), this module where it needs a rule of its
own, and its table.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

from . import compiler, data_tiles, dtypes, registry, render, targets
from .gemm_policy import (default_batch_split, float32_gemm, gemm_read, gemm_split, gemm_transposes, rows_split,
                          simt_gemm, takes_gemm)
from .operator import Lowering
from .operators import (contractions, conv_pair, data_gemm, data_merged, data_split_conv, grouped_conv_bwd_weight,
                        phase_plan, pool_windows, stride_phases, weight_columns, weight_gemm, weight_per_image,
                        weight_shifted)
from .problem import SCALED_PRECISIONS
from .tables import copy_config, entries, fallback_flags, rule_applies, rules
from .targets import Target


@dataclass(frozen=True)
class Workaround:
    """An IREE 3.13 defect or limit the modules work around: where, why, and what showed it."""

    name: str
    where: str
    reason: str
    evidence: str


# IREE's flag that fuses a zero pad into the operation reading it (the tables' rules give it where it was faster)
FUSE_PADDING = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"

WORKAROUNDS = (
    Workaround(
        "weight flip by gather, then by map", "policy._phase_forms (GPU targets)",
        "NVPTX cannot select the gather's vectorized index arithmetic ('Cannot select v2i16 umul_lohi', 3x3 float16 "
        "layers), and the map's tiled operands fail linalg's shape check when a sub-filter is small ('inferred "
        "input/output operand ... to be greater than or equal to 2'): the GPUs try the gather, then the map",
        "tests/test_lowering_conv_bwd_data.py"),
    Workaround(
        "weight flip by gather only on llvm-cpu", "Target.negative_map_coefficients",
        "llvm-cpu's tiling cannot take an indexing map with a negative coefficient", "tests/test_cpu_forms.py"),
    Workaround(
        "D tensors read through the map on GPUs", "policy._phase_forms",
        "IREE 3.13's CUDA backend mis-indexed the strided slice on a small shape; llvm-cpu's dispatch formation "
        "rejects the map on some small grouped shapes and reads the slice", "docs/perf/h100-sweep"),
    Workaround(
        "interleaved store on GPUs", "policy._phase_forms",
        "a strided tensor.insert_slice per phase becomes a copy dispatch at a tenth of copy bandwidth (IREE issue "
        "23976); the phases write slots of a phase-major tensor in place and one generic interleaves them",
        "docs/perf/h100-issue14"),
    Workaround(
        "no interleave into channels-first grad_in", "phase_plan.interleaves",
        "IREE 3.13's CUDA backend computed wrong interleaves into 16-bit channels-first grad_in (a transposing "
        "gather; sweep seed 17017, problem 51): channels-first problems keep the strided store",
        "docs/perf/h100-sweep"),
    Workaround(
        "one-tap axes get a zero tap on llvm-cpu", "policy._phase_forms (single_taps)",
        "IREE's CPU backend folds a one-tap filter axis away and rebuilds the convolution without a usable "
        "pipeline; a zero tap keeps the convolution whole (geometry.PhaseAxis.with_zero_taps)",
        "ops/geometry.py"),
    Workaround(
        "no im2col for one group of one channel on llvm-cpu", "policy._phase_forms",
        "IREE 3.13 fails to compile the im2col form of a one-group problem with C = K = 1 ('expected rank to be "
        "smaller or equal to the other rank', an all-unit-dims slice; test seed 1084422732): the named "
        "convolution serves it", "tests/test_cpu_forms.py"),
    Workaround(
        "tuned phases with single-tap axes as a generic", "contractions.dense_tuned",
        "IREE 3.13 folds single-tap axes out of a convolution by rebuilding the op, which drops a "
        "compilation_info: the phase is written as the op it would rebuild", "build_tools/tune.py"),
    Workaround(
        "copy tiling of data-movement generics", "copy_config (mlir/tuning/<gpu>.json), render.copy_attrs",
        "IREE 3.13 cannot vectorize a generic whose indexing map is not a projected permutation and gives it 32 "
        "threads a workgroup, one element each", "docs/perf/h100-issue14"),
    Workaround(
        "one window per axis without a candidate loop", "mlir/pool_bwd.mlir (fragment window_only)",
        "a candidate loop over an axis with one window trips IREE's GPU reduction codegen",
        "tests/test_lowering_data_movement.py"),
    Workaround(
        "tap masks as data in the merged form", "mlir/data_merged.mlir (the on constant)",
        "IREE 3.13 summed wrong on llvm-cpu where the contraction's body selected its taps by linalg.index and a dim "
        "had size 1 (batch 1: wrong rows of grad_in); the on/off taps come as a constant operand instead",
        "tests/test_data_merged.py"),
    Workaround(
        "no float16 gathered gemm form when strided", "gemm_policy._gathers_wide",
        "IREE 3.13's CUDA backend computed the gathered gemm form of a float16 strided 3x3x3 weight gradient wrong "
        "(256 channels at 8x28x28, stride 2: error 1.3-1.5 of the largest magnitude, twice; the bfloat16 ones of "
        "the same form right): float16 takes it at stride 1 only", "docs/perf/h200-bf16-gather"),
    Workaround(
        "grouped weight gradients keep bf16x3 under TF32", "precision._weight_split",
        "IREE 3.13's CUDA backend computed ResNeXt-50's four grouped f16x1 weight gradients wrong (g32, 16 and 32 "
        "channels a group: NaN at 1,008-4,608 positions; the known-answer check refused them): their zero pad, a "
        "copy dispatch of its own in bf16x3, went into the float16 split's dispatch", "docs/perf/h200-f16x1"),
    Workaround(
        "fallback flag sets", "fallback_flags (mlir/tuning/<gpu>.json)",
        "some problems compile with none of their forms under IREE's defaults, or compile wrong (bf16 1x1 weight "
        "gradients on CUDA): the next flag set is tried, and the known-answer check refuses a wrong module",
        "docs/VERIFICATION.md"),
)


# --- The tables' choices --------------------------------------------------------------------------------


def configs_for(problem, target: Target, form=None) -> dict[int, str]:
    """Phase index -> compilation_info for ``problem`` on ``target``: its entries' (measured per problem), else the
    first tile rule that applies (a rule naming one of ``TILE_RULES`` that names no form or ``form``, as
    ``flags_for``); empty: IREE's defaults. Without ``form``, the problem's first (``forms_for``): a rule naming
    another form (the 1x1 gemm rules) does not answer for a problem that does not take it."""
    form = forms_for(problem, target)[0] if form is None else form
    tiled = next((TILE_RULES[key](problem, target, r[key]) for r in rules(target.directory_name)
                  for key in TILE_RULES if key in r and rule_applies(r, problem) and _takes_flags(r, form)), {})
    return {**tiled, **{int(e["phase"]): e["compilation_info"] for e in entries(target.directory_name)
                        if e["function"] == problem.name and "compilation_info" in e}}


def weight_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{0: compilation_info} for the weight gradient's generic convolution (its unit dims left out:
    ``grouped_conv_bwd_weight._pinned_units``), by the rule ``spec``: workgroups of ``m_tile`` output channels (k)
    by ``n_tile`` input channels (c), fewer where the problem has fewer (input channels fewer than the intrinsic's
    n are padded to it: a stem's 3), at one tap or the filter's last axis whole (``taps``: ``row``), a warp a tap;
    ``subgroup`` intrinsic tiles (along k, along c) a warp; ``k_tiles`` intrinsic tiles of the reduction a step,
    ``stages`` of prefetch. Empty where the problem takes another form (the gemm form, a table entry's), is
    grouped, its channels do not come in whole tiles or a workgroup would pass 1024 threads."""
    if problem.kind != "dense" or takes_gemm(problem) or _entry_form(problem, target):
        return {}
    _, m, n, _, _ = intrinsic = targets.mma_intrinsic(target, dtypes.mlir_element_type(problem.dtype))
    tile = (min(spec["m_tile"], problem.out_channels), min(spec["n_tile"], max(problem.in_channels, n)))
    subgroup = spec["subgroup"]
    taps = [1] * (problem.rank - 1) + [problem.filter_spatial[-1] if spec.get("taps") == "row" else 1]
    # whole tiles of channels, or input channels fewer than one tile (padded to it)
    whole = problem.out_channels % tile[0] == 0 and problem.in_channels % tile[1] in (0, problem.in_channels)
    if (not whole or tile[0] % (m * subgroup[0]) or tile[1] % (n * subgroup[1])
            or render.weight_threads(intrinsic, tile, subgroup, taps) > 1024):
        return {}
    chunks = default_batch_split(problem, target)
    reduced = problem.rank + (problem.batch // chunks > 1)  # a batch chunk of 1 is left out of the loops
    return {0: render.weight_compilation_info(intrinsic, chunks > 1, reduced, tile, subgroup, taps,
                                              spec["k_tiles"], spec["stages"])}


def weight_simt_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{0: compilation_info} for a float32 weight gradient's generic convolution on IREE's SIMT pipeline (its unit
    dims left out: ``grouped_conv_bwd_weight._pinned_units``), by the rule ``spec``: workgroups of ``workgroup``
    (k, c) (of one group) at ``taps`` taps (``_simt_taps``), ``thread`` (k, c) a thread at one tap, ``reduction``
    positions of the last output axis a step (one where that does not divide it). Empty where the problem is not a
    dense or grouped float32 one of several taps computed in float32 (one tap: ``weight_gemm_tiles``), its channels
    do not come in whole workgroups (``_simt_workgroup``), or a workgroup has fewer than ``min_threads``."""
    workgroup = _simt_workgroup(problem, spec)
    if not workgroup or math.prod(problem.filter_spatial) == 1:
        return {}
    (wg_k, wg_c), (th_k, th_c) = workgroup, spec["thread"]
    per_tap = wg_k // th_k * (wg_c // th_c)
    taps = _simt_taps(problem, spec.get("taps", "one"), per_tap)
    threads = per_tap * math.prod(taps)
    if threads < spec.get("min_threads", 0):
        return {}
    chunks, units = default_batch_split(problem, target), [1] * problem.rank
    lead = [1] * (chunks > 1) + [1] * (problem.kind == "grouped")  # the chunk and the group, one a workgroup
    order = ((lambda k, c, t: [*lead, k, *t, c]) if problem.channels_last else (lambda k, c, t: [*lead, k, c, *t]))
    step = _simt_step(spec, problem.output_spatial[-1])
    reduction = [1] * (problem.batch // chunks > 1) + [1] * (problem.rank - 1) + [step]
    return {0: render.simt_compilation_info(order(wg_k, wg_c, taps), order(th_k, th_c, units), reduction, threads,
                                            copy_config(target)["subgroup_size"])}


def _simt_taps(problem, taps: str, threads: int) -> list[int]:
    """The taps a workgroup of ``weight_simt_tiles`` (a thread one): the filter's last axes whole, as many as fit in
    1024 threads of ``threads`` a tap, up to none (``one``), the last (``row``) or all of them (``all``: a 3x3
    filter whole, a 3x3x3 one a 3x3 plane)."""
    rank, most = problem.rank, {"one": 0, "row": 1, "all": problem.rank}[taps]
    shapes = ([1] * (rank - axes) + list(problem.filter_spatial[rank - axes:]) for axes in range(most, -1, -1))
    return next((shape for shape in shapes if threads * math.prod(shape) <= 1024), [1] * rank)


def weight_gemm_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """``weight_simt_tiles``' tiles on the gemm form of a float32 one-tap problem (``float32_gemm``): its
    contraction over (j, [s,] k, c) and the reduced (n, positions) channels-first, (r) channels-last (the rows of a
    chunk), G = 1 and an image a chunk left out (``weight_gemm``; s, an image's segment, where ``gemm_split`` cuts
    them; j where the split is one chunk); positions (rows) a step as ``reduction`` where they divide the segment's
    (the chunk's)."""
    workgroup = (problem.kind == "dense" and float32_gemm(problem)
                 and _simt_workgroup(problem, spec, weight_gemm.columns(problem)))
    if not workgroup:
        return {}
    (wg_k, wg_c), (th_k, th_c) = workgroup, spec["thread"]
    read = gemm_read(problem)
    chunks = rows_split(read)  # gemm_split's
    cut = weight_gemm.segments(read, chunks)
    lead = [1] * ((chunks > 1) + (cut > 1))  # (j, s)
    if read.channels_last:
        reduction = [_simt_step(spec, weight_gemm.rows(read) // chunks)]
    else:
        reduction = [1] * (problem.batch // chunks > 1) + [
            _simt_step(spec, math.prod(problem.output_spatial) // cut)]
    return {0: render.simt_compilation_info([*lead, wg_k, wg_c], [*lead, th_k, th_c], reduction,
                                            wg_k // th_k * (wg_c // th_c), copy_config(target)["subgroup_size"])}


def _simt_step(spec: dict, length: int) -> int:
    """Positions a reduction step of the SIMT weight tiles: the spec's ``reduction`` where it divides ``length`` (the
    positions it steps along), else one."""
    return spec["reduction"] if length % spec["reduction"] == 0 else 1


def _simt_workgroup(problem, spec: dict, columns: int | None = None) -> tuple[int, int] | None:
    """The (k, c) a workgroup of ``spec`` for a float32 problem computed in float32, dense or grouped, a side for
    each of a group's channel counts (``data_tiles.fit_side``; the c side for ``columns`` where given, the gathered
    gemm form's taps x channels); None where a side has none."""
    if problem.kind not in ("dense", "grouped") or problem.dtype != "float32" or problem.is_split:
        return None
    least = spec.get("min_workgroup", min(spec["workgroup"]))
    sides = [data_tiles.fit_side(channels, side, thread, least, spec.get("fit"))
             for channels, side, thread in zip((problem.out_channels, columns or problem.in_channels),
                                               spec["workgroup"], spec["thread"])]
    return tuple(sides) if all(sides) else None


def column_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{0: compilation_info} for the columns form's partial sums (``weight_columns.tile``): a thread a partial sum,
    about ``threads`` a workgroup, ``reduction`` of the reduced dim a step, channels-last up to ``channels`` groups
    side by side. Empty where the form does not take ``problem`` or ``weight_columns.tile`` finds no tile."""
    tile = weight_columns.applies(problem) and weight_columns.tile(problem, spec["threads"], spec["reduction"],
                                                                   spec.get("channels", 32))
    if not tile:
        return {}
    workgroup, reduction, threads = tile
    return {0: render.simt_compilation_info(workgroup, [1] * len(workgroup), reduction, threads,
                                            copy_config(target)["subgroup_size"])}


def matmul_tiles(problem, target: Target, spec: dict) -> dict[int, str]:
    """{0: compilation_info} for a CPU batch_matmul of (B, M, N, K): per_image_nn's (``weight_per_image.nn_gemm``),
    or the im2col backward-data's of one phase (``contractions.im2col_gemm``): a vector tile of the first of ``rows``
    that divides M by ``cols`` columns, the first of ``reductions`` that divides K a step, ``workgroup_rows`` vector
    tiles of rows and up to ``workgroup_cols`` columns a worker's tile. Empty where no row count or reduction
    divides, ``cols`` does not divide N (IREE's own tile then), or the backward-data has several phases."""
    if problem.op == "grouped_conv_bwd_weight":
        _, m, n, k = weight_per_image.nn_gemm(problem)
    else:
        phases = phase_plan.phases(problem)
        if len(phases) != 1:
            return {}
        _, m, n, k = contractions.im2col_gemm(problem, phases[0])
    rows = next((r for r in spec["rows"] if m % r == 0), None)
    reduction = next((r for r in spec["reductions"] if k % r == 0), None)
    if rows is None or reduction is None or n % spec["cols"]:
        return {}
    return {0: render.cpu_compilation_info([1, rows * spec["workgroup_rows"], min(spec["workgroup_cols"], n), 0],
                                           [1, rows, spec["cols"], 0], [0, 0, 0, reduction])}


# Tile rules: a rule's key -> the function that makes its configuration (``configs_for``)
TILE_RULES: dict[str, Callable[[Any, Target, dict], dict[int, str]]] = {
    "conv_tiles": data_tiles.conv_tiles, "depthwise_tiles": data_tiles.depthwise_tiles,
    "merged_tiles": data_tiles.merged_tiles, "gemm_tiles": data_tiles.gemm_tiles,
    "data_simt_tiles": data_tiles.data_simt_tiles, "weight_tiles": weight_tiles,
    "weight_simt_tiles": weight_simt_tiles, "weight_gemm_tiles": weight_gemm_tiles, "column_tiles": column_tiles,
    "matmul_tiles": matmul_tiles}


def flags_for(problem, target: Target, form=None) -> tuple[str, ...]:
    """Compile flags that matter for ``problem`` on ``target``: its operator's rules, then its own entries. A rule
    that names a form gives its flags to that form's module only (given ``form``; without one, to any); a rule
    naming ``only_forms`` gives them to those forms' modules only, and chooses no form."""
    flags = [f for r in rules(target.directory_name) if rule_applies(r, problem)
             and (form is None or _takes_flags(r, form)) for f in r.get("flags", ())]
    flags += [f for e in entries(target.directory_name) if e["function"] == problem.name for f in e.get("flags", ())]
    return tuple(dict.fromkeys(flags))  # each once, in order


def _takes_flags(rule: dict, form) -> bool:
    """Whether ``form``'s module takes ``rule``'s flags: the rule names no form, or names this one."""
    named = [rule["form"]] if "form" in rule else rule.get("only_forms")
    return named is None or any(_has_keys(form, keys) for keys in named)


def _entry_form(problem, target: Target) -> dict:
    """The form keys the table's entries for ``problem`` set (``render``)."""
    chosen = {}
    for e in entries(target.directory_name):
        if e["function"] == problem.name:
            chosen.update(e.get("render", {}))
    return chosen


# --- The forms ----------------------------------------------------------------------------------------------

# llvm-cpu contractions per kind of problem, in the fallback order: IREE's CPU backend gives the grouped generic
# no convolution pipeline, so the im2col, depthwise and taps forms exist; the table's rule per kind picks the first.
CPU_CONTRACTIONS = {"dense": ("generic", "im2col"), "grouped": ("generic", "im2col", "taps"),
                    "depthwise": ("generic", "im2col", "depthwise", "taps")}

# The taps form (contractions._taps) writes one multiply-add per (output channel, tap) of a phase into one generic
# body: measured faster up to 216 terms (cnn3d's g4 3x3x3 layer, K = 8: 4.87 -> 2.05 ms); beyond this many a phase
# keeps the other forms (a body of hundreds of operands, and the matmul forms have K rows worth their cost).
CPU_TAPS_MAX_TERMS = 256


def _has_taps_form(problem) -> bool:
    """Whether the taps form can take ``problem`` on llvm-cpu: channels-first, every phase within the term limit."""
    return not problem.channels_last and all(
        contractions.taps_terms(problem, phase) <= CPU_TAPS_MAX_TERMS for phase in phase_plan.phases(problem))


# the CPU's stride-phase form: the weight's taps copied plane by plane (its gather, an element at a time, ran
# 1.07-1.30x slower where weights are large, level elsewhere: docs/perf/xeon-data-tiling-im2col), D tensors sliced,
# strided stores, a single tap beside others given a zero tap (its contraction the generic convolution, the others'
# ``_phase_forms`` replaces)
CPU_PHASES = stride_phases.Form(weight_flip="planes", d_read="slice", store="strided", single_taps="zero_tap",
                                interleave_read="extract")


def _split_forms(problem, target: Target) -> list:
    """A split conv_bwd_data's forms: the gemm form (one tap), the split_conv form (stride 1), else the stride
    phases of scaled operands (``data_scaled``, f16x1): on a GPU the weight flipped by a map, interleaved first
    (channels-last; channels-first ones store strided either way), on the CPU the CPU's stride-phase form."""
    Form = stride_phases.Form
    if data_gemm.applies(problem):
        return [Form(contraction="gemm")]
    if data_split_conv.applies(problem):
        return [Form(contraction="split_conv", weight_flip="map" if target.negative_map_coefficients else "gather")]
    if target.cpu:  # the CPU's stride-phase form: llvm-cpu cannot tile a map's negative coefficient
        return [CPU_PHASES]
    return [Form(weight_flip="map", d_read="map", store=store, interleave_read="map")
            for store in ("interleave", "strided")]


def _phase_forms(problem, target: Target) -> list:
    """The stride-phase forms (``stride_phases.Form``) for ``target``, in order (see ``WORKAROUNDS``); a split
    problem's (``_split_forms``). A GPU's channels-last depthwise problems also have the named depthwise op's forms,
    its depthwise problems the merged form (``data_merged``; padded, then reading grad_out in place), and its
    float32 channels-first one-tap problems of stride 1 the float32 gemm form (``data_gemm``), last (a table rule
    puts one first: ``depthwise_tiles``, ``merged_tiles``, ``gemm_tiles``)."""
    Form = stride_phases.Form
    if problem.is_split:
        return _split_forms(problem, target)
    if target.cpu:
        # the zero tap keeps a convolution op whole; the im2col form has none to keep, and a zero tap doubles its work
        unit = problem.groups == 1 and problem.in_channels == problem.out_channels == 1  # see WORKAROUNDS
        return [dataclasses.replace(CPU_PHASES, contraction=c,
                                    single_taps="as_is" if c in ("im2col", "taps") else "zero_tap",
                                    store="transpose" if c == "taps" else "strided")
                for c in CPU_CONTRACTIONS[problem.kind]
                if not (unit and c == "im2col") and (c != "taps" or _has_taps_form(problem))]
    flips = ("gather", "map") if target.negative_map_coefficients else ("gather",)
    interleaved = [Form(weight_flip=f, d_read="map", store="interleave", interleave_read="map") for f in flips]
    strided = [Form(weight_flip=f, d_read=read, store="strided", interleave_read="map")
               for read in ("map", "slice") for f in flips]
    named = problem.kind == "depthwise" and problem.channels_last  # the named depthwise op (a table rule's choice)
    merged = ([Form(contraction="merged"), Form(contraction="merged", grad_out_read="in_place")]
              if data_merged.applies(problem) else [])  # a table rule's choice too
    depthwise = [dataclasses.replace(form, contraction="depthwise") for form in interleaved if named]
    gemm = [Form(contraction="gemm")] if data_gemm.takes_float32(problem) else []  # a table rule's choice too
    return interleaved + strided + depthwise + merged + gemm


def _weight_forms(problem, target: Target) -> list:
    """The backward-weight forms for ``target``: the batch-split generic (on a GPU for depthwise problems also with
    its rows split, ``Form.row_split``, and channels-first the columns form, last: a table rule puts one first), on
    a GPU after the gemm form where that takes it (``takes_gemm``: IREE's matrix pipelines take its plain
    contraction, where the generic's 1x1 convolution went to its implicit-GEMM path, wrong in bfloat16
    (docs/perf/h100-audit) and slow); on llvm-cpu also im2col and per_image_nn (and per_image in channels-first
    layouts) or, for depthwise problems of 1 or 2 spatial axes (the named depthwise ops go to 3-D, the batch axis
    taking one), depthwise; taps where ``_has_weight_taps_form``; and shifted where ``weight_shifted.applies``. A
    GPU's float32 channels-first one-tap problems have the gemm form last where the table tiles it (``simt_gemm``:
    untiled, IREE's SIMT default ran it slower than the generic)."""
    Form = grouped_conv_bwd_weight.Form
    generic = Form(batch_split=default_batch_split(problem, target))
    if not target.cpu:
        gemm = ([Form(batch_split=gemm_split(problem), contraction="gemm", transpose=gemm_transposes(problem))]
                if weight_gemm.applies(problem) else [])
        tiled = [form for form in gemm if simt_gemm(problem) and configs_for(problem, target, form)]
        first, last = (gemm, []) if takes_gemm(problem) else ([], tiled)
        rows = [dataclasses.replace(generic, row_split=True)] if problem.kind == "depthwise" else []
        columns = [Form(contraction="columns")] if weight_columns.applies(problem) else []
        return [*first, generic, *rows, *columns, *last]
    taps = [Form(contraction="taps")] if _has_weight_taps_form(problem) else []
    if problem.kind == "depthwise":
        return [generic, Form(contraction="depthwise"), *taps] if problem.rank <= 2 else [generic, *taps]
    per_image = [Form(contraction=c) for c in (("per_image_nn",) if problem.channels_last
                                               else ("per_image", "per_image_nn"))]
    shifted = [Form(contraction="shifted")] if weight_shifted.applies(problem) else []
    return [generic, Form(contraction="im2col"), *per_image, *taps, *shifted]


def _has_weight_taps_form(problem) -> bool:
    """Whether the weight gradient's taps form can take ``problem`` on llvm-cpu: grouped, within the term limit (one
    sum per tap), and, channels-first, stride 1 along the last axis: its per-tap rows of x are strided slices, which
    along the contiguous axis are gathers (resnext2d's strided g8 layer: 1.08 -> 3.80 ms,
    docs/perf/cpu-step/taps/forms_ab.txt); channels-last rows run along the channels."""
    return (problem.kind in ("grouped", "depthwise") and (problem.channels_last or problem.stride[-1] == 1)
            and math.prod(problem.filter_spatial) <= CPU_TAPS_MAX_TERMS)


def _pool_forms(problem, target: Target) -> list:
    """The pooling forms for ``target``. A forward strided along W in a channels-first layout whose W the stride
    divides reads its taps, on llvm-cpu, from the input split by stride phase first (its strided slices are read one
    element at a time there: docs/PERFORMANCE.md, "CPU forms"). Average pooling's forward has the slices
    forms only, on every target. Max pooling on llvm-cpu: a backward from the forward's indices in one pass over its
    candidate windows first (1.1-3.1x faster than the stride phases, and 2x the extract form's one pass where windows
    do not overlap: docs/perf/cpu-step/eighth/pool_ab.txt), then the strided slices (vectorized; the extract form's
    per-tap gathers ran 3-7x slower there, measured for issue 25), then the extract form; a
    backward that recomputes the argmax from x keeps the slices first, or the extract form where windows do not
    overlap (one elementwise pass there, 2.7x faster than the slice form's phases on vgg_pool2_2x2). The GPUs keep
    max pooling's extract form, verified and tuned with it, but for the forward's gather form (one elementwise pass;
    IREE kept the extract form's two outputs in memory across its reduction over the taps:
    docs/perf/h200-f16x1-pad-fusion/exp59.log)."""
    Form = pool_windows.Form
    split = (target.cpu and problem.op.endswith("_fwd") and problem.stride[-1] > 1
             and pool_windows.splits_by_phase(problem))
    phases = [Form(windows="phases")] if split else []
    if problem.op == "avgpool3d_fwd":
        return [*phases, Form(windows="slices")]
    if not target.cpu:
        return [Form(windows="gather"), Form()] if problem.op == "maxpool2d_fwd" else [Form()]
    if problem.op == "maxpool2d_bwd" and problem.source == "indices":
        return [Form(windows="candidates"), Form(windows="slices"), Form()]
    slices_first = problem.op == "maxpool2d_fwd" or problem.overlapping
    return [*phases, *([Form(windows="slices"), Form()] if slices_first else [Form(), Form(windows="slices")])]


# Forms per template, keyed by the operator's Form type; an operator of one form (SingleForm) needs no rule.
FORM_RULES: dict[type, Callable[[Any, Target], list]] = {
    stride_phases.Form: _phase_forms,
    grouped_conv_bwd_weight.Form: _weight_forms,
    pool_windows.Form: _pool_forms,
}


def target_forms(problem, target: Target) -> list:
    """The operator's forms for ``target``, before the table's choices: its rule's, or its one form."""
    Form = registry.module(problem).Form
    rule = FORM_RULES.get(Form)
    return rule(problem, target) if rule else [Form()]


def as_form(problem, base, keys: Any):
    """``keys`` (the operator's Form, or a dict of keys) as a whole form: a dict's keys replace ``base``'s."""
    Form = registry.module(problem).Form
    if isinstance(keys, Form):
        return keys
    try:
        return dataclasses.replace(base, **keys)
    except TypeError:
        valid = ", ".join(f.name for f in dataclasses.fields(Form)) or "none"
        raise ValueError(f"{problem.op}: unknown form key in {dict(keys)!r}; its form keys are {valid}") from None


def _has_keys(form, keys: dict) -> bool:
    return all(getattr(form, key) == value for key, value in keys.items())


def forms_for(problem, target: Target, options: Any = None) -> list:
    """The forms to try, in order, for ``problem`` on ``target``, each once: with ``options`` (the tuner's candidate,
    a test's choice) that one; else the table's entry where it names one; else the target's forms, the one the
    first rule for the operator, dtype and kind names put first, of the rules naming a form the problem has (the
    others stay, in order, as fallbacks)."""
    forms = target_forms(problem, target)
    chosen = _entry_form(problem, target)
    if options:
        return [as_form(problem, as_form(problem, forms[0], chosen), options)]
    if chosen:
        return [as_form(problem, forms[0], chosen)]
    preferred = next((r["form"] for r in rules(target.directory_name) if "form" in r and rule_applies(r, problem)
                      and any(_has_keys(form, r["form"]) for form in forms)), None)
    if preferred is not None:
        forms = sorted(forms, key=lambda form: not _has_keys(form, preferred))
    return list(dict.fromkeys(forms))


def lowering(problem, target: Target, configs: dict[int, str] | None = None, form=None) -> Lowering:
    """What ``target`` adds to ``form`` (or any form) of ``problem``: its tuned configurations (``configs`` added: the
    tuner's), its copy tiling (``zero_pad``: how zero padding is written, ``_pad_writing``), and the workspace
    argument."""
    copy = {**copy_config(target), **_pad_writing(problem, target, form)}
    return Lowering({**configs_for(problem, target, form), **(configs or {})}, copy, target.transients)


def _pad_writing(problem, target: Target, form=None) -> dict:
    """``{"zero_pad": "gather"}`` where a rule asks ``problem``'s zero padding be written by a generic reading the
    source where it lies (a rule's ``zero_pad``: IREE's copy of a pad it does not fuse ran slower), unless the
    module's flags fuse its pads into their consumers (``FUSE_PADDING``: a gather is no pad to fuse)."""
    asked = any(r.get("zero_pad") == "gather" for r in rules(target.directory_name)
                if rule_applies(r, problem) and (form is None or _takes_flags(r, form)))
    return {"zero_pad": "gather"} if asked and FUSE_PADDING not in flags_for(problem, target, form) else {}


def module_specs(problem, target: Target, extra_flags: tuple[str, ...] = (), configs: dict[int, str] | None = None,
                 options: Any = None) -> list[compiler.ModuleSpec]:
    """The modules that can run ``problem`` on ``target``, preferred first, each once: each form with IREE's
    defaults, then each again with the target's fallback flag sets. The runtime and the ahead-of-time build use the
    first that compiles and passes its known-answer check (``compiler.load_first``).

    ``configs`` and ``options`` (the tuner's candidates, a test's form) replace or extend the table's choices."""
    render = registry.module(problem).render
    basis = problem.computed_as  # a split problem's forms and lowering are its bfloat16 problem's
    modules = [(render(problem, form, lowering(basis, target, configs, form)),
                (*flags_for(basis, target, form), *extra_flags)) for form in forms_for(basis, target, options)]
    specs = [compiler.ModuleSpec(problem.name, mlir, target, (*flags, *fallback), problem.summary)
             for fallback in ((), *fallback_flags(target.directory_name)) for mlir, flags in modules]
    return list(dict.fromkeys(specs))  # forms that render the same module, and flag sets that repeat, once


def module_spec(problem, target: Target, extra_flags: tuple[str, ...] = (), configs: dict[int, str] | None = None,
                options: Any = None) -> compiler.ModuleSpec:
    """The preferred module of ``module_specs`` (for the tuner and the benchmarks, which time one form)."""
    return module_specs(problem, target, extra_flags, configs, options)[0]


def joins(pair: conv_pair.ConvBwdPair, target: Target) -> bool:
    """Whether a layer's two gradients run as one module (``conv_pair``) on ``target``: on a GPU, where both scale
    grad_out into a float16 copy (f16x1), whose largest magnitude (and, where the two tile it alike, the copy) the
    pair computes once: 3 dispatches fewer on ResNet-50's 1x1 and stride-1 3x3 layers (of 15 and 17), 2 on its
    strided ones (``docs/perf/h200-joint-gradients/``)."""
    return target.gpu and not target.transients and pair.data.precision in SCALED_PRECISIONS


# flags a pair compiles its weight gradient with where only its backward-data takes them: with each, IREE 3.13
# builds the f16x1 weight gradient's flow program unchanged (compared at --compile-to=flow: the pad fusion on
# ResNet-50's channels-last stride-1 3x3 layers and r3d_18's 3x3x3 ones, whose split writes x's padding itself; the
# kept transposes on ResNet-50's channels-first 1x1 layers; tests/test_conv_pair.py). A backward-data gains none:
# r3d_18's 64- and 512-channel ones built other programs with their weight gradients' split reduction.
PAIR_WEIGHT_FLAGS = ("--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops",
                     "--iree-global-opt-propagate-transposes=false")


def pair_spec(pair: conv_pair.ConvBwdPair, data: compiler.ModuleSpec,
              weight: compiler.ModuleSpec) -> compiler.ModuleSpec | None:
    """The pair's module, of ``data`` and ``weight``, the modules its two problems' calls serve, with ``data``'s
    flags: where it ``joins``, and ``weight`` compiles with those, or with fewer of ``PAIR_WEIGHT_FLAGS`` only; else
    None."""
    extra = [f for f in data.extra_flags if f not in weight.extra_flags]
    if (not joins(pair, data.target) or data.target != weight.target
            or not set(weight.extra_flags) <= set(data.extra_flags) or not set(extra) <= set(PAIR_WEIGHT_FLAGS)):
        return None
    return compiler.ModuleSpec(pair.name, conv_pair.render(pair, data.mlir, weight.mlir), data.target,
                               data.extra_flags, pair.summary)


def pair_specs(problems: list, target: Target) -> list[compiler.ModuleSpec]:
    """The pairs' modules a step's recorded ``problems`` need (``precompile``): each backward-data followed by its
    layer's weight gradient (``ops.torch``'s order), of their preferred forms."""
    pairs = [conv_pair.ConvBwdPair(d, w) for d, w in zip(problems, problems[1:]) if conv_pair.pairs(d, w)]
    specs = (pair_spec(pair, module_spec(pair.data, target), module_spec(pair.weight, target))
             for pair in pairs if joins(pair, target))
    return [spec for spec in specs if spec is not None]
