"""conv_bwd_data's split_conv form (ops/operators/data_split_conv.py): a float32 stride-1 backward-data of several taps
as bfloat16 x 3, as the forward convolution of the padded grad_out with the flipped filter over 3K channels. Each
result within bf16x3's rounding bound of its magnitude (conftest.bf16x3_bound: 3 x 2^-16 a product at most) on the
CPU in every layout, rank, padding and dilation (at a ResNet layer's size too); what takes it; and the compiled GPU
convolution contracts with matrix instructions (mma.sync on sm_80, MFMA on gfx942), with no scratch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ops import api, policy, targets
from ops.operators import conv_bwd_data, data_split_conv, stride_phases

from conftest import bf16x3_bound
from lowering import configured_ir, one_matrix_contraction


def _problem(**params):
    base = dict(batch=2, in_channels=6, out_channels=8, input_spatial=(7, 6), filter_spatial=(3, 3), padding=1,
                layout="NCHW", dtype="float32", precision="bf16x3")
    return conv_bwd_data.problem_from_params(**{**base, **params})


def _bf16(a):
    import ml_dtypes

    return a.astype(ml_dtypes.bfloat16).astype(np.float64)


# ranks 1-3, both layouts, asymmetric and no padding, dilation, a one-tap axis beside taps
CASES = {"nchw": {}, "nhwc": dict(layout="NHWC"), "nchw_pad_0_2": dict(padding=((0, 2), (2, 0))),
         "nhwc_dilated": dict(layout="NHWC", dilation=2, padding=2), "nchw_unpadded": dict(padding=0),
         "nchw_1x3": dict(filter_spatial=(1, 3), padding=((0, 0), (1, 1))),
         "ncw": dict(input_spatial=(11,), filter_spatial=(5,), padding=2, layout="NCW"),
         "ndhwc": dict(input_spatial=(4, 5, 3), filter_spatial=(3, 3, 3), layout="NDHWC", in_channels=3, out_channels=5)}


@pytest.mark.parametrize("name", list(CASES))
def test_bf16x3_is_within_its_rounding_bound_and_far_better_than_bfloat16(name, rng):
    problem = _problem(**CASES[name])
    assert problem.name.endswith("_split_bf16x3") and conv_bwd_data.problem_from_params(**problem.params()) == problem
    _assert_split_accuracy(problem, rng)


def test_bf16x3_at_a_resnet_layers_size(rng):
    """ResNet-50's 3x3 layer 64 -> 64 at 56x56 (stride 1, padding 1), batch 1: 200,704 elements of grad_in; and
    its 28x28 128-channel twin at batch 3, 301,056 (the check's sampled path, above 2^18)."""
    for params in (dict(batch=1, in_channels=64, out_channels=64, input_spatial=(56, 56)),
                   dict(batch=3, in_channels=128, out_channels=128, input_spatial=(28, 28), layout="NHWC")):
        problem = _problem(**params)
        _assert_split_accuracy(problem, rng)
    assert math.prod(problem.input_shape) > 1 << 18


def _assert_split_accuracy(problem, rng):
    grad_out, weight = (rng.standard_normal(s).astype(np.float32) for s in (problem.output_shape, problem.weight_shape))
    got = np.asarray(api.conv_bwd_data(grad_out, weight, input_shape=problem.input_shape, padding=problem.padding,
                                       dilation=problem.dilation, layout=problem.layout, precision="bf16x3"),
                     np.float64)
    want = conv_bwd_data.reference(problem, [grad_out, weight])
    magnitude = conv_bwd_data.reference(problem, [np.abs(grad_out), np.abs(weight)])
    error = np.abs(got - want) / magnitude
    assert error.max() < bf16x3_bound(problem.out_channels * math.prod(problem.filter_spatial)), error.max()
    bfloat16 = conv_bwd_data.reference(problem, [_bf16(grad_out), _bf16(weight)])
    assert (np.abs(bfloat16 - want) / magnitude).max() > 16 * error.max()  # the lo parts count


@pytest.mark.parametrize("params, takes", [
    (dict(), True), (dict(dilation=2, padding=2), True), (dict(padding=((0, 2), (1, 1))), True),
    (dict(stride=2), False),                      # the stride phases
    (dict(padding=3), False),                     # padding beyond the filter's reach: grad_out would be cropped
    (dict(filter_spatial=(1, 1), padding=0), False),  # one tap: the gemm form's
])
def test_the_split_conv_form_takes_stride_1_problems_of_several_taps(params, takes):
    problem = _problem(precision="float32", **params)
    assert data_split_conv.applies(problem) == takes
    if takes:
        split = conv_bwd_data.with_precision(problem, "bf16x3")
        for target in (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu")):
            assert [f.contraction for f in policy.forms_for(split, target)] == ["split_conv"]
            assert all(f.contraction != "split_conv" for f in policy.forms_for(problem, target))
    with pytest.raises(ValueError, match="conv_bwd_data: the split_conv form computes float32 stride-1 problems"):
        conv_bwd_data.render(problem, stride_phases.Form(contraction="split_conv"))


@pytest.mark.parametrize("target", ["cuda:sm_80", "rocm:gfx942"])
def test_the_gpu_convolution_contracts_with_matrix_instructions(tmp_path, target):
    """ResNet-50's 3x3 layer 64 -> 64 at 56x56, batch 8, channels-first: the two splits, grad_out's padding, and one
    convolution over 3 x 64 channels in bfloat16 with float32 accumulators, on the matrix instructions."""
    problem = _problem(batch=8, in_channels=64, out_channels=64, input_spatial=(56, 56))
    one_matrix_contraction(problem, target, tmp_path, "conv_8x56x56x64x3x3x192_bf16xbf16xf32")


def test_no_rule_fuses_grad_outs_padding_into_the_split_convolution():
    """With IREE's pad fusion the split_conv modules of ResNet-50's 3x3 layers computed wrong answers on an H100 (the
    check refused all eight, docs/perf/h100-split-conv): no flag set of the split problem's modules carries it."""
    problem = _problem(batch=32, in_channels=64, out_channels=64, input_spatial=(56, 56))
    for target in (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942")):
        for spec in policy.module_specs(problem, target):
            assert "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops" not in spec.flags, spec.flags


# (batch, C, width): ResNet-50's four stride-1 3x3 layers and two drawn beside them, with the workgroup
# (rows, width, channels) and subgroup tiles the CUDA table's rule gives them (docs/perf/h100-split-conv-tiles)
RULE_TILES = {(32, 64, 56): ("1, 2, 64, 64, 0", "1, 1, 2, 4, 0"), (32, 128, 28): ("1, 4, 32, 128, 0", "1, 2, 1, 8, 0"),
              (32, 256, 14): ("1, 4, 16, 128, 0", "1, 2, 1, 4, 0"), (32, 512, 7): ("1, 4, 16, 128, 0", "1, 2, 1, 4, 0"),
              (64, 96, 20): ("1, 4, 32, 128, 0", "1, 2, 1, 8, 0"), (32, 48, 40): ("1, 2, 64, 64, 0", "1, 1, 2, 4, 0")}


@pytest.mark.parametrize("shape", list(RULE_TILES))
def test_cudas_rule_tiles_the_split_convolution_by_its_width_and_channels(shape):
    """Eight warps (256 threads) of 32 rows each, 64-128 rows a workgroup in whole rows of the width rounded up to
    16, 32 or 64, over 64 channels (C <= 64) or 128, bfloat16 mma.sync: on sm_80 only (gfx942 unmeasured)."""
    batch, c, width = shape
    problem = _problem(batch=batch, in_channels=c, out_channels=c, input_spatial=(width, width))
    config = policy.configs_for(problem, targets.parse_target("cuda:sm_80"))[0]
    workgroup, subgroup = RULE_TILES[shape]
    assert f"workgroup = [{workgroup}]" in config and f"subgroup = [{subgroup}]" in config, config
    assert "workgroup_size = [256, 1, 1]" in config and "NV_MMA_SYNC_F32_16x8x16_BF16" in config, config
    assert f"compilation_info = {config}" in policy.module_spec(problem, targets.parse_target("cuda:sm_80")).mlir
    assert not policy.configs_for(problem, targets.parse_target("rocm:gfx942"))


# r3d_18's stride-1 3x3x3 layers at batch 8: the same rule at rank 3, rows of the last two spatial axes
# (docs/perf/h100-3d-tiles: 1.03-1.9x faster as modules)
RULE_TILES_3D = {(64, (16, 56, 56)): "1, 1, 2, 64, 64, 0", (128, (8, 28, 28)): "1, 1, 4, 32, 128, 0",
                 (512, (2, 7, 7)): "1, 1, 4, 16, 128, 0"}


@pytest.mark.parametrize("shape", list(RULE_TILES_3D))
def test_cudas_rule_tiles_the_3d_split_convolution_alike(shape):
    c, spatial = shape
    problem = _problem(batch=8, in_channels=c, out_channels=c, input_spatial=spatial, filter_spatial=(3, 3, 3),
                       layout="NCDHW")
    config = policy.configs_for(problem, targets.parse_target("cuda:sm_80"))[0]
    assert f"workgroup = [{RULE_TILES_3D[shape]}]" in config and "workgroup_size = [256, 1, 1]" in config, config


@pytest.mark.parametrize("spatial, channels, layout, bf16x3, f16x1", [
    ((16, 56, 56), 64, "NDHWC", "1, 1, 2, 64, 64, 0", "1, 1, 4, 64, 64, 0"),
    ((8, 28, 28), 128, "NCDHW", "1, 1, 4, 32, 128, 0", "1, 1, 8, 32, 128, 0"),
    ((14, 14), 256, "NCHW", "1, 4, 16, 128, 0", "1, 8, 16, 128, 0"),
    ((7, 7), 512, "NHWC", "1, 4, 16, 128, 0", "1, 8, 16, 128, 0"),
    ((2, 7, 7), 512, "NDHWC", "1, 1, 4, 16, 128, 0", "1, 1, 4, 16, 64, 0"),
    ((2, 7, 7), 512, "NCDHW", "1, 1, 4, 16, 128, 0", "1, 1, 4, 16, 64, 0")])
def test_f16x1s_split_convolution_takes_twice_the_rows(spatial, channels, layout, bf16x3, f16x1):
    """f16x1's convolution is over K channels, the bfloat16 problem's size (bf16x3's over 3K): the CUDA table gives
    it the bfloat16 3-D rule's 256 rows in at most 8 rows of the phase (docs/perf/h200-f16x1-data/exp43.log), float16
    mma.sync, where bf16x3 keeps 128 rows in at most 4; but a 3-D one of at most 98 positions an image (r3d_18's 512
    channels at 2x7x7, 64 workgroups so at batch 8) 4 rows by 64 channels (docs/perf/h200-split-weight-rows/
    exp66_split_conv_column_tiles.log: 0.738 / 0.733 -> 0.621 / 0.653 ms); ResNet-50's 2-D 7x7 layer keeps 8 rows by
    128 (64 channels ran slower there)."""
    cuda = targets.parse_target("cuda:sm_80")
    for precision, workgroup, kind in (("bf16x3", bf16x3, "BF16"), ("f16x1", f16x1, "F16")):
        problem = _problem(batch=8 if len(spatial) == 3 else 32, in_channels=channels, out_channels=channels,
                           input_spatial=spatial, filter_spatial=(3,) * len(spatial), layout=layout, precision=precision)
        config = policy.configs_for(problem, cuda)[0]
        assert f"workgroup = [{workgroup}]" in config and f"NV_MMA_SYNC_F32_16x8x16_{kind}" in config, config


@pytest.mark.parametrize("params", [dict(in_channels=32), dict(precision="float32"),
                                    dict(filter_spatial=(1, 1), padding=0),
                                    dict(input_spatial=(28,), filter_spatial=(3,), layout="NCW")])
def test_cudas_tile_rule_leaves_the_other_problems_to_iree(params):
    """Below 48 channels (the 64-wide tile mostly padding: measured slower), the gemm form's one-tap problems and
    1-D problems keep IREE's own tiles; float32 arithmetic (no split) takes the SIMT rule's, no matrix instruction."""
    problem = _problem(**{**dict(batch=32, in_channels=64, out_channels=64, input_spatial=(28, 28)), **params})
    configs = policy.configs_for(problem, targets.parse_target("cuda:sm_80"))
    assert not any("mma_kind" in config for config in configs.values())
    assert bool(configs) == (problem.precision == "float32")


def test_the_rules_tiles_reach_the_compiled_convolution(tmp_path):
    """The configuration pinned on the split convolution is the one IREE compiles (a rebuilt op would drop it)."""
    problem = _problem(batch=8, in_channels=128, out_channels=128, input_spatial=(28, 28))
    lowered = one_matrix_contraction(problem, "cuda:sm_80", tmp_path, "conv_8x28x28x128x3x3x384_bf16xbf16xf32")
    configured = configured_ir(tmp_path)
    assert "workgroup = [1, 4, 32, 128, 0]" in configured and "workgroup_size = [256, 1, 1]" in configured
    assert lowered
