"""Pooling window algebra and the pooling references, checked by brute force (no IREE)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ops import geometry, reference

# (in, kernel, stride, dilation, pad, ceil_mode) -> PyTorch's output size (torch 2.13 max_pool1d)
PYTORCH_OUTPUT_SIZES = [
    (7, 3, 2, 1, 1, False, 4), (7, 3, 2, 1, 1, True, 4), (6, 2, 2, 1, 1, True, 4), (5, 2, 2, 1, 0, True, 3),
    (5, 2, 2, 1, 0, False, 2), (8, 3, 3, 1, 1, True, 3), (10, 3, 3, 2, 1, True, 4), (10, 3, 3, 2, 1, False, 3),
    (9, 4, 3, 1, 2, True, 4), (4, 2, 3, 1, 1, True, 2), (11, 5, 2, 2, 0, False, 2), (11, 5, 2, 2, 2, True, 4),
    (32, 3, 1, 1, 0, False, 30), (112, 3, 2, 1, 1, False, 56), (112, 3, 2, 1, 1, True, 57),
]


@pytest.mark.parametrize("in_size, window, stride, dilation, pad, ceil_mode, expected", PYTORCH_OUTPUT_SIZES)
def test_pool_output_size_is_pytorchs(in_size, window, stride, dilation, pad, ceil_mode, expected):
    assert geometry.pool_output_size(in_size, window, stride, dilation, pad, pad, ceil_mode) == expected


def test_ceil_mode_drops_a_last_window_that_starts_in_the_right_padding():
    # 4 inputs, window 2, stride 3, pad 1: rounding up gives 3 windows, but the third would start at 3*2 - 1 = 5,
    # past the input and the left padding, so PyTorch keeps 2.
    assert geometry.conv_output_size(4, 2, 3, 1, 1, 1 + 2) == 3
    assert geometry.pool_output_size(4, 2, 3, 1, 1, 1, True) == 2


def _windows_holding(i, in_size, out_size, window, stride, dilation, pad_lo):
    """The definition: every window o with a tap f such that s*o + d*f - p_lo == i."""
    return {o for o in range(out_size) for f in range(window) if stride * o + dilation * f - pad_lo == i}


def _gather_candidates(i, out_size, window, stride, dilation, pad_lo):
    """What the templates compute: o = (i + p_lo) // s - j, kept when 0 <= o < O and r = d*f for some f < k."""
    found = set()
    for j in range(geometry.pool_candidates(window, stride, dilation)):
        o = (i + pad_lo) // stride - j
        r = (i + pad_lo) % stride + stride * j
        if 0 <= o < out_size and r < dilation * (window - 1) + 1 and r % dilation == 0:
            found.add(o)
    return found


@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (3, 1), (2, 2), (2, 3), (3, 2), (1, 3), (4, 1), (5, 2)])
def test_gather_candidates_find_exactly_the_windows_holding_each_position(stride, dilation):
    for in_size, window, pad_lo, pad_hi, ceil_mode in itertools.product(range(1, 11), range(1, 6), range(3), range(3), (False, True)):
        if max(pad_lo, pad_hi) > window // 2:
            continue
        out_size = geometry.pool_output_size(in_size, window, stride, dilation, pad_lo, pad_hi, ceil_mode)
        if out_size < 1:
            continue
        most = 0
        for i in range(in_size):
            expected = _windows_holding(i, in_size, out_size, window, stride, dilation, pad_lo)
            assert _gather_candidates(i, out_size, window, stride, dilation, pad_lo) == expected
            most = max(most, len(expected))
        assert most <= geometry.pool_candidates(window, stride, dilation)


def test_windows_overlap_exactly_when_the_stride_is_below_the_dilated_window():
    assert geometry.pool_candidates(2, 2, 1) == 1
    assert geometry.pool_candidates(3, 3, 1) == 1
    assert geometry.pool_candidates(2, 3, 2) == 1  # taps 0, 2; windows start 3 apart
    assert geometry.pool_candidates(2, 2, 2) == 2  # taps 0, 2 interleave with the next window's 2, 4
    assert geometry.pool_candidates(3, 1, 1) == 3
    assert geometry.pool_candidates(5, 2, 2) == 5  # CK's avgpool3d default: 5 windows may hold one position


@pytest.mark.parametrize("dilation", [1, 2, 3])
def test_tap_counts_count_the_taps_of_each_window(dilation):
    for in_size, window, stride, pad_lo, pad_hi, ceil_mode in itertools.product(range(1, 9), range(1, 5), range(1, 4), range(3), range(3), (False, True)):
        if max(pad_lo, pad_hi) > window // 2:
            continue
        out_size = geometry.pool_output_size(in_size, window, stride, dilation, pad_lo, pad_hi, ceil_mode)
        if out_size < 1:
            continue
        for include_pad in (False, True):
            lo, hi = (-pad_lo, in_size + pad_hi) if include_pad else (0, in_size)
            counts = geometry.pool_tap_counts(in_size, out_size, window, stride, dilation, pad_lo, pad_hi, include_pad)
            expected = tuple(
                sum(1 for f in range(window) if lo <= stride * o + dilation * f - pad_lo < hi) for o in range(out_size)
            )
            assert counts == expected


def test_tap_counts_are_pytorchs_divisors_without_dilation():
    # PyTorch: pool_size = min(start + k, in + pad) - start; without padding: min(start + k, in) - max(start, 0)
    in_size, window, stride, pad = 7, 3, 2, 1
    out_size = geometry.pool_output_size(in_size, window, stride, 1, pad, pad, True)
    starts = [stride * o - pad for o in range(out_size)]
    assert geometry.pool_tap_counts(in_size, out_size, window, stride, 1, pad, pad, True) == tuple(
        min(s + window, in_size + pad) - s for s in starts
    )
    assert geometry.pool_tap_counts(in_size, out_size, window, stride, 1, pad, pad, False) == tuple(
        min(s + window, in_size) - max(s, 0) for s in starts
    )


def test_dilated_windows_divide_by_the_full_window_when_counting_padding():
    # CK's extension: a dilated window inside the padded input counts all its k taps
    counts = geometry.pool_tap_counts(12, 5, 3, 1, 2, 1, 1, True)  # taps o - 1 + {0, 2, 4}
    assert counts == (3, 3, 3, 3, 3) and geometry.pool_output_size(12, 3, 2, 2, 1, 1, False) == 5


# --- references --------------------------------------------------------------------------------------


def test_maxpool_reference_keeps_the_first_maximum_and_the_last_nan():
    row = np.array([[1.0, 3.0, 3.0, 2.0], [np.nan, 1.0, np.nan, 0.0], [-np.inf, -np.inf, -np.inf, -np.inf]])
    x = row.reshape(3, 1, 4, 1)  # three (n) planes of 1x4
    y, indices = reference.maxpool2d_fwd(x, (1, 4), (1, 4), (1, 1), ((0, 0), (0, 0)), (1, 1))
    assert indices.ravel().tolist() == [1, 2, 0]
    assert y.ravel()[0] == 3.0 and np.isnan(y.ravel()[1]) and y.ravel()[2] == -np.inf


def _avgpool_forward(x, kernel, stride, dilation, padding, output_spatial, count_include_pad, divisor_override):
    """Direct forward: out[o] = sum of the window's taps inside the input / divisor, looping over outputs."""
    rank = len(kernel)
    in_spatial = x.shape[1:-1]
    out = np.zeros((x.shape[0], *output_spatial, x.shape[-1]))
    for o in itertools.product(*(range(s) for s in output_spatial)):
        total, inside, in_padded = 0.0, 0, 0
        for f in itertools.product(*(range(k) for k in kernel)):
            i = [stride[a] * o[a] + dilation[a] * f[a] - padding[a][0] for a in range(rank)]
            if all(i[a] < in_spatial[a] + padding[a][1] for a in range(rank)):
                in_padded += 1
            if all(0 <= i[a] < in_spatial[a] for a in range(rank)):
                inside += 1
                total = total + x[(slice(None), *i, slice(None))]
        divisor = divisor_override or (in_padded if count_include_pad else inside)
        out[(slice(None), *o, slice(None))] = total / divisor
    return out


@pytest.mark.parametrize(
    "in_spatial, kernel, stride, dilation, padding, ceil_mode, count_include_pad, divisor_override",
    [
        ((5, 6, 7), (3, 3, 3), (2, 2, 2), (1, 1, 1), ((1, 1),) * 3, True, True, None),
        ((5, 6, 7), (3, 2, 3), (2, 1, 3), (1, 2, 1), ((1, 0), (1, 1), (0, 1)), True, False, None),
        ((6, 5, 4), (2, 3, 2), (2, 2, 1), (2, 1, 1), ((0, 0), (1, 1), (1, 0)), False, True, 5),
    ],
)
def test_avgpool_reference_is_the_adjoint_of_the_forward(rng, in_spatial, kernel, stride, dilation, padding, ceil_mode, count_include_pad, divisor_override):
    out_spatial = tuple(
        geometry.pool_output_size(in_spatial[a], kernel[a], stride[a], dilation[a], *padding[a], ceil_mode) for a in range(3)
    )
    x = rng.standard_normal((2, *in_spatial, 3))
    g = rng.standard_normal((2, *out_spatial, 3))
    y = _avgpool_forward(x, kernel, stride, dilation, padding, out_spatial, count_include_pad, divisor_override)
    grad_in = reference.avgpool_bwd(g, in_spatial, kernel, stride, dilation, padding, count_include_pad, divisor_override)
    assert np.isclose(np.vdot(y, g), np.vdot(x, grad_in), rtol=1e-12)


def test_maxpool_reference_backward_routes_each_window_to_its_argmax(rng):
    x = rng.standard_normal((2, 7, 6, 3))
    padding = ((1, 1), (1, 1))
    y, indices = reference.maxpool2d_fwd(x, (3, 3), (2, 2), (1, 1), padding, (4, 3))
    g = rng.standard_normal(y.shape)
    grad_in = reference.maxpool2d_bwd(g, indices, (7, 6))
    # a small step along grad_in's direction changes sum(y * g) by the same first-order amount
    eps = 1e-7
    y_step, _ = reference.maxpool2d_fwd(x + eps * grad_in, (3, 3), (2, 2), (1, 1), padding, (4, 3))
    assert np.isclose((np.vdot(y_step, g) - np.vdot(y, g)) / eps, np.vdot(grad_in, grad_in), rtol=1e-5)
