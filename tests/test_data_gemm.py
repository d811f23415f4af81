"""conv_bwd_data's gemm form (ops/operators/data_gemm.py): a float32 one-tap, unpadded backward-data as bfloat16 x 3, as
the GEMM it is. Each result within bf16x3's rounding bound of its magnitude (conftest.bf16x3_bound: 3 x 2^-16 a
product at most) on the CPU in every layout and stride (at a ResNet layer's size too); the known-answer check allows
a split product 2^-15 (problem.SPLIT_ROUNDOFF) and refuses a lost lo part; what takes it (split problems, by
ops.torch where PyTorch allows TF32 on a GPU); and the compiled GPU code contracts with matrix instructions (mma.sync
on sm_80, MFMA on gfx942), with no scratch. Problems whose axes are whole numbers of strides also take it in float32
on a GPU (one GEMM per image channels-first, one of the rows (n, o) channels-last, CUDA's rule tiling it; at stride 1
then not split, strided its rows placed by one elementwise pass), never on the CPU."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ops import api, known_answer, policy, targets
from ops.precision import data_gradient_precision
from ops.operators import conv_bwd_data, stride_phases

from conftest import bf16x3_bound
from lowering import (compile_and_dump, configured_ir, gpu_module_on_cpu, one_matrix_contraction,
                      tile_lists)


def _problem(**params):
    base = dict(batch=3, in_channels=8, out_channels=32, input_spatial=(7, 6), stride=1, padding=0, layout="NCHW",
                dtype="float32")
    params = {**base, **params}
    params.setdefault("filter_spatial", (1,) * len(params["input_spatial"]))
    return conv_bwd_data.problem_from_params(**params)


def _bf16(a):
    import ml_dtypes

    return a.astype(ml_dtypes.bfloat16).astype(np.float64)


# layouts of 1-3 spatial axes; strides that leave rows and columns of grad_in zero, and x's unread end
CASES = {"nchw": {}, "nhwc": dict(layout="NHWC"), "nchw_s2": dict(stride=2), "nhwc_s2x1": dict(layout="NHWC", stride=(2, 1)),
         "ncw_s3": dict(input_spatial=(10,), stride=3, layout="NCW"),
         "ndhwc_s2": dict(input_spatial=(4, 5, 3), stride=2, layout="NDHWC", in_channels=5, out_channels=6)}


@pytest.mark.parametrize("name", list(CASES))
def test_bf16x3_is_within_its_rounding_bound_and_far_better_than_bfloat16(name, rng):
    problem = _problem(**CASES[name], precision="bf16x3")
    assert problem.name.endswith("_split_bf16x3") and conv_bwd_data.problem_from_params(**problem.params()) == problem
    _assert_split_accuracy(problem, rng)


def test_bf16x3_at_a_resnet_layers_size(rng):
    """ResNet-50's strided 1x1 downsample (256 -> 512, 56x56, stride 2) at batch 2: 1.6 M elements of grad_in."""
    problem = _problem(batch=2, in_channels=256, out_channels=512, input_spatial=(56, 56), stride=2, precision="bf16x3")
    assert math.prod(problem.input_shape) > 1 << 18
    _assert_split_accuracy(problem, rng)


def _assert_split_accuracy(problem, rng):
    grad_out, weight = (rng.standard_normal(s).astype(np.float32) for s in (problem.output_shape, problem.weight_shape))
    got = np.asarray(api.conv_bwd_data(grad_out, weight, input_shape=problem.input_shape, stride=problem.stride,
                                       layout=problem.layout, precision="bf16x3"), np.float64)
    want = conv_bwd_data.reference(problem, [grad_out, weight])
    magnitude = conv_bwd_data.reference(problem, [np.abs(grad_out), np.abs(weight)])
    unread = magnitude == 0  # positions no output reads: exactly zero
    assert np.all(got[unread] == 0)
    error = np.abs(got - want)[~unread] / magnitude[~unread]
    assert error.max() < bf16x3_bound(problem.out_channels), error.max()  # one tap: K products a position
    bfloat16 = conv_bwd_data.reference(problem, [_bf16(grad_out), _bf16(weight)])
    assert (np.abs(bfloat16 - want)[~unread] / magnitude[~unread]).max() > 16 * error.max()  # the lo parts count


def test_the_split_is_checked_with_its_own_tolerance_and_a_lost_lo_part_fails():
    problem = _problem(stride=2, precision="bf16x3")
    inputs = known_answer.inputs_for(problem)
    hi_only = conv_bwd_data.reference(problem, [_bf16(a) for a in inputs]).astype(np.float32)
    assert not known_answer.judge(problem, inputs, [hi_only]).passed
    right = conv_bwd_data.reference(problem, inputs).astype(np.float32)
    assert known_answer.judge(problem, inputs, [right]).passed


@pytest.mark.parametrize("params, message", [
    (dict(dtype="bfloat16"), "precision bf16x3 takes float32 problems of one group with a one-tap filter"),
    (dict(filter_spatial=(3, 3), padding=1, stride=2), "precision bf16x3 takes float32 problems"),  # strided taps
    (dict(padding=1), "precision bf16x3 takes float32 problems"),  # one tap, padded: beyond the filter's reach
])
def test_bf16x3_takes_float32_one_tap_unpadded_or_stride_1_problems_only(params, message):
    with pytest.raises(ValueError, match=f"conv_bwd_data: {message}"):
        _problem(**params, precision="bf16x3")
    with pytest.raises(ValueError, match="conv_bwd_data: precision must be one of float32, bf16x3, bf16x6, f16x1, but got 'tf32'"):
        _problem(precision="tf32")
    # f16x1 takes strided taps too (data_scaled), one group only: a grouped problem is grouped_conv_bwd_data's
    assert _problem(filter_spatial=(3, 3), padding=1, stride=2, precision="f16x1").precision == "f16x1"
    with pytest.raises(ValueError, match=r"conv_bwd_data: precision f16x1 takes .* \(f16x1 also of a stride above 1\)"):
        _problem(filter_spatial=(3, 3), padding=1, stride=2, precision="f16x1", groups=2, in_channels=4, out_channels=16)


def test_split_problems_take_the_gemm_form_and_float32_ones_in_whole_strides_on_a_gpu():
    """Float32 problems take the gemm form in every layout on a GPU where each axis is a whole number of strides:
    first on CUDA in the layouts its rule names (NCHW, NCDHW, NHWC, NDHWC), last elsewhere; never on the CPU."""
    for target in (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu")):
        assert [f.contraction for f in policy.forms_for(_problem(precision="bf16x3"), target)] == ["gemm"]
        for params in (dict(), dict(stride=2, input_spatial=(8, 6)), dict(stride=(3, 2), input_spatial=(9, 6)),
                       dict(layout="NHWC"), dict(layout="NHWC", stride=2, input_spatial=(8, 6)),
                       dict(layout="NDHWC", input_spatial=(4, 5, 3)), dict(layout="NWC", input_spatial=(7,))):
            float32 = [f.contraction for f in policy.forms_for(_problem(**params), target)]
            named = params.get("layout", "NCHW") != "NWC"
            assert ("gemm" in float32) == (not target.cpu)
            assert (float32[0] == "gemm") == (target.backend == "cuda" and named)  # ROCm has it last, unmeasured
        # 7 rows at stride 2: grad_out's 4 rows reach 8, past grad_in's end
        for params in (dict(stride=2), dict(layout="NHWC", stride=2), dict(dtype="float16")):
            assert all(f.contraction != "gemm" for f in policy.forms_for(_problem(**params), target))
    for params in (dict(layout="NHWC", stride=2), dict(stride=2)):
        with pytest.raises(ValueError, match="conv_bwd_data: the gemm form computes float32 one-tap, unpadded"):
            conv_bwd_data.render(_problem(**params), stride_phases.Form(contraction="gemm"))
    with pytest.raises(ValueError, match="conv_bwd_data: the scaled stride phases compute float32 problems of one "
                                         "group, several taps and a stride above 1 as f16x1"):
        conv_bwd_data.render(_problem(precision="bf16x3"), stride_phases.Form())


@pytest.mark.parametrize("params, reduced, expected", [
    (dict(batch=32), True, "f16x1"),                             # 32 x 42 rows
    (dict(), False, "float32"),
    (dict(batch=3), True, "float32"),                              # 3 x 42 rows: no whole 32-row blocks
    (dict(batch=32, out_channels=24), True, "float32"),            # K not in whole 32-channel blocks
    (dict(batch=32, layout="NHWC", in_channels=32), True, "float32"),  # channels-last, fewer than 64 columns
    (dict(batch=32, layout="NHWC", in_channels=64), True, "f16x1 only"),  # bf16x6 from 128 columns, f16x1 from 64
    (dict(batch=32, layout="NHWC", in_channels=128), True, "f16x1 only"),  # stride 1: f16x1 beats the float32 GEMM
    (dict(batch=32, layout="NHWC", in_channels=128, input_spatial=(14, 14), stride=2), True, "f16x1"),
    (dict(batch=32, filter_spatial=(3, 3), padding=1), True, "f16x1"),    # stride 1: the split_conv form
    (dict(batch=32, filter_spatial=(3, 3), padding=1, stride=2), True, "f16x1 only"),  # the scaled stride phases
    (dict(batch=32, dtype="bfloat16"), True, "bfloat16"),
    # channels-first, stride 1, positions in whole SIMT tiles (16, 49): the float32 GEMM's tiles (gemm_tiles)
    (dict(batch=32, input_spatial=(56, 56)), True, "float32"),
    (dict(batch=32, input_spatial=(7, 7)), True, "f16x1 only"),  # F16X1_GEMM_MAX_POSITIONS
    (dict(batch=32, input_spatial=(1, 1)), True, "float32"),  # one position: the squeeze-excite tiles (unmeasured)
    (dict(batch=32, input_spatial=(56, 56), stride=2), True, "f16x1"),   # strided: the split's strided store
    (dict(batch=32, input_spatial=(56, 56), layout="NHWC", in_channels=128), True, "f16x1 only"),
    (dict(batch=32, input_spatial=(4, 14, 14), layout="NDHWC", in_channels=128), True, "f16x1 only"),
    # NWC, which the rule does not name (unmeasured): split
    (dict(batch=32, input_spatial=(196,), layout="NWC", in_channels=128), True, "f16x1"),
])
def test_ops_torch_splits_backward_data_where_reduced_precision_is_allowed(params, reduced, expected):
    """``expected`` where PyTorch allows TF32 (``reduced``); "f16x1 only": f16x1 there, but float32 where it does not
    (bf16x6 takes the problems bf16x3 would: the scaled stride phases and the float32 GEMM's wins are f16x1's)."""
    problem = _problem(**params)
    precision = data_gradient_precision(problem, "bf16x3" if reduced else "float32")
    tf32 = expected.split()[0]
    assert precision == (problem.precision if tf32 == "bfloat16" else tf32)
    # without reduced precision, a CUDA driver allows bf16x6 (float32 products) where it would split
    six = data_gradient_precision(problem, "bf16x6")
    assert six == ("bf16x6" if expected == "f16x1" else problem.precision if expected == "bfloat16" else "float32")


@pytest.mark.parametrize("target", ["cuda:sm_80", "rocm:gfx942"])
def test_the_gpu_module_contracts_with_matrix_instructions(tmp_path, target):
    """ResNet-50's 1x1 layer 1024 -> 256 at 14x14, batch 8, channels-first: one 2-D GEMM of the rows (the table's
    flag keeps IREE from folding the store's transpose into it, which made it 5-D and padded its positions per
    image into the next image: wrong on an H200), then the transpose."""
    problem = _problem(batch=8, in_channels=1024, out_channels=256, input_spatial=(14, 14), precision="bf16x3")
    one_matrix_contraction(problem, target, tmp_path, "matmul_like_1568x1024x3x256_")


@pytest.mark.parametrize("probe, cases, split", [("gemm_probe", 7 * 8, 14), ("data_probe", 13 * 2 * 2, 26)])
def test_the_probes_list_their_cases(probe, cases, split):
    """build_tools' per-layer probes of the gemm forms (weight, data), smoke-tested: their cases build (running
    them needs a GPU)."""
    import subprocess
    import sys

    listed = subprocess.run([sys.executable, "-m", f"build_tools.{probe}", "list"], capture_output=True, text=True,
                            check=True).stdout.splitlines()
    assert len(listed) == cases and sum(line.endswith("_split_bf16x3") for line in listed) == split


CUDA = targets.parse_target("cuda:sm_80")


@pytest.mark.parametrize("spatial, tile, tf32", [
    ((56, 56), "thread = [1, 4, 4, 0], workgroup = [1, 32, 16, 0]", "float32"),
    ((14, 14), "thread = [1, 4, 7, 0], workgroup = [1, 16, 49, 0]", "f16x1"),  # precision.F16X1_GEMM_MAX_POSITIONS
    ((10, 10), "None", "f16x1")])
def test_cudas_rule_tiles_the_float32_gemm_where_its_positions_divide(spatial, tile, tf32):
    """The CUDA table puts the float32 gemm form first, with SIMT tiles of 16 (or 49) positions a workgroup; 100
    positions take neither: IREE's default tiles (the dispatch IREE made of the stride-phase form, measured as fast).
    Where PyTorch allows TF32, the problem is f16x1 but where the float32 GEMM's tiles of 16 positions beat it."""
    problem = _problem(batch=32, in_channels=64, out_channels=256, input_spatial=spatial)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm"
    assert tile in policy.configs_for(problem, CUDA, form).get(0, str(None))
    assert data_gradient_precision(problem, "bf16x3") == tf32
    assert data_gradient_precision(problem, "bf16x6") == ("bf16x6" if tile == "None" else "float32")


@pytest.mark.parametrize("channels, spatial, stride, workgroup", [
    ((64, 128), (16, 56, 56), 2, [1, 32, 16, 0]),   # r3d_18's downsamples: 8x28x28 output positions
    ((256, 512), (4, 14, 14), 2, [1, 16, 49, 0]),   # 2x7x7
    ((1024, 256), (4, 14, 14), 1, [1, 32, 16, 0]),  # a 3-D bottleneck's 1x1x1 layer
])
def test_cudas_rule_takes_3d_layers_too(channels, spatial, stride, workgroup):
    """The rule names NCDHW as NCHW, at either stride (docs/perf/h100-3d-data-tiles/exp21.log: 2.1-9.5x on an H100)."""
    problem = _problem(batch=8, in_channels=channels[0], out_channels=channels[1], input_spatial=spatial,
                       stride=stride, layout="NCDHW")
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm" and tile_lists(policy.configs_for(problem, CUDA, form)[0])["workgroup"] == workgroup


@pytest.mark.parametrize("channels, spatial, workgroup", [
    ((440, 440), (7, 7), [1, 20, 49, 0]),     # RegNetY-400MF's: 16 does not divide 440; 20, a multiple of 4 from 8 to 32
    ((104, 104), (28, 28), [1, 52, 16, 0]),   # 32 does not divide 104; 52, the one from 16 to 64
    ((144, 24), (56, 56), [1, 36, 16, 0]),    # MobileNetV2's 144 -> 24: 36 is nearer 32 than 24 or 48
    ((110, 440), (14, 14), [1, 16, 49, 0]),   # no multiple of 4 from 8 to 32 divides 110: the rule's 16, as before
    ((256, 64), (56, 56), [1, 32, 16, 0]),    # whole 32s: the rule's own
])
def test_cudas_rule_fits_the_gemm_workgroups_channels_to_the_problems(channels, spatial, workgroup):
    """Where the rule's channels a workgroup do not divide the problem's (grad_in's c), the divisor of them nearest
    the rule's, a multiple of the thread's 4 from half to twice the rule's (``fit: divisor``; tiles that do not
    divide ran 1.5-3x slower on an H100: docs/perf/h100-unaligned-weight/exp9.log)."""
    problem = _problem(batch=32, in_channels=channels[0], out_channels=channels[1], input_spatial=spatial)
    form = policy.forms_for(problem, CUDA)[0]
    tiles = tile_lists(policy.configs_for(problem, CUDA, form)[0])
    assert form.contraction == "gemm" and tiles["workgroup"] == workgroup
    assert f"workgroup_size = [{workgroup[1] // 4 * (workgroup[2] // tiles['thread'][2])}, 1, 1]" in \
        policy.configs_for(problem, CUDA, form)[0]


@pytest.mark.parametrize("spatial, tile", [((56, 56), "thread = [1, 4, 4, 0], workgroup = [1, 32, 16, 0]"),
                                           ((28, 28), "thread = [1, 4, 7, 0], workgroup = [1, 16, 49, 0]")])
def test_cudas_rule_tiles_the_strided_float32_gemm_which_stays_split_where_tf32_is_allowed(spatial, tile):
    """ResNet-50's 1x1 stride-2 downsample (256 -> 512): the float32 gemm form first, tiled by grad_out's
    positions (28 x 28, 14 x 14); where PyTorch allows TF32 the split, measured faster strided."""
    problem = _problem(batch=32, in_channels=256, out_channels=512, input_spatial=spatial, stride=2)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm" and tile in policy.configs_for(problem, CUDA, form)[0]
    assert data_gradient_precision(problem, "bf16x3") == "f16x1"
    assert data_gradient_precision(problem, "float32") == "float32"


@pytest.mark.parametrize("params, generics", [
    (dict(batch=2, in_channels=144, out_channels=24, input_spatial=(56, 56)), 1),
    (dict(batch=3, in_channels=5, out_channels=7, input_spatial=(4, 3, 5), layout="NCDHW"), 1),
    (dict(batch=2, in_channels=256, out_channels=512, input_spatial=(56, 56), stride=2), 2),
    (dict(batch=3, in_channels=5, out_channels=7, input_spatial=(4, 3, 6), stride=(2, 1, 3), layout="NCDHW"), 2),
    (dict(batch=2, in_channels=144, out_channels=24, input_spatial=(56, 56), layout="NHWC"), 1),
    (dict(batch=2, in_channels=256, out_channels=512, input_spatial=(56, 56), stride=2, layout="NHWC"), 2),
    (dict(batch=3, in_channels=5, out_channels=7, input_spatial=(4, 3, 6), stride=(2, 1, 3), layout="NDHWC"), 2),
], ids=["mobilenet_144_24", "3d", "resnet_downsample_s2", "3d_strides_2_1_3", "nhwc_mobilenet_144_24",
        "nhwc_resnet_downsample_s2", "ndhwc_strides_2_1_3"])
def test_the_float32_gemm_computes_the_reference(params, generics, rng, tmp_path):
    """The CUDA module of the float32 gemm form, its tile cut, on the CPU: MobileNetV2's 144 -> 24 layer at batch 2
    (903 K elements of grad_in), ResNet-50's strided downsample at batch 2 (1.6 M, three quarters of them zero), and
    3-D problems, channels-first and channels-last; one generic and no transposes, strided a second that places the
    rows."""
    problem = _problem(**params)
    spec = policy.module_spec(problem, CUDA, options=stride_phases.Form(contraction="gemm"))
    assert spec.mlir.count("= linalg.generic") == generics and "linalg.transpose" not in spec.mlir
    assert "tensor.insert_slice" not in spec.mlir  # no strided insert (a slow copy dispatch in IREE 3.13)
    fitted = "workgroup = [16, 36, 0]" if problem.channels_last else "workgroup = [1, 36, 16, 0]"
    assert params["in_channels"] != 144 or fitted in spec.mlir  # fitted to 144 channels
    error, scale = gpu_module_on_cpu(problem, spec, conv_bwd_data, rng, tmp_path, problem.input_shape)
    assert error <= 1e-5 * scale


def test_cudas_rule_tiles_channels_last_rows_not_images():
    """Channels-last, the GEMM's rows are grad_out's (n, o) merged: ResNet-50's 512 -> 2048 layer at 7x7 (49
    positions an image, 1,568 rows at batch 32) takes the 16-row tile, which divides the rows though not an
    image's positions (docs/perf/h200-cl-1x1-gemm/exp23.log: 0.199 ms, 32 x 32 0.263, IREE's default 1.25)."""
    problem = _problem(batch=32, in_channels=512, out_channels=2048, input_spatial=(7, 7), layout="NHWC")
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm"
    assert tile_lists(policy.configs_for(problem, CUDA, form)[0]) == dict(
        workgroup=[16, 32, 0], thread=[4, 4, 0], reduction=[0, 0, 4])


@pytest.mark.parametrize("channels, spatial, workgroup", [((110, 440), (1, 1), [1, 22, 0]),
                                                          ((20, 480), (1, 1, 1), [1, 20, 0])])
def test_a_squeeze_excite_layers_gemm_keeps_cudas_tiles_and_computes_the_reference(channels, spatial, workgroup, rng,
                                                                                    tmp_path):
    """One position an image (RegNet's and EfficientNet's squeeze-excite layers): the generic leaves the unit
    position dim out (``data_gemm.one_position``), so that IREE keeps the CUDA rule's tiles (an image and the
    channels' divisor nearest 32 a workgroup, an output a thread) rather than its default, the whole GEMM in one
    workgroup; the module computes the reference on the CPU, its tile cut."""
    problem = _problem(batch=32, in_channels=channels[0], out_channels=channels[1], input_spatial=spatial,
                       layout="NCHW" if len(spatial) == 2 else "NCDHW")
    spec = policy.module_spec(problem, CUDA)
    assert "(n, c, k) -> (n, k)" in spec.mlir and tile_lists(spec.mlir)["workgroup"] == workgroup
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path / "cuda", spec.extra_flags)
    configured = configured_ir(tmp_path / "cuda")
    assert f"workgroup = [{', '.join(map(str, workgroup))}]" in configured
    assert "workgroup_size = [{}, 1, 1]".format(workgroup[1]) in configured
    error, scale = gpu_module_on_cpu(problem, spec, conv_bwd_data, rng, tmp_path, problem.input_shape)
    assert error <= 1e-5 * scale
