"""The max-pooling forms: the extract form (every target; the GPUs ship it for the backward), the forward's gather
form (the GPUs'), the strided-slice form, the forward's phases form and the backward's candidates form (the CPU's,
``ops/policy._pool_forms``) give PyTorch's answers on random problems of every kind the operators take (layouts,
padding, dilation, ceil_mode, both index sources), NaNs and ties included, into poisoned destinations; the slice
form reads no tensor with ``tensor.extract`` (its taps are slices, its backward stride phases); and the CPU ships
the candidates form for a backward from the indices, the phases form for a forward strided along a channels-first
W the stride divides, the slice form otherwise."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ops import policy, runtime, sweep_params, targets
from ops.api import run
from ops.operators import maxpool2d, maxpool2d_fwd, pool_windows

import conftest
from conftest import poisoned
from lowering import shipped

FORMS = [pool_windows.Form(), pool_windows.Form(windows="slices")]
BACKWARD_FORMS = [*FORMS, pool_windows.Form(windows="candidates")]
FORWARD_FORMS = [*FORMS, pool_windows.Form(windows="phases"), pool_windows.Form(windows="gather")]
CPU = targets.parse_target("llvm-cpu")


def _random_problems(rng, module, count: int, phase_split: bool = False, **fixed) -> list:
    """``count`` problems of random parameters (``fixed`` kept); with ``phase_split``, channels-first ones whose W
    their stride divides (the phases form's)."""
    problems = []
    while len(problems) < count:
        params = {**sweep_params.pool_params(rng, 2), "dtype": str(rng.choice(["float32", "bfloat16"])), **fixed}
        if phase_split:
            stride, (height, width) = params["stride"][-1], params["input_spatial"]
            params.update(layout="NCHW", input_spatial=(height, -(-width // stride) * stride))
        try:
            problems.append(module.problem_from_params(**params))
        except ValueError:  # a drawn window PyTorch rejects
            continue
    return problems


def _with_nans_and_ties(x: np.ndarray, rng) -> np.ndarray:
    """``x`` with a few NaNs, and a stretch of equal values (ties: the first in scan order wins)."""
    x = np.array(x)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)] = np.nan
    flat[: min(flat.size, 12)] = 1.5
    return x


@pytest.mark.parametrize("activation", [None, "relu"])
@pytest.mark.parametrize("form", FORWARD_FORMS, ids=lambda f: f.windows)
def test_forward_forms_give_pytorchs_maxima_and_indices(rng, form, activation):
    """Each form, of x and of relu(x) (each tap through the ReLU as it is read: whole windows of zeros tie, and -0
    and NaN pass as PyTorch's relu passes them); the phases form on the problems it takes."""
    phases = form.windows == "phases"
    for problem in _random_problems(rng, maxpool2d_fwd, 6, phases, input_activation=activation):
        (x,) = maxpool2d_fwd.random_inputs(problem, rng)
        x = _with_nans_and_ties(x, rng)
        x.reshape(-1)[-12:] = -0.0
        y_ref, i_ref = maxpool2d_fwd.reference(problem, [x])
        out = [poisoned(problem.output_shape, problem.dtype),
               runtime.to_device(np.full(problem.output_shape, -1, np.int64), conftest.DEVICE)]
        y, indices = (a.to_host() for a in run(problem, [x], out=out, form=form))
        np.testing.assert_array_equal(indices, i_ref, err_msg=problem.name)
        np.testing.assert_array_equal(np.asarray(y, np.float64), y_ref, err_msg=problem.name)
        assert np.array_equal(np.signbit(np.asarray(y, np.float64)), np.signbit(y_ref)), problem.name

@pytest.mark.parametrize("activation", [None, "relu"])
@pytest.mark.parametrize("source", ["indices", "x"])
@pytest.mark.parametrize("form", BACKWARD_FORMS, ids=lambda f: f.windows)
def test_backward_forms_give_pytorchs_gradient(rng, form, source, activation):
    """Each form, with and without a ReLU before the pooling (whose output zeroes many windows' maxima)."""
    for problem in _random_problems(rng, maxpool2d, 5, source=source, input_activation=activation):
        inputs = maxpool2d.random_inputs(problem, rng)
        expected = maxpool2d.reference(problem, inputs)
        dst = poisoned(problem.input_shape, problem.dtype)
        got = run(problem, inputs, out=dst, form=form)
        got = np.asarray(got.to_host(), np.float64)
        scale = max(1.0, float(np.max(np.abs(expected))))
        tolerance = 1e-6 if problem.dtype == "float32" else 2e-2
        assert np.all(np.isfinite(got)), f"{problem.name}: an element was never written"
        assert np.max(np.abs(got - expected)) <= tolerance * scale, problem.name


def _extracts(text: str) -> list[str]:
    return [line for line in text.splitlines() if "= tensor.extract " in line and not line.lstrip().startswith("//")]


def test_the_slice_forms_read_no_tensor_by_extract(rng):
    fwd = _random_problems(rng, maxpool2d_fwd, 1)[0]
    bwd = _random_problems(rng, maxpool2d, 1, source="indices")[0]
    for module, problem in ((maxpool2d_fwd, fwd), (maxpool2d, bwd)):
        assert not _extracts(module.render(problem, pool_windows.Form(windows="slices"))), problem.name
        assert _extracts(module.render(problem, pool_windows.Form())), problem.name


def test_the_cpu_ships_the_candidates_and_slice_forms_and_the_gpus_the_gather_and_extract_forms(tmp_path):
    """A backward from the indices: the candidates form, overlapping windows or not; from x: the slices form where
    windows overlap, the extract form where they do not. The forward: the phases form in a channels-first layout
    whose W the stride divides, else the slices form. The GPUs: the forward's gather form (the extract form's
    reduction over the taps kept both outputs in memory), the backward's extract form. (A fixed problem: a random
    3 x 3 / 2 one can have a single window, which overlaps nothing; seed 931255569 drew one.)"""
    problem = maxpool2d.problem_from_params(batch=2, channels=3, input_spatial=(9, 10), kernel_size=3, stride=2,
                                            padding=1, dtype="float32")
    assert problem.overlapping
    assert policy.forms_for(problem, CPU)[0] == pool_windows.Form(windows="candidates")
    params = dict(batch=2, channels=3, input_spatial=(8, 8), kernel_size=2, stride=2, dtype="float32")
    disjoint = maxpool2d.problem_from_params(**params)
    assert policy.forms_for(disjoint, CPU)[0] == pool_windows.Form(windows="candidates")
    from_x = maxpool2d.problem_from_params(**{**params, "kernel_size": 3, "padding": 1, "source": "x"})
    assert policy.forms_for(from_x, CPU)[0] == pool_windows.Form(windows="slices")
    assert policy.forms_for(maxpool2d.problem_from_params(**params, source="x"), CPU)[0] == pool_windows.Form(), \
        "disjoint windows: one elementwise pass"
    forward = maxpool2d_fwd.problem_from_params(**params)
    assert policy.forms_for(forward, CPU)[0] == pool_windows.Form(windows="slices")
    channels_first = maxpool2d_fwd.problem_from_params(**params, layout="NCHW")
    assert policy.forms_for(channels_first, CPU)[0] == pool_windows.Form(windows="phases")
    odd = maxpool2d_fwd.problem_from_params(**{**params, "input_spatial": (8, 9)}, layout="NCHW")
    assert policy.forms_for(odd, CPU)[0] == pool_windows.Form(windows="slices"), "W 9 has no split by stride 2"
    for gpu in ("cuda:sm_80", "rocm:gfx942"):
        assert policy.forms_for(problem, targets.parse_target(gpu)) == [pool_windows.Form()]
        assert policy.forms_for(forward, targets.parse_target(gpu)) == [pool_windows.Form(windows="gather"),
                                                                         pool_windows.Form()]
    spec, lowered = shipped(problem, "llvm-cpu", tmp_path)
    assert not _extracts(spec.mlir), "the candidates form did not compile: the CPU fell back to the extract form"
    assert "in one pass over grad_in" in spec.mlir
    passes = [d.name for d in lowered.dispatches if "memcpy" not in d.name]  # besides the pads' (and rows') copies
    assert len(passes) == 1, [d.name for d in lowered.dispatches]


def test_the_phases_form_is_one_transposing_pass_and_the_scan(tmp_path):
    """resnext2d's stem pool (NCHW, 3 x 3 / 2, a ReLU before it) as the CPU ships it: the split by phase and its
    padding one transpose dispatch, into the fill, and the scan one elementwise dispatch over unit-stride slices."""
    problem = maxpool2d_fwd.problem_from_params(batch=2, channels=4, input_spatial=(32, 32), kernel_size=3, stride=2,
                                                padding=1, layout="NCHW", dtype="float32", input_activation="relu")
    spec, lowered = shipped(problem, "llvm-cpu", tmp_path)
    assert "The phases form" in spec.mlir, "the phases form did not compile: the CPU fell back to another form"
    kinds = sorted(d.name.split("_")[1] for d in lowered.dispatches)
    assert kinds == ["elementwise", "transpose"], [d.name for d in lowered.dispatches]


def test_the_phases_form_is_the_forwards_where_the_stride_divides_w(rng):
    nhwc = maxpool2d_fwd.problem_from_params(batch=1, channels=2, input_spatial=(8, 8), kernel_size=3, stride=2,
                                             layout="NHWC", dtype="float32")
    odd = maxpool2d_fwd.problem_from_params(batch=1, channels=2, input_spatial=(8, 9), kernel_size=3, stride=2,
                                            layout="NCHW", dtype="float32")
    for problem in (nhwc, odd):
        with pytest.raises(ValueError, match="maxpool2d_fwd: the phases form splits W, the innermost axis of a "
                                             "channels-first layout, by its stride"):
            maxpool2d_fwd.render(problem, pool_windows.Form(windows="phases"))
    backward = _random_problems(rng, maxpool2d, 1)[0]
    for form in ("phases", "gather"):
        with pytest.raises(ValueError, match=f"maxpool2d_bwd: the {form} form is the forward's"):
            maxpool2d.render(backward, pool_windows.Form(windows=form))


def test_the_forward_refuses_the_candidates_form(rng):
    problem = _random_problems(rng, maxpool2d_fwd, 1)[0]
    with pytest.raises(ValueError, match="maxpool2d_fwd: the candidates form is the backward's"):
        maxpool2d_fwd.render(problem, pool_windows.Form(windows="candidates"))


def test_a_bad_form_key_names_the_operator_and_the_key():
    with pytest.raises(ValueError, match="the pooling operators: form key windows must be one of"):
        pool_windows.Form(windows="scattered")


def test_the_cuda_gather_form_keeps_each_windows_best_in_registers(tmp_path):
    """ResNet-50's stem pool forward (channels-last, 3 x 3 / 2, batch 2) on CUDA: one elementwise dispatch whose only
    loads are x's (read-only, vectorized) and whose outputs are each stored once. The extract form's reduction over
    the taps reloaded and stored both outputs at every row of taps: at batch 32 0.348 ms against the gather's 0.074
    (docs/perf/h200-f16x1-pad-fusion/exp59.log)."""
    problem = maxpool2d_fwd.problem_from_params(batch=2, channels=64, input_spatial=(112, 112), kernel_size=3,
                                                stride=2, padding=1, layout="NHWC", dtype="float32")
    spec, lowered = shipped(problem, "cuda:sm_80", tmp_path)
    assert "The gather form" in spec.mlir
    assert [d.name.split("_")[1] for d in lowered.dispatches] == ["elementwise"], lowered.dispatches
    loads = re.findall(r"\bld\.global\.\S+", lowered.ptx)
    assert loads and all(load.startswith("ld.global.nc.v4") for load in loads), loads
