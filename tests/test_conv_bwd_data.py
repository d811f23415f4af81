"""conv_bwd_data on the CPU device against the float64 direct definition."""

from __future__ import annotations

import numpy as np
import pytest

import iree.runtime as rt
import ops
from ops import compiler, runtime, verify
from ops.operators import conv_bwd_data as op
from ops.api import run
from ops.layouts import channels_last

from conftest import DEVICE, poisoned
from conv_cases import PROBLEMS


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_matches_the_direct_definition(rng, name):
    check_against_the_direct_definition(rng, name)


def check_against_the_direct_definition(rng, name):
    """Problem ``name`` on poisoned destinations against the float64 direct definition (also run on other forms)."""
    problem = PROBLEMS[name]
    inputs = op.random_inputs(problem, rng)
    out = poisoned(problem.input_shape, problem.dtype)
    result = run(problem, inputs, device=DEVICE, out=out)
    assert result.dtype == inputs[0].dtype and tuple(result.shape) == problem.input_shape
    got = out.to_host()
    expected = op.reference(problem, inputs)
    assert np.abs(expected).max() > 0
    error = verify.relative_error(got, expected)
    assert error <= verify.tolerance("conv_bwd_data", problem.dtype), f"{name}: relative error {error:.3e}"


def test_input_rows_no_window_reaches_are_zero(rng):
    # stride 3 with a 1x2 filter: rows 1, 2, 4, 5, ... of the input are read by no window
    problem = PROBLEMS["2d_nhwc_unreached_rows"]
    inputs = op.random_inputs(problem, rng)
    out = poisoned(problem.input_shape, problem.dtype)
    run(problem, inputs, out=out)
    got = out.to_host()
    unreached_rows = [h for h in range(problem.input_spatial[0]) if h % 3 != 0]
    unreached_cols = [w for w in range(problem.input_spatial[1]) if w % 3 == 2]
    assert np.all(got[:, unreached_rows] == 0.0)
    assert np.all(got[:, :, unreached_cols] == 0.0)
    assert np.all(np.abs(got[:, ::3, ::3]) > 0)


def test_numpy_in_gives_numpy_out_with_the_input_dtype(rng):
    problem = PROBLEMS["2d_nhwc_s1_d2_f16"]
    grad_out, weight = op.random_inputs(problem, rng)
    result = ops.conv_bwd_data(grad_out, weight, input_shape=problem.input_shape, stride=1, padding=2, dilation=2)
    assert isinstance(result, np.ndarray) and result.dtype == np.float16
    assert verify.relative_error(result, op.reference(problem, [grad_out, weight])) <= 1e-2


def test_device_arrays_stay_on_the_device_and_chain(rng):
    # grad_in of one call is the grad_out of the next: two stride-1 same-size layers
    first = op.problem_from_params(batch=2, in_channels=6, out_channels=4, input_spatial=(6, 6), filter_spatial=(3, 3), padding=1, dtype="float32")
    second = op.problem_from_params(batch=2, in_channels=5, out_channels=6, input_spatial=(6, 6), filter_spatial=(3, 3), padding=1, dtype="float32")
    grad_out, w1 = op.random_inputs(first, rng)
    _, w2 = op.random_inputs(second, rng)
    on_device = ops.to_device(grad_out)
    middle = ops.conv_bwd_data(on_device, ops.to_device(w1), input_shape=first.input_shape, padding=1)
    assert isinstance(middle, rt.DeviceArray) and middle._host_array is None  # never copied to the host
    final = ops.conv_bwd_data(middle, w2, input_shape=second.input_shape, padding=1)
    assert isinstance(final, rt.DeviceArray)
    expected = op.reference(second, [op.reference(first, [grad_out, w1]), w2])
    assert verify.relative_error(final.to_host(), expected) <= 1e-5


def test_channels_first_and_channels_last_agree(rng):
    cl = op.problem_from_params(batch=2, in_channels=3, out_channels=4, input_spatial=(7, 7), filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float32")
    cf = op.problem_from_params(batch=2, in_channels=3, out_channels=4, input_spatial=(7, 7), filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="float32")
    grad_out, weight = op.random_inputs(cf, rng)
    from_cf = run(cf, [grad_out, weight])
    from_cl = run(cl, [channels_last(grad_out).copy(), channels_last(weight).copy()])
    np.testing.assert_allclose(channels_last(from_cf), from_cl, rtol=1e-6, atol=1e-6)


def test_a_second_call_neither_compiles_nor_reloads(rng):
    problem = PROBLEMS["1d_nwc_s1"]
    inputs = op.random_inputs(problem, rng)
    run(problem, inputs)
    compiles, loads = compiler.stats["compiles"], runtime.stats["loads"]
    for _ in range(3):
        run(problem, op.random_inputs(problem, rng))
    assert (compiler.stats["compiles"], runtime.stats["loads"]) == (compiles, loads)


def test_results_are_identical_from_run_to_run(rng):
    problem = PROBLEMS["2d_nhwc_s2_p1"]
    inputs = op.random_inputs(problem, rng)
    first = run(problem, inputs)
    assert np.array_equal(first, run(problem, inputs))


def test_out_receives_the_result_in_place(rng):
    problem = PROBLEMS["3d_ndhwc_s2_p1"]
    inputs = op.random_inputs(problem, rng)
    out = poisoned(problem.input_shape, problem.dtype)
    returned = run(problem, inputs, out=out)
    assert isinstance(returned, rt.DeviceArray)
    np.testing.assert_array_equal(returned.to_host(), out.to_host())
    assert not np.isnan(out.to_host()).any()
