"""maxpool2d_fwd / maxpool2d_bwd on the CPU device against the float64 window-scan references, their errors,
and their lowering for rocm:gfx942 and cuda:sm_80."""

from __future__ import annotations


import numpy as np
import pytest

import iree.runtime as rt

from ops import compiler, registry, runtime, targets, verify
from ops.operators import maxpool2d as op
from ops.api import run
from ops.operators import maxpool2d_fwd as fwd
from ops.api import maxpool2d_bwd
from ops.api import maxpool2d_fwd
from ops.layouts import channels_first, channels_last

from conftest import DEVICE, poisoned, compiles_nothing

# Where NumPy-in calls run: the default device unless OPS_TEST_DEVICE names another (a call with an explicit
# device= and no DeviceArray input currently trips ops.runtime.resolve_device, hence no keyword by default).
ON_DEVICE = {} if DEVICE == targets.DEFAULT_DEVICE else {"device": DEVICE}
needs_compiler = pytest.mark.skipif(compiler.installed_compiler_version() is None, reason="iree-base-compiler is not installed")

# Small problems covering the parameter space; each compiles once and serves several tests.
CASES = {
    # CK's default (3x3 window, stride 1, float16), overlapping windows
    "nhwc_k3_s1_f16": dict(batch=2, channels=3, input_spatial=(9, 8), kernel_size=3, stride=1, dtype="float16"),
    # the ResNet stem's window: 3x3, stride 2, padding 1
    "nchw_k3_s2_p1_f32": dict(batch=2, channels=4, input_spatial=(11, 10), kernel_size=3, stride=2, padding=1, layout="NCHW", dtype="float32"),
    # CK's 2x2 stride 2: windows never overlap (one elementwise pass); the last row is in no window
    "nhwc_k2_s2_f32": dict(batch=2, channels=5, input_spatial=(9, 8), kernel_size=2, dtype="float32"),
    # dilation, ceil_mode, uneven (low, high) padding, channels-first
    "nchw_k3x2_s2x1_d2x1_ceil_f16": dict(batch=2, channels=3, input_spatial=(10, 7), kernel_size=(3, 2), stride=(2, 1),
                                         dilation=(2, 1), padding=((1, 0), (1, 1)), ceil_mode=True, layout="NCHW", dtype="float16"),
    # ceil_mode with a last window partly outside, bfloat16
    "nhwc_k3_s2_ceil_bf16": dict(batch=1, channels=4, input_spatial=(8, 8), kernel_size=3, stride=2, ceil_mode=True, dtype="bfloat16"),
}
SOURCES = {name: ("indices", "x") for name in CASES}
SOURCES["nhwc_k3_s2_ceil_bf16"] = ("x",)
INDEX_DTYPES = {"nchw_k3_s2_p1_f32": "int32"}  # one case feeds int32 indices

BWD = {
    f"{name}_{source}": op.problem_from_params(**params, source=source, index_dtype=INDEX_DTYPES.get(name, "int64"))
    for name, params in CASES.items()
    for source in SOURCES[name]
}
# after a ReLU (its backward fused, from the forward's output): the ResNet stem's window, both sources
BWD.update({f"nchw_k3_s2_p1_f32_{source}_relu": op.problem_from_params(**CASES["nchw_k3_s2_p1_f32"], source=source,
                                                                       index_dtype="int32", input_activation="relu")
            for source in ("indices", "x")})
FWD = {name: fwd.problem_from_params(**params) for name, params in CASES.items()}


def keywords(problem) -> dict:
    return dict(kernel_size=problem.kernel_size, stride=problem.stride, padding=problem.padding, dilation=problem.dilation,
                ceil_mode=problem.ceil_mode, layout=problem.layout)


def random_x(problem, rng, low=None, high=None):
    """Normal values, or small integers in [low, high) (many ties)."""
    dtype = op.dtypes.numpy_dtype(problem.dtype)
    if low is None:
        return rng.standard_normal(problem.input_shape, dtype="float32").astype(dtype)
    return rng.integers(low, high, size=problem.input_shape).astype(dtype)


def run_fwd(problem, x):
    """The forward into NaN-poisoned y and -7-poisoned indices; returns host copies."""
    y_out = poisoned(problem.output_shape, problem.dtype)
    indices_out = runtime.to_device(np.full(problem.output_shape, -7, np.int64), DEVICE)
    maxpool2d_fwd(x, **keywords(problem), out=(y_out, indices_out))
    return y_out.to_host().copy(), indices_out.to_host().copy()


def run_bwd(problem, inputs):
    out = poisoned(problem.input_shape, problem.dtype)
    run(problem, inputs, out=out)
    return out.to_host().copy()


# --- forward ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(FWD))
def test_forward_matches_pytorchs_window_scan(rng, name):
    problem = FWD[name]
    x = random_x(problem, rng)
    y, indices = run_fwd(problem, x)
    expected_y, expected_indices = op.reference_fwd(problem, x)
    assert np.abs(expected_y).max() > 0
    np.testing.assert_array_equal(y.astype(np.float64), expected_y)  # a maximum is one of the inputs: exact
    np.testing.assert_array_equal(indices, expected_indices)


def test_forward_ties_go_to_the_first_maximum_in_scan_order(rng):
    problem = FWD["nhwc_k3_s1_f16"]
    x = random_x(problem, rng, 0, 2)  # zeros and ones: nearly every window has several maxima
    y, indices = run_fwd(problem, x)
    expected_y, expected_indices = op.reference_fwd(problem, x)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(indices, expected_indices)
    # the reference resolves ties the way PyTorch does: the first maximum in row-major window order
    first_window = x[0, 0:3, 0:3, 0].ravel()
    first = int(np.argmax(first_window))
    assert indices[0, 0, 0, 0] == (first // 3) * problem.input_spatial[1] + first % 3


def test_forward_nan_counts_as_the_maximum_and_the_last_nan_wins(rng):
    problem = FWD["nchw_k3_s2_p1_f32"]
    x = random_x(problem, rng)
    x[rng.random(x.shape) < 0.15] = np.nan
    x[0, 0, 0, 0] = x[0, 0, 0, 1] = np.nan  # window (0, 0) (rows -1..1, columns -1..1) holds two NaNs ...
    x[0, 0, 1, 0] = x[0, 0, 1, 1] = 0.5  # ... and no others
    y, indices = run_fwd(problem, x)
    expected_y, expected_indices = op.reference_fwd(problem, x)
    np.testing.assert_array_equal(y, expected_y)  # NaN positions agree too
    np.testing.assert_array_equal(indices, expected_indices)
    assert np.isnan(y[0, 0, 0, 0]) and indices[0, 0, 0, 0] == 1


def test_forward_numpy_in_numpy_out_and_device_in_device_out(rng):
    problem = FWD["nhwc_k2_s2_f32"]
    x = random_x(problem, rng)
    y, indices = maxpool2d_fwd(x, kernel_size=2, **ON_DEVICE)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and indices.dtype == np.int64
    expected_y, expected_indices = op.reference_fwd(problem, x)
    np.testing.assert_array_equal(indices, expected_indices)
    y_device, indices_device = maxpool2d_fwd(runtime.to_device(x, DEVICE), kernel_size=2)
    assert isinstance(y_device, rt.DeviceArray) and isinstance(indices_device, rt.DeviceArray)
    np.testing.assert_array_equal(y_device.to_host(), expected_y.astype(np.float32))


# --- backward --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BWD))
def test_backward_matches_the_scatter_add_of_the_forward(rng, name):
    problem = BWD[name]
    inputs = op.random_inputs(problem, rng)
    got = run_bwd(problem, inputs)
    error = verify.relative_error(got, op.reference(problem, inputs))  # raises on an all-zero reference
    assert error <= verify.tolerance("maxpool2d_bwd", problem.dtype), f"{name}: relative error {error:.3e}"


def test_backward_with_ties_and_nans_follows_pytorchs_argmax(rng):
    problem = BWD["nhwc_k3_s1_f16_x"]
    grad_out, _ = op.random_inputs(problem, rng)
    x = random_x(problem, rng, -1, 2)
    x[rng.random(x.shape) < 0.1] = np.nan
    got = run_bwd(problem, [grad_out, x])
    expected = op.reference(problem, [grad_out, x])
    assert verify.relative_error(got, expected) <= verify.tolerance("maxpool2d_bwd", "float16")


@pytest.mark.parametrize("name", ["nhwc_k3_s1_f16", "nchw_k3x2_s2x1_d2x1_ceil_f16"])
def test_indices_and_x_give_the_same_gradient(rng, name):
    from_indices, from_x = BWD[f"{name}_indices"], BWD[f"{name}_x"]
    grad_out, x = op.random_inputs(from_x, rng)
    x = np.where(rng.random(x.shape) < 0.3, np.round(x), x).astype(x.dtype)  # some ties
    _, indices = run_fwd(FWD[name], x)
    a = run_bwd(from_indices, [grad_out, indices])
    b = run_bwd(from_x, [grad_out, x])
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("source", ["indices", "x"])
def test_the_fused_relu_stops_the_gradient_of_windows_whose_maximum_is_not_positive(rng, source):
    """After a ReLU, grad_in is the plain backward of grad_out zeroed where the window's output (the ReLU's output
    at its argmax) is <= 0: every position whose ReLU output is 0 gets exactly 0, the others the plain sum."""
    problem = BWD[f"nchw_k3_s2_p1_f32_{source}_relu"]
    grad_out, x, _ = op.random_inputs(op.problem_from_params(**CASES["nchw_k3_s2_p1_f32"], source="x",
                                                             input_activation="relu"), rng)
    x[0, 0, :5, :5] = 0  # a ReLU's output that is 0 over whole windows
    output, indices = (a.astype(t) for a, t in zip(op.reference_fwd(problem, x), (x.dtype, np.int32)))
    second = x if source == "x" else indices
    assert (output == 0).any() and (output > 0).any()
    plain = BWD[f"nchw_k3_s2_p1_f32_{source}"]
    expected = run_bwd(plain, [np.where(output > 0, grad_out, 0).astype(grad_out.dtype), second])
    got = run_bwd(problem, [grad_out, second, output])
    assert np.array_equal(got, expected) and (got[x <= 0] == 0).all()
    assert np.array_equal(maxpool2d_bwd(grad_out, input_shape=problem.input_shape, **keywords(problem),
                                        **{source: second}, output=output), got)


def test_overlapping_windows_add_up_where_they_share_a_maximum():
    # one large value inside every 3x3 window of a stride-1 pooling: it collects all their gradients
    problem = BWD["nhwc_k3_s1_f16_x"]
    x = np.zeros(problem.input_shape, np.float16)
    x[:, 4, 4, :] = 1
    grad_out = np.ones(problem.output_shape, np.float16)
    got = run_bwd(problem, [grad_out, x])
    assert np.all(got[:, 4, 4, :] == 9)  # the nine windows holding (4, 4)
    assert np.array_equal(got, op.reference(problem, [grad_out, x]).astype(np.float16))


def test_results_are_bit_identical_from_run_to_run(rng):
    problem = BWD["nchw_k3_s2_p1_f32_x"]
    inputs = op.random_inputs(problem, rng)
    first = run_bwd(problem, inputs)
    for _ in range(3):
        assert run_bwd(problem, inputs).tobytes() == first.tobytes()


def test_int32_indices_are_accepted(rng):
    problem = BWD["nchw_k3_s2_p1_f32_indices"]
    assert problem.index_dtype == "int32"
    grad_out, indices = op.random_inputs(problem, rng)
    assert indices.dtype == np.int32
    result = maxpool2d_bwd(grad_out, input_shape=problem.input_shape, indices=indices, **keywords(problem), **ON_DEVICE)
    assert isinstance(result, np.ndarray) and result.dtype == np.float32
    assert verify.relative_error(result, op.reference(problem, [grad_out, indices])) <= 1e-5


def test_device_arrays_chain_from_the_forward_to_the_backward(rng):
    problem = BWD["nhwc_k3_s1_f16_indices"]
    x = random_x(problem, rng)
    grad_out, _ = op.random_inputs(problem, rng)
    y, indices = maxpool2d_fwd(runtime.to_device(x, DEVICE), kernel_size=3, stride=1)
    grad_in = maxpool2d_bwd(runtime.to_device(grad_out, DEVICE), input_shape=x.shape, kernel_size=3, stride=1, indices=indices)
    assert isinstance(grad_in, rt.DeviceArray) and grad_in._host_array is None
    expected = op.reference(problem, [grad_out, op.reference_fwd(problem, x)[1]])
    assert verify.relative_error(grad_in.to_host(), expected) <= 1e-2


def test_layouts_agree(rng):
    cf = op.problem_from_params(batch=2, channels=3, input_spatial=(7, 7), kernel_size=3, stride=2, padding=1, layout="NCHW", dtype="float32", source="x")
    cl = op.problem_from_params(batch=2, channels=3, input_spatial=(7, 7), kernel_size=3, stride=2, padding=1, layout="NHWC", dtype="float32", source="x")
    grad_out, x = op.random_inputs(cf, rng)
    from_cf = run_bwd(cf, [grad_out, x])
    from_cl = run_bwd(cl, [np.ascontiguousarray(channels_last(grad_out)), np.ascontiguousarray(channels_last(x))])
    np.testing.assert_array_equal(channels_first(from_cl), from_cf)


# --- bad input -------------------------------------------------------------------------------------------

X = np.ones((2, 7, 6, 3), np.float32)  # NHWC; 3x3 window, stride 2, padding 1 -> 4x3 windows
GRAD_OUT = np.ones((2, 4, 3, 3), np.float32)
INDICES = op.reference_fwd(fwd.problem_from_params(batch=2, channels=3, input_spatial=(7, 6), kernel_size=3, stride=2, padding=1,
                                                   dtype="float32"), X)[1]


def bwd(grad_out=GRAD_OUT, **kwargs):
    params = dict(input_shape=X.shape, kernel_size=3, stride=2, padding=1, indices=INDICES)
    params.update(kwargs)
    return maxpool2d_bwd(grad_out, **params)


def _with(index, value):
    changed = INDICES.copy()
    changed[index] = value
    return changed


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(padding=2), ValueError, r"padding must be at most half the window \(kernel_size // 2 = \(1, 1\)\), but got padding \(\(2, 2\), \(2, 2\)\)"),
        (dict(padding=((1, 2), (0, 0))), ValueError, r"padding must be at most half the window"),
        (dict(input_shape=(2, 2, 2, 3), padding=0, grad_out=np.ones((2, 1, 1, 3), np.float32), indices=np.zeros((2, 1, 1, 3), np.int64)),
         ValueError, r"the window \(3, 3\) \(dilation \(1, 1\)\) does not fit the padded input \(2, 2\) with padding \(\(0, 0\), \(0, 0\)\)"),
        (dict(indices=_with((0, 1, 1, 2), 42)), ValueError, r"indices must be flat positions h\*W \+ w in \[0, 42\) of the 7x6 input plane, but got 42 at \(0, 1, 1, 2\)"),
        (dict(indices=_with((1, 0, 0, 0), -1)), ValueError, r"indices must be flat positions .* but got -1 at \(1, 0, 0, 0\)"),
        (dict(indices=_with((0, 3, 2, 1), 0)), ValueError, r"indices must point into their own pooling window .* at \(0, 3, 2, 1\) is 0, position \(0, 0\)"),
        (dict(indices=INDICES[:, :3]), ValueError, r"indices has shape \(2, 3, 3, 3\), but grad_out has shape \(2, 4, 3, 3\)"),
        (dict(indices=INDICES.astype(np.float32)), TypeError, r"indices must be int64 or int32, but got float32"),
        (dict(x=X), ValueError, r"pass exactly one of indices \(from maxpool2d_fwd\) or x \(to recompute the argmax\), but got both"),
        (dict(indices=None), ValueError, r"pass exactly one of indices .* but got neither"),
        (dict(indices=None, x=X[:, :6]), ValueError, r"x has shape \(2, 6, 6, 3\), but input_shape is \(2, 7, 6, 3\)"),
        (dict(indices=None, x=X.astype(np.float16)), ValueError, r"grad_out and x must have the same dtype, but got float32 and float16"),
        (dict(stride=1), ValueError, r"grad_out has spatial size \(4, 3\), but input_shape .* gives \(7, 6\)"),
        (dict(ceil_mode=True, input_shape=(2, 8, 6, 3)), ValueError, r"grad_out has spatial size \(4, 3\), .* and ceil_mode=True gives \(5, 4\)"),
        (dict(ceil_mode=1), TypeError, r"ceil_mode must be a bool, but got 1"),
        (dict(kernel_size=(3, 0)), ValueError, r"kernel_size must be positive, but got \(3, 0\)"),
        (dict(stride=(2, 2, 2)), ValueError, r"stride must have one entry per spatial dimension \(2\), but got 3"),
        (dict(layout="NCDHW"), ValueError, r"layout must be one of NHWC, NCHW, but got 'NCDHW'"),
        (dict(grad_out=GRAD_OUT[0]), ValueError, r"grad_out must be 4-D"),
        (dict(grad_out=GRAD_OUT.astype(np.float64)), TypeError, r"grad_out has dtype float64, but only float32, float16, bfloat16"),
        (dict(input_shape=(2, 1, 6, 3), kernel_size=(2, 3), stride=(1, 2), padding=((1, 1), (1, 1)), dilation=(2, 1),
              grad_out=np.ones((2, 1, 3, 3), np.float32), indices=np.zeros((2, 1, 3, 3), np.int64)),
         ValueError, r"window 0 of spatial dim 0 holds no input position"),
        (dict(out=runtime.to_device(np.zeros((2, 7, 6, 4), np.float32))), ValueError, r"out has shape \(2, 7, 6, 4\), but the result has shape \(2, 7, 6, 3\)"),
        (dict(output=GRAD_OUT[:, :3]), ValueError, r"output has shape \(2, 3, 3, 3\), but grad_out has shape \(2, 4, 3, 3\)"),
        (dict(output=GRAD_OUT.astype(np.float16)), TypeError, r"grad_out and output must have the same dtype, but got float32 and float16"),
    ],
)
def test_bad_backward_input_is_reported_by_name_before_compiling(kwargs, error, message):
    with compiles_nothing(), pytest.raises(error, match="maxpool2d_bwd: " + message):
        bwd(**kwargs)


def test_bad_forward_input_is_reported_by_name_before_compiling():
    with compiles_nothing():
        with pytest.raises(ValueError, match=r"maxpool2d_fwd: x must be 4-D \(N, C, H, W or N, H, W, C\), but has shape \(7, 6, 3\)"):
            maxpool2d_fwd(X[0], kernel_size=3)
        with pytest.raises(ValueError, match=r"maxpool2d_fwd: padding must be at most half the window"):
            maxpool2d_fwd(X, kernel_size=2, padding=2)
        with pytest.raises(ValueError, match=r"maxpool2d_fwd: input_activation must be None or 'relu', but got 'gelu'"):
            maxpool2d_fwd(X, kernel_size=2, input_activation="gelu")
        with pytest.raises(TypeError, match=r"maxpool2d_fwd: x must be a NumPy array or an IREE DeviceArray, but got list"):
            maxpool2d_fwd(X.tolist(), kernel_size=2)
        with pytest.raises(ValueError, match=r"maxpool2d_fwd: out must hold 2 array\(s\), but got 1"):
            maxpool2d_fwd(X, kernel_size=2, out=runtime.to_device(np.zeros((2, 3, 3, 3), np.float32)))


# --- lowering --------------------------------------------------------------------------------------------

LOWERED = {**{f"fwd_{name}": p for name, p in FWD.items()}, **{f"bwd_{name}": p for name, p in BWD.items()},
           # the forward of relu(x): each tap through the ReLU as the scan reads it, in the same one dispatch
           "fwd_nchw_k3_s2_p1_f32_relu": fwd.problem_from_params(**CASES["nchw_k3_s2_p1_f32"], input_activation="relu")}


def expected_dispatches(problem) -> int:
    """The window scan and the gather are one dispatch each; the x form needs both (the gather reads the
    scan's result through tensor.extract, which no producer fuses into), and so is a fused ReLU's mask of
    grad_out in the backward, for the same reason (the forward's ReLU is inside its scan)."""
    if problem.op == "maxpool2d_fwd":
        return 1
    return 1 + (problem.source == "x") + (problem.input_activation is not None)


@needs_compiler
@pytest.mark.parametrize("target", ["rocm:gfx942", "cuda:sm_80"])
@pytest.mark.parametrize("name", list(LOWERED))
def test_every_problem_lowers_for_the_gpu_targets(tmp_path, name, target):
    problem = LOWERED[name]
    from iree.compiler import ir

    mlir = registry.module(problem).render(problem)
    module = ir.Module.parse(mlir, ir.Context())
    assert f"func.func @{problem.name}(" in str(module)
    assert "iree_linalg_ext.scatter" not in mlir and "atomic_rmw" not in mlir
    dump = tmp_path / "dump"
    compiler.compile_module(compiler.ModuleSpec(problem.name, mlir, targets.parse_target(target)), tmp_path / "m.vmfb", dump_dir=dump)
    configured = sorted(dump.glob("configured_*.mlir"))
    assert len(configured) == expected_dispatches(problem), [p.name for p in configured]
    if problem.op == "maxpool2d_bwd" and not problem.overlapping:
        # stride >= window: the gather has no reduction loop, it is one elementwise pass
        assert '"reduction"' not in configured[-1].read_text()


@pytest.mark.parametrize("source", ["indices", "x"])
def test_an_axis_with_one_overlapping_window(source, rng):
    """3 taps, stride 2 over 3 rows: windows that would overlap fit once on that axis (no candidate loop there),
    and each window's gradient still reaches its argmax."""
    p = op.problem_from_params(batch=2, channels=3, input_spatial=(3, 9), kernel_size=3, stride=2, padding=(0, 1),
                               layout="NCHW", dtype="float32", source=source)
    assert p.output_spatial[0] == 1 and p.candidates[0] == 1
    inputs = op.random_inputs(p, rng)
    assert verify.relative_error(run(p, inputs), op.reference(p, inputs)) <= verify.tolerance(op.OP, "float32")
