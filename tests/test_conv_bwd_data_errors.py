"""Bad input gets a clear ValueError/TypeError naming the parameter, before anything is compiled."""

from __future__ import annotations

import numpy as np
import pytest

import ops

GRAD_OUT = np.ones((2, 4, 4, 8), np.float32)  # NHWC, from a 2x7x7x3 input, 3x3 filter, stride 2, pad 1
WEIGHT = np.ones((8, 3, 3, 3), np.float32)
INPUT_SHAPE = (2, 7, 7, 3)


pytestmark = pytest.mark.usefixtures("nothing_compiles")  # every bad call is rejected before compiling


def call(grad_out=GRAD_OUT, weight=WEIGHT, **kwargs):
    params = dict(input_shape=INPUT_SHAPE, stride=2, padding=1)
    params.update(kwargs)
    return ops.conv_bwd_data(grad_out, weight, **params)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(grad_out=np.ones((2, 4, 8), np.float32)), ValueError, r"layout 'NHWC' is for 4-D arrays, but grad_out has rank 3; use one of NWC, NCW"),
        (dict(grad_out=np.ones((8, 4), np.float32)), ValueError, r"grad_out must be 3-D, 4-D or 5-D"),
        (dict(layout="NDHWC"), ValueError, r"layout 'NDHWC' is for 5-D arrays, but grad_out has rank 4"),
        (dict(layout="NHCW"), ValueError, r"layout must be one of NWC, NHWC, NDHWC, NCW, NCHW, NCDHW, but got 'NHCW'"),
        (dict(layout=4), TypeError, r"layout must be a string"),
        (dict(weight=np.ones((8, 3, 3), np.float32)), ValueError, r"weight must have rank 4 for layout 'NHWC'"),
        (dict(weight=np.ones((6, 3, 3, 3), np.float32)), ValueError, r"weight has 6 output channels \(dim 0\), but grad_out has 8 channels"),
        (dict(weight=np.ones((8, 3, 3, 5), np.float32)), ValueError, r"weight has 5 input channels per group, but input_shape has 3 channels"),
        (dict(input_shape=(2, 9, 9, 3)), ValueError, r"grad_out has spatial size \(4, 4\), but input_shape \(2, 9, 9, 3\) .* gives \(5, 5\)"),
        (dict(stride=1), ValueError, r"grad_out has spatial size \(4, 4\), .* gives \(7, 7\)"),
        (dict(padding=0), ValueError, r"grad_out has spatial size \(4, 4\), .* gives \(3, 3\)"),
        (dict(input_shape=(3, 7, 7, 3)), ValueError, r"grad_out has batch 2, but input_shape has batch 3"),
        (dict(input_shape=(2, 7, 3)), ValueError, r"input_shape must have 4 entries for layout 'NHWC'"),
        (dict(input_shape=(2, 7, 0, 3)), ValueError, r"input_shape must have positive sizes"),
        (dict(input_shape="2x7x7x3"), TypeError, r"input_shape must be a sequence of ints"),
        (dict(stride=0), ValueError, r"stride must be positive, but got \(0, 0\)"),
        (dict(stride=(2, 2, 2)), ValueError, r"stride must have one entry per spatial dimension \(2\), but got 3"),
        (dict(stride=2.0), TypeError, r"stride must be an int or a sequence of 2 ints"),
        (dict(dilation=(1, -1)), ValueError, r"dilation must be positive, but got \(1, -1\)"),
        (dict(padding=-1), ValueError, r"padding must be non-negative, but got \(\(-1, -1\), \(-1, -1\)\)"),
        (dict(padding=((1, 1), (1, -2))), ValueError, r"padding must be non-negative"),
        (dict(padding=((1, 1, 1), (1, 1))), TypeError, r"each padding entry must be an int or a \(low, high\) pair"),
        (dict(input_shape=(2, 1, 1, 3), grad_out=np.ones((2, 1, 1, 8), np.float32), padding=0), ValueError, r"the dilated filter \(3, 3\) .* does not fit the padded input \(1, 1\)"),
        (dict(grad_out=GRAD_OUT.astype(np.float64), weight=WEIGHT.astype(np.float64)), TypeError, r"grad_out has dtype float64, but only float32, float16, bfloat16 are supported"),
        (dict(grad_out=GRAD_OUT.astype(np.int32), weight=WEIGHT.astype(np.int32)), TypeError, r"grad_out has dtype int32"),
        (dict(weight=WEIGHT.astype(np.float16)), ValueError, r"grad_out and weight must have the same dtype, but got float32 and float16"),
        (dict(grad_out=GRAD_OUT.tolist()), TypeError, r"grad_out must be a NumPy array or an IREE DeviceArray, but got list"),
        (dict(device="rocm"), ValueError, r"device must be one of local-task, local-sync, hip, cuda \(an IREE driver name\), but got 'rocm'"),
        (dict(out=np.zeros((2, 7, 7, 3), np.float32)), TypeError, r"out must be an IREE DeviceArray, but got ndarray"),
    ],
)
def test_bad_input_is_reported_by_name(kwargs, error, message):
    with pytest.raises(error, match="conv_bwd_data: " + message if not message.startswith("device") else message):
        call(**kwargs)


def test_out_of_the_wrong_shape_or_dtype_is_reported():
    with pytest.raises(ValueError, match=r"conv_bwd_data: out has shape \(2, 7, 7, 4\), but the result has shape \(2, 7, 7, 3\)"):
        call(out=ops.to_device(np.zeros((2, 7, 7, 4), np.float32)))
    with pytest.raises(ValueError, match=r"conv_bwd_data: out has dtype float16, but the result has dtype float32"):
        call(out=ops.to_device(np.zeros((2, 7, 7, 3), np.float16)))
