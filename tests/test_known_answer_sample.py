"""The known-answer check's sample (ops/known_answer.py, by the roles of ops/roles.py) is a property of its own:
the float64 reference computed on the sampled inputs equals the whole float64 reference at the kept positions, for
every operator, layout and dtype, and in particular where sizes coincide (a batch equal to K, C, G, 4*G or a
spatial size; C equal to K; square and 1x1 filters; strides equal to the filter): a role is never guessed from a
size. Nothing is compiled: a module that computes the whole reference passes the check exactly when this holds.
"""

from __future__ import annotations

import numpy as np
import pytest

from ops import known_answer, registry
from ops.operators import conv_bwd_data, grouped_conv_bwd_data

# The coincidences, as a function of a problem's other sizes: which extent the batch (or C) is made equal to.
_BATCH_EQUALS = {
    "K": lambda p: p["out_channels"], "C": lambda p: p["in_channels"], "G": lambda p: p["groups"],
    "4G": lambda p: 4 * p["groups"], "G*K": lambda p: p["groups"] * p["out_channels"],
    "G*C": lambda p: p["groups"] * p["in_channels"], "spatial": lambda p: p["input_spatial"][0],
}
_CONV_OPS = ("conv_bwd_data", "grouped_conv_bwd_data", "grouped_conv_bwd_weight")
_POOL_OPS = ("maxpool2d_bwd", "avgpool3d_bwd", "maxpool2d_fwd", "avgpool3d_fwd")


def _conv_params(op: str, rng, coincidence: str) -> dict:
    """A random convolution of channels above the sample's four, the batch (or C) equal to another extent."""
    params = registry.module(op).random_params(rng, int(rng.integers(1, 4)))
    groups = 1 if op == "conv_bwd_data" else int(rng.choice([1, 2, 4]))
    params.update(groups=groups, in_channels=int(rng.integers(5, 9)), out_channels=int(rng.integers(5, 9)))
    params["input_spatial"] = tuple(int(v) + 4 for v in params["input_spatial"])
    if coincidence == "C=K":
        params["out_channels"] = params["in_channels"]
        params["batch"] = int(rng.integers(5, 9))
    elif coincidence in ("1x1", "square", "stride=filter"):
        rank = len(params["input_spatial"])
        filters = (1,) * rank if coincidence == "1x1" else (3,) * rank
        params.update(filter_spatial=filters, batch=int(rng.integers(5, 9)), dilation=(1,) * rank)
        params["stride"] = filters if coincidence == "stride=filter" else params["stride"]
    else:
        params["batch"] = max(_BATCH_EQUALS[coincidence](params), 1)
    return params


def _pool_params(op: str, rng, coincidence: str) -> dict:
    """A random pooling of channels above four, the batch equal to the channels or a spatial size."""
    params = registry.module(op).random_params(rng, 2)
    params["channels"] = int(rng.integers(5, 12))
    params["batch"] = {"C": params["channels"], "spatial": params["input_spatial"][0]}.get(
        coincidence, int(rng.integers(5, 12)))
    if rng.integers(2):  # every pooling operator takes a fused ReLU
        params["input_activation"] = "relu"
    return params


def _cases():
    rng = np.random.default_rng(44)
    for op in _CONV_OPS:
        for coincidence in (*_BATCH_EQUALS, "C=K", "1x1", "square", "stride=filter"):
            for draw in range(2):
                yield pytest.param(op, coincidence, int(rng.integers(1 << 30)), id=f"{op}-{coincidence}-{draw}")
    for op in _POOL_OPS:
        for coincidence in ("C", "spatial", "none"):
            for draw in range(3):
                yield pytest.param(op, coincidence, int(rng.integers(1 << 30)), id=f"{op}-{coincidence}-{draw}")


def _problem(op: str, coincidence: str, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(50):  # a draw whose window fits (a padding larger than the filter, say) is drawn again
        params = _conv_params(op, rng, coincidence) if op in _CONV_OPS else _pool_params(op, rng, coincidence)
        try:
            return registry.module(op).problem_from_params(**params)
        except ValueError:
            continue
    raise AssertionError(f"no valid {op} problem drawn for {coincidence}")


def _assert_sample_is_the_whole_at_its_positions(problem):
    operator = registry.module(problem)
    inputs = known_answer.inputs_for(problem)
    sample = known_answer.sample_of(problem, inputs)
    whole = operator.reference(problem, inputs)
    whole = list(whole) if isinstance(whole, tuple) else [whole]
    sampled = operator.reference(problem, sample.inputs)
    sampled = list(sampled) if isinstance(sampled, tuple) else [sampled]
    for full, part in zip(whole, sampled):
        kept = sample.take(np.asarray(full, np.float64))
        assert kept.shape == np.shape(part), problem.name
        np.testing.assert_allclose(np.asarray(part, np.float64), kept, rtol=1e-12, atol=1e-12, err_msg=problem.name)
    whole_magnitudes = operator.magnitudes(problem, inputs, whole)
    for full, part in zip(whole_magnitudes, operator.magnitudes(problem, sample.inputs, sampled)):
        np.testing.assert_allclose(part, sample.take(full), rtol=1e-12, atol=1e-12, err_msg=problem.name)
    return sample


@pytest.mark.parametrize("op, coincidence, seed", list(_cases()))
def test_the_sampled_reference_is_the_whole_reference_at_the_kept_positions(monkeypatch, op, coincidence, seed):
    monkeypatch.setattr(known_answer, "WHOLE", 0)  # every problem sampled, at sizes a NumPy reference does quickly
    problem = _problem(op, coincidence, seed)
    sample = _assert_sample_is_the_whole_at_its_positions(problem)
    assert sample.axes, f"{problem.name}: nothing was sampled"


# The layers the batch sample refused (issue 44), at their own sizes: sampled without any patch.
_TRAINING_SIZED = [
    pytest.param(conv_bwd_data, dict(batch=64, in_channels=64, out_channels=64, input_spatial=(8, 8),
                                     filter_spatial=(3, 3), padding=1, layout=layout, dtype="float32"),
                 id=f"resnet-3x3-n64-k64-{layout}") for layout in ("NCHW", "NHWC")
] + [
    pytest.param(conv_bwd_data, dict(batch=64, in_channels=32, out_channels=64, input_spatial=(16, 16),
                                     filter_spatial=(1, 1), stride=2, layout="NCHW", dtype="float32"),
                 id="resnet-1x1-stride2"),
    pytest.param(conv_bwd_data, dict(batch=32, in_channels=16, out_channels=32, input_spatial=(32, 32),
                                     filter_spatial=(3, 3), padding=1, layout="NHWC", dtype="float16"),
                 id="n32-k32-nhwc"),
    pytest.param(grouped_conv_bwd_data, dict(batch=64, groups=16, in_channels=8, out_channels=8, input_spatial=(8, 8),
                                             filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32",
                                             epilogue="acc + d0", d_kinds=("channel",)),
                 id="per-channel-d-4g-equals-n"),
]


@pytest.mark.parametrize("operator, params", _TRAINING_SIZED)
def test_training_sized_layers_are_sampled_by_role(operator, params):
    problem = operator.problem_from_params(**params)
    sample = _assert_sample_is_the_whole_at_its_positions(problem)
    assert [len(kept) for _, kept in sample.axes] == [known_answer.KEPT, (problem.groups * known_answer.KEPT)]
