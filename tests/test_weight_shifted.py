"""grouped_conv_bwd_weight's shifted form on llvm-cpu (ops/operators/weight_shifted.py): one batch matmul per tap over
contiguous slices of x and grad_out flattened on a common grid. It computes the float64 definition in every rank,
with uneven padding, channels-first and channels-last (moved channels-first); it takes only the problems it can (one
group, stride and dilation 1, several taps); and the CPU table's rule gives it to AVX-512 hosts without AMX for 16 to
64 channels and 3136 or more output positions, and to no other host or problem."""

from __future__ import annotations

import numpy as np
import pytest

from ops import policy, targets
from ops.operators import grouped_conv_bwd_weight as weight
from ops.operators import weight_shifted

from lowering import run_on_cpu

CPU = targets.parse_target("llvm-cpu")
ZEN4 = frozenset({"avx2", "fma", "avx512f", "avx512bf16"})
AMX = ZEN4 | {"amx_tile", "amx_bf16"}
AVX2 = frozenset({"avx2", "fma"})


def _problem(**params):
    base = dict(batch=2, in_channels=5, out_channels=7, input_spatial=(9, 7), filter_spatial=(3, 3), padding=1,
                layout="NCHW", dtype="float32")
    return weight.problem_from_params(**{**base, **params})


CASES = {"3d": dict(input_spatial=(4, 6, 5), filter_spatial=(3, 3, 3), layout="NCDHW"),
         "3d_channels_last": dict(input_spatial=(4, 6, 5), filter_spatial=(3, 3, 3), layout="NDHWC"),
         "2d_channels_last_uneven": dict(batch=3, filter_spatial=(3, 2), padding=(1, 0), layout="NHWC"),
         "2d_uneven": dict(batch=3, filter_spatial=(3, 2), padding=(1, 0)),
         "1d_wide": dict(input_spatial=(11,), filter_spatial=(5,), padding=2, layout="NCW"),
         "user_size": dict(batch=4, in_channels=32, out_channels=32, input_spatial=(56, 56))}  # 2^18+ elements


@pytest.mark.parametrize("name", list(CASES))
def test_the_shifted_form_computes_the_definition(name, rng, tmp_path):
    problem = _problem(**CASES[name])
    spec = policy.module_spec(problem, CPU, options=weight.Form(contraction="shifted"))
    assert "linalg.batch_matmul" in spec.mlir and "tensor.extract_slice %x_flat" in spec.mlir
    inputs = weight.random_inputs(problem, rng)
    got = run_on_cpu(spec, inputs, np.zeros(problem.weight_shape, np.float32), tmp_path)
    expected = weight.reference(problem, inputs)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("params", [dict(stride=2), dict(dilation=2), dict(groups=2, in_channels=4, out_channels=4),
                                    dict(filter_spatial=(1, 1), padding=0)],
                         ids=["strided", "dilated", "grouped", "one_tap"])
def test_the_form_takes_only_the_problems_it_can(params):
    problem = _problem(**params)
    assert not weight_shifted.applies(problem)
    assert all(form.contraction != "shifted" for form in policy.target_forms(problem, CPU))
    with pytest.raises(ValueError, match="the shifted form takes problems of one group"):
        weight.render(problem, weight.Form(contraction="shifted"))


@pytest.mark.parametrize("host, params, expected", [
    (ZEN4, dict(in_channels=64, out_channels=64, input_spatial=(56, 56)), True),
    (ZEN4, dict(in_channels=16, out_channels=16, input_spatial=(112, 112)), True),
    (ZEN4, dict(in_channels=64, out_channels=64, input_spatial=(56, 56), layout="NHWC"), True),  # moved first
    (ZEN4, dict(in_channels=64, out_channels=64, input_spatial=(16, 56, 56), filter_spatial=(3, 3, 3),
                layout="NDHWC"), True),
    (ZEN4, dict(in_channels=128, out_channels=128, input_spatial=(8, 28, 28), filter_spatial=(3, 3, 3),
                layout="NDHWC"), False),
    (ZEN4, dict(in_channels=128, out_channels=128, input_spatial=(56, 56)), False),   # measured slower from 128
    (ZEN4, dict(in_channels=64, out_channels=64, input_spatial=(28, 28)), False),     # 784 positions: slower
    (ZEN4, dict(in_channels=3, out_channels=16, input_spatial=(8, 32, 32), filter_spatial=(3, 3, 3),
                layout="NCDHW"), False),                                              # a 3-channel stem: slower
    (AMX, dict(in_channels=64, out_channels=64, input_spatial=(56, 56)), False),      # not measured there
    (AVX2, dict(in_channels=64, out_channels=64, input_spatial=(56, 56)), False),
])
def test_the_cpu_rule_gives_the_form_where_it_was_measured_faster(monkeypatch, host, params, expected):
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: host)
    problem = _problem(**params)
    assert (policy.forms_for(problem, CPU)[0].contraction == "shifted") is expected


def test_the_junk_rows_are_few_on_the_layers_it_takes():
    """The rows computed past an image's edge: 2 of every 58 on a 56-wide row, a 3x3 filter."""
    problem = _problem(in_channels=64, input_spatial=(56, 56))
    assert weight_shifted.waste(problem) == pytest.approx(1 - 56 * 56 / (56 * 58))
