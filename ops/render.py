"""Rendering the linalg MLIR templates in ``mlir/`` with the static shapes of one problem.

Templates use ``string.Template`` placeholders (``${name}``), which never clash with MLIR's sigils.
Template logic stays in the templates' comments and in the small helpers here: a template shows the
math; the helpers only spell shapes, maps and index lists.
"""

from __future__ import annotations

import functools
import math
import re
import string
from pathlib import Path

from .dtypes import ACCUMULATOR

_PACKAGE_DIR = Path(__file__).resolve().parent


def templates_dir() -> Path:
    """``mlir/`` beside the package in a source checkout, or ``ops/mlir`` inside an installed wheel."""
    for candidate in (_PACKAGE_DIR.parent / "mlir", _PACKAGE_DIR / "mlir"):
        if (candidate / "conv_bwd_data.mlir").is_file():
            return candidate
    raise FileNotFoundError(f"the MLIR templates were not found beside {_PACKAGE_DIR}")


_FRAGMENT = re.compile(r"^// fragment ([a-z_0-9]+)\b.*$")


@functools.lru_cache(maxsize=None)
def _sections(file: str) -> dict[str, string.Template]:
    """A template file's sections: the module template (named after the file), then each fragment.

    A line ``// fragment NAME: what it does`` starts fragment ``file.NAME``; it runs to the next such line. A
    fragment is a few lines placed in a hole of another template (on a line of its own), so it keeps no
    trailing newline; the module template ends with one.
    """
    sections, name, lines = {}, file, []
    for line in (templates_dir() / f"{file}.mlir").read_text().splitlines():
        match = _FRAGMENT.match(line)
        if match:
            sections[name] = lines
            name, lines = f"{file}.{match.group(1)}", []
        else:
            lines.append(line)
    sections[name] = lines
    text = {key: "\n".join(value).rstrip("\n") for key, value in sections.items()}
    text[file] += "\n"
    return {key: string.Template(value) for key, value in text.items()}


def render(name: str, **values) -> str:
    """Fill template ``mlir/<name>.mlir``, or fragment ``FRAGMENT`` of it when ``name`` is ``<file>.FRAGMENT``; a
    missing value is a KeyError, never a silent blank."""
    file = name.split(".")[0]
    return _sections(file)[name].substitute(**{k: str(v) for k, v in values.items()})


def tensor(shape, element: str) -> str:
    return f"tensor<{'x'.join(str(s) for s in shape)}x{element}>" if shape else f"tensor<{element}>"


def dims(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def affine_map(domain: list[str], results: list[str]) -> str:
    return f"affine_map<({', '.join(domain)}) -> ({', '.join(results)})>"


def iterators(kinds: list[str]) -> str:
    return "[" + ", ".join(f'"{k}"' for k in kinds) + "]"


def i64_array(values) -> str:
    return f"dense<[{', '.join(str(v) for v in values)}]> : tensor<{len(values)}xi64>"


def term(dim: str, coefficient: int = 1, offset: int = 0) -> str:
    """``dim * coefficient + offset`` as MLIR prints it in a map (no ``* 1``, no ``+ 0``)."""
    text = dim if coefficient == 1 else f"{dim} * {coefficient}"
    return text if offset == 0 else f"{text} + {offset}"


def window(output: str, tap: str, stride: int, dilation: int) -> str:
    """``stride*output + dilation*tap``: the input position a window's tap reads, as a map's result."""
    return f"{term(output, stride)} + {term(tap, dilation)}"


def index_list(values) -> str:
    return ", ".join(str(v) for v in values)


def folding_reassociation(kept: list[bool]) -> list[list[int]]:
    """The reassociation that collapses away the dims not ``kept``: each joins the next kept dim's group, and those
    after the last kept one join its group (the unit dims or single-tap axes IREE would fold out of an op)."""
    groups, pending = [], []
    for dim, keep in enumerate(kept):
        pending.append(dim)
        if keep:
            groups.append(pending)
            pending = []
    groups[-1] += pending
    return groups


def zero_pad(result: str, source: str, low: list[int], high: list[int], element: str, source_type: str,
             result_type: str, zero: str = "%zero_element", gather_shape: list[int] | None = None) -> str:
    """``source`` zero-padded by ``low``/``high`` per dim into ``result`` (``zero``: the caller's zero value): a
    ``tensor.pad``, or given the source's shape (``gather_shape``) a generic reading the source where it lies
    (``common.zero_pad_gather``: IREE makes a pad it does not fuse into its consumer a copy dispatch of its own)."""
    rank = len(low)
    if gather_shape is None:
        return render("common.zero_pad", result=result, source=source, low=index_list(low), high=index_list(high),
                      index_args=", ".join(f"%i{a}: index" for a in range(rank)), zero=zero, element=element,
                      source_type=source_type, result_type=result_type)
    return _gathered_pad(result, source, low, high, element, source_type, result_type, zero, gather_shape)


def gathers_pads(copy) -> bool:
    """Whether a lowering's copy tiling (``Lowering.copy``) writes zero padding as a gather (``policy.lowering``)."""
    return bool(copy) and copy.get("zero_pad") == "gather"


def _gathered_pad(result: str, source: str, low: list[int], high: list[int], element: str, source_type: str,
                  result_type: str, zero: str, shape: list[int]) -> str:
    """``zero_pad``'s gather: each padded dim's index into the source (``common.zero_pad_index``), clamped into
    ``shape`` (``common.clamp``), the read selected where every one lies inside (``common.zero_pad_bounds``)."""
    rank, p = len(low), result.lstrip("%") + "_"  # p: the generic's own names, unique in the function
    padded = [a for a in range(rank) if low[a] or high[a]]
    lines = [f"  %{p}i{a} = linalg.index {a} : index" for a in range(rank) if a not in padded]
    lines += [f"  %{p}c{c} = arith.constant {c} : index" for c in dict.fromkeys([0, *(low[a] for a in padded)])]
    for a in padded:
        lines += [render("common.zero_pad_index", p=p, dim=a, low=low[a]),
                  indent(render("common.clamp", value=f"%{p}s{a}", last=shape[a] - 1, zero=f"%{p}c0")),
                  render("common.zero_pad_bounds", p=p, dim=a)]
    bounds = [f"%{p}{side}{a}" for a in padded for side in ("above", "below")]
    lines.append(indent(fold("common.and", f"%{p}inside", bounds)))
    read = [f"%{p}s{a}_clamped" if a in padded else f"%{p}i{a}" for a in range(rank)]
    domain = dims("d", rank)
    return render("common.zero_pad_gather", result=result, source=source, result_type=result_type, p=p,
                  source_type=source_type, element=element, map=affine_map(domain, domain),
                  iterators=iterators(["parallel"] * rank), indices="\n".join(lines), read=", ".join(read),
                  inside=f"%{p}inside", zero=zero)


def fold(fragment: str, name: str, values: list[str]) -> str:
    """``name`` = ``values`` combined left to right by the two-operand ``fragment`` (intermediates ``name_0``,
    ``name_1``, ...); a single value is combined with itself."""
    if len(values) == 1:
        values = values * 2
    lines, acc = [], values[0]
    for k, value in enumerate(values[1:]):
        name_k = name if k == len(values) - 2 else f"{name}_{k}"
        lines.append(render(fragment, result=name_k, a=acc, b=value))
        acc = name_k
    return "\n".join(lines)


def on_and_clamped(axis: int, index: str, size: int, clamped: str) -> str:
    """``common.on_and_clamped`` in a generic's body: whether ``index`` lies in [0, ``size``) as ``%on<axis>``, and
    it clamped onto it as ``clamped`` (index 0 off it: the caller defines ``%c0``)."""
    return indent(render("common.on_and_clamped", axis=axis, index=index, size=size, clamped=clamped), 4)


def indent(text: str, spaces: int = 2) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def copy_attrs(shape, copy, steps=None) -> str:
    """The attrs of a data-movement ``linalg.generic`` over ``shape`` on a GPU target (``copy``: the tuning table's
    ``copy_config``), or nothing (IREE's defaults): a workgroup takes ``threads`` threads, each ``thread_elements``
    consecutive elements of the innermost dim (1 if they do not divide it), over whole innermost rows (at most
    ``threads * thread_elements`` elements) and a power-of-two number of rows. A generic too small to give one
    subgroup its elements keeps IREE's defaults.

    ``steps`` (per dim, or None): a dim read through ``floordiv`` / ``mod`` by its step, whose tiles IREE 3.13 can cut
    only where tile and step divide one another: its tiles are made multiples of the step (or 1), and a small
    generic gets them too (IREE's default tiles need not divide the steps)."""
    if not copy or len(shape) < 2:
        return ""
    step = list(steps or [1] * len(shape))
    vector = copy["thread_elements"] if shape[-1] % copy["thread_elements"] == 0 else 1
    if vector % step[-1]:
        vector = 1
    elements = copy["threads"] * vector
    inner = min(shape[-1], elements)
    inner = inner - inner % step[-1] if step[-1] > 1 else inner
    rows = step[-2] if step[-2] * inner <= elements and step[-2] <= shape[-2] else 1
    while rows * 2 * inner <= elements and rows * 2 <= shape[-2] and (rows > 1 or step[-2] == 1):
        rows *= 2
    if not inner or (rows * inner // vector < copy["subgroup_size"] and not steps):
        return ""
    return _tiled([1] * (len(shape) - 1) + [vector], [1] * (len(shape) - 2) + [rows, inner], rows * inner // vector,
                  copy)


def transpose_attrs(shape, rows_dim: int, copy) -> str:
    """The attrs of a transposing elementwise ``linalg.generic`` over ``shape`` (its innermost dim the output's,
    ``rows_dim`` the one its input runs along) on a GPU target whose ``copy`` (the tuning table's copy_config) has a
    transpose tile (``_transpose_tile``): a workgroup takes ``rows`` x ``cols`` of those two dims, each thread
    ``thread_rows`` x ``thread_cols`` (reads along the rows, writes along the cols, both in runs); nothing where no
    tile's columns divide the innermost dim or its rows exceed the input's."""
    tile = _transpose_tile(copy, shape[-1])
    if not tile or shape[rows_dim] < tile["rows"]:
        return ""
    workgroup, thread = [1] * len(shape), [1] * len(shape)
    workgroup[rows_dim], workgroup[-1] = tile["rows"], tile["cols"]
    thread[rows_dim], thread[-1] = tile["thread_rows"], tile["thread_cols"]
    return _tiled(thread, workgroup, tile["rows"] // tile["thread_rows"] * tile["cols"] // tile["thread_cols"], copy,
                  tile.get("promote", False))


def _transpose_tile(copy, channels: int) -> dict | None:
    """The copy_config's ``transpose_tile``, or its ``narrow_transpose_tile`` where the first's columns do not divide
    ``channels`` (the output's innermost dim), or None where neither's do."""
    tiles = [(copy or {}).get(key) for key in ("transpose_tile", "narrow_transpose_tile")]
    return next((tile for tile in tiles if tile and channels % tile["cols"] == 0), None)


def window_transpose_attrs(shape, spatial_axes: list[int], copy) -> str:
    """The attrs of a transposing elementwise ``linalg.generic`` over ``shape`` whose input runs along its last
    spatial axis and whose output along its innermost dim, its spatial axes kept apart (a split written into a
    zero-padded tensor, which IREE cannot merge them for), on a GPU target whose ``copy`` has a ``transpose_tile``:
    the tile's rows come from the spatial axes, innermost first, each the largest divisor of its size within the rows
    left; the tile as ``_transpose_tile`` picks it, nothing where it picks none."""
    tile = _transpose_tile(copy, shape[-1])
    if not tile:
        return ""
    workgroup, thread, left = [1] * len(shape), [1] * len(shape), tile["rows"]
    for axis in reversed(spatial_axes):
        workgroup[axis] = max(d for d in range(1, min(left, shape[axis]) + 1) if shape[axis] % d == 0)
        left //= workgroup[axis]
    rows = spatial_axes[-1]
    thread[rows] = math.gcd(workgroup[rows], tile["thread_rows"])
    workgroup[-1], thread[-1] = tile["cols"], tile["thread_cols"]
    return _tiled(thread, workgroup, math.prod(w // t for w, t in zip(workgroup, thread)), copy,
                  tile.get("promote", False))


def split_attrs(parts: tuple[int, ...], elements: int, copy) -> str:
    """The attrs of an in-order split over (*``parts``, ``elements``) (``parts``: its part count, or nothing where
    it has no part axis) on a GPU target whose ``copy`` (the tuning table's copy_config) has a ``split_tile``: each
    of its ``threads`` threads takes all the parts of ``thread`` consecutive elements; nothing where a workgroup's
    elements do not divide ``elements``."""
    tile = (copy or {}).get("split_tile")
    if not tile or elements % (tile["thread"] * tile["threads"]):
        return ""
    return _tiled([*parts, tile["thread"]], [*parts, tile["thread"] * tile["threads"]], tile["threads"], copy)


def rows_attrs(parts: tuple[int, ...], part_dim: int | None, copy) -> str:
    """The attrs of a split over ``parts`` (its part axis at ``part_dim``, or none) that reads its source through a map
    of strides or flips, its innermost dim in order, on a GPU target whose ``copy`` has a ``split_tile``: a workgroup
    takes as many whole rows of the innermost dim (at most a workgroup's elements of it) as a workgroup's elements
    hold, along the last other dim before it, each thread ``thread`` consecutive elements of a row and all the parts;
    nothing where ``thread`` does not divide a row (on IREE's own tiling of this pass, ResNet-50's strided 1x1 f16x1
    weight gradients ran 1.4-1.8x slower as whole modules: docs/perf/h200-f16x1-pad-fusion/exp58.log; a flipped
    weight's split got a thread an element, 32 threads a workgroup)."""
    tile = (copy or {}).get("split_tile")
    row = parts[-1]
    if not tile or row % tile["thread"]:
        return ""
    elements = tile["thread"] * tile["threads"]
    columns = min(row, elements)
    rows = max(1, elements // columns)
    thread, workgroup = [1] * (len(parts) - 1) + [tile["thread"]], [1] * (len(parts) - 1) + [columns]
    workgroup[max(d for d in range(len(parts) - 1) if d != part_dim)] = rows
    if part_dim is not None:
        thread[part_dim] = workgroup[part_dim] = parts[part_dim]
    return _tiled(thread, workgroup, rows * columns // tile["thread"], copy)


def _tiled(thread: list[int], workgroup: list[int], threads: int, copy, promote: bool = False) -> str:
    """The ``common.copy_config`` attrs: ``thread`` and ``workgroup`` tiles per dim, ``threads`` a workgroup;
    ``promote``: the input staged through shared memory (IREE's own transpose configuration does so)."""
    return render("common.copy_config", thread=", ".join(map(str, thread)), workgroup=", ".join(map(str, workgroup)),
                  threads=threads, subgroup_size=copy["subgroup_size"],
                  promote="promote_operands = [0], " if promote else "").splitlines()[-1]


def private(module: str, function: str, name: str | None = None) -> str:
    """``module`` with its function @``function`` made private (and named @``name`` where given): the inner
    module a wrapping module's function calls."""
    return module.replace(f"func.func @{function}(", f"func.func private @{name or function}(", 1)


def transients(taken: bool) -> str:
    """The module function's last argument when it ``taken``, the workspace for its intermediates
    (``common.transients``; ops/runtime.py passes it; ``Target.transients``)."""
    return render("common.transients") if taken else ""


def widen(value: str, element: str, result: str) -> tuple[str, str]:
    """(line, value): ``value`` of MLIR type ``element`` in the float32 accumulator as ``result`` (no line for f32)."""
    if element == ACCUMULATOR:
        return "", value
    return render("common.widen", result=result, value=value, element=element), result


def narrow(value: str, element: str, result: str) -> tuple[str, str]:
    """(line, value): the float32 accumulator ``value`` as the stored element type ``element`` (no line for f32)."""
    if element == ACCUMULATOR:
        return "", value
    return render("common.narrow", result=result, value=value, element=element), result


def conv_compilation_info(rank: int, intrinsic, workgroup: tuple[int, int, int], subgroup: tuple[int, int, int],
                          k_tiles: int, stages: int, tap_axes: int | None = None, grouped: bool = False) -> str:
    """The ``#iree_codegen.compilation_info`` for one convolution on IREE's TileAndFuse pipeline as an implicit GEMM
    (the tuner's candidates, the tile rules of ``data_tiles.conv_tiles``): ``intrinsic`` (``targets.MMA_INTRINSICS``),
    workgroup tiles (outer spatial rows, inner spatial, c) in elements, subgroup tiles in rows, intrinsic tiles
    along the inner spatial dim (M) and along c (N), and ``k_tiles`` intrinsic tiles of the reduction a step.

    ``tap_axes``: the convolution's spatial reduction dims (its axes of more than one tap; default ``rank``): a
    phase with single-tap axes is written without them (``contractions.dense_tuned``). ``grouped``: the grouped
    generic's iteration space ``[n, *spatial, g, c, ...]``, one group per workgroup."""
    _, m, n, k, subgroup_size = intrinsic
    rows, inner, channels = workgroup
    sg_rows, sg_inner, sg_channels = subgroup
    threads = subgroup_size * (rows // sg_rows) * (inner // (sg_inner * m)) * (channels // (sg_channels * n))
    outer = [1] * (rank - 1)
    outer[-1:] = [rows] if rank > 1 else []
    sg_outer = [1] * (rank - 1)
    sg_outer[-1:] = [sg_rows] if rank > 1 else []
    wg = [1, *outer, inner, *([1] if grouped else []), channels]
    sg = [1, *sg_outer, sg_inner, *([0] if grouped else []), sg_channels]
    return _igemm_info(intrinsic, wg, sg, (rank if tap_axes is None else tap_axes) + 1, k_tiles, threads, stages)


def weight_compilation_info(intrinsic, split: bool, reduction_loops: int, workgroup: tuple[int, int],
                            subgroup: tuple[int, int], taps: list[int], k_tiles: int, stages: int) -> str:
    """The ``#iree_codegen.compilation_info`` for the weight gradient's generic convolution (its unit dims left out)
    as an implicit GEMM ``[j (``split``), k, *filter, c, K]`` on IREE's TileAndFuse pipeline (the tile rule of
    ``policy.weight_tiles``): ``workgroup`` (k, c) in elements at ``taps`` taps (a filter axis each), a warp a
    tap, ``subgroup`` in intrinsic tiles, ``reduction_loops`` the generic's reduced dims (batch chunk, output
    positions)."""
    lead = [1] if split else []
    wg = [*lead, workgroup[0], *taps, workgroup[1]]
    sg = [*[0] * split, subgroup[0], *[1] * len(taps), subgroup[1]]
    threads = weight_threads(intrinsic, workgroup, subgroup, taps)
    return _igemm_info(intrinsic, wg, sg, reduction_loops, k_tiles, threads, stages)


def weight_threads(intrinsic, workgroup: tuple[int, int], subgroup: tuple[int, int], taps: list[int]) -> int:
    """The threads of a ``weight_compilation_info`` workgroup: a warp per subgroup tile of (k, c) per tap."""
    _, m, n, _, subgroup_size = intrinsic
    return subgroup_size * (workgroup[0] // (subgroup[0] * m)) * (workgroup[1] // (subgroup[1] * n)) * math.prod(taps)


def simt_compilation_info(workgroup: list[int], thread: list[int], taps: list[int], threads: int,
                          subgroup_size: int) -> str:
    """The ``#iree_codegen.compilation_info`` of a convolution on IREE's TileAndFuse pipeline without matrix
    instructions (``data_tiles.depthwise_tiles``): ``workgroup`` and ``thread`` tiles over its parallel dims, its
    ``taps`` (reduced dims) whole, ``threads`` a workgroup, in subgroups of ``subgroup_size``."""
    zeros = [0] * len(taps)
    lowering = (f"#iree_gpu.lowering_config<{{reduction = [{index_list([0] * len(workgroup) + taps)}], "
                f"thread = [{index_list(thread + zeros)}], workgroup = [{index_list(workgroup + zeros)}]}}>")
    translation = (f"#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
                   f"workgroup_size = [{threads}, 1, 1] subgroup_size = {subgroup_size}>")
    return f"#iree_codegen.compilation_info<lowering_config = {lowering}, translation_info = {translation}>"


def cpu_compilation_info(distribution: list[int], vector: list[int], reduction: list[int]) -> str:
    """The ``#iree_codegen.compilation_info`` of a CPU contraction on IREE's DoubleTilingExpert pipeline:
    ``distribution`` tiles over its dims for the workers, ``vector`` the parallel tile each vector step computes,
    ``reduction`` the reduced dims' tile a step (0 where a dim is not tiled at that level)."""
    lowering = (f"#iree_cpu.lowering_config<distribution = [{index_list(distribution)}], vector_common_parallel = "
                f"[{index_list(vector)}], vector_reduction = [{index_list(reduction)}]>")
    translation = "#iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>"
    return f"#iree_codegen.compilation_info<lowering_config = {lowering}, translation_info = {translation}>"


def _igemm_info(intrinsic, wg: list[int], sg: list[int], reduction_loops: int, k_tiles: int, threads: int,
                stages: int) -> str:
    """A TileAndFuse implicit-GEMM ``compilation_info``: workgroup tiles ``wg`` and subgroup tiles ``sg`` over the
    GEMM's parallel dims, padded to the tiles (the convolution's ``reduction_loops`` reduced dims left whole),
    ``k_tiles`` intrinsic tiles of the reduction a step, ``stages`` of prefetch."""
    name, _, _, k, subgroup_size = intrinsic
    lowering = (
        f"#iree_gpu.lowering_config<{{convert_acc_gemm, mma_kind = #iree_gpu.mma_layout<{name}>, "
        f"padding = [{', '.join(map(str, wg))}, {k_tiles * k}], "
        f"padding_conv = [{', '.join(map(str, wg + [0] * reduction_loops))}], promote_operands = [0, 1], "
        f"reduction = [{', '.join(['0'] * len(wg))}, {k_tiles}], subgroup = [{', '.join(map(str, sg))}, 0], "
        f"workgroup = [{', '.join(map(str, wg))}, 0]}}>"
    )
    translation = (
        f"#iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [{threads}, 1, 1] "
        f"subgroup_size = {subgroup_size}, {{gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = {stages}, "
        f"no_reduce_shared_memory_bank_conflicts = false, use_igemm_convolution = true>}}>"
    )
    return f"#iree_codegen.compilation_info<lowering_config = {lowering}, translation_info = {translation}>"
