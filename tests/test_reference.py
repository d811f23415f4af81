"""The float64 references are themselves checked: backward-data is the adjoint of a direct forward."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ops import geometry, reference


def direct_conv_forward(x, w, stride, dilation, padding, groups=1):
    """out[n, o, g*K + k] = sum_{f, c} x[n, s*o + d*f - p_lo, g*C + c] * w[g*K + k, f, c], looping over outputs."""
    n, *in_spatial, _ = x.shape
    filt = w.shape[1:-1]
    k_per_group, c_per_group = w.shape[0] // groups, w.shape[-1]
    out_spatial = [geometry.conv_output_size(in_spatial[a], filt[a], stride[a], dilation[a], *padding[a]) for a in range(len(filt))]
    out = np.zeros((n, *out_spatial, w.shape[0]))
    for o in itertools.product(*(range(s) for s in out_spatial)):
        for f in itertools.product(*(range(s) for s in filt)):
            i = [stride[a] * o[a] + dilation[a] * f[a] - padding[a][0] for a in range(len(o))]
            if all(0 <= i[a] < in_spatial[a] for a in range(len(o))):
                for g in range(groups):
                    xs = x[(slice(None), *i, slice(g * c_per_group, (g + 1) * c_per_group))]
                    ws = w[(slice(g * k_per_group, (g + 1) * k_per_group), *f, slice(None))]
                    out[(slice(None), *o, slice(g * k_per_group, (g + 1) * k_per_group))] += xs @ ws.T
    return out


@pytest.mark.parametrize(
    "in_spatial, filt, stride, dilation, padding",
    [((9,), (3,), (2,), (1,), ((1, 0),)), ((7, 6), (3, 2), (2, 3), (1, 2), ((1, 1), (0, 2))), ((4, 5, 3), (2, 3, 1), (1, 2, 3), (2, 1, 1), ((0, 1), (1, 1), (0, 0)))],
)
def test_conv_bwd_data_reference_is_the_adjoint_of_the_forward(rng, in_spatial, filt, stride, dilation, padding):
    x = rng.standard_normal((2, *in_spatial, 3))
    w = rng.standard_normal((4, *filt, 3))
    y = direct_conv_forward(x, w, stride, dilation, padding)
    g = rng.standard_normal(y.shape)
    grad_in = reference.conv_bwd_data(g, w, in_spatial, stride, dilation, padding)
    # <conv(x, w), g> == <x, conv_bwd_data(g, w)> for every x: the definition of the input gradient
    assert np.isclose(np.vdot(y, g), np.vdot(x, grad_in), rtol=1e-10)


@pytest.mark.parametrize(
    "in_spatial, filt, stride, dilation, padding, groups, c, k",
    [
        ((9,), (3,), (2,), (1,), ((1, 0),), 1, 3, 4),
        ((7, 6), (3, 2), (2, 3), (1, 2), ((1, 1), (0, 2)), 2, 3, 2),
        ((7, 6), (3, 3), (2, 1), (1, 1), ((1, 1), (1, 1)), 4, 1, 1),  # depthwise
        ((4, 5, 3), (2, 3, 1), (1, 2, 3), (2, 1, 1), ((0, 1), (1, 1), (0, 0)), 3, 2, 2),
    ],
)
def test_conv_bwd_weight_reference_is_the_weight_gradient_of_the_forward(rng, in_spatial, filt, stride, dilation, padding, groups, c, k):
    x = rng.standard_normal((2, *in_spatial, groups * c))
    w = rng.standard_normal((groups * k, *filt, c))
    y = direct_conv_forward(x, w, stride, dilation, padding, groups)
    g = rng.standard_normal(y.shape)
    grad_w = reference.conv_bwd_weight(x, g, filt, stride, dilation, padding, groups)
    assert grad_w.shape == w.shape
    # <conv(x, w), g> == <w, conv_bwd_weight(x, g)> for every w: the forward is linear in w
    assert np.isclose(np.vdot(y, g), np.vdot(w, grad_w), rtol=1e-10)
    # and entry by entry: grad_w[j] = <conv(x, e_j), g> for a few unit weights e_j (the last one, a tap's corner)
    for j in [*(tuple(rng.integers(0, s) for s in w.shape) for _ in range(3)), tuple(s - 1 for s in w.shape)]:
        unit = np.zeros_like(w)
        unit[j] = 1.0
        assert np.isclose(np.vdot(direct_conv_forward(x, unit, stride, dilation, padding, groups), g), grad_w[j], rtol=1e-10, atol=1e-12)
