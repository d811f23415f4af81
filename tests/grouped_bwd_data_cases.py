"""grouped_conv_bwd_data test problems, shared by the numerics and the lowering tests.

Each case: CK-style parameters, the epilogue, how the D tensors are shaped (relative to grad_in), the
parameter values, and an independent NumPy definition of the epilogue.
"""

import numpy as np

from ops.operators import conv_bwd_data as conv, grouped_conv_bwd_data


def _channel(p):  # a per-channel bias, as CK's bias-ReLU example has it
    return (p.groups * p.in_channels,) if p.channels_last else (p.groups * p.in_channels, *([1] * p.rank))


def _full(p):
    return p.input_shape


def _per_sample_channel(p):  # (N, 1.., GC): broadcasts over space only
    return (p.batch, *([1] * p.rank), p.groups * p.in_channels) if p.channels_last else (p.batch, p.groups * p.in_channels, *([1] * p.rank))


CASES = {
    # name: (conv params, epilogue, D shape makers, params, expected(acc, ds, params))
    "g2_2d_s2_add": (dict(groups=2, batch=2, in_channels=3, out_channels=4, input_spatial=(7, 7), filter_spatial=(3, 3), stride=2, padding=1, dtype="float32"),
                     "add", [_full], {}, lambda a, d, q: a + d[0]),
    "g4_1d_dilation2_bilinear_f16": (dict(groups=4, batch=2, in_channels=3, out_channels=2, input_spatial=(13,), filter_spatial=(3,), dilation=2, padding=((2, 1),), layout="NWC", dtype="float16"),
                                     "bilinear", [_full], {"alpha": 0.75, "beta": -1.5}, lambda a, d, q: q["alpha"] * a + q["beta"] * d[0]),
    "g2_3d_scale": (dict(groups=2, batch=1, in_channels=2, out_channels=3, input_spatial=(5, 4, 6), filter_spatial=(3, 2, 3), stride=(2, 1, 2), padding=((1, 0), (0, 1), (1, 1)), layout="NDHWC", dtype="float32"),
                    "scale", [], {"alpha": 0.25}, lambda a, d, q: q["alpha"] * a),
    "g3_2d_nchw_add_relu_bias_f16": (dict(groups=3, batch=2, in_channels=2, out_channels=3, input_spatial=(8, 7), filter_spatial=(3, 3), stride=1, padding=1, layout="NCHW", dtype="float16"),
                                     "add_relu", [_channel], {}, lambda a, d, q: np.maximum(a + d[0], 0)),
    "depthwise_2d_s2_relu_grad": (dict(groups=6, batch=2, in_channels=1, out_channels=1, input_spatial=(9, 9), filter_spatial=(3, 3), stride=2, padding=1, dtype="float32"),
                                  "relu_grad", [_full], {}, lambda a, d, q: np.where(d[0] > 0, a, 0)),
    "depthwise_k2_3d_ncdhw": (dict(groups=4, batch=1, in_channels=1, out_channels=2, input_spatial=(5, 5, 5), filter_spatial=(3, 3, 3), stride=2, padding=1, layout="NCDHW", dtype="float32"),
                              None, [], {}, None),
    "g1_2d_expression_two_ds": (dict(groups=1, batch=2, in_channels=5, out_channels=3, input_spatial=(10, 9), filter_spatial=(1, 2), stride=3, padding=0, dtype="float32"),
                                "where(d1 > 0, acc + d0, 0) * alpha", [_channel, _full], {"alpha": 1.5},
                                lambda a, d, q: np.where(d[1] > 0, a + d[0], 0) * q["alpha"]),
    "g2_1d_ncw_expression_minmax_f16": (dict(groups=2, batch=2, in_channels=4, out_channels=3, input_spatial=(12,), filter_spatial=(4,), stride=3, padding=((0, 2),), layout="NCW", dtype="float16"),
                                        "min(max(acc, -clip), clip) - abs(d0) / 2 + (d0 >= 0)", [_per_sample_channel], {"clip": 2.0},
                                        lambda a, d, q: np.minimum(np.maximum(a, -q["clip"]), q["clip"]) - np.abs(d[0]) / 2 + (d[0] >= 0)),
}


def problem(name):
    params, *_ = CASES[name]
    return conv.problem_from_params(**params)


def grouped_problem(name):
    """The case as a grouped_conv_bwd_data problem, its D tensors full-sized (the lowering tests' and the tuning
    tables' exceptions name these)."""
    from ops.operators import grouped_conv_bwd_data

    params, epilogue, makers, _, _ = CASES[name]
    return grouped_conv_bwd_data.problem_from_params(**params, epilogue=epilogue, d_kinds=tuple("full" for _ in makers))


def depthwise(**params):
    """A small bfloat16 channels-last depthwise problem (32 groups, 12x12, 3x3, stride 1), ``params`` overriding."""
    base = dict(batch=2, groups=32, in_channels=1, out_channels=1, input_spatial=(12, 12), filter_spatial=(3, 3),
                stride=1, padding=1, layout="NHWC", dtype="bfloat16")
    return grouped_conv_bwd_data.problem_from_params(**{**base, **params})
