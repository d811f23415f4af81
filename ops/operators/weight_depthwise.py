"""grouped_conv_bwd_weight's ``depthwise`` form (``mlir/grouped_conv_bwd_weight.mlir``'s ``depthwise``), for depthwise
problems of 1 or 2 spatial axes on ``llvm-cpu``: the named depthwise convolution with the roles swapped (grad_out the
filter, the batch one more spatial axis)."""

from __future__ import annotations

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdWeightProblem
from ..validation import check
from .contractions import DEPTHWISE_OPS

OP = "grouped_conv_bwd_weight"


def render(problem: ConvBwdWeightProblem, element: str, x_value: str, padded_spatial: list[int]) -> str:
    """The llvm-cpu form of depthwise problems (``mlir/grouped_conv_bwd_weight.mlir``'s ``depthwise``): a named
    depthwise convolution over (batch, spatial..) of x_padded with grad_out as the filter, into (1, 1, f.., g)."""
    rank, groups, n = problem.rank, problem.groups, problem.batch
    check(problem.kind == "depthwise" and rank + 1 in (2, 3),
          f"{OP}: the depthwise form needs C = K = 1 and at most 2 spatial axes, but got {problem.name}")
    x_cl_shape, grad_out_cl_shape = [n, *padded_spatial, groups], [n, *problem.output_spatial, groups]
    x_cl, grad_out_cl, moves = x_value, "%grad_out", []  # x_value (x, its slice or x_padded) has !x_padded's type
    x_cl_type, grad_out_cl_type = "!x_padded", "!grad_out"
    if not problem.channels_last:
        to_last = mlir.index_list([0, *range(2, rank + 2), 1])
        moves.append(mlir.render("common.transpose", result="%x_cl", source=x_value,
                                 source_type="!x_padded",
                                 result_type=mlir.tensor(x_cl_shape, element), permutation=to_last))
        moves.append(mlir.render("common.transpose", result="%grad_out_cl", source="%grad_out",
                                 source_type="!grad_out", result_type=mlir.tensor(grad_out_cl_shape, element),
                                 permutation=to_last))
        x_cl, grad_out_cl = "%x_cl", "%grad_out_cl"
        x_cl_type, grad_out_cl_type = mlir.tensor(x_cl_shape, element), mlir.tensor(grad_out_cl_shape, element)
    filters = list(problem.filter_spatial)
    acc_dw = [1, 1, *filters, groups]
    weight_last = [groups, *filters, 1] if problem.channels_last else [groups, 1, *filters]
    return mlir.render(
        "grouped_conv_bwd_weight.depthwise",
        to_channels_last="\n".join(moves) if moves else "  // channels-last already: x_padded and grad_out as they are",
        x_cl=x_cl, x_cl_type=x_cl_type, grad_out_cl=grad_out_cl, grad_out_cl_type=grad_out_cl_type,
        x_dw_reassociation=[[0, 1], *([a] for a in range(2, rank + 3))],
        x_dw_shape=mlir.index_list([1, *x_cl_shape]), x_dw_type=mlir.tensor([1, *x_cl_shape], element),
        acc_dw_type=mlir.tensor(acc_dw, dtypes.ACCUMULATOR), conv_op=DEPTHWISE_OPS[rank + 1],
        dilations=mlir.i64_array([1, *problem.stride]), strides=mlir.i64_array([1, *problem.dilation]),
        acc_taps_reassociation=[[0, 1, 2], *([a] for a in range(3, rank + 3))],
        acc_taps_type=mlir.tensor([*filters, groups], dtypes.ACCUMULATOR),
        acc_t_type=mlir.tensor([groups, *filters], dtypes.ACCUMULATOR),
        acc_permutation=mlir.index_list([rank, *range(rank)]),
        acc_reassociation=[[0], *([a] for a in range(1, rank)), [rank, rank + 1]] if problem.channels_last
        else [[0, 1], *([a] for a in range(2, rank + 2))],
        acc_shape=mlir.index_list(weight_last),
    )
