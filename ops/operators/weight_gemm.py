"""The weight gradient as the GEMM it is (``mlir/weight_gemm.mlir``): grouped_conv_bwd_weight's ``gemm`` form. x is
cut to the positions the outputs read (one tap, no padding), or its windows are gathered into columns (``gathers``:
im2col, a column per tap and channel), both activations are reshaped (for free) into row chunks, and one
contraction with plain index maps sums each chunk; a second adds the chunks."""

from __future__ import annotations

import dataclasses
import math

from .. import dtypes
from .. import render as mlir
from ..geometry import ceil_div
from ..layouts import layouts_of_rank
from ..problem import GEMM_BLOCK, ConvBwdWeightProblem
from ..validation import check

OP = "grouped_conv_bwd_weight"


def applies(problem: ConvBwdWeightProblem) -> bool:
    """Whether the gemm form can take ``problem``: one filter tap and no padding, or one group (``gathers``)."""
    return problem.one_tap_unpadded or problem.groups == 1


def gathers(problem: ConvBwdWeightProblem) -> bool:
    """Whether the form gathers x's windows into columns first (im2col): a filter of several taps, or padding."""
    return not problem.one_tap_unpadded


# A gathered problem's channels are zero-padded to whole groups of this many (a stem's 3 to 4), so that its columns,
# taps x channels, come in the 4-wide steps a SIMT tile's thread takes (``policy.weight_gemm_tiles``): ResNet-50's 7x7
# stem has 147 columns, which no such tile divides, and 196 padded (docs/perf/h200-im2col-gemm/exp29.log).
COLUMN_GRAIN = 4


def gathered_channels(problem: ConvBwdWeightProblem) -> int:
    """C as the gathered columns hold it: whole COLUMN_GRAINs where the windows are gathered (``gathers``)."""
    return ceil_div(problem.in_channels, COLUMN_GRAIN) * COLUMN_GRAIN if gathers(problem) else problem.in_channels


def columns(problem: ConvBwdWeightProblem) -> int:
    """The GEMM's columns a group: C, or taps x ``gathered_channels`` where the windows are gathered."""
    return gathered_channels(problem) * math.prod(problem.filter_spatial)


def gathered_bytes(problem: ConvBwdWeightProblem) -> int:
    """The bytes of x's windows gathered into columns (``gathers``): N x O x ``columns`` elements."""
    return (problem.batch * math.prod(problem.output_spatial) * problem.groups * columns(problem)
            * dtypes.numpy_dtype(problem.dtype).itemsize)


def rows(problem: ConvBwdWeightProblem) -> int:
    """What the chunks split: the rows (n, o) channels-last, with zero rows after them up to whole GEMM_BLOCKs
    (``zero_rows``); the images channels-first (more chunks than images: ``segments``). Of the problem the GEMM
    reads (``twin``)."""
    if not problem.channels_last:
        return problem.batch
    return ceil_div(problem.batch * math.prod(problem.output_spatial), GEMM_BLOCK) * GEMM_BLOCK


def segments(problem: ConvBwdWeightProblem, chunks: int) -> int:
    """S, the segments each image's positions are cut into: channels-first, ``chunks`` a whole number S > 1 of
    the batch, one image a chunk cut into S runs of its positions; 1 otherwise (the chunks divide ``rows``)."""
    if problem.channels_last or chunks <= problem.batch or chunks % problem.batch:
        return 1
    return chunks // problem.batch


def splits(problem: ConvBwdWeightProblem, chunks: int) -> bool:
    """Whether ``chunks`` is a split the form takes: a divisor of ``rows``, or channels-first S segments of every
    image's positions (S dividing them)."""
    if not isinstance(chunks, int) or chunks < 1:
        return False
    cut = segments(problem, chunks)
    if cut > 1:
        return math.prod(problem.output_spatial) % cut == 0
    return rows(problem) % chunks == 0


def zero_rows(problem: ConvBwdWeightProblem) -> int:
    """The zero rows a channels-last problem's activations get after their N*O rows: IREE 3.13's matrix pipelines
    read a reduction in whole blocks of its K tile, on past its end (``problem.GEMM_BLOCK``); a zero row adds
    nothing to any sum."""
    return rows(problem) - problem.batch * math.prod(problem.output_spatial) if problem.channels_last else 0


def render(problem: ConvBwdWeightProblem, chunks: int, out_element: str, transients: str, config: str | None,
           copy: dict | None = None, transpose: bool = False) -> str:
    """The problem's module in ``chunks`` chunks of its ``rows``, grad_w stored as ``out_element``; ``config``
    pins the contraction, which then leaves its unit dims out (``_units``); ``copy`` tiles the gather (GPUs). A
    channels-first problem, gathered or with ``transpose``, is computed as its channels-last ``twin``, its
    activations and grad_w transposed."""
    check(applies(problem), f"{OP}: the gemm form needs one group, or a one-tap filter and no padding, but got "
                            f"{problem.name}")
    inner, element = twin(problem, transpose), dtypes.mlir_element_type(problem.dtype)
    check(splits(inner, chunks),
          f"{OP}: the gemm form's batch_split must divide its rows {rows(inner)} (or, channels-first, be a whole "
          f"number of them that divides each image's positions), but got {chunks!r}")
    rows_shape = _rows_shape(inner)
    units = _units(inner, chunks) if config else frozenset()
    cut = segments(inner, chunks)
    left_out = units | ({"s"} if cut == 1 else set())  # one segment an image: no segment dim either
    x_chunks_shape = _chunks_shape(inner, chunks, columns(inner), left_out)
    grad_out_chunks_shape = _chunks_shape(inner, chunks, inner.out_channels, left_out)
    x_rows, x_chunks, grad_out_chunks = _operands(problem, inner, rows_shape, x_chunks_shape, grad_out_chunks_shape,
                                                  left_out, copy)
    flat_shape = [chunks, inner.groups * inner.out_channels, columns(inner)]  # the partial sums (J, G*K, C)
    return mlir.render(
        "weight_gemm", rank=problem.rank, layout=problem.layout, problem_name=problem.name, function=problem.name,
        reduction_length=problem.batch * math.prod(problem.output_spatial), block=GEMM_BLOCK,
        outputs=math.prod(problem.weight_shape), chunks=chunks, chunk=max(1, rows(inner) // chunks),
        gather_note=_gather_note(problem) + _turned_note(problem, inner), segments_note="" if cut == 1 else (
            f"\n// With more chunks than images, each image's positions are cut into {cut} runs (s), a chunk each: "
            f"n is one image."),
        x_type=mlir.tensor(problem.input_shape, element), grad_out_type=mlir.tensor(problem.output_shape, element),
        grad_w_type=mlir.tensor(problem.weight_shape, out_element), x_rows_type=mlir.tensor(rows_shape, element),
        x_chunks_type=mlir.tensor(x_chunks_shape, element),
        grad_out_chunks_type=mlir.tensor(grad_out_chunks_shape, element),
        partial_type=mlir.tensor(_kept([chunks // cut, cut, inner.groups, inner.out_channels, columns(inner)],
                                       ["j", "s", "g", "k", "c"], left_out), "f32"),
        partial="%partial" if _flattens(left_out) else "%partial_flat", flatten=_flatten(left_out, flat_shape),
        partial_flat_type=mlir.tensor(flat_shape, "f32"), acc_type=mlir.tensor(flat_shape[1:], "f32"),
        transients=transients, x_rows=x_rows, x_chunks=x_chunks, grad_out_chunks=grad_out_chunks,
        **dict(zip(("grad_out_map", "x_map", "partial_map", "iterators"), _maps(inner, left_out))),
        dispatch_config=f" attrs = {{compilation_info = {config}}}" if config else "",
        chunks_map=mlir.affine_map(["d0", "d1", "d2"], ["d2", "d0", "d1"]),
        chunks_out_map=mlir.affine_map(["d0", "d1", "d2"], ["d0", "d1"]),
        acc_as_weight=_acc_as_weight(inner), acc_weight_type=mlir.tensor(inner.weight_shape, "f32"),
        **_body(element, out_element), **_store(problem, inner),
    )


def twin(problem: ConvBwdWeightProblem, transpose: bool = False) -> ConvBwdWeightProblem:
    """The problem whose layout the GEMM reads: itself, or for a channels-first one that is gathered (``gathers``)
    or asked to ``transpose`` its channels-last twin: x and grad_out transposed channels-last first, grad_w
    transposed back after. A channels-first GEMM reduces along both operands' rows; gathered, it took 1.9-2.2x the
    time of the transposes and the channels-last GEMM on ResNet-50's seven 3x3 layers, so that a gathered problem
    always reads its twin (docs/perf/h200-im2col-gemm/exp26.log against exp27.log); a one-tap problem where the
    policy's rule says (``gemm_policy.gemm_transposes``)."""
    if problem.channels_last or not (gathers(problem) or transpose):
        return problem
    return dataclasses.replace(problem, layout=layouts_of_rank(problem.rank)[0])


def _operands(problem, inner, rows_shape, x_chunks_shape, grad_out_chunks_shape, left_out, copy) -> tuple:
    """(x_rows's lines, the x chunks', grad_out chunks') of ``problem`` read as ``inner`` (``twin``): x cut or
    gathered, transposed first where ``inner`` is another layout's; zero rows after both where they need them."""
    element = dtypes.mlir_element_type(problem.dtype)
    x, grad_out = ("%x", "!x"), ("%grad_out", "!grad_out")
    turned = []
    if inner is not problem:
        x = _transposed(problem, "%x", "!x", inner.input_shape, element, turned)
        grad_out = _transposed(problem, "%grad_out", "!grad_out", inner.output_shape, element, turned)
    lines, x_value, x_type = (_gather(inner, rows_shape, element, copy, x) if gathers(inner)
                              else _x_rows(inner, rows_shape, x))
    if zero_rows(inner) or _pads_x(inner):  # both read %zero_element
        lines = f"{mlir.render('grouped_conv_bwd_weight.zero_element', element=element)}\n{lines}"
    x_chunks = _to_chunks(inner, x_value, x_type, rows_shape, x_chunks_shape, "x", element, left_out)
    grad_out_chunks = _to_chunks(inner, *grad_out, list(inner.output_shape), grad_out_chunks_shape, "grad_out",
                                 element, left_out)
    return "\n".join([*turned, lines]), x_chunks, grad_out_chunks


def _transposed(problem, value: str, value_type: str, last_shape, element: str, lines: list) -> tuple:
    """(value, type) of a channels-first activation transposed channels-last, its lines appended to ``lines``."""
    result, result_type = f"{value}_last", mlir.tensor(last_shape, element)
    lines.append(mlir.render(
        "common.transpose", result=result, source=value, source_type=value_type, result_type=result_type,
        permutation=mlir.index_list([0, *range(2, problem.rank + 2), 1])))
    return result, result_type


def _body(element: str, out_element: str) -> dict:
    """The contraction's body and the store's narrowing."""
    widen_g, g32 = mlir.widen("%gv", element, "%g32")
    widen_x, x32 = mlir.widen("%xv", element, "%x32")
    narrow, stored = mlir.narrow("%a", out_element, "%v")
    return dict(
        to_accumulator=mlir.indent(f"{widen_g}\n{widen_x}", 4) if widen_x else "    // f32 inputs: no extension",
        element=element, multiply_add=mlir.render("common.multiply_add", result="new_sum", acc="%sum", a=g32, b=x32),
        out_element=out_element, narrow=mlir.indent(narrow, 4), stored=stored)


def _store(problem: ConvBwdWeightProblem, inner: ConvBwdWeightProblem) -> dict:
    """The store's maps over grad_w's dims: the sums read as they lie, or from ``inner``'s (k, f.., c) where grad_w is
    channels-first (k, c, f..)."""
    dims = mlir.dims("d", problem.rank + 2)
    read = dims if inner is problem else [dims[0], *dims[2:], dims[1]]
    return dict(acc_map=mlir.affine_map(dims, read), store_map=mlir.affine_map(dims, dims),
                store_iterators=mlir.iterators(["parallel"] * (problem.rank + 2)))


def _rows_shape(problem: ConvBwdWeightProblem) -> list[int]:
    """x cut to the read positions: the output's spatial sizes with x's batch and channels; gathered (channels-last:
    ``twin``), the channels preceded by the filter's taps, as grad_w lays them out."""
    channels = [problem.groups * problem.in_channels]
    spatial = list(problem.output_spatial)
    if gathers(problem):
        channels = [*problem.filter_spatial, gathered_channels(problem)]
    return [problem.batch, *spatial, *channels] if problem.channels_last else [problem.batch, *channels, *spatial]


def _gather_note(problem: ConvBwdWeightProblem) -> str:
    """The template's words on the gathered form (``gathers``), or none."""
    if not gathers(problem):
        return ""
    return (f"\n// This filter has {math.prod(problem.filter_spatial)} taps (or padding): x's windows are first "
            f"gathered into columns (im2col),\n//     x_rows[n, o, (f, c)] = x[n, s*o + d*f - p_lo, c]      (zero "
            f"where that is padding)\n// and the same GEMM runs over its {columns(problem)} columns (f, c) for C, "
            f"one tap's channels after another.{_zero_channels_note(problem)}")


def _turned_note(problem: ConvBwdWeightProblem, inner: ConvBwdWeightProblem) -> str:
    """The template's words on a channels-first problem read as its channels-last ``twin``, or none."""
    return "" if inner is problem else ("\n// Channels-first, x and grad_out are first transposed channels-last (the "
                                        "rows (n, o)), and grad_w back after.")


def _zero_channels_note(problem: ConvBwdWeightProblem) -> str:
    """The template's words on the zero channels a gathered problem's columns get (``gathered_channels``), or none."""
    more = gathered_channels(problem) - problem.in_channels
    return "" if not more else (f"\n// x gets {more} zero channel{'s' * (more > 1)} after its {problem.in_channels} "
                                f"(whole {COLUMN_GRAIN}s of columns a tap); their sums are cut from grad_w.")


def _pads_x(problem: ConvBwdWeightProblem) -> bool:
    """Whether the gather reads x zero-padded: its padding, or zero channels (``gathered_channels``)."""
    return gathers(problem) and (problem.padded or gathered_channels(problem) > problem.in_channels)


def _gather_shape(problem: ConvBwdWeightProblem, copy: dict | None) -> list[int] | None:
    """Channels-last x's shape where the target writes its zero padding as a gather (``copy``'s ``zero_pad``,
    ``policy.lowering``), else None (a tensor.pad)."""
    return [problem.batch, *problem.input_spatial, problem.in_channels] if mlir.gathers_pads(copy) else None


def _gather(problem: ConvBwdWeightProblem, rows_shape: list[int], element: str, copy: dict | None,
            source: tuple[str, str]) -> tuple[str, str, str]:
    """(lines, value, type) of x's windows gathered into ``rows_shape`` (``gathers``) from channels-last x
    (``source``: value, type): x zero-padded, then one data-movement generic over (n, o.., f.., o_last, c), the
    last output axis with the channels so that a copy workgroup's rows run along it (``copy``: its tiling)."""
    rank = problem.rank
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    windows = [mlir.window(o[a], f[a], problem.stride[a], problem.dilation[a]) for a in range(rank)]
    low, high = ([pad[side] for pad in problem.padding] for side in (0, 1))
    more = gathered_channels(problem) - problem.in_channels  # zero channels after x's (COLUMN_GRAIN)
    padded_shape = [problem.batch, *(size + lo + hi for size, lo, hi in zip(problem.input_spatial, low, high)),
                    problem.in_channels + more]
    (padded, padded_type), pad = source, "  // no padding: the windows read x as it is"
    if _pads_x(problem):
        pad_type = mlir.tensor(padded_shape, element)
        pad = mlir.indent(mlir.zero_pad("%x_padded", padded, [0, *low, 0], [0, *high, more], element, padded_type,
                                        pad_type, gather_shape=_gather_shape(problem, copy)), 2)
        padded, padded_type = "%x_padded", pad_type
    loops, rows_dims, read = ["n", *o[:-1], *f, o[-1], "c"], ["n", *o, *f, "c"], ["n", *windows, "c"]
    loop_shape = [problem.batch, *problem.output_spatial[:-1], *problem.filter_spatial, problem.output_spatial[-1],
                  problem.in_channels + more]
    return mlir.render(
        "weight_gemm.gather", rows_dims=", ".join(rows_dims), read_dims=", ".join(read), pad=pad, padded=padded,
        padded_type=padded_type, read_map=mlir.affine_map(loops, read), rows_map=mlir.affine_map(loops, rows_dims),
        iterators=mlir.iterators(["parallel"] * len(loops)), element=element,
        copy_attrs=mlir.copy_attrs(loop_shape, copy)), "%x_rows", "!x_rows"


def _x_rows(problem: ConvBwdWeightProblem, rows_shape: list[int], source: tuple[str, str]) -> tuple[str, str, str]:
    """(lines, value, type) of x (``source``: value, type) at the positions s*o: a strided slice, or x itself where
    that is all of x."""
    if rows_shape == list(problem.input_shape):
        return "  // every position of x is read: the rows are x itself", *source
    spatial_strides = list(problem.stride)
    strides = [1, *spatial_strides, 1] if problem.channels_last else [1, 1, *spatial_strides]
    return mlir.indent(mlir.render(
        "common.slice", result="%x_rows", source=source[0], offsets=mlir.index_list([0] * len(rows_shape)),
        sizes=mlir.index_list(rows_shape), strides=mlir.index_list(strides), source_type=source[1],
        result_type="!x_rows",
    ), 2), "%x_rows", "!x_rows"


def _units(problem: ConvBwdWeightProblem, chunks: int) -> frozenset:
    """The contraction's unit dims that a pinned configuration needs gone (IREE 3.13 rebuilds an op with unit dims
    without its ``compilation_info``, as ``grouped_conv_bwd_weight._pinned_units``): G = 1, then one chunk (j), and
    channels-first an image a chunk (n)."""
    units = {"g"} if problem.groups == 1 else set()
    if chunks == 1 and problem.groups == 1:  # the partial sums are then (K, C), grad_w's matrix (``_flatten``)
        units.add("j")
    if not problem.channels_last and problem.batch <= chunks:  # one image a chunk (or a segment of one)
        units.add("n")
    return frozenset(units)


def _chunks_shape(problem: ConvBwdWeightProblem, chunks: int, channels: int, units: frozenset = frozenset()
                  ) -> list[int]:
    """An activation as chunks: (J, rows per chunk, G, channels) channels-last; (J, images per chunk, G,
    channels, positions) channels-first, with S ``segments`` (J / S, 1, G, channels, S, positions / S); the dims
    named in ``units`` left out."""
    if problem.channels_last:
        return _kept([chunks, rows(problem) // chunks, problem.groups, channels], ["j", "r", "g", "c"], units)
    cut = segments(problem, chunks)
    return _kept([chunks // cut, problem.batch * cut // chunks, problem.groups, channels, cut,
                  math.prod(problem.output_spatial) // cut], ["j", "n", "g", "c", "s", "p"], units)


def _kept(values: list, names: list[str], units: frozenset) -> list:
    return [value for value, name in zip(values, names) if name not in units]


def _flattens(units: frozenset) -> bool:
    """Whether the partial sums need reshaping into (J, G*K, C): one chunk (j left out), a segment dim or G kept."""
    return "j" in units or "s" not in units or "g" not in units


def _flatten(units: frozenset, flat_shape: list[int]) -> str:
    """The partial sums (j, s, g, k, c), the dims in ``units`` left out, as partial_flat (j*s, g*k, c) of
    ``flat_shape``: merged, or with one chunk (K, C) given its unit chunk dim back."""
    if not _flattens(units):
        return "  // G = 1 is left out of the loops: the partial sums are partial_flat"
    if "j" in units:
        return mlir.indent(mlir.render("common.expand", result="%partial_flat", source="%partial",
                                       reassociation=[[0, 1], [2]], shape=mlir.index_list(flat_shape),
                                       source_type="!partial", result_type="!partial_flat"), 2)
    kept = [d for d in ("j", "s", "g", "k", "c") if d not in units]
    merge = [[kept.index(d) for d in group if d in kept] for group in (("j", "s"), ("g", "k"), ("c",))]
    return mlir.indent(mlir.render("common.collapse", result="%partial_flat", source="%partial",
                                   reassociation=merge, source_type="!partial", result_type="!partial_flat"), 2)


def _to_chunks(problem: ConvBwdWeightProblem, source: str, source_type: str, shape: list[int],
               chunks_shape: list[int], name: str, element: str, units: frozenset = frozenset()) -> str:
    """``source`` (shape ``shape``, the output's positions) as ``chunks_shape``: its rows (or positions) merged,
    channels-last followed by its zero rows (``zero_rows``), then split into chunks and groups (the ``units``
    left out)."""
    rank = problem.rank
    if problem.channels_last:  # (n, o..) rows, then the channels (and taps, gathered)
        merge = [list(range(rank + 1)), list(range(rank + 1, len(shape)))]
        split = _split([["j", "r"], ["g", "c"]], units)
    else:  # n, then the channels (and taps), then the positions
        merge = [[0], list(range(1, len(shape) - rank)), list(range(len(shape) - rank, len(shape)))]
        split = _split([["j", "n"], ["g", "c"], ["s", "p"]], units)
    merged = [math.prod(shape[i] for i in group) for group in merge]
    merged_type = mlir.tensor(merged, element)
    direct = len(chunks_shape) == len(merged)  # every unit left out: the merged (and padded) tensor is the chunks
    padded = zero_rows(problem) > 0
    last = f"%{name}_chunks", f"!{name}_chunks"  # the value and type of the last step
    collapsed = last if direct and not padded else (f"%{name}_merged", merged_type)
    lines = [mlir.render("common.collapse", result=collapsed[0], source=source, reassociation=merge,
                         source_type=source_type, result_type=collapsed[1])]
    value = collapsed[0]
    if padded:
        blocks = last if direct else (f"%{name}_blocks", mlir.tensor([rows(problem), merged[-1]], element))
        lines.append(mlir.zero_pad(blocks[0], value, [0, 0], [zero_rows(problem), 0], element, merged_type,
                                   blocks[1]))
        value, merged_type = blocks
    if not direct:
        lines.append(mlir.render("common.expand", result=last[0], source=value, reassociation=split,
                                 shape=mlir.index_list(chunks_shape), source_type=merged_type, result_type=last[1]))
    return mlir.indent("\n".join(lines), 2)


def _split(groups: list[list[str]], units: frozenset) -> list[list[int]]:
    """The reassociation from the merged activation into its chunks: ``groups`` of dim names per merged dim, the
    ``units`` left out, numbered in order."""
    kept = [[name for name in group if name not in units] for group in groups]
    numbers = iter(range(sum(map(len, kept))))
    return [[next(numbers) for _ in group] for group in kept]


def _maps(problem: ConvBwdWeightProblem, units: frozenset = frozenset()) -> tuple[str, str, str, str]:
    """(grad_out's, x's, the partial sums' maps, the iterators) over (j, g, k, c, r) channels-last or
    (j, s, g, k, c, n, p) channels-first (s: an image's segment), the dims named in ``units`` left out."""
    if problem.channels_last:
        domain = ["j", "g", "k", "c", "r"]
        grad_out, x = ["j", "r", "g", "k"], ["j", "r", "g", "c"]
    else:
        domain = ["j", "s", "g", "k", "c", "n", "p"]
        grad_out, x = ["j", "n", "g", "k", "s", "p"], ["j", "n", "g", "c", "s", "p"]
    names = {name: f"d{i}" for i, name in enumerate(d for d in domain if d not in units)}

    def of(dims):
        return mlir.affine_map(list(names.values()), [names[d] for d in dims if d in names])
    parallel = len([d for d in ("j", "s", "g", "k", "c") if d in names])
    kinds = ["parallel"] * parallel + ["reduction"] * (len(names) - parallel)
    return of(grad_out), of(x), of(["j", "s", "g", "k", "c"]), mlir.iterators(kinds)


def _acc_as_weight(problem: ConvBwdWeightProblem) -> str:
    """%acc (G*K, C) as the weight's shape, its unit taps added (a free reshape); gathered with zero channels
    (``gathered_channels``), (G*K, taps x those) as (G*K, f.., C + zeros), then x's C channels cut from it."""
    groups = [[0], list(range(1, problem.rank + 2))]
    shape = [*problem.weight_shape[:-1], gathered_channels(problem)] if problem.channels_last else problem.weight_shape
    padded = list(shape) != list(problem.weight_shape)
    lines = [mlir.render(
        "common.expand", result="%acc_padded" if padded else "%acc_weight", source="%acc", reassociation=groups,
        shape=mlir.index_list(shape), source_type="!acc", result_type=mlir.tensor(shape, "f32"))]
    if padded:
        lines.append(mlir.render(
            "common.slice", result="%acc_weight", source="%acc_padded", offsets=mlir.index_list([0] * len(shape)),
            sizes=mlir.index_list(problem.weight_shape), strides=mlir.index_list([1] * len(shape)),
            source_type=mlir.tensor(shape, "f32"), result_type=mlir.tensor(problem.weight_shape, "f32")))
    return mlir.indent("\n".join(lines), 2)
