"""avgpool3d_bwd on the CPU device against the float64 window-by-window reference, its errors, and its
lowering for rocm:gfx942 and cuda:sm_80."""

from __future__ import annotations


import numpy as np
import pytest

import iree.runtime as rt

from ops import catalog, compiler, runtime, targets, verify
from ops.api import run as run_problem
from ops.operators import avgpool3d as op
from ops.api import avgpool3d_bwd
from ops.layouts import channels_first, channels_last

from conftest import DEVICE, poisoned, compiles_nothing

# Where NumPy-in calls run: the default device unless OPS_TEST_DEVICE names another (a call with an explicit
# device= and no DeviceArray input currently trips ops.runtime.resolve_device, hence no keyword by default).
ON_DEVICE = {} if DEVICE == targets.DEFAULT_DEVICE else {"device": DEVICE}
needs_compiler = pytest.mark.skipif(compiler.installed_compiler_version() is None, reason="iree-base-compiler is not installed")

# Small problems covering the parameter space; each compiles once and serves several tests.
CASES = {
    # overlapping windows with padding, the padding counted (PyTorch's default)
    "ndhwc_k3_s2_p1_f32": dict(batch=2, channels=3, input_spatial=(5, 6, 7), kernel_size=3, stride=2, padding=1, dtype="float32"),
    # ... and not counted, channels-first, float16
    "ncdhw_k3_s2_p1_nopadcount_f16": dict(batch=2, channels=3, input_spatial=(5, 6, 7), kernel_size=3, stride=2, padding=1,
                                          count_include_pad=False, layout="NCDHW", dtype="float16"),
    # the video layer's 2x2x2 stride 2: no overlap, one elementwise pass; odd sizes leave a last plane in no window
    "ndhwc_k2_s2_f16": dict(batch=2, channels=4, input_spatial=(4, 7, 6), kernel_size=2, dtype="float16"),
    # ceil_mode: the last windows run past the padded end and PyTorch clips their divisor there
    "ncdhw_k3_s2_p1_ceil_f32": dict(batch=1, channels=3, input_spatial=(6, 5, 8), kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                    layout="NCDHW", dtype="float32"),
    "ndhwc_k2x3x3_s2_ceil_nopadcount_f32": dict(batch=2, channels=2, input_spatial=(5, 6, 7), kernel_size=(2, 3, 3), stride=2,
                                                padding=(0, 1, 1), ceil_mode=True, count_include_pad=False, dtype="float32"),
    # CK's default window: 5x5x5, stride 2, dilation 2 (up to 5 windows per axis hold one position)
    "ndhwc_k5_s2_d2_f16": dict(batch=1, channels=4, input_spatial=(11, 12, 10), kernel_size=5, stride=2, dilation=2, dtype="float16"),
    # mixed windows, (low, high) padding, dilation and divisor_override
    "ncdhw_mixed_divisor_override_f32": dict(batch=2, channels=3, input_spatial=(6, 7, 8), kernel_size=(3, 2, 3), stride=(1, 2, 3),
                                             dilation=(1, 2, 1), padding=((1, 0), (1, 1), (0, 1)), divisor_override=5,
                                             layout="NCDHW", dtype="float32"),
    # 3x3x3 stride 1 padding 1, bfloat16
    "ndhwc_k3_s1_p1_bf16": dict(batch=1, channels=5, input_spatial=(4, 5, 6), kernel_size=3, stride=1, padding=1, dtype="bfloat16"),
    # the ReLU before the pooling fused (relu_output): overlapping windows, channels-first, float32 ...
    "ncdhw_k3_s2_p1_relu_f32": dict(batch=2, channels=3, input_spatial=(5, 6, 7), kernel_size=3, stride=2, padding=1,
                                    input_activation="relu", layout="NCDHW", dtype="float32"),
    # ... and cnn3d's 2x2x2 windows, channels-last, bfloat16
    "ndhwc_k2_s2_relu_bf16": dict(batch=2, channels=4, input_spatial=(4, 7, 6), kernel_size=2, input_activation="relu",
                                  dtype="bfloat16"),
}
PROBLEMS = {name: op.problem_from_params(**params) for name, params in CASES.items()}


def run(problem, inputs):
    out = poisoned(problem.input_shape, problem.dtype)
    run_problem(problem, inputs, out=out)
    return out.to_host().copy()


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_matches_the_window_by_window_adjoint(rng, name):
    problem = PROBLEMS[name]
    inputs = op.random_inputs(problem, rng)
    got = run(problem, inputs)
    error = verify.relative_error(got, op.reference(problem, inputs))  # raises on an all-zero reference
    assert error <= verify.tolerance("avgpool3d_bwd", problem.dtype), f"{name}: relative error {error:.3e}"


@pytest.mark.parametrize("name", ["ncdhw_k3_s2_p1_relu_f32", "ndhwc_k2_s2_relu_bf16"])
def test_the_fused_relu_zeroes_exactly_where_its_output_is_not_positive(rng, name):
    """grad_in is the unfused gradient where relu_output > 0 and exactly 0 where it is <= 0 (zeros included)."""
    problem = PROBLEMS[name]
    grad_out, relu_output = op.random_inputs(problem, rng)
    relu_output[rng.random(relu_output.shape) < 0.2] = 0
    unfused = run(op.problem_from_params(**{**CASES[name], "input_activation": None}), [grad_out])
    got = run(problem, [grad_out, relu_output])
    off = np.asarray(relu_output, np.float64) <= 0
    assert off.any() and not off.all()
    assert (got[off] == 0).all() and np.array_equal(got[~off], unfused[~off])
    assert np.array_equal(avgpool3d_bwd(grad_out, input_shape=problem.input_shape, kernel_size=problem.kernel_size,
                                        stride=problem.stride, padding=problem.padding, relu_output=relu_output,
                                        layout=problem.layout), got)


def test_count_include_pad_changes_only_the_border_windows(rng):
    counted = PROBLEMS["ndhwc_k3_s2_p1_f32"]
    not_counted = op.problem_from_params(**{**CASES["ndhwc_k3_s2_p1_f32"], "count_include_pad": False})
    grad_out = np.ones(counted.output_shape, np.float32)
    a, b = run(counted, [grad_out]), run(not_counted, [grad_out])
    # the window at (1, 1, 1) covers input 1..3 on every axis, no padding: both divide by 27
    assert a[0, 2, 2, 2, 0] == b[0, 2, 2, 2, 0] == pytest.approx(1 / 27)
    # input (0, 0, 0) lies only in window (0, 0, 0): 27 taps with padding, 8 inside the input
    assert a[0, 0, 0, 0, 0] == pytest.approx(1 / 27) and b[0, 0, 0, 0, 0] == pytest.approx(1 / 8)


def test_dilated_windows_divide_by_the_full_window():
    # CK's extension: with dilation and count_include_pad every (unclipped) window divides by kd*kh*kw
    problem = PROBLEMS["ndhwc_k5_s2_d2_f16"]
    got = run(problem, [np.ones(problem.output_shape, np.float16)])
    # input (8, 8, 8) lies in windows o with 2*o + 2*f = 8, f < 5, o < O: o in 0..3 on each axis (O = (2, 2, 1) here)
    windows = [sum(1 for o in range(size) if 0 <= 8 - 2 * o <= 8) for size in problem.output_spatial]
    assert got[0, 8, 8, 8, 0] == pytest.approx(np.prod(windows) / 125, rel=1e-3)
    assert got[0, 1, 1, 1, 0] == 0  # odd positions are no tap of any window


def test_results_are_bit_identical_from_run_to_run(rng):
    problem = PROBLEMS["ndhwc_k5_s2_d2_f16"]
    inputs = op.random_inputs(problem, rng)
    first = run(problem, inputs)
    for _ in range(3):
        assert run(problem, inputs).tobytes() == first.tobytes()


def test_numpy_in_numpy_out_and_device_in_device_out(rng):
    problem = PROBLEMS["ndhwc_k2_s2_f16"]
    (grad_out,) = op.random_inputs(problem, rng)
    expected = op.reference(problem, [grad_out])
    result = avgpool3d_bwd(grad_out, input_shape=problem.input_shape, kernel_size=2, **ON_DEVICE)
    assert isinstance(result, np.ndarray) and result.dtype == np.float16
    assert verify.relative_error(result, expected) <= 1e-2
    on_device = avgpool3d_bwd(runtime.to_device(grad_out, DEVICE), input_shape=problem.input_shape, kernel_size=2)
    assert isinstance(on_device, rt.DeviceArray) and on_device._host_array is None
    assert verify.relative_error(on_device.to_host(), expected) <= 1e-2


def test_layouts_agree(rng):
    cl = PROBLEMS["ndhwc_k3_s2_p1_f32"]
    cf = op.problem_from_params(**{**CASES["ndhwc_k3_s2_p1_f32"], "layout": "NCDHW"})
    (grad_out,) = op.random_inputs(cf, rng)
    from_cf = run(cf, [grad_out])
    from_cl = run(cl, [np.ascontiguousarray(channels_last(grad_out))])
    np.testing.assert_allclose(channels_first(from_cl), from_cf, rtol=1e-6, atol=1e-7)


# --- bad input -------------------------------------------------------------------------------------------

INPUT_SHAPE = (2, 5, 6, 7, 3)  # NDHWC; 3x3x3 window, stride 2, padding 1 -> 3x3x4 windows
GRAD_OUT = np.ones((2, 3, 3, 4, 3), np.float32)


def bwd(grad_out=GRAD_OUT, **kwargs):
    params = dict(input_shape=INPUT_SHAPE, kernel_size=3, stride=2, padding=1)
    params.update(kwargs)
    return avgpool3d_bwd(grad_out, **params)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(padding=2), ValueError, r"padding must be at most half the window \(kernel_size // 2 = \(1, 1, 1\)\), but got padding \(\(2, 2\), \(2, 2\), \(2, 2\)\)"),
        (dict(kernel_size=(3, 3, 7), padding=0, grad_out=np.ones((2, 2, 2, 1, 3), np.float32), input_shape=(2, 5, 6, 5, 3)),
         ValueError, r"the window \(3, 3, 7\) \(dilation \(1, 1, 1\)\) does not fit the padded input \(5, 6, 5\) with padding"),
        (dict(stride=1), ValueError, r"grad_out has spatial size \(3, 3, 4\), but input_shape \(2, 5, 6, 7, 3\) .* gives \(5, 6, 7\)"),
        (dict(ceil_mode=True, input_shape=(2, 6, 6, 7, 3)), ValueError, r"grad_out has spatial size \(3, 3, 4\), .* and ceil_mode=True gives \(4, 4, 4\)"),
        (dict(input_shape=(3, 5, 6, 7, 3)), ValueError, r"grad_out has batch 2 and 3 channels, but input_shape \(3, 5, 6, 7, 3\) has batch 3 and 3 channels"),
        (dict(divisor_override=0), ValueError, r"divisor_override must not be zero"),
        (dict(divisor_override=2.5), TypeError, r"divisor_override must be None or an int, but got 2.5"),
        (dict(count_include_pad="no"), TypeError, r"count_include_pad must be a bool, but got 'no'"),
        (dict(layout="NHWC"), ValueError, r"layout must be one of NDHWC, NCDHW, but got 'NHWC'"),
        (dict(layout=5), TypeError, r"layout must be a string such as 'NDHWC', but got 5"),
        (dict(grad_out=GRAD_OUT[0]), ValueError, r"grad_out must be 5-D \(N, C, D, H, W or N, D, H, W, C\), but has shape \(3, 3, 4, 3\)"),
        (dict(input_shape=(2, 5, 6, 7)), ValueError, r"input_shape must have 5 entries for layout 'NDHWC', but got \(2, 5, 6, 7\)"),
        (dict(dilation=(1, 0, 1)), ValueError, r"dilation must be positive, but got \(1, 0, 1\)"),
        (dict(grad_out=GRAD_OUT.astype(np.int32)), TypeError, r"grad_out has dtype int32, but only float32, float16, bfloat16 are supported"),
        (dict(input_shape=(2, 1, 6, 7, 3), kernel_size=(2, 3, 3), stride=(1, 2, 2), dilation=(2, 1, 1), padding=((1, 1), (1, 1), (1, 1)),
              grad_out=np.ones((2, 1, 3, 4, 3), np.float32)),
         ValueError, r"window 0 of spatial dim 0 holds no input position"),
        (dict(out=runtime.to_device(np.zeros((2, 5, 6, 7, 3), np.float16))), ValueError, r"out has dtype float16, but the result has dtype float32"),
        (dict(relu_output=np.ones((2, 5, 6, 7, 4), np.float32)), ValueError,
         r"relu_output has shape \(2, 5, 6, 7, 4\), but input_shape is \(2, 5, 6, 7, 3\)"),
        (dict(relu_output=np.ones(INPUT_SHAPE, np.float16)), TypeError,
         r"grad_out and relu_output must have the same dtype, but got float32 and float16"),
        (dict(relu_output=[1.0]), TypeError, r"relu_output must be"),
    ],
)
def test_bad_input_is_reported_by_name_before_compiling(kwargs, error, message):
    with compiles_nothing(), pytest.raises(error, match="avgpool3d_bwd: " + message):
        bwd(**kwargs)


# --- lowering --------------------------------------------------------------------------------------------


@needs_compiler
@pytest.mark.parametrize("target", ["rocm:gfx942", "cuda:sm_80"])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_every_problem_lowers_to_one_dispatch(tmp_path, name, target):
    problem = PROBLEMS[name]
    from iree.compiler import ir

    mlir = op.render(problem)
    module = ir.Module.parse(mlir, ir.Context())
    assert f"func.func @{problem.name}(" in str(module)
    assert "iree_linalg_ext.scatter" not in mlir and "atomic_rmw" not in mlir
    dump = tmp_path / "dump"
    compiler.compile_module(compiler.ModuleSpec(problem.name, mlir, targets.parse_target(target)), tmp_path / "m.vmfb", dump_dir=dump)
    configured = sorted(dump.glob("configured_*.mlir"))
    assert len(configured) == 1, [p.name for p in configured]  # gather, divide and cast fuse into one dispatch
    has_reduction = '"reduction"' in configured[0].read_text()
    assert has_reduction == problem.overlapping  # stride >= the dilated window: one elementwise pass


@needs_compiler
def test_the_video_layer_is_one_elementwise_dispatch_on_the_cpu(tmp_path):
    problem = catalog.problem("avgpool3d_bwd", "video_2x2x2")
    assert not problem.overlapping
    mlir = op.render(problem)
    assert "!candidates = tensor<i8>" in mlir and '"reduction"' not in mlir
    dump = tmp_path / "dump"
    compiler.compile_module(compiler.ModuleSpec(problem.name, mlir, targets.parse_target("llvm-cpu")), tmp_path / "m.vmfb", dump_dir=dump)
    configured = sorted(dump.glob("configured_*.mlir"))
    assert len(configured) == 1 and '"reduction"' not in configured[0].read_text()


@pytest.mark.parametrize("layout", ["NDHWC", "NCDHW"])
def test_an_axis_with_one_overlapping_window(layout, rng):
    """Windows that would overlap (3 taps, stride 2) but fit once: one window on that axis, no candidate loop
    (IREE's GPU reduction codegen failed on the loop there); every position still gets its share."""
    p = op.problem_from_params(batch=2, channels=4, input_spatial=(6, 4, 7), kernel_size=(1, 3, 2), stride=(3, 2, 3),
                               dilation=(2, 1, 2), padding=(0, 0, 1), layout=layout, dtype="float32")
    assert p.output_spatial[1] == 1 and p.candidates[1] == 1
    inputs = op.random_inputs(p, rng)
    assert verify.relative_error(run_problem(p, inputs), op.reference(p, inputs)) <= verify.tolerance(op.OP, "float32")
