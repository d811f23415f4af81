"""grouped_conv_bwd_weight's ``im2col`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``im2col``), for ``llvm-cpu``:
grad_out with (g, k) first, the windows of x gathered in budgeted chunks of taps (``contractions.im2col_chunks``),
a batch_matmul over the groups per chunk into the float32 taps (g, k, f.., c), then those as grad_w."""

from __future__ import annotations

import functools
import math

from .. import dtypes, geometry
from .. import render as mlir
from ..problem import ConvBwdWeightProblem
from . import contractions


def render(problem: ConvBwdWeightProblem, element: str, x_groups_shape: list[int]) -> str:
    """The llvm-cpu form (``mlir/grouped_conv_bwd_weight.mlir``'s ``im2col``): grad_out with (g, k) first, the windows
    of x gathered in chunks of taps (``contractions.im2col_chunks``), a batch_matmul per chunk into the float32
    result (g, k, f.., c)."""
    rank, groups, c, k, n = problem.rank, problem.groups, problem.in_channels, problem.out_channels, problem.batch
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    itemsize = dtypes.numpy_dtype(problem.dtype).itemsize
    inputs = (math.prod(problem.input_shape) + math.prod(problem.output_shape)) * itemsize
    positions = n * math.prod(outputs)
    lead = geometry.gather_leading_axes(filters, groups * positions * c * itemsize, inputs)
    chunk_taps = math.prod(filters[lead:])
    taps_shape = [groups, k, *filters, c]
    chunk_product = [groups, k, *([1] * lead), *filters[lead:], c]
    cols_shape = [groups, n, *outputs, *filters[lead:], c]

    def chunk(number, fixed, gathered):
        return mlir.render(
            "grouped_conv_bwd_weight.im2col_chunk", chunk=number, next_chunk=number + 1, gather=gathered,
            cols_matrix_type=mlir.tensor([groups, positions, chunk_taps * c], element),
            grad_out_matrix_type=mlir.tensor([groups, k, positions], element),
            product_type=mlir.tensor([groups, k, chunk_taps * c], dtypes.ACCUMULATOR),
            product_reassociation=[[0], [1], list(range(2, rank + 3))],
            product_taps_shape=mlir.index_list(chunk_product),
            product_taps_type=mlir.tensor(chunk_product, dtypes.ACCUMULATOR),
            taps_offsets=mlir.index_list([0, 0, *fixed, *([0] * (rank - lead)), 0]),
            taps_strides=mlir.index_list([1] * len(taps_shape)), taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        )
    gather = functools.partial(_x_gather, problem, element, x_groups_shape, lead, cols_shape, chunk_taps)
    count, texts = contractions.im2col_chunks(filters, lead, gather, chunk)
    return mlir.render(
        "grouped_conv_bwd_weight.im2col", element=element, chunks=count, chunk_taps=chunk_taps,
        grad_out_t_type=mlir.tensor([groups, k, n, *outputs], element), chunk_matmuls=texts,
        taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR), taps_to_weight=_taps_to_weight(problem, count, taps_shape),
        **_grad_out_t(problem, element, positions),
    )


def _x_gather(problem: ConvBwdWeightProblem, element: str, x_groups_shape: list[int], lead: int, cols_shape: list[int],
              chunk_taps: int, number: int, fixed: tuple) -> dict:
    """``common.im2col_gather``'s values for a chunk of x's windows: x rows s*o + d*f, on a fixed axis a strided
    slice from d*f, then o itself."""
    rank, groups, c, n = problem.rank, problem.groups, problem.in_channels, problem.batch
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    offsets, sizes, strides, windows = [], [], [], []
    for a in range(rank):
        s, dl = problem.stride[a], problem.dilation[a]
        if a < lead:
            offsets.append(dl * fixed[a]); sizes.append(problem.output_spatial[a]); strides.append(s); windows.append(o[a])
        else:
            offsets.append(0); sizes.append(x_groups_shape[1 + a] if problem.channels_last else x_groups_shape[3 + a])
            strides.append(1); windows.append(mlir.window(o[a], f[a], s, dl))
    if problem.channels_last:
        x_offsets, x_sizes, x_strides = [0, *offsets, 0, 0], [n, *sizes, groups, c], [1, *strides, 1, 1]
        x_read = ["n", *windows, "g", "c"]
    else:
        x_offsets, x_sizes, x_strides = [0, 0, 0, *offsets], [n, groups, c, *sizes], [1, 1, 1, *strides]
        x_read = ["n", "g", "c", *windows]
    domain = ["g", "n", *o, *f[lead:], "c"]
    return dict(
        rows="x", identity="s*o + d*f", piece=f"x_{number}", source="%x_groups", source_type="!x_groups",
        offsets=mlir.index_list(x_offsets), sizes=mlir.index_list(x_sizes), strides=mlir.index_list(x_strides),
        piece_type=mlir.tensor(x_sizes, element), cols=f"cols_{number}", cols_type=mlir.tensor(cols_shape, element),
        read_map=mlir.affine_map(domain, x_read), cols_map=mlir.affine_map(domain, domain),
        cols_iterators=mlir.iterators(["parallel"] * len(domain)), value="xv", element=element,
        cols_reassociation=[[0], list(range(1, rank + 2)), list(range(rank + 2, len(cols_shape)))],
        cols_matrix_type=mlir.tensor([groups, n * math.prod(problem.output_spatial), chunk_taps * c], element),
    )


def _grad_out_t(problem: ConvBwdWeightProblem, element: str, positions: int) -> dict:
    """The im2col form's grad_out_t[g, k, n, o..] = grad_out[n, o.., g, k] (channels-first: grad_out[n, g, k, o..])."""
    rank, o = problem.rank, mlir.dims("o", problem.rank)
    t_domain = ["g", "k", "n", *o]
    t_read = ["n", *o, "g", "k"] if problem.channels_last else ["n", "g", "k", *o]
    return dict(
        grad_out_t_read=mlir.affine_map(t_domain, t_read), grad_out_t_map=mlir.affine_map(t_domain, t_domain),
        grad_out_t_iterators=mlir.iterators(["parallel"] * len(t_domain)),
        grad_out_t_reassociation=[[0], [1], list(range(2, rank + 3))],
        grad_out_matrix_type=mlir.tensor([problem.groups, problem.out_channels, positions], element),
    )


def _taps_to_weight(problem: ConvBwdWeightProblem, chunks: int, taps_shape: list[int]) -> str:
    """The result (g, k, f.., c) as grad_w: a free reshape channels-last, a transpose to (g, k, c, f..) first."""
    rank = problem.rank
    flat = [[0, 1], *([i] for i in range(2, rank + 3))]
    if problem.channels_last:
        return mlir.render("grouped_conv_bwd_weight.taps_channels_last", chunks=chunks, taps_reassociation=flat,
                           taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR))
    return mlir.render(
        "grouped_conv_bwd_weight.taps_channels_first", chunks=chunks, taps_reassociation=flat,
        taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        taps_t_type=mlir.tensor([problem.groups, problem.out_channels, problem.in_channels, *problem.filter_spatial],
                                dtypes.ACCUMULATOR),
        permutation=mlir.index_list([0, 1, rank + 2, *range(2, rank + 2)]),
    )
