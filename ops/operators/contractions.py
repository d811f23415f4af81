"""The contraction writers of the stride-phase form: each phase's stride-1 convolution into a float32 accumulator,
as a named convolution (one group), a grouped ``linalg.generic``, the named depthwise convolution, the grouped
im2col form (taps gathered, contracted by ``linalg.batch_matmul``), or the taps form (channels-first, the sum
written out term by term in one elementwise generic); and, for a tuned phase with single-tap axes, the
generic IREE would rebuild (``dense_tuned``). Fragments: ``mlir/conv_bwd_data.mlir``.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable

from .. import dtypes, geometry
from .. import render as mlir
from ..problem import ConvBwdDataProblem
from ..validation import check
from .phase_plan import single_taps_beside_others, tuned_axes


_CONV_OPS = {1: "conv_1d_nwc_wcf", 2: "conv_2d_nhwc_hwcf", 3: "conv_3d_ndhwc_dhwcf"}


DEPTHWISE_OPS = {1: "depthwise_conv_1d_nwc_wc", 2: "depthwise_conv_2d_nhwc_hwc", 3: "depthwise_conv_3d_ndhwc_dhwc"}


def convolution(index: int, phase, problem: ConvBwdDataProblem, element: str, window_value: str, window_shape: list[int],
                 filter_shape: list[int], config: str | None, contraction: str) -> tuple[str, list[int], list[str]]:
    """The phase's stride-1 convolution into a zeroed f32 accumulator: a named op (one group, but im2col), a grouped
    linalg.generic, or the im2col form (over the groups, one or more). Returns (text, the accumulator's shape, its dims' names)."""
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    rows = [p.rows for p in phase]
    m = mlir.dims("m", rank)
    if groups == 1 and contraction not in ("im2col", "taps"):
        acc_shape = [problem.batch, *rows, c]
        if config and single_taps_beside_others(phase):
            return dense_tuned(index, phase, problem, element, window_value, window_shape, filter_shape, acc_shape,
                                config), acc_shape, ["n", *m, "c"]
        return mlir.render(
            "conv_bwd_data.named",
            index=index, conv_op=_CONV_OPS[rank], window=window_value,
            window_type=mlir.tensor(window_shape, element), filter_type=mlir.tensor(filter_shape, element),
            acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
            sub_dilations=mlir.i64_array([p.sub_dilation for p in phase]), unit_strides=mlir.i64_array([1] * rank),
            dispatch_config=f", compilation_info = {config}" if config else "",
        ), acc_shape, ["n", *m, "c"]
    if contraction == "depthwise":
        check(problem.kind == "depthwise", f"{problem.op}: the depthwise form needs C = K = 1, but got {problem.name}")
        return _depthwise(index, phase, problem, element, window_value, window_shape, filter_shape, config), \
            [problem.batch, *rows, groups], ["n", *m, "g"]
    grouped_window = window_shape  # (N, .., G, K): _grad_out_window's grouped window
    window_groups = {
        "index": index, "element": element, "window": window_value,
        "grouped_window_type": mlir.tensor(grouped_window, element), "filter_type": mlir.tensor(filter_shape, element),
    }
    if contraction == "taps":
        return _taps(index, phase, problem, element, window_value, window_shape), \
            [problem.batch, groups, c, *rows], ["n", "g", "c", *m]
    if contraction == "im2col":
        return _im2col(index, phase, problem, element, window_groups, grouped_window, filter_shape, config), \
            [groups, problem.batch, *rows, c], ["g", "n", *m, "c"]
    acc_shape = [problem.batch, *rows, groups, c]
    u = mlir.dims("u", rank)
    domain = ["n", *m, "g", "c", *u, "k"]
    window_index = ["n", *(f"{m[a]} + {u[a]} * {p.sub_dilation}" for a, p in enumerate(phase)), "g", "k"]
    return mlir.render("conv_bwd_data.grouped", contraction=generic_contraction(
        window_groups, element, f"%w_{index}", acc_shape, domain, window_index, ["g", *u, "k", "c"], ["n", *m, "g", "c"],
        parallel=rank + 3, config=config,
    )), acc_shape, ["n", *m, "g", "c"]


def _depthwise(index: int, phase, problem: ConvBwdDataProblem, element: str, window_value: str,
               window_shape: list[int], filter_shape: list[int], config: str | None) -> str:
    """A depthwise phase's convolution: the named depthwise op (``config`` pinned on it), or, tuned with single-tap
    axes beside others, the generic IREE would rebuild it as, without them (as ``dense_tuned``), ``config`` on it."""
    rank, groups = problem.rank, problem.groups
    taps = [p.filter_taps for p in phase]
    acc_shape = [problem.batch, *(p.rows for p in phase), groups]
    names = dict(index=index, window=window_value, window_type=mlir.tensor(window_shape, element),
                 filter_type=mlir.tensor(filter_shape, element), filter_taps_type=mlir.tensor([groups, *taps], element),
                 filter_hwc_type=mlir.tensor([*taps, groups], element),
                 filter_reassociation=[[a] for a in range(rank)] + [[rank, rank + 1, rank + 2]],
                 filter_permutation=mlir.index_list([*range(1, rank + 1), 0]))
    if not (config and single_taps_beside_others(phase)):
        return mlir.render(
            "conv_bwd_data.depthwise", **names, conv_op=DEPTHWISE_OPS[rank],
            acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
            sub_dilations=mlir.i64_array([p.sub_dilation for p in phase]), unit_strides=mlir.i64_array([1] * rank),
            dispatch_config=f", compilation_info = {config}" if config else "")
    kept = tuned_axes(phase)
    reassociation = mlir.folding_reassociation([a in kept for a in range(rank)] + [True])  # single taps join G
    m, u = mlir.dims("m", rank), mlir.dims("u", rank)
    window_index = ["n", *(f"{m[a]} + {u[a]} * {p.sub_dilation}" if a in kept else m[a] for a, p in enumerate(phase)),
                    "g"]
    kept_type = mlir.tensor([taps[a] for a in kept] + [groups], element)
    window_groups = {"index": index, "element": element, "window": window_value,
                     "grouped_window_type": names["window_type"], "filter_type": kept_type}
    return mlir.render(
        "conv_bwd_data.depthwise_tuned", **names, kept_reassociation=reassociation, filter_kept_type=kept_type,
        contraction=generic_contraction(window_groups, element, f"%w_{index}_kept", acc_shape,
                                        ["n", *m, "g", *(u[a] for a in kept)], window_index,
                                        [*(u[a] for a in kept), "g"], ["n", *m, "g"], parallel=rank + 2,
                                        config=config))


def generic_contraction(window_groups: dict, element: str, filter_value: str, acc_shape: list[int], domain: list[str],
                         window_index: list[str], filter_index: list[str], acc_index: list[str], parallel: int,
                         config: str | None) -> str:
    """A convolution as a ``linalg.generic`` of f32 multiply-adds over ``domain`` (its first ``parallel`` dims
    parallel, the rest reductions)."""
    widen_x, x = mlir.widen("%x", element, "%x_f32")
    widen_w, w = mlir.widen("%w", element, "%w_f32")
    return mlir.render(
        "conv_bwd_data.generic_contraction", **window_groups, filter=filter_value,
        acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
        window_map=mlir.affine_map(domain, window_index), filter_map=mlir.affine_map(domain, filter_index),
        acc_map=mlir.affine_map(domain, acc_index),
        iterators=mlir.iterators(["parallel"] * parallel + ["reduction"] * (len(domain) - parallel)),
        extend=mlir.indent("\n".join(line for line in (widen_x, widen_w) if line), 4),
        multiply_add=mlir.render("common.multiply_add", result="sum", acc="%a", a=x, b=w),
        dispatch_config=f" attrs = {{compilation_info = {config}}}" if config else "",
    )


def dense_tuned(index: int, phase, problem: ConvBwdDataProblem, element: str, window_value: str,
                 window_shape: list[int], filter_shape: list[int], acc_shape: list[int], config: str) -> str:
    """A tuned phase of one group with axes of a single tap: the convolution as a ``linalg.generic`` over the other
    axes' taps only, its filter (U.., K, C) collapsed to theirs. IREE 3.13 folds single-tap axes out of a
    convolution by rebuilding the op, which drops a ``compilation_info``; this is the op it would rebuild, so the
    tuned configuration reaches its dispatch (``build_tools/tune.py`` tiles exactly these dims)."""
    rank = problem.rank
    m, u = mlir.dims("m", rank), mlir.dims("u", rank)
    kept = tuned_axes(phase)
    # each single-tap axis joins the next axis kept (or K) in the collapse
    reassociation = mlir.folding_reassociation([a in kept for a in range(rank)] + [True, True])
    taps_filter = [phase[a].filter_taps for a in kept] + filter_shape[rank:]
    window_index = ["n", *(f"{m[a]} + {u[a]} * {p.sub_dilation}" if a in kept else m[a] for a, p in enumerate(phase)), "k"]
    window_groups = {"index": index, "element": element, "window": window_value,
                     "grouped_window_type": mlir.tensor(window_shape, element),
                     "filter_type": mlir.tensor(taps_filter, element)}
    return mlir.render(
        "conv_bwd_data.dense_tuned", **window_groups, filter_reassociation=reassociation,
        phase_filter_type=mlir.tensor(filter_shape, element),
        contraction=generic_contraction(
            window_groups, element, f"%w_{index}_taps", acc_shape, ["n", *m, "c", *(u[a] for a in kept), "k"],
            window_index, [*(u[a] for a in kept), "k", "c"], ["n", *m, "c"], parallel=rank + 2, config=config,
        ),
    )


def im2col_leading_axes(problem: ConvBwdDataProblem, phase) -> int:
    """How many leading tap axes each chunk fixes (``geometry.gather_leading_axes``): a tap's copy of the window
    against the inputs' bytes (grad_out, weight, D tensors)."""
    itemsize = dtypes.numpy_dtype(problem.dtype).itemsize
    inputs = sum(math.prod(s) * dtypes.numpy_dtype(t).itemsize
                 for s, t in [(problem.output_shape, problem.dtype), (problem.weight_shape, problem.dtype),
                              *zip(problem.d_shapes, problem.d_dtypes)])
    window = problem.batch * math.prod(p.rows for p in phase) * problem.groups * problem.out_channels * itemsize
    return geometry.gather_leading_axes([p.filter_taps for p in phase], window, inputs)


def im2col_chunks(taps: list[int], lead: int, gather: Callable, chunk: Callable) -> tuple[int, str]:
    """(count, text) of an im2col form's chunks, the one writer both convolution gradients use: a chunk fixes the
    first ``lead`` tap axes (``geometry.gather_leading_axes``) at one tuple of taps; its columns are gathered by
    ``common.im2col_gather`` (``gather(number, fixed)``: that fragment's values), then contracted by the caller's
    fragment (``chunk(number, fixed, gathered)``: its text around the gathered columns)."""
    fixed_taps = list(itertools.product(*(range(t) for t in taps[:lead])))
    texts = [chunk(number, fixed, mlir.render("common.im2col_gather", **gather(number, fixed)))
             for number, fixed in enumerate(fixed_taps)]
    return len(fixed_taps), "\n".join(texts)


def im2col_gemm(problem: ConvBwdDataProblem, phase) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of the im2col form's batch_matmuls in ``phase``: groups x (n, m) rows by C columns, a chunk's
    taps times K reduced."""
    taps = [p.filter_taps for p in phase]
    chunk_taps = math.prod(taps[im2col_leading_axes(problem, phase):])
    return (problem.groups, problem.batch * math.prod(p.rows for p in phase), problem.in_channels,
            chunk_taps * problem.out_channels)


def _im2col(index: int, phase, problem: ConvBwdDataProblem, element: str, window_groups: dict, grouped_window: list[int],
            filter_shape: list[int], config: str | None = None) -> str:
    """The grouped im2col form (``mlir/conv_bwd_data.mlir``'s ``im2col``): chunks of taps gathered, each contracted
    by a batch_matmul (``config`` pinned on each, ``im2col_gemm``'s shape) into the accumulator acc[g, (n, m), c]."""
    rank, groups, c, k, n = problem.rank, problem.groups, problem.in_channels, problem.out_channels, problem.batch
    rows, taps = [p.rows for p in phase], [p.filter_taps for p in phase]
    lead = im2col_leading_axes(problem, phase)
    _, gemm_rows, _, reduced = im2col_gemm(problem, phase)  # the batch_matmuls' (B, M, N, K): the tile's shape too
    chunk_taps = reduced // k
    m, u = mlir.dims("m", rank), mlir.dims("u", rank)
    acc_shape, acc_matrix = [groups, n, *rows, c], [groups, gemm_rows, c]
    cols_shape, cols_matrix = [groups, n, *rows, *taps[lead:], k], [groups, gemm_rows, reduced]
    domain = ["g", "n", *m, *u[lead:], "k"]
    filter_chunk = [groups, *([1] * lead), *taps[lead:], k, c]
    # the fixed axes read rows [tap*dilation, tap*dilation + rows) of the window: a slice, then m itself
    window_index = ["n", *m[:lead], *(f"{m[a]} + {mlir.term(u[a], p.sub_dilation, 0)}" for a, p in enumerate(phase) if a >= lead), "g", "k"]
    chunk_window = [n, *rows[:lead], *grouped_window[1 + lead:]]

    def gather(number, fixed):
        return dict(
            rows="window", identity="m + dilation*u", piece=f"window_{index}_{number}", source=window_groups["window"],
            offsets=mlir.index_list([0, *(t * p.sub_dilation for t, p in zip(fixed, phase)), *([0] * (rank - lead + 2))]),
            sizes=mlir.index_list(chunk_window), strides=mlir.index_list([1] * len(chunk_window)),
            source_type=window_groups["grouped_window_type"], piece_type=mlir.tensor(chunk_window, element),
            cols=f"cols_{index}_{number}", cols_type=mlir.tensor(cols_shape, element),
            read_map=mlir.affine_map(domain, window_index), cols_map=mlir.affine_map(domain, domain),
            cols_iterators=mlir.iterators(["parallel"] * len(domain)), value="x", element=element,
            cols_reassociation=[[0], list(range(1, rank + 2)), list(range(rank + 2, len(cols_shape)))],
            cols_matrix_type=mlir.tensor(cols_matrix, element),
        )

    def chunk(number, fixed, gathered):
        return mlir.render(
            "conv_bwd_data.im2col_chunk", **window_groups, chunk=number, next_chunk=number + 1, gather=gathered,
            cols_matrix_type=mlir.tensor(cols_matrix, element),
            filter_offsets=mlir.index_list([0, *fixed, *([0] * (rank - lead)), 0, 0]),
            filter_sizes=mlir.index_list(filter_chunk), filter_strides=mlir.index_list([1] * len(filter_shape)),
            filter_chunk_type=mlir.tensor(filter_chunk, element),
            filter_matrix_type=mlir.tensor([groups, reduced, c], element),
            matmul_config=f" {{compilation_info = {config}}}" if config else "",
            filter_reassociation=[[0], list(range(1, rank + 2)), [rank + 2]],
            acc_matrix_type=mlir.tensor(acc_matrix, dtypes.ACCUMULATOR),
        )
    count, texts = im2col_chunks(taps, lead, gather, chunk)
    return mlir.render(
        "conv_bwd_data.im2col", **window_groups, chunks=count, chunk_taps=chunk_taps,
        chunk_matmuls=texts, acc_type=mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
        acc_matrix_type=mlir.tensor(acc_matrix, dtypes.ACCUMULATOR), acc_shape=mlir.index_list(acc_shape),
        acc_reassociation=[[0], list(range(1, rank + 2)), [rank + 2]],
    )


def taps_terms(problem: ConvBwdDataProblem, phase) -> int:
    """The multiply-adds per grad_in element of the taps form's phase: one per (output channel, real tap)."""
    return problem.out_channels * math.prod(p.taps for p in phase)


def _taps(index: int, phase, problem: ConvBwdDataProblem, element: str, window_value: str, window_shape: list[int]) -> str:
    """The taps form (``mlir/conv_bwd_data.mlir``'s ``taps``): one elementwise ``linalg.generic`` over (n, g, c, m..)
    whose operands are the window's rows at each (k, u) and the weight's (g, c) plane at that (k, u)'s tap, read
    from the weight's (G, K, C, F..) view (each plane's flipped tap is a constant: no gathered phase filter)."""
    check(not problem.channels_last, f"{problem.op}: the taps form reads a channels-first grad_out, but got {problem.name}")
    rank, groups, c, n = problem.rank, problem.groups, problem.in_channels, problem.batch
    rows = [p.rows for p in phase]
    m = mlir.dims("m", rank)
    domain = ["n", "g", "c", *m]
    row_type = mlir.tensor([n, groups, *rows], element)
    plane_type = mlir.tensor([groups, c], element)
    slices, operands, types, maps, block_args, body = [], [], [], [], [], []
    # real taps only: a zero tap (u >= taps: the zero_tap form's, PhaseAxis.with_zero_taps) adds nothing
    terms = list(itertools.product(range(problem.out_channels), *(range(p.taps) for p in phase)))
    acc_type = mlir.tensor([n, groups, c, *rows], dtypes.ACCUMULATOR)
    for number, (k, *u) in enumerate(terms):
        slices.append(mlir.render(
            "conv_bwd_data.taps_operands", index=index, term=number, window=window_value,
            window_type=mlir.tensor(window_shape, element), row_type=row_type,
            row_offsets=mlir.index_list([0, 0, k, *(t * p.sub_dilation for t, p in zip(u, phase))]),
            row_sizes=mlir.index_list([n, groups, 1, *rows]), plane_type=plane_type,
            # u = T-1-t reads tap f = first_tap + tap_step*t = flipped_first_tap - tap_step*u of (G, K, C, F..)
            plane_offsets=mlir.index_list([0, k, 0, *(p.flipped_first_tap - p.tap_step * t for t, p in zip(u, phase))]),
            plane_sizes=mlir.index_list([groups, 1, c, *([1] * rank)]), unit_strides=mlir.index_list([1] * (rank + 3)),
        ))
        operands += [f"%x_{index}_{number}", f"%w_{index}_{number}"]
        types += [row_type, plane_type]
        maps += [mlir.affine_map(domain, ["n", "g", *m]), mlir.affine_map(domain, ["g", "c"])]
        block_args += [f"%x{number}: {element}", f"%w{number}: {element}"]
        widen_x, x = mlir.widen(f"%x{number}", element, f"%x{number}_f32")
        widen_w, w = mlir.widen(f"%w{number}", element, f"%w{number}_f32")
        body += [line for line in (widen_x, widen_w) if line]
        body.append(mlir.render("conv_bwd_data.taps_term", term=number, x=x, w=w, previous=f"%sum{number - 1}")
                    if number else mlir.render("conv_bwd_data.taps_first_term", x=x, w=w))
    return mlir.render(
        "conv_bwd_data.taps", index=index, terms=len(terms), slices="\n".join(slices), operands=", ".join(operands),
        operand_types=", ".join(types), maps=", ".join([*maps, mlir.affine_map(domain, domain)]),
        iterators=mlir.iterators(["parallel"] * len(domain)), acc_type=acc_type,
        block_args=", ".join(block_args), body=mlir.indent("\n".join(body), 4), result=f"%sum{len(terms) - 1}",
    )
