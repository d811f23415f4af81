"""grouped_conv_bwd_weight's ``per_image`` and ``per_image_nn`` forms (``mlir/grouped_conv_bwd_weight.mlir``'s
``per_image`` and ``per_image_nn``), on ``llvm-cpu``: x's windows gathered per (image, group), a batch_matmul per
(image, group) over the output positions, then the sum over the images. ``per_image`` reads channels-first layouts;
``per_image_nn`` either layout (channels-last: the gather and grad_out's one transpose put the channels first)."""

from __future__ import annotations

import math

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdWeightProblem


def _common(problem: ConvBwdWeightProblem) -> dict:
    """What the per_image forms share: x's windows gathered per (image, group), read s*o + d*f, the float32 sum of
    the images in grad_w's order ((g, k, c, f..); channels-last (g, k, f.., c))."""
    rank = problem.rank
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    windows = [mlir.window(o[a], f[a], problem.stride[a], problem.dilation[a]) for a in range(rank)]
    images_domain = ["n", "g", "k", "c", *f]
    weight_dims = ["g", "k", *f, "c"] if problem.channels_last else images_domain[1:]
    sizes = dict(g=problem.groups, k=problem.out_channels, c=problem.in_channels, **dict(zip(f, problem.filter_spatial)))
    return dict(
        o=o, f=f, images_domain=images_domain,
        x_read=["n", *windows, "g", "c"] if problem.channels_last else ["n", "g", "c", *windows],
        images_map=mlir.affine_map(images_domain, weight_dims),
        images_iterators=mlir.iterators(["reduction"] + ["parallel"] * (len(images_domain) - 1)),
        acc_groups_type=mlir.tensor([sizes[d] for d in weight_dims], dtypes.ACCUMULATOR),
        acc_groups_reassociation=[[0, 1], *([i] for i in range(2, rank + 3))],
    )


def render(problem: ConvBwdWeightProblem, element: str) -> str:
    """The llvm-cpu form for channels-first layouts (``mlir/grouped_conv_bwd_weight.mlir``'s ``per_image``): x's
    windows gathered per (image, group) with the output positions last, a batch_matmul per (image, group) over the
    output positions, then the sum over the images into the float32 result (g, k, c, f..)."""
    rank, n, groups, c, k = problem.rank, problem.batch, problem.groups, problem.in_channels, problem.out_channels
    common = _common(problem)
    o, f = common["o"], common["f"]
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    cols_domain = ["n", "g", "c", *f, *o]
    cols_shape = [n, groups, c, *filters, *outputs]
    columns, positions = c * math.prod(filters), math.prod(outputs)
    taps_shape = [n, groups, c, *filters, k]
    return mlir.render(
        "grouped_conv_bwd_weight.per_image", element=element, cols_type=mlir.tensor(cols_shape, element),
        cols_read=mlir.affine_map(cols_domain, common["x_read"]),
        cols_map=mlir.affine_map(cols_domain, cols_domain), cols_iterators=mlir.iterators(["parallel"] * len(cols_domain)),
        cols_reassociation=[[0, 1], list(range(2, rank + 3)), list(range(rank + 3, 2 * rank + 3))],
        cols_matrix_type=mlir.tensor([n * groups, columns, positions], element),
        grad_out_reassociation=[[0, 1], [2], list(range(3, rank + 3))],
        grad_out_matrix_type=mlir.tensor([n * groups, k, positions], element),
        per_image_type=mlir.tensor([n * groups, columns, k], dtypes.ACCUMULATOR),
        per_image_reassociation=[[0, 1], list(range(2, rank + 3)), [rank + 3]],
        per_image_taps_shape=mlir.index_list(taps_shape), per_image_taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        images_read=mlir.affine_map(common["images_domain"], ["n", "g", "c", *f, "k"]),
        **{key: common[key] for key in ("images_map", "images_iterators", "acc_groups_type", "acc_groups_reassociation")},
    )


def grad_out_moved(problem: ConvBwdWeightProblem) -> bool:
    """Which operand the per_image_nn form lays out (o, channels): grad_out where the matmul's other side, the
    (c, f) columns, is at least as large as K (the matmul's rows are then (c, f)); else the gathered columns."""
    return problem.in_channels * math.prod(problem.filter_spatial) >= problem.out_channels


def render_nn(problem: ConvBwdWeightProblem, element: str, config: str | None = None) -> str:
    """The per_image form with no reduction along a row (``mlir/grouped_conv_bwd_weight.mlir``'s ``per_image_nn``):
    grad_out laid out (o, k) (``grad_out_moved``), or the windows gathered (o, (c, f)), then a plain batch_matmul per
    (image, group), ``config`` pinned on it where given, and the sum over the images."""
    common = _common(problem)
    o, f = common["o"], common["f"]
    moved = grad_out_moved(problem)
    gathered = ["n", "g", "c", *f, *o] if moved else ["n", "g", *o, "c", *f]
    sizes = dict(n=problem.batch, g=problem.groups, c=problem.in_channels, **dict(zip(f, problem.filter_spatial)),
                 **dict(zip(o, problem.output_spatial)))
    layout = _nn_grad_out_moved if moved else _nn_cols_moved
    values, taps_shape = layout(problem, element, common)
    return mlir.render(
        "grouped_conv_bwd_weight.per_image_nn", element=element,
        matmul_config=f" {{compilation_info = {config}}}" if config else "",
        cols_type=mlir.tensor([sizes[d] for d in gathered], element), cols_read=mlir.affine_map(gathered, common["x_read"]),
        cols_map=mlir.affine_map(gathered, gathered), cols_iterators=mlir.iterators(["parallel"] * len(gathered)),
        per_image_taps_shape=mlir.index_list(taps_shape), per_image_taps_type=mlir.tensor(taps_shape, dtypes.ACCUMULATOR),
        **{key: common[key] for key in ("images_map", "images_iterators", "acc_groups_type", "acc_groups_reassociation")},
        **values,
    )


def nn_gemm(problem: ConvBwdWeightProblem) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of per_image_nn's batch_matmul: images x groups of (c, f) columns by K output channels
    where grad_out is moved (``grad_out_moved``), else K by the columns; the output positions reduced."""
    _, images, columns, positions, k = _nn_shape(problem)
    return (images, columns, k, positions) if grad_out_moved(problem) else (images, k, columns, positions)


def _nn_shape(problem: ConvBwdWeightProblem) -> tuple[int, int, int, int, int]:
    """(rank, images x groups, (c, f) columns, output positions, K) of the per-image matmuls."""
    return (problem.rank, problem.batch * problem.groups, problem.in_channels * math.prod(problem.filter_spatial),
            math.prod(problem.output_spatial), problem.out_channels)


def _nn_grad_out_moved(problem: ConvBwdWeightProblem, element: str, common: dict) -> tuple[dict, list[int]]:
    """per_image_nn's values where grad_out is laid out (o, k): cols[(n, g), (c, f), o] x grad_out_t[(n, g), o, k]."""
    rank, images, columns, positions, k = _nn_shape(problem)
    matrix, cols = mlir.tensor([images, positions, k], element), mlir.tensor([images, columns, positions], element)
    return dict(
        moved="grad_out", rows="(c, f)", cols_matrix_type=cols,
        cols_reassociation=[[0, 1], list(range(2, rank + 3)), list(range(rank + 3, 2 * rank + 3))],
        grad_out_operand=_grad_out_matrix(problem, element, ["n", "g", *common["o"], "k"], matrix,
                                          [[0, 1], list(range(2, rank + 2)), [rank + 2]]),
        lhs="%cols_matrix", rhs="%grad_out_matrix", lhs_type=cols, rhs_type=matrix,
        per_image_type=mlir.tensor([images, columns, k], dtypes.ACCUMULATOR),
        per_image_reassociation=[[0, 1], list(range(2, rank + 3)), [rank + 3]],
        images_read=mlir.affine_map(common["images_domain"], ["n", "g", "c", *common["f"], "k"]),
    ), [problem.batch, problem.groups, problem.in_channels, *problem.filter_spatial, k]


def _nn_cols_moved(problem: ConvBwdWeightProblem, element: str, common: dict) -> tuple[dict, list[int]]:
    """per_image_nn's values where the windows are gathered (o, (c, f)): grad_out[(n, g), k, o] x cols_t[(n, g), o,
    (c, f)]."""
    rank, images, columns, positions, k = _nn_shape(problem)
    matrix, cols = mlir.tensor([images, k, positions], element), mlir.tensor([images, positions, columns], element)
    return dict(
        moved="the gathered columns", rows="k", cols_matrix_type=cols,
        cols_reassociation=[[0, 1], list(range(2, rank + 2)), list(range(rank + 2, 2 * rank + 3))],
        grad_out_operand=_grad_out_matrix(problem, element, ["n", "g", "k", *common["o"]], matrix,
                                          [[0, 1], [2], list(range(3, rank + 3))]),
        lhs="%grad_out_matrix", rhs="%cols_matrix", lhs_type=matrix, rhs_type=cols,
        per_image_type=mlir.tensor([images, k, columns], dtypes.ACCUMULATOR),
        per_image_reassociation=[[0, 1], [2], list(range(3, rank + 4))],
        images_read=mlir.affine_map(common["images_domain"], common["images_domain"]),
    ), [problem.batch, problem.groups, k, problem.in_channels, *problem.filter_spatial]


def _grad_out_matrix(problem: ConvBwdWeightProblem, element: str, order: list[str], matrix: str,
                     reassociation: list) -> str:
    """grad_out's per-image matrices: grad_out_groups ((n, g, k, o..); channels-last (n, o.., g, k)) with its dims
    in ``order`` (a transpose where they lie otherwise), collapsed by ``reassociation`` into ``matrix``."""
    o = mlir.dims("o", problem.rank)
    lying = ["n", *o, "g", "k"] if problem.channels_last else ["n", "g", "k", *o]
    if order == lying:
        return mlir.render("grouped_conv_bwd_weight.grad_out_kept", grad_out_matrix_type=matrix,
                           grad_out_reassociation=reassociation)
    sizes = dict(n=problem.batch, g=problem.groups, k=problem.out_channels, **dict(zip(o, problem.output_spatial)))
    return mlir.render(
        "grouped_conv_bwd_weight.grad_out_moved", grad_out_t_type=mlir.tensor([sizes[d] for d in order], element),
        grad_out_permutation=mlir.index_list([lying.index(d) for d in order]), grad_out_matrix_type=matrix,
        grad_out_reassociation=reassociation)
