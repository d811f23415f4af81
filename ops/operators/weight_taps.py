"""grouped_conv_bwd_weight's ``taps`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``tap_sums``), for channels-first
problems of few channels a group on ``llvm-cpu``: one float32 sum per tap, image, group and (k, c) in one generic
over rows of the last spatial axis, then the images summed."""

from __future__ import annotations

import itertools
import math

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdWeightProblem


def render(problem: ConvBwdWeightProblem, element: str) -> str:
    """The llvm-cpu form for channels-first problems of few channels a group (``mlir/grouped_conv_bwd_weight.mlir``'s
    ``tap_sums``): one sum per tap, image, group and (k, c), the output positions reduced, then the images summed."""
    rank, n, groups, c, k = problem.rank, problem.batch, problem.groups, problem.in_channels, problem.out_channels
    o, f = mlir.dims("o", rank), mlir.dims("f", rank)
    outputs, filters = list(problem.output_spatial), list(problem.filter_spatial)
    taps = list(itertools.product(*(range(size) for size in filters)))
    row_type = mlir.tensor([n, groups, c, *outputs], element)
    per_tap_type = mlir.tensor([n, groups, k, c], dtypes.ACCUMULATOR)
    domain, images_domain = ["n", "g", "k", "c", *o], ["g", "k", "c", *f, "n"]
    widen_g, g = mlir.widen("%gv", element, "%gv_f32")
    rows, products, picks, sums = [], [widen_g] if widen_g else [], [], []
    for number, tap in enumerate(taps):
        rows.append(mlir.render(
            "grouped_conv_bwd_weight.tap_sums_row", tap=number, row_type=row_type,
            offsets=mlir.index_list([0, 0, 0, *(d * t for d, t in zip(problem.dilation, tap))]),
            sizes=mlir.index_list([n, groups, c, *outputs]), strides=mlir.index_list([1, 1, 1, *problem.stride]),
        ))
        widen, x = mlir.widen(f"%x{number}", element, f"%x{number}_f32")
        if widen:
            products.append(widen)
        products.append(mlir.render("grouped_conv_bwd_weight.tap_sums_product", tap=number, g=g, x=x))
        sums.append(f"%sum{number}_next")
        if number:
            picks.append(mlir.render("grouped_conv_bwd_weight.tap_sums_pick", tap=number,
                                     previous="%p0" if number == 1 else f"%picked{number - 1}"))
    count = len(taps)
    strides = [math.prod(filters[a + 1:]) for a in range(rank)]
    return mlir.render(
        "grouped_conv_bwd_weight.tap_sums", element=element, taps=count, x_rows="\n".join(rows),
        per_tap_type=per_tap_type, per_tap_types=", ".join([per_tap_type] * count),
        per_tap_maps=", ".join([mlir.affine_map(domain, ["n", "g", "k", *o])]
                               + [mlir.affine_map(domain, ["n", "g", "c", *o])] * count
                               + [mlir.affine_map(domain, ["n", "g", "k", "c"])] * count),
        per_tap_iterators=mlir.iterators(["parallel"] * 4 + ["reduction"] * rank),
        x_row_values=", ".join(f"%x_tap_{t}" for t in range(count)), x_row_types=", ".join([row_type] * count),
        per_tap_zeros=", ".join(["%per_tap_zero"] * count),
        x_row_args=", ".join(f"%x{t}: {element}" for t in range(count)),
        sum_args=", ".join(f"%sum{t}: f32" for t in range(count)), products="\n".join(products),
        sums=", ".join(sums), sum_types=", ".join(["f32"] * count),
        acc_groups_type=mlir.tensor([groups, k, c, *filters], dtypes.ACCUMULATOR),
        images_maps=", ".join([mlir.affine_map(images_domain, ["n", "g", "k", "c"])] * count
                              + [mlir.affine_map(images_domain, images_domain[:-1])]),
        images_iterators=mlir.iterators(["parallel"] * (rank + 3) + ["reduction"]),
        per_tap_results=", ".join(f"%per_tap#{t}" for t in range(count)),
        tap_args=", ".join(f"%p{t}: f32" for t in range(count)),
        tap_number=mlir.affine_map(f, [" + ".join(mlir.term(d, s) for d, s in zip(f, strides))]),
        tap_indices=", ".join(f"%f{a}_index" for a in range(rank)),
        tap_index_lines="\n".join(mlir.render("conv_bwd_data.gather_index", result=f"%f{a}_index", dim=3 + a)
                                  for a in range(rank)),
        pick="\n".join(picks),
        picked=f"%picked{count - 1}" if count > 1 else "%p0",
        acc_groups_reassociation=[[0, 1], *([i] for i in range(2, rank + 3))],
    )
