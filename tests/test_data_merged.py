"""The merged form of depthwise backward-data (ops/operators/data_merged.py, mlir/data_merged.mlir): every stride
phase in one generic over grad_in viewed phase-major. Its axis algebra computes each term of the identity once; the
CUDA table's rules give it to strided depthwise problems, with its tile and the pad fusion flag, reading grad_out in
place (no pad, no flag) at 5x5 and on float32 channels-last layers of up to 784 output positions, and to stride-1
ones in place (IREE's tiling); the CUDA module, its GPU attributes cut, computes the float64 reference on the CPU at
MobileNetV2's sizes, padded and in place; problems it cannot take keep the stride-phase forms, and the CPU never
takes it."""

from __future__ import annotations

import itertools

import pytest

from ops import data_tiles, geometry, policy, targets
from ops.operators import data_merged, grouped_conv_bwd_data as data

from grouped_bwd_data_cases import depthwise
from lowering import compile_and_dump, configured_ir, gpu_module_on_cpu

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))
PAD_FUSION = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"


def _depthwise(**params):
    return depthwise(**{"stride": 2, **params})


@pytest.mark.parametrize("stride", [1, 2, 3, 4])
def test_the_merged_axes_compute_each_identity_term_once(stride):
    """Every (i, f, o) with s*o + f = i + p_lo, 0 <= o < out, comes from exactly one (m, r, u) with its tap on the
    filter, and every read of the padded grad_out lies inside it (a tap off the filter reads nothing)."""
    for rows, window, pad_lo, pad_hi in itertools.product(range(1, 7), range(1, 6), range(0, 4), range(0, 3)):
        in_size = rows * stride
        out_size = geometry.conv_output_size(in_size, window, stride, 1, pad_lo, pad_hi)
        if out_size < 1:
            continue
        axis = geometry.merged_phase_axis(in_size, out_size, window, stride, pad_lo)
        computed = []
        for m, r, u in itertools.product(range(axis.rows), range(stride), range(axis.taps)):
            f, o = axis.first_tap + r - stride * u, m + axis.shift + u
            if 0 <= f < window:
                assert 0 <= o + axis.pad[0] < out_size + sum(axis.pad)
                if 0 <= o < out_size:
                    computed.append((stride * m + r, f, o))
        expected = {(i, f, o) for i, f, o in itertools.product(range(in_size), range(window), range(out_size))
                    if stride * o + f == i + pad_lo}
        assert len(computed) == len(set(computed)) and set(computed) == expected


BIG = dict(batch=2, groups=96, input_spatial=(112, 112))  # 56x56 output positions
FIVE = dict(filter_spatial=(5, 5), padding=2)


@pytest.mark.parametrize("params, read, thread", [
    (dict(), "padded", "[1, 1, 1, 1, 1, 4, 0, 0]"),
    (dict(layout="NCHW", dtype="float32"), "padded", "[1, 1, 1, 1, 2, 2"),
    (dict(dtype="float32", **BIG), "padded", "[1, 1, 1, 1, 1, 4, 0, 0]"),
    (dict(dtype="float32"), "in_place", "[1, 1, 1, 1, 1, 4, 0, 0]"),  # float32 channels-last, up to 28x28 outputs
    (dict(**FIVE), "in_place", "[1, 1, 1, 1, 1, 4, 0, 0]"),  # 5x5: in place in every layout
    (dict(layout="NCHW", dtype="float32", **FIVE), "in_place", "[1, 1, 1, 1, 2, 2"),
    (dict(layout="NCHW", dtype="float32", stride=1), "in_place", None),  # stride 1: in place, IREE's tiling
    (dict(dtype="float32", stride=1), "in_place", None),
    (dict(stride=1), "in_place", None),
], ids=["bf16_cl_s2", "f32_nchw_s2", "f32_cl_s2_56x56", "f32_cl_s2", "bf16_cl_5x5_s2", "f32_nchw_5x5_s2",
        "f32_nchw_s1", "f32_cl_s1", "bf16_cl_s1"])
def test_cudas_rules_choose_the_merged_form_with_its_tile_and_the_pad_fusion(params, read, thread):
    """A padded module takes the pad fusion flag; one reading grad_out in place has no pad and no flag of its own
    (channels-first strided ones get the stride phases' rule's, which leaves their code as it is)."""
    problem = _depthwise(**params)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "merged" and form.grad_out_read == read
    phases_flag = problem.layout == "NCHW" and problem.dtype == "float32" and max(problem.stride) > 1
    assert (PAD_FUSION in policy.flags_for(problem, CUDA, form)) == (read == "padded" or phases_flag)
    tile = policy.configs_for(problem, CUDA, form).get(0)
    assert (f"thread = {thread}" in tile) if thread else tile is None


@pytest.mark.parametrize("groups, spatial, workgroup, thread", [
    (32, (112, 112), [1, 1, 2, 112], [1, 1, 1, 2]),    # a row of 56 threads: 2 rows
    (144, (56, 56), [1, 1, 4, 56], [1, 1, 1, 2]),      # 28 threads a row: 4 rows
    (192, (28, 28), [1, 1, 9, 28], [1, 1, 1, 2]),      # 14 a row: 9 rows, the last workgroup's rows partly off
    (960, (7, 7), [1, 2, 7, 7], [1, 1, 1, 1]),         # 7 (odd: a position a thread) x 7 rows x 2 groups
    (6, (5, 300), [1, 1, 1, 300], [1, 1, 1, 2]),       # 150 threads a row: one row
    (8, (6, 4, 10), [1, 4, 1, 4, 10], [1, 1, 1, 1, 2]),  # 3-D: the middle axis whole, 4 groups (6 would not divide)
])
def test_whole_rows_fit_any_image_near_128_threads(groups, spatial, workgroup, thread):
    """The stride-1 channels-first rule carries to images no table names: the last axis whole, rows of the axis
    before it and then groups to bring a workgroup nearest 128 threads (MobileNetV2's layers, H200: 2.84 -> 2.31 ms
    against IREE's tiling, docs/perf/h200-depthwise-gather)."""
    rank = len(spatial)
    problem = _depthwise(groups=groups, input_spatial=spatial, filter_spatial=(3,) * rank, stride=1,
                         layout={2: "NCHW", 3: "NCDHW"}[rank], dtype="float32")
    assert data_tiles.whole_rows(problem, 128, 2) == (workgroup, thread)


@pytest.mark.parametrize("params", [dict(dilation=2, padding=2), dict(input_spatial=(13, 12)),
                                    dict(groups=8, in_channels=2, out_channels=2)],
                         ids=["dilated", "size_not_a_multiple_of_the_stride", "grouped"])
def test_problems_it_cannot_take_keep_the_stride_phases(params):
    problem = _depthwise(**params)
    assert not data_merged.applies(problem)
    assert all(form.contraction != "merged" for form in policy.forms_for(problem, CUDA))
    with pytest.raises(ValueError, match="the merged form takes depthwise problems"):
        data.render(problem, data.Form(contraction="merged"))


def test_only_the_merged_form_reads_in_place_and_the_other_read_stays_a_fallback():
    """A strided 3x3 problem the in-place rules do not name keeps the padded form first, the in-place one last;
    one they name has the padded form after it."""
    with pytest.raises(ValueError, match="grad_out_read 'in_place' takes the merged form, but the contraction is"):
        data.Form(contraction="generic", grad_out_read="in_place")
    forms = policy.forms_for(_depthwise(), CUDA)
    assert forms[0].grad_out_read == "padded" and forms[-1].grad_out_read == "in_place"
    forms = [f for f in policy.forms_for(_depthwise(dtype="float32"), CUDA) if f.contraction == "merged"]
    assert [f.grad_out_read for f in forms] == ["in_place", "padded"]
    cube = _depthwise(input_spatial=(4, 12, 12), filter_spatial=(3, 3, 3), layout="NDHWC", dtype="float32")
    assert policy.forms_for(cube, CUDA)[0].grad_out_read == "padded"  # 27 taps, but 3-D: unmeasured


def test_conv_bwd_data_refuses_it():
    from ops.operators import conv_bwd_data

    problem = conv_bwd_data.problem_from_params(batch=2, in_channels=4, out_channels=4, input_spatial=(8, 8),
                                                filter_spatial=(3, 3), stride=2, padding=1, dtype="float32")
    with pytest.raises(ValueError, match="conv_bwd_data: the merged form takes depthwise problems"):
        conv_bwd_data.render(problem, conv_bwd_data.Form(contraction="merged"))


def test_an_epilogue_keeps_the_stride_phases():
    problem = data.problem_from_params(groups=4, batch=2, in_channels=1, out_channels=1, input_spatial=(8, 8),
                                       filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float16",
                                       epilogue="add", d_kinds=("full",))
    assert not data_merged.applies(problem) and policy.forms_for(problem, CUDA)[0].contraction != "merged"


def test_the_cpu_never_takes_it_and_rocm_only_last():
    """llvm-cpu's tiling of the merged generic ran 17 ms against its stride-phase form's 4.5 (MobileNetV2's g96
    stride-2 layer at batch 4, Zen 4): the CPU keeps its forms; ROCm has the form but no rule choosing it."""
    problem = _depthwise()
    assert all(form.contraction != "merged" for form in policy.forms_for(problem, CPU))
    assert [form.contraction for form in policy.forms_for(problem, ROCM)][-1] == "merged"
    assert policy.forms_for(problem, ROCM)[0].contraction != "merged"


@pytest.mark.parametrize("params, workgroup", [
    (dict(), "[1, 2, 2, 8, 2, 32, 0, 0]"),
    (dict(stride=1, layout="NCHW", dtype="float32"), "[1, 1, 9, 28, 0, 0]"),
], ids=["bf16_cl_s2", "f32_nchw_s1"])
def test_the_tile_reaches_the_compiled_contraction(params, workgroup, tmp_path):
    """Stride 1 renders no residue dims and no mask of ones: IREE folds either away and rebuilds the contraction
    without its tile (it ran at IREE's default, 32 threads a workgroup, before). The padded form's module: stride 1
    reads in place first now, the padded form its fallback."""
    problem = _depthwise(batch=4, input_spatial=(28, 28), groups=64, **params)
    spec = policy.module_spec(problem, CUDA, options={"contraction": "merged", "grad_out_read": "padded"})
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert f"workgroup = {workgroup}" in configured


@pytest.mark.parametrize("params", [
    dict(batch=1, groups=96, input_spatial=(112, 112)),                       # MobileNetV2's, 1.2 M positions
    dict(batch=2, groups=144, input_spatial=(56, 56), layout="NCHW", dtype="float32"),
    dict(batch=2, groups=144, input_spatial=(56, 56), stride=1, layout="NCHW", dtype="float32"),
    dict(batch=2, groups=16, input_spatial=(20, 18), filter_spatial=(5, 5), padding=2, dtype="float32"),
    dict(batch=2, groups=8, input_spatial=(9, 12), stride=(3, 2), layout="NCHW"),
    dict(batch=2, groups=8, input_spatial=(4, 6, 8), filter_spatial=(3, 3, 3), stride=(1, 2, 2), layout="NCDHW",
         dtype="float32"),
    dict(batch=2, groups=8, input_spatial=(16,), filter_spatial=(3,), stride=2, layout="NWC", dtype="float32"),
], ids=["bf16_cl_mobilenet", "f32_nchw", "f32_nchw_s1", "f32_5x5", "bf16_nchw_s32", "f32_3d", "f32_1d"])
def test_the_cuda_module_computes_the_reference(params, rng, tmp_path):
    problem = _depthwise(**params)
    spec = policy.module_spec(problem, CUDA, options=data.Form(contraction="merged", grad_out_read="padded"))
    assert spec.mlir.count("= linalg.generic") == (2 if problem.dtype == "float32" else 3)  # gather, sum(, narrow)
    error, scale = gpu_module_on_cpu(problem, spec, data, rng, tmp_path, problem.input_shape)
    assert error <= (1e-5 if problem.dtype == "float32" else 1e-2) * scale


@pytest.mark.parametrize("params", [
    dict(batch=2, groups=144, input_spatial=(56, 56), layout="NHWC", dtype="float32"),   # MobileNetV2's, 0.9 M
    dict(batch=2, groups=32, input_spatial=(28, 28), layout="NHWC", dtype="bfloat16"),
    dict(batch=2, groups=16, input_spatial=(20, 18), filter_spatial=(5, 5), padding=2, layout="NHWC"),
    dict(batch=2, groups=8, input_spatial=(12, 10), filter_spatial=(3, 3), padding=(0, 2), layout="NHWC"),
    dict(batch=2, groups=8, input_spatial=(14, 15), layout="NCHW", dtype="float32"),
    dict(batch=2, groups=8, input_spatial=(4, 6, 8), filter_spatial=(3, 3, 3), layout="NDHWC", dtype="float32"),
    dict(batch=3, groups=8, input_spatial=(16,), filter_spatial=(3,), layout="NWC", dtype="float32"),
    dict(batch=1, groups=96, input_spatial=(112, 112), stride=2, layout="NHWC", dtype="float32"),  # 1.2 M positions
    dict(batch=2, groups=8, input_spatial=(9, 12), stride=(3, 2), layout="NCHW"),
    dict(batch=2, groups=8, input_spatial=(4, 6, 8), filter_spatial=(3, 3, 3), stride=(1, 2, 2), layout="NDHWC"),
    dict(batch=2, groups=16, input_spatial=(20, 18), filter_spatial=(5, 5), stride=2, padding=2, layout="NCHW",
         dtype="float32"),
], ids=["f32_nhwc_mobilenet", "bf16_nhwc", "5x5", "unpadded_rows", "nchw", "ndhwc", "nwc", "s2_nhwc_mobilenet",
        "s32_nchw", "s122_ndhwc", "s2_5x5_nchw"])
def test_the_module_reading_grad_out_in_place_computes_the_reference(params, rng, tmp_path):
    """No pad at all: each tap's grad_out position clamped onto it, zero selected off it, in both layouts and 1-D to
    3-D, where an axis is unpadded (no position off grad_out) and where a padding of 2 moves it; strided, the taps off
    the filter masked too."""
    problem = _depthwise(**{"stride": 1, **params})
    spec = policy.module_spec(problem, CUDA, options=data.Form(contraction="merged", grad_out_read="in_place"))
    assert "tensor.pad" not in spec.mlir and "%g_read = tensor.extract %grad_out" in spec.mlir
    error, scale = gpu_module_on_cpu(problem, spec, data, rng, tmp_path, problem.input_shape)
    assert error <= (1e-5 if problem.dtype == "float32" else 1e-2) * scale


def test_the_compiled_in_place_module_copies_no_padded_grad_out(tmp_path):
    """IREE fused the pad into the contraction (float32) or copied the padded grad_out in a slow_memcpy dispatch
    (bfloat16's named op): 1.7-3.2x the in-place module's time on an H200 (docs/perf/h200-depthwise-gather-nhwc)."""
    problem = _depthwise(batch=4, groups=32, input_spatial=(28, 28), stride=1, layout="NHWC")
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert "slow_memcpy" not in configured and "tensor.extract" in spec.mlir


def test_rocm_lists_the_in_place_read_last_and_compiles_it(tmp_path):
    """No AMD GPU here: the in-place read is ROCm's last fallback for a stride-1 depthwise problem, and compiles for
    gfx942 with no copy of a padded grad_out."""
    problem = _depthwise(batch=4, groups=32, input_spatial=(28, 28), stride=1)
    assert policy.forms_for(problem, ROCM)[-1].grad_out_read == "in_place"
    spec = policy.module_spec(problem, ROCM, options=data.Form(contraction="merged", grad_out_read="in_place"))
    lowered = compile_and_dump(problem.name, spec.mlir, "rocm:gfx942", tmp_path, spec.extra_flags)
    assert lowered.dispatches and not any("slow_memcpy" in d.name for d in lowered.dispatches)
