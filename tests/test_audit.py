"""build_tools/audit.py's independent reference (PyTorch's float64 autograd of an explicitly padded convolution)
agrees with the operators' own float64 references, and its verdict flags a planted wrong result."""

from __future__ import annotations

import numpy as np
import pytest

from ops import known_answer, registry
from ops.operators import conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight

torch = pytest.importorskip("torch")
audit = pytest.importorskip("build_tools.audit")

_PROBLEMS = [
    conv_bwd_data.problem_from_params(batch=2, in_channels=3, out_channels=5, input_spatial=(9, 7), filter_spatial=(3, 2),
                                      stride=(2, 1), dilation=(1, 2), padding=((2, 0), (1, 1)), layout="NHWC",
                                      dtype="float32"),
    grouped_conv_bwd_data.problem_from_params(batch=3, groups=2, in_channels=2, out_channels=3, input_spatial=(8,),
                                              filter_spatial=(3,), stride=(2,), padding=((1, 2),), layout="NCW",
                                              dtype="float16", epilogue="alpha * acc + d0", d_kinds=("channel",)),
    grouped_conv_bwd_weight.problem_from_params(batch=2, groups=3, in_channels=2, out_channels=2,
                                                input_spatial=(5, 4, 6), filter_spatial=(2, 1, 3), stride=(1, 2, 1),
                                                padding=((0, 1), (1, 0), (1, 1)), layout="NDHWC", dtype="bfloat16"),
]


@pytest.mark.parametrize("problem", _PROBLEMS, ids=lambda p: p.op)
def test_pytorch_float64_agrees_with_the_operators_reference_and_a_wrong_result_is_flagged(problem):
    cpu = torch.device("cpu")
    inputs = known_answer.inputs_for(problem)
    ours = np.asarray(registry.module(problem).reference(problem, inputs), np.float64)
    np.testing.assert_allclose(audit.torch_reference(problem, inputs, cpu), ours, rtol=1e-12, atol=1e-12)
    right = audit.independent_verdict(problem, inputs, ours.astype(np.float32), cpu)
    assert right["right"], right
    wrong = ours.copy()
    wrong.reshape(-1)[wrong.size // 2] += 1.0
    assert not audit.independent_verdict(problem, inputs, wrong, cpu)["right"]
