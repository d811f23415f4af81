"""avgpool3d_fwd (ops.torch's average pooling forward, with its fused ReLU) in both its forms against the float64
window-by-window reference and against PyTorch's avg_pool3d, NaNs included, into poisoned destinations; the CPU's
choice of form; its errors; its CPU and GPU lowering."""

from __future__ import annotations

import numpy as np
import pytest

from ops import compiler, policy, targets
from ops.api import avgpool3d_fwd, run
from ops.operators import avgpool3d_fwd as op, pool_windows

from conftest import compiles_nothing, poisoned
from lowering import shipped

CPU = targets.parse_target("llvm-cpu")
FORMS = [pool_windows.Form(windows="slices"), pool_windows.Form(windows="phases")]
needs_compiler = pytest.mark.skipif(compiler.installed_compiler_version() is None,
                                    reason="iree-base-compiler is not installed")


def _random_problems(rng, count: int, phases: bool, **fixed) -> list:
    """``count`` problems of the compile sweep's parameters (``fixed`` kept); for the phases form, channels-first
    ones whose W their stride divides."""
    problems = []
    while len(problems) < count:
        params = {**op.random_params(rng, 3), "dtype": str(rng.choice(["float32", "bfloat16"])), **fixed}
        if phases:
            depth, height, width = params["input_spatial"]
            stride = params["stride"][-1]
            params.update(layout="NCDHW", input_spatial=(depth, height, -(-width // stride) * stride))
        try:
            problems.append(op.problem_from_params(**params))
        except ValueError:  # a drawn window PyTorch rejects
            continue
    return problems


def _with_nans(x, rng) -> np.ndarray:
    x = np.array(x)
    x.reshape(-1)[rng.choice(x.size, size=max(1, x.size // 40), replace=False)] = np.nan
    return x


def _tolerance(problem) -> float:
    return 1e-5 if problem.dtype == "float32" else 2e-2


@pytest.mark.parametrize("activation", [None, "relu"])
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.windows)
def test_each_form_gives_the_window_means(rng, form, activation):
    """Every window's mean (of relu(x) with the ReLU fused), NaN exactly where a tap is NaN: padding, ceil_mode,
    dilation, both padding-count rules and divisor_override, both layouts (the phases form: channels-first)."""
    for problem in _random_problems(rng, 6, form.windows == "phases", input_activation=activation):
        (x,) = op.random_inputs(problem, rng)
        x = _with_nans(x, rng)
        expected = op.reference(problem, [x])
        got = run(problem, [x], out=poisoned(problem.output_shape, problem.dtype), form=form)
        got = np.asarray(got.to_host(), np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(expected)), problem.name
        finite = ~np.isnan(expected)
        scale = max(1.0, float(np.max(np.abs(expected[finite]), initial=0)))
        assert np.max(np.abs(got[finite] - expected[finite]), initial=0) <= _tolerance(problem) * scale, problem.name


@pytest.mark.parametrize("activation", [None, "relu"])
def test_it_is_pytorchs_avg_pool3d(rng, activation):
    """Against torch.nn.functional.avg_pool3d itself (float64, of torch.relu(x)), which has no dilation: NaN and
    infinities where it has them (inf and -inf in one window: NaN), -0, the finite values close."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for problem in _random_problems(rng, 4, False, dilation=1, dtype="float32", layout="NCDHW",
                                    input_activation=activation):
        (x,) = op.random_inputs(problem, rng)
        x = _with_nans(x, rng)
        x.reshape(-1)[rng.choice(x.size, size=3, replace=False)] = [np.inf, -np.inf, -0.0]
        t = torch.from_numpy(np.asarray(x, np.float64))
        pads = [lo for lo, _ in problem.padding]
        expected = F.avg_pool3d(torch.relu(t) if activation else t, problem.kernel_size, problem.stride, pads,
                                problem.ceil_mode, problem.count_include_pad, problem.divisor_override).numpy()
        got = np.asarray(avgpool3d_fwd(x, kernel_size=problem.kernel_size, stride=problem.stride, padding=pads,
                                       ceil_mode=problem.ceil_mode, count_include_pad=problem.count_include_pad,
                                       divisor_override=problem.divisor_override, layout="NCDHW",
                                       input_activation=activation), np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(expected)), problem.name
        assert np.array_equal(np.isinf(got), np.isinf(expected)), problem.name
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=problem.name)  # infinities equal


def test_the_cpu_splits_w_by_phase_where_the_stride_divides_it_and_every_target_reads_slices():
    params = dict(batch=2, channels=3, input_spatial=(4, 8, 8), kernel_size=2, dtype="float32")
    channels_first = op.problem_from_params(**params, layout="NCDHW")
    assert policy.forms_for(channels_first, CPU) == FORMS[::-1]
    odd = op.problem_from_params(**{**params, "input_spatial": (4, 8, 9)}, layout="NCDHW")
    assert policy.forms_for(odd, CPU) == FORMS[:1], "W 9 has no split by stride 2"
    assert policy.forms_for(op.problem_from_params(**params, layout="NDHWC"), CPU) == FORMS[:1]
    assert policy.forms_for(channels_first, targets.parse_target("cuda:sm_80")) == FORMS[:1]


@needs_compiler
def test_cnn3d_pool_on_the_cpu_is_one_transposing_pass_and_the_sum(tmp_path):
    """cnn3d's first pool (NCDHW, 2 x 2 x 2 / 2, the ReLU fused) as the CPU ships it."""
    problem = op.problem_from_params(batch=1, channels=2, input_spatial=(4, 8, 8), kernel_size=2, layout="NCDHW",
                                     dtype="float32", input_activation="relu")
    spec, lowered = shipped(problem, "llvm-cpu", tmp_path)
    assert "The phases form" in spec.mlir, "the phases form did not compile: the CPU fell back to the slices form"
    assert sorted(d.name.split("_")[1] for d in lowered.dispatches) == ["elementwise", "transpose"], \
        [d.name for d in lowered.dispatches]


@needs_compiler
@pytest.mark.parametrize("target", ["rocm:gfx942", "cuda:sm_80"])
def test_the_gpus_compile_the_slices_form(tmp_path, target, rng):
    problem = _random_problems(rng, 1, False, input_activation="relu")[0]
    spec, _ = shipped(problem, target, tmp_path)
    assert "The slices form" in spec.mlir, problem.name


def test_the_forms_it_has_not_are_refused():
    problem = op.problem_from_params(batch=1, channels=2, input_spatial=(4, 8, 9), kernel_size=2, layout="NCDHW",
                                     dtype="float32")
    for windows in ("extract", "candidates"):
        with pytest.raises(ValueError, match="avgpool3d_fwd: the forward reads its taps as slices or phases"):
            op.render(problem, pool_windows.Form(windows=windows))
    with pytest.raises(ValueError, match="avgpool3d_fwd: the phases form splits W"):
        op.render(problem, pool_windows.Form(windows="phases"))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(x=np.zeros((2, 3, 4, 4), np.float32)), ValueError, r"x must be 5-D"),
        (dict(kernel_size=0), ValueError, r"kernel_size"),
        (dict(count_include_pad=1), TypeError, r"count_include_pad must be a bool, but got 1"),
        (dict(divisor_override=0), ValueError, r"divisor_override must not be zero"),
        (dict(input_activation="gelu"), ValueError, r"input_activation must be None or 'relu'"),
        (dict(layout="NCHW"), ValueError, r"layout"),
    ],
)
def test_bad_input_is_reported_by_name_before_compiling(kwargs, error, message):
    arguments = dict(x=np.zeros((2, 3, 4, 4, 4), np.float32), kernel_size=2, layout="NCDHW")
    arguments.update(kwargs)
    with compiles_nothing(), pytest.raises(error, match="avgpool3d_fwd: " + message):
        avgpool3d_fwd(**arguments)
