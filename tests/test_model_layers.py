"""build_tools/model_layers.py and the suite it wrote (build_tools/manifests/models.json): every entry builds its
problem, a problem's ``params()`` builds it again, and the generator finds exactly a small model's layers.

torchvision is not needed: the small model is built here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ops import catalog, registry

torch = pytest.importorskip("torch")
nn = torch.nn

from build_tools import model_layers  # noqa: E402


def _rebuilt(problem):
    return registry.module(problem).problem_from_params(**problem.params())


def test_every_entry_of_the_committed_suite_builds_its_problem_from_params_it_would_write_again():
    entries = catalog.entries("models")
    problems = catalog.problems("models")
    assert len(problems) == len(entries) > 100
    assert len({(e["op"], e["name"]) for e in entries}) == len(entries)  # (op, name) names one problem
    assert len({p for _, _, p in problems}) == len(problems)  # each distinct problem once
    for entry, (op, name, problem) in zip(entries, problems):  # catalog.entry_problem(entry) is problem
        assert problem.op == op == entry["op"] and entry["note"].endswith(problem.name)
        assert model_layers.compact(problem.params()) == entry["params"], name
        assert name == model_layers.entry_name(*entry["layers"][0].split("/"))
    recorded = json.loads((catalog.manifests_dir() / "models.json").read_text())["recorded"]
    assert {"resnet50/f32_nchw", "resnext50_32x4d/f32_cl", "mobilenet_v2/bf16_cl", "r3d_18/f32_cl"} <= set(recorded)
    assert all(not run["left_to_pytorch"] for run in recorded.values())
    for run, counts in recorded.items():  # what build_tools.bench --problems gets for one model's layers
        names = set(model_layers.names_of(run))
        assert sum(e["name"] in names for e in entries) >= counts["distinct"] == sum(
            any(u.startswith(run + "/") for u in e["layers"]) for e in entries)


def test_a_problem_s_params_build_it_again_for_every_operator():
    rng = np.random.default_rng(7)
    problems = [p for suite in catalog.suites() for _, _, p in catalog.problems(suite)
                if suite != "models"] + [p for _, p in catalog.random_problems(11, 60)]
    for entry in registry.OPERATORS.values():  # the forwards too (they are in no manifest)
        while sum(p.op == entry.op for p in problems) < 10:
            try:
                problems.append(entry.module.problem_from_params(**entry.module.random_params(rng, 2)))
            except ValueError:
                continue
    pool_relu = catalog.problem("avgpool3d_bwd", "video3d_pool1_2x2x2", "zoo", input_activation="relu")
    for problem in problems + [pool_relu]:
        assert _rebuilt(problem) == problem, problem.name


class _Tiny(nn.Module):
    """Stem (its input needs no gradient: weight only), BN, a ReLU fused into the max-pool, two convolutions of one
    shape (the second after a ReLU, fused: another backward-data problem, the same backward-weight one)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8),
        )
        # (without the last BN, the pooling's backward on the CPU gives the last convolution an output gradient that
        # is not channels-last, and its backward the channels-first layout: what training on the CPU sees)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))

    def forward(self, x):
        return self.head(self.body(x))


@pytest.mark.parametrize("channels_last", [False, True])
def test_the_generator_finds_exactly_the_backward_problems_of_a_small_model_s_layers(channels_last):
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    ours, left, plain = model_layers.converted(_Tiny().to(memory_format=fmt))
    assert left == [] and plain == []
    x = torch.randn(2, 3, 8, 8).contiguous(memory_format=fmt)
    records = model_layers.record_layers(ours, x)
    assert [(layer, p.op) for layer, p in records] == [
        ("body.0", "grouped_conv_bwd_weight"), ("body.3", "maxpool2d_bwd"),
        ("body.4", "conv_bwd_data"), ("body.4", "grouped_conv_bwd_weight"),
        ("body.7", "grouped_conv_bwd_data"), ("body.7", "grouped_conv_bwd_weight"),  # the ReLU's backward fused
    ]
    layout = "NHWC" if channels_last else "NCHW"
    stem, pool, data, weight, fused_data, weight_again = (p for _, p in records)
    assert all(p.layout == layout and p.dtype == "float32" for _, p in records)
    assert (stem.in_channels, stem.out_channels, stem.input_spatial, stem.filter_spatial) == (3, 8, (8, 8), (3, 3))
    assert (pool.channels, pool.input_spatial, pool.kernel_size, pool.input_activation) == (8, (8, 8), (2, 2), "relu")
    assert (weight.groups, weight.in_channels, weight.out_channels, weight.input_spatial) == (1, 8, 8, (4, 4))
    assert weight_again == weight and fused_data.epilogue is not None and data.epilogue is None
    suite = model_layers.manifest([{"model": "tiny", "config": "f32", "batch": 2, "input": [3, 8, 8],
                                    "records": records, "left_to_pytorch": [], "plain_subclasses": 0}])
    assert suite["recorded"]["tiny/f32"]["kernel_calls"] == 6 and suite["recorded"]["tiny/f32"]["distinct"] == 5
    entries = suite["problems"]
    assert [e["name"] for e in entries] == ["tiny_f32_body_0", "tiny_f32_body_3", "tiny_f32_body_4",
                                            "tiny_f32_body_4", "tiny_f32_body_7"]
    assert entries[3]["layers"] == ["tiny/f32/body.4", "tiny/f32/body.7"]
    assert json.loads(model_layers.dumps(suite)) == suite
    assert [catalog.entry_problem(e) for e in entries] == [stem, pool, data, weight, fused_data]


def test_plain_subclasses_get_their_base_class_and_others_keep_theirs():
    class Plain(nn.Conv3d):
        @staticmethod
        def helper():
            return 1

    class Own(nn.Conv3d):
        def forward(self, x):
            return super().forward(x) * 2

    model = nn.Sequential(Plain(2, 2, 1), Own(2, 2, 1), nn.Conv3d(2, 2, 1))
    assert model_layers.plain_subclasses(model) == ["0"]
    assert [type(m) for m in model] == [nn.Conv3d, Own, nn.Conv3d]


def test_the_random_layers_suite_is_the_generators_output():
    """build_tools/manifests/random_layers.json is build_tools/random_layers.py's draw (seed 45, 30 layers), never
    hand-edited: each layer's backward-data and backward-weight, bfloat16 channels-last, within the families'
    ranges."""
    from build_tools import random_layers

    committed = json.loads((catalog.manifests_dir() / "random_layers.json").read_text())
    assert committed == random_layers.suite(45, 30)
    for op, _, problem in catalog.problems("random_layers"):
        assert problem.dtype == "bfloat16" and problem.layout == "NHWC" and 8 <= problem.batch <= 128
        assert 7 <= problem.input_spatial[0] <= 112 and problem.stride[0] in (1, 2)
        assert 16 <= problem.groups * max(problem.in_channels, problem.out_channels) <= 1024


def test_verify_runs_random_set_draws_float32_nchw_layers_that_cudas_float32_rules_take():
    """``verify_run --sets random:45:30:f32_nchw``: the same families in float32 NCHW (the GPU check of the float32
    SIMT rules on layers no table names), with grouped layers of 16 and 32 channels a group among them."""
    from build_tools import verify_run
    from ops import policy, targets

    problems = verify_run.problems("random:45:30:f32_nchw")
    assert len(problems) == 60 and all(p.dtype == "float32" and p.layout == "NCHW" for p in problems)
    cuda = targets.parse_target("cuda:sm_80")
    tiled = [p for p in problems if policy.configs_for(p, cuda, policy.forms_for(p, cuda)[0])]
    assert any(p.kind == "grouped" and p.in_channels >= 16 for p in tiled) and len(tiled) >= 20
