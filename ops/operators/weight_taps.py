"""grouped_conv_bwd_weight's ``taps`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``tap_sums``), for problems of
few channels a group on ``llvm-cpu``: one float32 sum per tap, image, group and (k, c) in one generic over rows of
the contiguous axis (channels-first: the last spatial axis; channels-last: the groups' channels), then the images
summed."""

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
    filters = list(problem.filter_spatial)
    taps = list(itertools.product(*(range(size) for size in filters)))
    lay = _layout(problem)
    row_type = mlir.tensor(lay["rows"], element)
    per_tap_type = mlir.tensor([n, groups, k, c], dtypes.ACCUMULATOR)
    domain, images_domain = lay["domain"], lay["images_domain"]
    sizes = dict(g=groups, k=k, c=c, **dict(zip(f, filters)))
    widen_g, g = mlir.widen("%gv", element, "%gv_f32")
    rows, products, picks, sums = [], [widen_g] if widen_g else [], [], []
    for number, tap in enumerate(taps):
        rows.append(mlir.render(
            "grouped_conv_bwd_weight.tap_sums_row", tap=number, row_type=row_type,
            offsets=mlir.index_list(lay["offsets"]([d * t for d, t in zip(problem.dilation, tap)])),
            sizes=mlir.index_list(lay["rows"]), strides=mlir.index_list(lay["offsets"](problem.stride, 1)),
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
        per_tap_maps=", ".join([mlir.affine_map(domain, lay["grad_out"])] + [mlir.affine_map(domain, lay["x"])] * count
                               + [mlir.affine_map(domain, ["n", "g", "k", "c"])] * count),
        per_tap_iterators=mlir.iterators(["reduction" if d in o else "parallel" for d in domain]),
        x_row_values=", ".join(f"%x_tap_{t}" for t in range(count)), x_row_types=", ".join([row_type] * count),
        per_tap_zeros=", ".join(["%per_tap_zero"] * count),
        x_row_args=", ".join(f"%x{t}: {element}" for t in range(count)),
        sum_args=", ".join(f"%sum{t}: f32" for t in range(count)), products="\n".join(products),
        sums=", ".join(sums), sum_types=", ".join(["f32"] * count),
        acc_groups_type=mlir.tensor([sizes[d] for d in images_domain[:-1]], dtypes.ACCUMULATOR),
        images_maps=", ".join([mlir.affine_map(images_domain, ["n", "g", "k", "c"])] * count
                              + [mlir.affine_map(images_domain, images_domain[:-1])]),
        images_iterators=mlir.iterators(["parallel"] * (rank + 3) + ["reduction"]),
        per_tap_results=", ".join(f"%per_tap#{t}" for t in range(count)),
        tap_args=", ".join(f"%p{t}: f32" for t in range(count)),
        tap_number=mlir.affine_map(f, [" + ".join(mlir.term(d, s) for d, s in zip(f, strides))]),
        tap_indices=", ".join(f"%f{a}_index" for a in range(rank)),
        tap_index_lines="\n".join(mlir.render("conv_bwd_data.gather_index", result=f"%f{a}_index",
                                              dim=images_domain.index(f[a])) for a in range(rank)),
        pick="\n".join(picks),
        picked=f"%picked{count - 1}" if count > 1 else "%p0",
        acc_groups_reassociation=[[0, 1], *([i] for i in range(2, rank + 3))],
    )


def _layout(problem: ConvBwdWeightProblem) -> dict:
    """Where the form's dims lie: x's rows at a tap (``offsets``: a spatial list placed among x_groups' dims, the rest
    ``fill``), the sums' loop dims (the output positions reduced), grad_out's and the rows' index lists over them,
    and the images' sum over (grad_w's dims, n)."""
    o, f = mlir.dims("o", problem.rank), mlir.dims("f", problem.rank)
    n, groups, c, outputs = problem.batch, problem.groups, problem.in_channels, list(problem.output_spatial)
    if problem.channels_last:
        return dict(rows=[n, *outputs, groups, c], offsets=lambda spatial, fill=0: [fill, *spatial, fill, fill],
                    domain=["n", *o, "g", "k", "c"], grad_out=["n", *o, "g", "k"], x=["n", *o, "g", "c"],
                    images_domain=["g", "k", *f, "c", "n"])
    return dict(rows=[n, groups, c, *outputs], offsets=lambda spatial, fill=0: [fill, fill, fill, *spatial],
                domain=["n", "g", "k", "c", *o], grad_out=["n", "g", "k", *o], x=["n", "g", "c", *o],
                images_domain=["g", "k", "c", *f, "n"])
