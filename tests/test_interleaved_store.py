"""The interleaved store of the stride-phase form (``stride_phases.forms``' ``store="interleave"``, the GPU targets'
form): every phase writes its slot of a phase-major tensor whole, and one linalg.generic interleaves the slots
into grad_in through the epilogue. Run on the CPU device with the GPU targets' phases (no zero taps) and with the
CPU's, on every backward-data test problem of both operators, against the float64 definitions. (That the
shipped GPU modules have no copy dispatch is tests/test_lowering_data_movement.py's.)"""

from __future__ import annotations

import numpy as np
import pytest

from ops import runtime, verify
from ops.operators import conv_bwd_data as conv, grouped_conv_bwd_data as grouped, stride_phases
from ops.operator import run

from conftest import DEVICE, poisoned
from conv_cases import PROBLEMS
from grouped_bwd_data_cases import CASES, problem as case_problem
from test_grouped_conv_bwd_data import direct_grad_in


def _interleaved(problem, target=None):
    return [{**form, "store": "interleave"} for form in stride_phases.forms(problem, target)]


@pytest.fixture(params=["gpu phases", "cpu phases"])
def interleave(request, monkeypatch):
    """The interleaved store, with the GPU targets' phases or the CPU's (zero taps on one-tap axes)."""
    monkeypatch.setattr(runtime, "_functions", {})  # loaded functions are keyed by problem and target, not form
    monkeypatch.setattr(conv, "forms", _interleaved)
    monkeypatch.setattr(grouped, "forms", _interleaved)
    if request.param == "gpu phases":
        phases_for_target = stride_phases.phases_for_target
        monkeypatch.setattr(stride_phases, "phases_for_target",
                            lambda problem, target=None, interleaved=False: phases_for_target(problem, None, interleaved))


STRIDED = [name for name, p in PROBLEMS.items() if any(s > 1 for s in p.stride)]


@pytest.mark.parametrize("name", STRIDED)
def test_conv_bwd_data_matches_the_direct_definition(rng, interleave, name):
    problem = PROBLEMS[name]
    inputs = conv.random_inputs(problem, rng)
    out = poisoned(problem.input_shape, problem.dtype)
    run(problem, inputs, device=DEVICE, out=out)
    expected = conv.reference(problem, inputs)
    assert np.abs(expected).max() > 0
    error = verify.relative_error(out.to_host(), expected)
    assert error <= verify.tolerance("conv_bwd_data", problem.dtype), f"{name}: relative error {error:.3e}"


@pytest.mark.parametrize("name", [n for n in CASES if any(s > 1 for s in case_problem(n).stride)])
def test_grouped_conv_bwd_data_matches_the_definition_and_the_epilogue(rng, interleave, name):
    params, epilogue, d_makers, values, expected_epilogue = CASES[name]
    p = case_problem(name)
    grad_out, weight = conv.random_inputs(p, rng)
    ds = tuple(rng.standard_normal(make(p), dtype="float32").astype(grad_out.dtype) for make in d_makers)
    out = poisoned(p.input_shape, p.dtype)
    grouped.grouped_conv_bwd_data(grad_out, weight, ds, groups=p.groups, input_shape=p.input_shape, stride=p.stride,
                                  padding=p.padding, dilation=p.dilation, epilogue=epilogue, layout=p.layout,
                                  device=DEVICE, out=out, **values)
    acc = direct_grad_in(p, grad_out, weight)
    expected = acc if expected_epilogue is None else expected_epilogue(acc, [d.astype(np.float64) for d in ds], values)
    error = verify.relative_error(out.to_host(), np.broadcast_to(expected, p.input_shape))
    assert error <= verify.tolerance("grouped_conv_bwd_data", p.dtype), f"{name}: relative error {error:.3e}"
