"""NumPy float64 references, written from the definitions and independent of the kernels.

They share nothing with the MLIR path: no stride phases, no flipped filters. Each is the forward
operator's index identity ``s*o + d*f = i + p_lo`` read as a sum over every (o, f) pair that lands
on an input position. All take and return channels-last arrays; layouts are converted by the caller.
"""

from __future__ import annotations

import itertools

import numpy as np


def _tap_positions(out_size: int, in_size: int, tap: int, stride: int, dilation: int, pad_lo: int):
    """For one filter tap: the output positions o and input positions i = s*o + d*f - p_lo inside the input."""
    o = np.arange(out_size)
    i = stride * o + dilation * tap - pad_lo
    inside = (i >= 0) & (i < in_size)
    return o[inside], i[inside]


def conv_bwd_data(grad_out, weight, input_spatial, stride, dilation, padding, groups: int = 1):
    """grad_in[n, i, g*C + c] = sum over (o, f, k) with s*o + d*f = i + p_lo of grad_out[n, o, g*K + k] * w[g*K + k, f, c].

    grad_out: (N, *out_spatial, G*K); weight: (G*K, *filter, C); returns (N, *input_spatial, G*C), float64.
    """
    grad_out = np.asarray(grad_out, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    n = grad_out.shape[0]
    out_spatial = grad_out.shape[1:-1]
    filter_size = weight.shape[1:-1]
    k_per_group = weight.shape[0] // groups
    c_per_group = weight.shape[-1]
    grad_in = np.zeros((n, *input_spatial, groups * c_per_group))
    for taps in itertools.product(*(range(f) for f in filter_size)):
        out_index, in_index = [], []
        for axis, tap in enumerate(taps):
            o, i = _tap_positions(out_spatial[axis], input_spatial[axis], tap, stride[axis], dilation[axis], padding[axis][0])
            out_index.append(o)
            in_index.append(i)
        if any(len(o) == 0 for o in out_index):
            continue
        go = grad_out[(slice(None), *np.ix_(*out_index), slice(None))]
        for g in range(groups):
            w_tap = weight[(slice(g * k_per_group, (g + 1) * k_per_group), *taps, slice(None))]  # (K, C)
            contribution = go[..., g * k_per_group:(g + 1) * k_per_group] @ w_tap
            grad_in[(slice(None), *np.ix_(*in_index), slice(g * c_per_group, (g + 1) * c_per_group))] += contribution
    return grad_in
