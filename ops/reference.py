"""NumPy float64 references, written from the definitions and independent of the kernels.

They share nothing with the MLIR path: no stride phases, no flipped filters. Each is the forward
operator's index identity ``s*o + d*f = i + p_lo`` read as a sum over every (o, f) pair that lands
on an input position. All take and return channels-last arrays; layouts are converted by the caller.
"""

from __future__ import annotations

import itertools

import numpy as np


def _tap_positions(out_size: int, in_size: int, tap: int, stride: int, dilation: int, pad_lo: int) -> tuple[slice, slice]:
    """For one filter tap: the output positions o and the input positions i = s*o + d*f - p_lo inside the input,
    as slices (both are arithmetic progressions: o by 1, i by s), so the sums below read and add views."""
    o = np.arange(out_size)
    i = stride * o + dilation * tap - pad_lo
    o, i = o[(i >= 0) & (i < in_size)], i[(i >= 0) & (i < in_size)]
    if not len(o):
        return slice(0, 0), slice(0, 0)
    return slice(int(o[0]), int(o[-1]) + 1), slice(int(i[0]), int(i[-1]) + 1, stride)


def _taps_with_positions(filter_size, out_spatial, input_spatial, stride, dilation, padding):
    """Every filter tap (a tuple) that reads at least one input position, with its output and input positions per axis."""
    for taps in itertools.product(*(range(f) for f in filter_size)):
        positions = [
            _tap_positions(out_spatial[a], input_spatial[a], tap, stride[a], dilation[a], padding[a][0])
            for a, tap in enumerate(taps)
        ]
        if all(o.stop > o.start for o, _ in positions):  # a tap that reads only padding contributes nothing
            yield taps, [o for o, _ in positions], [i for _, i in positions]


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
    for taps, out_index, in_index in _taps_with_positions(filter_size, out_spatial, input_spatial, stride, dilation, padding):
        go = grad_out[(slice(None), *out_index, slice(None))]
        for g in range(groups):
            w_tap = weight[(slice(g * k_per_group, (g + 1) * k_per_group), *taps, slice(None))]  # (K, C)
            contribution = go[..., g * k_per_group:(g + 1) * k_per_group] @ w_tap
            grad_in[(slice(None), *in_index, slice(g * c_per_group, (g + 1) * c_per_group))] += contribution
    return grad_in


# --- Pooling: loops over windows, straight from the forward's definition -------------------------------


def relu(x) -> np.ndarray:
    """PyTorch's relu: 0 below 0, else x itself (-0 and NaN kept: NaN < 0 is False), in x's dtype."""
    x = np.asarray(x)
    with np.errstate(invalid="ignore"):
        return np.where(x < 0, np.zeros_like(x), x)


def _window_taps(o, in_size: int, window: int, stride: int, dilation: int, pad_lo: int) -> list[int]:
    """Input positions s*o + d*f - p_lo of window o's taps, in scan order, padding included (may be out of range)."""
    return [stride * o + dilation * f - pad_lo for f in range(window)]


def maxpool2d_fwd(x, kernel, stride, dilation, padding, output_spatial):
    """PyTorch's max_pool2d with indices, as its CPU loop runs: per window, scan the taps inside the input
    row by row and replace the maximum when ``v > max or v is NaN`` (so the first maximum, or the last NaN,
    wins); the index starts at the first tap inside the input. x: (N, H, W, C); returns (y, indices) with
    indices the flat position h*W + w, both (N, OH, OW, C)."""
    x = np.asarray(x, dtype=np.float64)
    n, height, width, c = x.shape
    y = np.empty((n, *output_spatial, c))
    indices = np.empty((n, *output_spatial, c), dtype=np.int64)
    for oh, ow in itertools.product(*(range(o) for o in output_spatial)):
        best = np.full((n, c), -np.inf)
        best_index = np.full((n, c), -1, dtype=np.int64)
        for h in _window_taps(oh, height, kernel[0], stride[0], dilation[0], padding[0][0]):
            for w in _window_taps(ow, width, kernel[1], stride[1], dilation[1], padding[1][0]):
                if not (0 <= h < height and 0 <= w < width):
                    continue
                v = x[:, h, w, :]
                take = (v > best) | np.isnan(v)
                best = np.where(take, v, best)
                best_index = np.where(take | (best_index < 0), h * width + w, best_index)
        y[:, oh, ow, :] = best
        indices[:, oh, ow, :] = best_index
    return y, indices


def maxpool2d_bwd(grad_out, indices, input_spatial):
    """Scatter-add adjoint of max-pooling: grad_in[n, indices[n, o, c], c] += grad_out[n, o, c].

    grad_out, indices: (N, OH, OW, C); returns (N, H, W, C), float64."""
    grad_out = np.asarray(grad_out, dtype=np.float64)
    n, c = grad_out.shape[0], grad_out.shape[-1]
    grad_in = np.zeros((n, int(np.prod(input_spatial)), c))
    batch = np.arange(n)[:, None, None, None]
    channel = np.arange(c)[None, None, None, :]
    np.add.at(grad_in, (batch, np.asarray(indices), channel), grad_out)
    return grad_in.reshape(n, *input_spatial, c)


def avgpool_bwd(grad_out, input_spatial, kernel, stride, dilation, padding, count_include_pad: bool, divisor_override=None):
    """Adjoint of N-D average pooling: each window hands grad_out[o] / divisor to each of its taps inside the input.

    The divisor is PyTorch's: ``divisor_override`` if given; else the window's taps inside the padded input
    [-p_lo, in + p_hi) (count_include_pad; a ceil_mode window running past the padded end is clipped there)
    or inside the input (not count_include_pad). Dilated taps (CK's extension) are counted the same way.
    grad_out: (N, *out_spatial, C); returns (N, *input_spatial, C), float64.
    """
    grad_out = np.asarray(grad_out, dtype=np.float64)
    grad_in = np.zeros((grad_out.shape[0], *input_spatial, grad_out.shape[-1]))
    rank = len(input_spatial)
    for o in itertools.product(*(range(size) for size in grad_out.shape[1:-1])):
        inside, divisor = _avg_window(o, input_spatial, kernel, stride, dilation, padding, count_include_pad,
                                      divisor_override)
        share = grad_out[(slice(None), *o, slice(None))] / divisor  # (N, C)
        positions = np.ix_(*inside)
        np.add.at(grad_in, (slice(None), *positions, slice(None)), share[(slice(None), *([None] * rank), slice(None))])
    return grad_in


def avgpool_fwd(x, output_spatial, kernel, stride, dilation, padding, count_include_pad: bool, divisor_override=None):
    """N-D average pooling: each window's taps inside the input, summed, over PyTorch's divisor (``avgpool_bwd``'s).
    x: (N, *input_spatial, C); returns (N, *output_spatial, C), float64."""
    x = np.asarray(x, dtype=np.float64)
    y = np.empty((x.shape[0], *output_spatial, x.shape[-1]))
    for o in itertools.product(*(range(size) for size in output_spatial)):
        inside, divisor = _avg_window(o, x.shape[1:-1], kernel, stride, dilation, padding, count_include_pad,
                                      divisor_override)
        taps = x[(slice(None), *np.ix_(*inside), slice(None))]
        y[(slice(None), *o, slice(None))] = taps.sum(axis=tuple(range(1, 1 + len(o)))) / divisor
    return y


def _avg_window(o, input_spatial, kernel, stride, dilation, padding, count_include_pad: bool, divisor_override):
    """(per axis, window ``o``'s taps inside the input; its divisor: ``divisor_override``, or its taps inside the
    padded input [-p_lo, in + p_hi) (count_include_pad; a ceil_mode window running past the padded end is clipped
    there), or inside the input)."""
    rank = len(input_spatial)
    taps = [_window_taps(o[a], input_spatial[a], kernel[a], stride[a], dilation[a], padding[a][0]) for a in range(rank)]
    inside = [[i for i in taps[a] if 0 <= i < input_spatial[a]] for a in range(rank)]
    in_padded = [[i for i in taps[a] if i < input_spatial[a] + padding[a][1]] for a in range(rank)]
    if divisor_override is not None:
        return inside, divisor_override
    return inside, int(np.prod([len(t) for t in (in_padded if count_include_pad else inside)]))


# --- Convolution backward-weight ------------------------------------------------------------------------


def conv_bwd_weight(x, grad_out, filter_spatial, stride, dilation, padding, groups: int = 1):
    """grad_w[g*K + k, f, c] = sum over (n, o) with s*o + d*f = i + p_lo inside x of x[n, i, g*C + c] * grad_out[n, o, g*K + k].

    x: (N, *input_spatial, G*C); grad_out: (N, *out_spatial, G*K); returns (G*K, *filter_spatial, C), float64.
    One tap at a time: the (o, i) pairs the tap joins, then a sum over n and those o.
    """
    x = np.asarray(x, dtype=np.float64)
    grad_out = np.asarray(grad_out, dtype=np.float64)
    input_spatial, out_spatial = x.shape[1:-1], grad_out.shape[1:-1]
    c_per_group = x.shape[-1] // groups
    k_per_group = grad_out.shape[-1] // groups
    grad_w = np.zeros((groups * k_per_group, *filter_spatial, c_per_group))
    for taps, out_index, in_index in _taps_with_positions(filter_spatial, out_spatial, input_spatial, stride, dilation, padding):
        xs = x[(slice(None), *in_index, slice(None))]
        go = grad_out[(slice(None), *out_index, slice(None))]
        for g in range(groups):
            x_g = xs[..., g * c_per_group:(g + 1) * c_per_group]
            go_g = go[..., g * k_per_group:(g + 1) * k_per_group]
            # sum over n and every output position o: all but the last axis of both operands
            grad_w[(slice(g * k_per_group, (g + 1) * k_per_group), *taps, slice(None))] = np.einsum(
                "mk,mc->kc", go_g.reshape(-1, k_per_group), x_g.reshape(-1, c_per_group)
            )
    return grad_w
