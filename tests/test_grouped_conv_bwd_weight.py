"""grouped_conv_bwd_weight on the CPU device against the float64 direct definition; bad input before compiling."""

from __future__ import annotations


import numpy as np
import pytest

import iree.runtime as rt
from ops import compiler, dtypes, geometry, runtime, verify
from ops.operators import grouped_conv_bwd_weight as op
from ops.api import run
from ops.api import grouped_conv_bwd_weight
from ops.layouts import channels_last

from conftest import DEVICE, poisoned
from grouped_conv_bwd_weight_cases import PROBLEMS


def check_against_reference(problem, inputs, got, name=""):
    expected = op.reference(problem, inputs)
    assert np.abs(expected).max() > 0
    error = verify.relative_error(got, expected)
    # the tolerance of what is stored: float32 results (out_dtype) carry only the f32 summation's error
    tolerance = verify.tolerance(op.OP, op.result_dtype(problem))
    assert error <= tolerance, f"{name}: relative error {error:.3e} > {tolerance:.0e}"


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_matches_the_direct_definition(rng, name):
    problem = PROBLEMS[name]
    inputs = op.random_inputs(problem, rng)
    out = poisoned(problem.weight_shape, op.result_dtype(problem))
    result = run(problem, inputs, device=DEVICE, out=out)
    assert isinstance(result, rt.DeviceArray) and tuple(result.shape) == problem.weight_shape
    got = out.to_host()  # every element written: no NaN of the poisoned destination is left
    assert got.dtype == dtypes.numpy_dtype(op.result_dtype(problem))
    check_against_reference(problem, inputs, got, name)


@pytest.mark.parametrize("name, chunks", [
    ("2d_nhwc_g4_s2x1_asym", 3), ("2d_nchw_depthwise_k2_f16", 2), ("3d_ncdhw_g1_mixed_f16", 2), ("2d_nhwc_g2_bf16_out_f32", 2),
])
def test_batch_split_form_matches_the_direct_definition(rng, name, chunks):
    # the GPU form (J partial sums over batch chunks, then their sum), run here on the CPU, which by default
    # compiles the unsplit form
    problem = PROBLEMS[name]
    inputs = op.random_inputs(problem, rng)
    out = poisoned(problem.weight_shape, op.result_dtype(problem))
    split_form = {"batch_split": chunks}
    assert f"!partial = tensor<{chunks}x" in op.render(problem, op.Form(**split_form))
    run(problem, inputs, device=DEVICE, out=out, form=split_form)
    check_against_reference(problem, inputs, out.to_host(), f"{name} in {chunks} chunks")


def test_numpy_in_gives_numpy_out_in_the_input_dtype(rng):
    problem = PROBLEMS["2d_nhwc_g4_s2_p1_f16"]
    x, grad_out = op.random_inputs(problem, rng)
    grad_w = grouped_conv_bwd_weight(x, grad_out, groups=4, filter_spatial=3, stride=2, padding=1)
    assert isinstance(grad_w, np.ndarray) and grad_w.dtype == np.float16 and grad_w.shape == (64, 3, 3, 16)
    check_against_reference(problem, [x, grad_out], grad_w)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_out_dtype_float32_keeps_the_float32_sums(rng, dtype):
    # as CK's bf16 kernel: 16-bit inputs, float32 weight gradient, checked to float32's tolerance
    problem = op.problem_from_params(batch=2, groups=2, in_channels=4, out_channels=3, input_spatial=(6, 5),
                                     filter_spatial=(3, 2), stride=(1, 2), padding=((1, 0), (0, 1)), layout="NHWC",
                                     dtype=dtype, out_dtype="float32")
    x, grad_out = op.random_inputs(problem, rng)
    grad_w = grouped_conv_bwd_weight(x, grad_out, groups=2, filter_spatial=(3, 2), stride=(1, 2), padding=((1, 0), (0, 1)),
                                     out_dtype=np.float32)
    assert grad_w.dtype == np.float32
    check_against_reference(problem, [x, grad_out], grad_w)
    assert verify.relative_error(grad_w, op.reference(problem, [x, grad_out])) <= 1e-5


def test_groups_are_independent_convolutions(rng):
    # groups=2 is two groups=1 problems side by side: x's and grad_out's channel halves, grad_w's row halves
    grouped = op.problem_from_params(batch=2, groups=2, in_channels=3, out_channels=4, input_spatial=(7, 6),
                                     filter_spatial=(3, 3), stride=2, padding=1, dtype="float32")
    x, grad_out = op.random_inputs(grouped, rng)
    both = grouped_conv_bwd_weight(x, grad_out, groups=2, filter_spatial=3, stride=2, padding=1)
    for g in range(2):
        alone = grouped_conv_bwd_weight(
            np.ascontiguousarray(x[..., 3 * g:3 * (g + 1)]), np.ascontiguousarray(grad_out[..., 4 * g:4 * (g + 1)]),
            groups=1, filter_spatial=3, stride=2, padding=1,
        )
        np.testing.assert_allclose(both[4 * g:4 * (g + 1)], alone, rtol=1e-6, atol=1e-6)


def test_channels_first_and_channels_last_agree(rng):
    cf = PROBLEMS["2d_nchw_g2_d2_asym"]
    x, grad_out = op.random_inputs(cf, rng)
    from_cf = run(cf, [x, grad_out])
    from_cl = grouped_conv_bwd_weight(
        channels_last(x).copy(), channels_last(grad_out).copy(), groups=2, filter_spatial=(3, 2), dilation=2,
        padding=((2, 1), (0, 2)), layout="NHWC",
    )
    assert from_cf.shape == (10, 3, 3, 2) and from_cl.shape == (10, 3, 2, 3)
    # the layouts may ship different forms (on the CPU: per_image, im2col), which sum in different orders
    assert verify.relative_error(channels_last(from_cf), from_cl) <= verify.tolerance(op.OP, "float32")


def test_taps_that_only_read_padding_get_zero(rng):
    # a 1-wide input padded by 2 on each side, 5 taps, stride 1: output positions 0..0 read taps 0..4, only tap 2 sees x
    problem = op.problem_from_params(batch=2, groups=1, in_channels=3, out_channels=2, input_spatial=(1,),
                                     filter_spatial=(5,), padding=2, layout="NWC", dtype="float32")
    x, grad_out = op.random_inputs(problem, rng)
    out = poisoned(problem.weight_shape, "float32")
    run(problem, [x, grad_out], out=out)
    got = out.to_host()
    assert np.all(got[:, [0, 1, 3, 4], :] == 0.0) and np.all(got[:, 2, :] != 0.0)
    check_against_reference(problem, [x, grad_out], got)


def test_device_arrays_stay_on_the_device_and_a_second_call_neither_compiles_nor_reloads(rng):
    problem = PROBLEMS["1d_nwc_g1_s1"]
    inputs = [runtime.to_device(a) for a in op.random_inputs(problem, rng)]
    first = run(problem, inputs)
    assert isinstance(first, rt.DeviceArray) and first._host_array is None
    compiles, loads = compiler.stats["compiles"], runtime.stats["loads"]
    for _ in range(3):
        again = run(problem, inputs)
    assert (compiler.stats["compiles"], runtime.stats["loads"]) == (compiles, loads)
    assert np.array_equal(first.to_host(), again.to_host())  # deterministic from run to run


# --- Bad input: a clear ValueError/TypeError naming the parameter, before anything is compiled ----------

X = np.ones((2, 7, 7, 6), np.float32)          # NHWC, groups=2: C=3 per group
GRAD_OUT = np.ones((2, 4, 4, 8), np.float32)   # 3x3 filter, stride 2, pad 1 -> 4x4; K=4 per group


def bad_call(x=X, grad_out=GRAD_OUT, **kwargs):
    params = dict(groups=2, filter_spatial=3, stride=2, padding=1)
    params.update(kwargs)
    return grouped_conv_bwd_weight(x, grad_out, **params)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(groups=4), ValueError, r"groups=4 must divide the input channels, but 4 does not divide 6"),
        (dict(groups=3, x=np.ones((2, 7, 7, 6), np.float32)), ValueError, r"groups=3 must divide grad_out's channels, but 3 does not divide 8"),
        (dict(groups=0), ValueError, r"groups must be positive, but got 0"),
        (dict(groups=2.0), TypeError, r"groups must be an int, but got 2.0"),
        (dict(filter_spatial=5), ValueError, r"grad_out has spatial size \(4, 4\), but input_shape \(2, 7, 7, 6\) with filter_spatial \(5, 5\), stride \(2, 2\), .* gives \(3, 3\)"),
        (dict(filter_spatial=(3, 3, 3)), ValueError, r"filter_spatial must have one entry per spatial dimension \(2\), but got 3"),
        (dict(filter_spatial=0), ValueError, r"filter_spatial must be positive, but got \(0, 0\)"),
        (dict(filter_spatial=(9, 3), padding=0), ValueError, r"the dilated filter_spatial \(9, 3\) .* does not fit the padded input \(7, 7\)"),
        (dict(grad_out=GRAD_OUT.astype(np.float16)), ValueError, r"x and grad_out must have the same dtype, but got float32 and float16"),
        (dict(x=X.astype(np.float64), grad_out=GRAD_OUT.astype(np.float64)), TypeError, r"grad_out has dtype float64, but only float32, float16, bfloat16 are supported"),
        (dict(x=X.astype(np.int32)), TypeError, r"x has dtype int32, but only float32, float16, bfloat16 are supported"),
        (dict(out_dtype="float16"), ValueError, r"out_dtype must be the inputs' dtype \(float32\) or float32, but got float16"),
        (dict(out_dtype=np.float64), ValueError, r"out_dtype must be the inputs' dtype \(float32\) or float32, but got float64"),
        (dict(out_dtype="fp32"), TypeError, r"out_dtype must be a dtype such as 'float32', but got 'fp32'"),
        (dict(x=np.ones((2, 7, 6), np.float32)), ValueError, r"x and grad_out must have the same rank, but x has shape \(2, 7, 6\) and grad_out \(2, 4, 4, 8\)"),
        (dict(x=np.ones((3, 7, 7, 6), np.float32)), ValueError, r"grad_out has batch 2, but x has batch 3"),
        (dict(layout="NDHWC"), ValueError, r"layout 'NDHWC' is for 5-D arrays, but grad_out has rank 4"),
        (dict(layout="NHCW"), ValueError, r"layout must be one of NWC, NHWC, NDHWC, NCW, NCHW, NCDHW, but got 'NHCW'"),
        (dict(stride=(2, 2, 2)), ValueError, r"stride must have one entry per spatial dimension \(2\), but got 3"),
        (dict(padding=-1), ValueError, r"padding must be non-negative"),
        (dict(x=X.tolist()), TypeError, r"x must be a NumPy array or an IREE DeviceArray, but got list"),
        (dict(out=np.zeros((8, 3, 3, 3), np.float32)), TypeError, r"out must be an IREE DeviceArray, but got ndarray"),
    ],
)
def test_bad_input_is_reported_by_name(nothing_compiles, kwargs, error, message):
    with pytest.raises(error, match="grouped_conv_bwd_weight: " + message):
        bad_call(**kwargs)


def test_out_of_the_wrong_shape_or_dtype_is_reported(nothing_compiles):
    with pytest.raises(ValueError, match=r"grouped_conv_bwd_weight: out has shape \(8, 3, 3, 6\), but the result has shape \(8, 3, 3, 3\)"):
        bad_call(out=runtime.to_device(np.zeros((8, 3, 3, 6), np.float32)))
    with pytest.raises(ValueError, match=r"grouped_conv_bwd_weight: out has dtype float32, but the result has dtype float16"):
        x, g = X.astype(np.float16), GRAD_OUT.astype(np.float16)
        bad_call(x=x, grad_out=g, out=runtime.to_device(np.zeros((8, 3, 3, 3), np.float32)))


def test_the_padded_x_is_exactly_what_the_windows_read():
    # 7 wide, 3 taps, stride 2, pad (1, 1): windows start at -1, 1, 3, 5 and the last reads up to 7: one zero behind
    assert geometry.window_reads(7, 4, 3, 2, 1, 1) == (1, 7, 1)
    # 8 wide, same: floor((8 + 2 - 3) / 2) + 1 = 4 windows, the last reads up to 7 = x's end: no zero behind
    assert geometry.window_reads(8, 4, 3, 2, 1, 1) == (1, 8, 0)
    # dilation 2, 5 taps over 1 + 2*4 positions
    assert geometry.window_reads(1, 1, 5, 1, 2, 4) == (4, 1, 4)
    # 7 wide, 2 taps, stride 3: two windows read 0..4; x's last two elements are never read
    assert geometry.window_reads(7, 2, 2, 3, 1, 0) == (0, 5, 0)
    # one window inside the low padding: no element of x is read
    assert geometry.window_reads(1, 1, 1, 3, 1, 1) == (1, 0, 0)


@pytest.mark.parametrize("layout", ["NDHWC", "NCDHW"])
def test_windows_that_stop_short_of_x_or_read_only_padding(layout, rng):
    """One output position on an axis whose windows end inside x (IREE folds that unit dim; the operand must then
    be exactly what is read), and an axis whose one window reads only padding."""
    for spatial, kernel, stride, padding in [((3, 5, 4), (2, 2, 3), 3, ((1, 0), (0, 2), (2, 0))),
                                             ((1, 4, 4), (1, 2, 2), (3, 1, 1), ((1, 1), (0, 0), (0, 0)))]:
        p = op.problem_from_params(batch=2, in_channels=3, out_channels=2, input_spatial=spatial, filter_spatial=kernel,
                                   stride=stride, padding=padding, layout=layout, dtype="float32")
        inputs = op.random_inputs(p, rng)
        got, expected = run(p, inputs), op.reference(p, inputs)
        if spatial[0] == 1:  # every tap of the first axis reads padding
            assert got.shape == expected.shape and not expected.any() and not got.any()
        else:
            assert verify.relative_error(got, expected) <= verify.tolerance(op.OP, "float32"), p.name