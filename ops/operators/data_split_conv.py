"""A float32 backward-data of stride 1, as bfloat16 x 3, as the forward convolution it is
(``mlir/data_split_conv.mlir``): conv_bwd_data's ``split_conv`` form, the one its split problems of several taps
(``precision="bf16x3"`` or ``"bf16x6"``) take. grad_out's parts are stacked along its channels, the weight's along k
and flipped (``split_precision.split_as``); one named convolution over the 3K channels accumulates grad_in in float32,
and the store puts it in the problem's layout (``data_gemm.store``)."""

from __future__ import annotations

import math

from .. import render as mlir
from ..problem import ConvBwdDataProblem
from ..validation import check
from . import data_gemm, split_precision

OP = "conv_bwd_data"
CONV_OPS = {1: "conv_1d_nwc_wcf", 2: "conv_2d_nhwc_hwcf", 3: "conv_3d_ndhwc_dhwcf"}  # filter (F.., C_in, C_out)


def applies(problem: ConvBwdDataProblem) -> bool:
    """Whether the split_conv form can take ``problem``: one group, no epilogue, stride 1, more than one tap, and
    padding within d*(F-1) on each side (grad_out is then padded, never cropped)."""
    return (problem.groups == 1 and problem.epilogue is None and not problem.strided
            and math.prod(problem.filter_spatial) > 1
            and all(max(lo, hi) <= d * (f - 1)
                    for (lo, hi), d, f in zip(problem.padding, problem.dilation, problem.filter_spatial)))


def render(problem: ConvBwdDataProblem, transients: str, flip_by_map: bool = True, config: str | None = None,
           copy=None) -> str:
    """The problem's module (a float32 problem computed as bf16x3); ``flip_by_map``: the weight's taps flipped
    through the split's indexing map (a negative coefficient, the GPU targets') or gathered first (llvm-cpu);
    ``config``: an ``#iree_codegen.compilation_info`` pinned on the convolution (``data_tiles.conv_tiles``); ``copy``:
    the target's copy_config (a channels-first grad_out's transposing split)."""
    check(applies(problem) and problem.is_split,
          f"{OP}: the split_conv form computes float32 stride-1 problems of several taps as bf16x3, but got "
          f"{problem.name}")
    rank, c, k = problem.rank, problem.in_channels, problem.out_channels
    reach = [d * (f - 1) for d, f in zip(problem.dilation, problem.filter_spatial)]
    padded = [o + 2 * r - lo - hi for o, r, (lo, hi) in zip(problem.output_spatial, reach, problem.padding)]
    acc = [problem.batch, *problem.input_spatial, c]
    stacked = problem.split_products * k
    g_parts, w_parts = data_gemm.parts(problem, 0), data_gemm.parts(problem, 1)
    return mlir.render(
        "data_split_conv", rank=rank, layout=problem.layout, problem_name=problem.name, function=problem.name,
        grad_out_type=mlir.tensor(problem.output_shape, "f32"), weight_type=mlir.tensor(problem.weight_shape, "f32"),
        grad_in_type=mlir.tensor(problem.input_shape, "f32"), transients=transients,
        split_grad_out=split_precision.largest("grad_out", problem.output_shape, g_parts)
        + _split_grad_out(problem, [(r - lo, r - hi) for r, (lo, hi) in zip(reach, problem.padding)], copy),
        flip="" if flip_by_map else _flip(problem) + "\n",
        split_weight=split_precision.largest("weight", problem.weight_shape, w_parts)
        + _split_weight(problem, flip_by_map, copy), weight3="%weight3" if flip_by_map else "%weight_flipped3",
        padded_type=mlir.tensor([problem.batch, *padded, stacked], g_parts.element), conv_op=CONV_OPS[rank],
        weight3_type=mlir.tensor([*problem.filter_spatial, stacked, c], g_parts.element),
        acc_type=mlir.tensor(acc, "f32"),
        dilations=mlir.i64_array(problem.dilation), unit_strides=mlir.i64_array([1] * rank),
        dispatch_config=f", compilation_info = {config}" if config else "",
        store=data_gemm.store(problem, acc),
    )


def _split_grad_out(problem: ConvBwdDataProblem, pad, copy=None) -> str:
    """grad_out's parts (hi, hi, lo) stacked along its channels, channels-last, zero-padded by ``pad`` ((low, high)
    per spatial axis) into %grad_out3_padded: iterated over (n, o.., t, k)."""
    rank = problem.rank
    domain = mlir.dims("d", rank + 3)
    n, o, k = domain[0], domain[1:rank + 1], domain[-1]
    read = [n, *o, k] if problem.channels_last else [n, k, *o]
    which = data_gemm.parts(problem, 0)
    parts = (problem.batch, *problem.output_spatial, len(which), problem.out_channels)
    return split_precision.split_as("grad_out", domain, read, problem.output_shape, parts, rank + 1, which, copy, o,
                                    pad)


def _split_weight(problem: ConvBwdDataProblem, flip_by_map: bool, copy=None) -> str:
    """The weight's parts (hi, lo, hi) stacked along k and flipped (u = F-1-f), as the named convolution's filter
    (F.., 3K, C): iterated over (u.., t, k, c), read through a map with a negative coefficient (``flip_by_map``: the
    GPU targets take it, as conv_bwd_data's filter_flip; tiled in whole rows of c by ``copy``, the target's
    copy_config, where it has a split_tile) or from the flipped weight (``_flip``)."""
    rank = problem.rank
    domain = mlir.dims("d", rank + 3)
    u, k, c = domain[:rank], domain[rank + 1], domain[-1]
    taps = [mlir.term(a, -1, f - 1) for f, a in zip(problem.filter_spatial, u)] if flip_by_map else u
    read = [k, *taps, c] if problem.channels_last else [k, c, *taps]
    which = data_gemm.parts(problem, 1)
    parts = (*problem.filter_spatial, len(which), problem.out_channels, problem.in_channels)
    return split_precision.split_as("weight" if flip_by_map else "weight_flipped", domain, read, problem.weight_shape,
                                    parts, rank, which, copy)


def _flip(problem: ConvBwdDataProblem) -> str:
    """The weight with its taps flipped, gathered (``flip`` fragment): w_flipped[k, u.., c] = w[k, F-1-u.., c]."""
    rank = problem.rank
    domain = mlir.dims("d", rank + 2)
    tap_axes = range(1, rank + 1) if problem.channels_last else range(2, rank + 2)
    lines = [mlir.render("data_split_conv.flip_index", dim=a) for a in range(rank + 2)]
    lines += [mlir.render("data_split_conv.flip_tap", dim=a, last=f - 1)
              for a, f in zip(tap_axes, problem.filter_spatial)]
    extract = [f"%u{a}" if a in tap_axes else f"%i{a}" for a in range(rank + 2)]
    return mlir.render("data_split_conv.flip", map=mlir.affine_map(domain, domain),
                       iterators=mlir.iterators(["parallel"] * (rank + 2)), indices="\n".join(lines),
                       extract=mlir.index_list(extract))
