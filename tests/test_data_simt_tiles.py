"""The CUDA rules that tile a float32 backward-data's convolutions for IREE's SIMT pipeline
(``data_tiles.data_simt_tiles``, docs/perf/h100-f32-data-tiles, docs/perf/h100-3d-data-tiles; at two axes NCHW
and NHWC, at three NCDHW and NDHWC): which problems and
stride phases they take, the configuration they pin (at two spatial axes four images x a row's positions x 32
channels a workgroup, 4 images x 4 channels a thread, 8 channels k a step; at three, stride 1, the whole batch of up
to 8 images where that leaves 256 workgroups), and that the modules they pin compute the reference."""

from __future__ import annotations

import math
import re

import pytest

from ops import policy, targets
from ops.operators import conv_bwd_data, phase_plan

from lowering import gpu_module_on_cpu, tile_lists

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))


def _problem(**params):
    base = dict(batch=32, in_channels=64, out_channels=64, input_spatial=(56, 56), filter_spatial=(3, 3), padding=1,
                dtype="float32", layout="NCHW")
    return conv_bwd_data.problem_from_params(**{**base, **params})


def _configs(problem, target=CUDA) -> dict[int, dict]:
    """Each tiled phase's tile lists, by name, and its threads a workgroup."""
    form = policy.forms_for(problem, target)[0]
    out = {}
    for phase, info in policy.configs_for(problem, target, form).items():
        out[phase] = {**tile_lists(info), "threads": int(re.search(r"workgroup_size = \[(\d+)", info)[1])}
    return out


@pytest.mark.parametrize("params, positions", [
    (dict(), 8),                                                                  # 56 a row: 8 a workgroup
    (dict(in_channels=256, out_channels=256, input_spatial=(14, 14)), 7),
    (dict(in_channels=512, out_channels=512, input_spatial=(7, 7)), 7),
    (dict(in_channels=96, out_channels=64, input_spatial=(20, 12)), 4),           # C 96: three workgroups
    (dict(layout="NHWC"), 8),       # channels-last: the same phase convolution (docs/perf/h100-3d-data-tiles/exp22.log)
])
def test_the_rule_tiles_stride_1_problems_by_their_rows(params, positions):
    (phase, tiles), = _configs(_problem(**params)).items()
    assert phase == 0
    assert tiles["workgroup"] == [4, 1, positions, 32, 0, 0, 0] and tiles["thread"] == [4, 1, 1, 4, 0, 0, 0]
    assert tiles["reduction"] == [0, 0, 0, 0, 1, 1, 8] and tiles["threads"] == positions * 8
    assert not _configs(_problem(**params), ROCM) and not _configs(_problem(**params), CPU)  # CUDA's table only


def test_a_strided_problem_has_its_phase_of_taps_along_every_axis_tiled():
    """ResNet-50's 3x3 stride-2 layer 128 -> 128 at 56x56: four phases (2x2, 2x1, 1x2 and 1x1 taps); the 2x2 one,
    28 rows of 28, is tiled (7 positions a workgroup), the others keep IREE's default."""
    problem = _problem(in_channels=128, out_channels=128, stride=2)
    phases = phase_plan.phases(problem)
    configs = _configs(problem)
    assert len(phases) == 4 and len(configs) == 1
    (index, tiles), = configs.items()
    assert all(p.filter_taps == 2 for p in phases[index]) and tiles["workgroup"][:4] == [4, 1, 7, 32]


def test_a_batch_of_two_takes_two_images_a_workgroup():
    tiles = _configs(_problem(batch=2))[0]
    assert tiles["workgroup"][0] == tiles["thread"][0] == 2


@pytest.mark.parametrize("params", [
    dict(in_channels=48),                                                 # no whole 32-channel workgroup
    dict(groups=2, in_channels=32, out_channels=32),                      # grouped: a group dim in the convolution
    dict(input_spatial=(56,), filter_spatial=(3,), layout="NWC"),         # 1-D: no rule names it
    dict(input_spatial=(8, 14, 14), filter_spatial=(3, 3, 3), layout="NCDHW", batch=16),  # rank 3: part of the batch
    dict(in_channels=512, out_channels=512, input_spatial=(2, 7, 7), filter_spatial=(3, 3, 3), layout="NCDHW",
         batch=8),                                                        # rank 3: 112 workgroups
    dict(input_spatial=(8, 28, 28), filter_spatial=(3, 3, 3), layout="NCDHW", batch=8, stride=2),  # rank 3, strided
    dict(dtype="bfloat16"),                                               # 16-bit: the matrix pipelines' rules
    dict(precision="bf16x3"),                                             # split: the split_conv form's tiles
])
def test_the_rule_leaves_other_problems_to_their_own_tiles(params):
    problem = _problem(**params)
    form = policy.forms_for(problem.computed_as, CUDA)[0]
    assert "thread = [4, " not in " ".join(policy.configs_for(problem.computed_as, CUDA, form).values())


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("batch, channels, spatial, positions, workgroups", [
    (8, 64, (16, 56, 56), 8, 8 * 16 * 56 * 7 * 2),                      # r3d_18's first stage: 56 a row, 8 a step
    (4, 128, (8, 28, 28), 7, 8 * 28 * 4 * 4),                            # a batch of 4: 4 images a workgroup
    (8, 256, (4, 14, 14), 7, 4 * 14 * 2 * 8),                            # 896 workgroups
])
def test_at_three_axes_the_whole_batch_is_a_workgroup(batch, channels, spatial, positions, workgroups, layout):
    """NCDHW, and NDHWC by a step A/B (docs/perf/h200-cl-1x1-gemm/r3d_18_f32_cl_tf32off_ab.log)."""
    problem = _problem(batch=batch, in_channels=channels, out_channels=channels, input_spatial=spatial,
                       filter_spatial=(3, 3, 3), layout=layout)
    (phase, tiles), = _configs(problem).items()
    assert tiles["workgroup"][:5] == [batch, 1, 1, positions, 32] and tiles["thread"][:5] == [batch, 1, 1, 1, 4]
    assert tiles["reduction"][5:] == [1, 1, 1, 8] and tiles["threads"] == positions * 8
    assert workgroups >= 256 and not _configs(problem, ROCM)
    one_image = _problem(batch=1, in_channels=channels, out_channels=channels, input_spatial=spatial,
                         filter_spatial=(3, 3, 3), layout=layout)
    assert not _configs(one_image)  # a batch of one: unmeasured (min_images), IREE's default


@pytest.mark.parametrize("params", [
    dict(batch=4, in_channels=64, out_channels=64, input_spatial=(34, 34)),         # 296 K elements of grad_in
    dict(batch=3, in_channels=32, out_channels=16, input_spatial=(15, 14), stride=2),
    dict(batch=4, in_channels=32, out_channels=16, input_spatial=(10, 16, 16), filter_spatial=(3, 3, 3),
         layout="NCDHW"),                                                         # 327 K elements, 320 workgroups
    dict(batch=4, in_channels=64, out_channels=32, input_spatial=(34, 34), layout="NHWC"),  # 296 K elements
], ids=["stride_1", "stride_2", "rank_3", "channels_last"])
def test_the_pinned_module_computes_the_reference(params, rng, tmp_path):
    problem = _problem(**params)
    spec = policy.module_spec(problem, CUDA)
    assert "thread = [" in spec.mlir and f"reduction = [{'0, ' * (problem.rank + 2)}1, 1, {'1, ' * (problem.rank - 2)}8]" in spec.mlir
    assert params["batch"] < 4 or math.prod(problem.input_shape) > 1 << 18
    error, scale = gpu_module_on_cpu(problem, spec, conv_bwd_data, rng, tmp_path, problem.input_shape)
    assert error <= 1e-5 * scale
