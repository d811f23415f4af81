"""The CUDA rule that tiles a float32 channels-first weight gradient's generic for IREE's SIMT pipeline
(``policy.weight_simt_tiles``, docs/perf/h100-f32-weight-tiles): which problems it takes, the configuration it
pins, and that the module it pins it on (the generic written without its unit dims) computes the reference."""

from __future__ import annotations

import re

import pytest

from ops import policy, targets
from ops.operators import grouped_conv_bwd_weight as weight

from lowering import gpu_module_on_cpu

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))


def _problem(**params):
    base = dict(batch=32, groups=1, in_channels=64, out_channels=64, input_spatial=(14, 14), filter_spatial=(3, 3),
                padding=1, dtype="float32", layout="NCHW")
    return weight.problem_from_params(**{**base, **params})


def _tiles(problem, target=CUDA) -> dict:
    """The pinned configuration's tile lists, by name (empty: none pinned)."""
    info = policy.configs_for(problem, target).get(0, "")
    return {name: [int(v) for v in values.split(", ")]
            for name, values in re.findall(r"(reduction|thread|workgroup) = \[([\d, ]+)\]", info)}


@pytest.mark.parametrize("params, workgroup, reduction", [
    # batch 32 in 32 chunks of one image (j, k, c, f0, f1; the unit image dim left out): two positions a step
    (dict(), [1, 32, 32, 1, 1, 0, 0], [0] * 5 + [1, 2]),
    # 512 channels: 2 chunks of 16 images (the image dim kept); 7 positions a row: one a step
    (dict(input_spatial=(7, 7), in_channels=512, out_channels=512), None, [0] * 5 + [1, 1, 1]),
    (dict(input_spatial=(56, 56), stride=2), None, [0] * 5 + [1, 2]),                     # strided: 28 a row
    # batch 8 in 8 chunks, three spatial axes
    (dict(input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), layout="NCDHW", batch=8), [1, 32, 32, 1, 1, 1, 0, 0, 0],
     [0] * 6 + [1, 1, 2]),
])
def test_the_rule_tiles_dense_float32_channels_first_problems_of_several_taps(params, workgroup, reduction):
    tiles = _tiles(_problem(**params))
    assert tiles and tiles["thread"][1:3] == [4, 4]
    assert workgroup is None or tiles["workgroup"] == workgroup
    assert reduction is None or tiles["reduction"] == reduction
    assert not _tiles(_problem(**params), ROCM) and not _tiles(_problem(**params), CPU)  # CUDA's table only


@pytest.mark.parametrize("params", [
    dict(filter_spatial=(1, 1), padding=0),               # one tap: IREE drops a config pinned on its unit tap dims
    dict(groups=2, in_channels=32, out_channels=32),      # grouped
    dict(layout="NHWC"),                                  # channels-last: unmeasured
    dict(dtype="bfloat16"),                               # 16-bit: the matrix pipelines' rules
    dict(in_channels=3, input_spatial=(56, 56), filter_spatial=(7, 7), padding=3, stride=2),  # the stem: C = 3
    dict(precision="bf16x3"),                             # split: its bfloat16 problem's rules
])
def test_the_rule_leaves_other_problems_to_their_own_tiles(params):
    problem = _problem(**params)
    assert "thread = [1, 4, 4" not in policy.configs_for(problem.computed_as, CUDA).get(0, "")


@pytest.mark.parametrize("params", [
    dict(batch=4, input_spatial=(6, 6)),                                        # 2 images a chunk (n kept)
    dict(batch=2, input_spatial=(9, 7), stride=2, in_channels=32, out_channels=64),  # chunks of one image (n left out)
    dict(batch=2, input_spatial=(3, 4, 5), filter_spatial=(3, 3, 3), layout="NCDHW", in_channels=32,
         out_channels=32),
], ids=["2d", "strided_unit_chunks", "3d"])
def test_the_pinned_module_computes_the_reference(params, rng, tmp_path):
    problem = _problem(**params)
    spec = policy.module_spec(problem, CUDA)
    assert "thread = [1, 4, 4" in spec.mlir
    error, scale = gpu_module_on_cpu(problem, spec, weight, rng, tmp_path, problem.weight_shape)
    assert error <= 1e-5 * scale
