"""grouped_conv_bwd_data with fused epilogues on the CPU device, against independent float64 definitions."""

from __future__ import annotations

import numpy as np
import pytest

import ops
from ops import compiler, reference, verify
from ops.api import grouped_conv_bwd_data
from ops.operators import conv_bwd_data as conv
from ops.layouts import channels_first, channels_last

from conftest import DEVICE, poisoned
from grouped_bwd_data_cases import CASES, problem as case_problem


def direct_grad_in(p, grad_out, weight):
    """Grouped backward-data from the direct definition, in the problem's layout (float64)."""
    if not p.channels_last:
        grad_out, weight = channels_last(grad_out), channels_last(weight)
    result = reference.conv_bwd_data(grad_out, weight, p.input_spatial, p.stride, p.dilation, p.padding, p.groups)
    return result if p.channels_last else channels_first(result)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_the_definition_and_the_epilogue(rng, name):
    check_against_the_definition_and_the_epilogue(rng, name)


def check_against_the_definition_and_the_epilogue(rng, name):
    """Case ``name`` on a poisoned destination against the float64 definitions (also run on other forms)."""
    params, epilogue, d_makers, values, expected_epilogue = CASES[name]
    p = case_problem(name)
    grad_out, weight = conv.random_inputs(p, rng)
    dtype = grad_out.dtype
    ds = tuple(rng.standard_normal(make(p), dtype="float32").astype(dtype) for make in d_makers)
    out = poisoned(p.input_shape, p.dtype)
    grouped_conv_bwd_data(grad_out, weight, ds, groups=p.groups, input_shape=p.input_shape, stride=p.stride,
                          padding=p.padding, dilation=p.dilation, epilogue=epilogue, layout=p.layout,
                          device=DEVICE, out=out, **values)
    acc = direct_grad_in(p, grad_out, weight)
    expected = acc if expected_epilogue is None else expected_epilogue(acc, [d.astype(np.float64) for d in ds], values)
    expected = np.broadcast_to(expected, p.input_shape)
    error = verify.relative_error(out.to_host(), expected)
    assert error <= verify.tolerance("grouped_conv_bwd_data", p.dtype), f"{name}: relative error {error:.3e}"


def test_unreached_positions_get_the_epilogue_of_zero(rng):
    # stride 3 with a 1x2 filter leaves rows no window reads: there grad_in = f(0, d0, d1)
    p = case_problem("g1_2d_expression_two_ds")
    grad_out, weight = conv.random_inputs(p, rng)
    bias = rng.standard_normal((p.in_channels,), dtype="float32")
    mask = rng.standard_normal(p.input_shape, dtype="float32")
    got = grouped_conv_bwd_data(grad_out, weight, (bias, mask), groups=1, input_shape=p.input_shape, stride=3,
                                epilogue="where(d1 > 0, acc + d0, 0) * alpha", alpha=1.5)
    unreached = got[:, 1::3]
    np.testing.assert_allclose(unreached, (np.where(mask > 0, bias, 0) * 1.5)[:, 1::3], rtol=1e-6)
    assert np.abs(unreached).max() > 0


def test_groups_one_without_epilogue_equals_conv_bwd_data(rng):
    p = conv.problem_from_params(batch=2, in_channels=3, out_channels=4, input_spatial=(7, 7), filter_spatial=(3, 3), stride=2, padding=1, dtype="float32")
    grad_out, weight = conv.random_inputs(p, rng)
    a = grouped_conv_bwd_data(grad_out, weight, groups=1, input_shape=p.input_shape, stride=2, padding=1)
    b = ops.conv_bwd_data(grad_out, weight, input_shape=p.input_shape, stride=2, padding=1)
    np.testing.assert_array_equal(a, b)


def test_changing_a_parameter_value_does_not_recompile(rng):
    p = case_problem("g2_3d_scale")
    grad_out, weight = conv.random_inputs(p, rng)
    call = lambda alpha: grouped_conv_bwd_data(grad_out, weight, groups=2, input_shape=p.input_shape, stride=p.stride,  # noqa: E731
                                               padding=p.padding, layout=p.layout, epilogue="scale", alpha=alpha)
    first = call(1.0)
    compiles = compiler.stats["compiles"]
    np.testing.assert_allclose(call(-2.0), -2.0 * first, rtol=1e-6)
    assert compiler.stats["compiles"] == compiles


# --- bad input ----------------------------------------------------------------------------------------

GRAD_OUT = np.ones((2, 4, 4, 8), np.float32)   # NHWC, G=2, K=4 per group; input 2x7x7x6 (C=3 per group)
WEIGHT = np.ones((8, 3, 3, 3), np.float32)
INPUT_SHAPE = (2, 7, 7, 6)


def call(ds=(), epilogue=None, **kwargs):
    params = dict(groups=2, input_shape=INPUT_SHAPE, stride=2, padding=1)
    params.update(kwargs)
    return grouped_conv_bwd_data(GRAD_OUT, WEIGHT, ds, epilogue=epilogue, **params)


BIAS = np.ones((6,), np.float32)


@pytest.mark.usefixtures("nothing_compiles")
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(groups=4), ValueError, r"groups=4 must divide the input channels, but 4 does not divide 6"),
        (dict(groups=3, input_shape=(2, 7, 7, 9)), ValueError, r"groups=3 must divide grad_out's channels, but 3 does not divide 8"),
        (dict(groups=0), ValueError, r"groups must be positive"),
        (dict(ds=(np.ones((5,), np.float32),), epilogue="add"), ValueError, r"ds\[0\] has shape \(5,\), which does not broadcast to grad_in's shape \(2, 7, 7, 6\)"),
        (dict(ds=(np.ones((2, 7, 7, 6, 1), np.float32),), epilogue="add"), ValueError, r"ds\[0\] has shape \(2, 7, 7, 6, 1\), which does not broadcast"),
        (dict(ds=(np.ones((6,), np.float64),), epilogue="add"), TypeError, r"ds\[0\] has dtype float64"),
        (dict(ds=np.ones((6,), np.float32), epilogue="add"), TypeError, r"ds must be a tuple of arrays"),
        (dict(ds=(BIAS,)), ValueError, r"1 D tensor\(s\) given, but no epilogue uses them"),
        (dict(epilogue="add"), ValueError, r"epilogue 'acc \+ d0' reads d0, but no D tensors were given"),
        (dict(ds=(BIAS,), epilogue="acc + d3"), ValueError, r"reads d3, but only 1 D tensor\(s\) were given"),
        (dict(ds=(BIAS, BIAS), epilogue="acc + d0"), ValueError, r"D tensor\(s\) d1 given, but epilogue 'acc \+ d0' does not read them"),
        (dict(epilogue="scale"), ValueError, r"epilogue 'alpha \* acc' needs parameter\(s\) alpha, passed as keyword arguments"),
        (dict(epilogue="scale", alpha=1.0, beta=2.0), ValueError, r"unexpected keyword argument\(s\) beta"),
        (dict(epilogue="scale", alpha="2"), ValueError, r"epilogue parameter alpha must be a number, but got '2'"),
        (dict(alpha=1.0), ValueError, r"parameters \['alpha'\] given, but there is no epilogue"),
        (dict(epilogue=3), ValueError, r"epilogue must be a name .* or an expression string, but got int"),
        (dict(epilogue="acc.__class__"), ValueError, r"unexpected character '\.' at position 3"),
        (dict(epilogue="__import__('os').system('true')"), ValueError, r"unexpected character \"'\" at position 11"),
        (dict(epilogue="__import__(acc)"), ValueError, r"unknown function '__import__' at position 0"),
        (dict(epilogue="exp(acc)"), ValueError, r"unknown function 'exp'"),
        (dict(epilogue="acc ** 2"), ValueError, r"expected \"a number, a name or '\('\"|unexpected '\*'"),
        (dict(epilogue="acc +"), ValueError, r"unexpected end of expression"),
        (dict(epilogue="max(acc)"), ValueError, r"max\(\) takes 2 argument\(s\), but got 1"),
        (dict(epilogue="acc + max"), ValueError, r"max is a function: call it as max\(...\)"),
        (dict(epilogue="(acc"), ValueError, r"unexpected end of expression \(expected '\)'\)"),
        (dict(epilogue="acc 2"), ValueError, r"unexpected '2' at position 4"),
        (dict(epilogue="1e999 * acc"), ValueError, r"the number '1e999' does not fit a float"),
        (dict(epilogue=""), ValueError, r"empty expression"),
        (dict(epilogue="-" * 100 + "acc"), ValueError, r"nested deeper than 64 levels"),
        (dict(epilogue="acc; import os"), ValueError, r"unexpected character ';'"),
    ],
)
def test_bad_input_is_reported_by_name(kwargs, error, message):
    with pytest.raises(error, match="grouped_conv_bwd_data: .*" + message):
        call(**kwargs)


def test_weight_channels_that_disagree_with_input_shape_are_reported(nothing_compiles):
    with pytest.raises(ValueError, match=r"grouped_conv_bwd_data: weight has 3 input channels per group, but input_shape has 8 channels in 2 group\(s\), i.e. 4 per group"):
        grouped_conv_bwd_data(GRAD_OUT, WEIGHT, groups=2, input_shape=(2, 7, 7, 8), stride=2, padding=1)
