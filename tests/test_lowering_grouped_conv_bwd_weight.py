"""Lowering tests for grouped_conv_bwd_weight, read like IREE's lit tests: the rendered MLIR, then what the
compiled GPU code must show (dispatch configurations, gfx942 assembly, sm_80 PTX; no GPU needed).
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from iree.compiler import ir
from ops import catalog, gemm_policy, policy, targets
from ops.operators import grouped_conv_bwd_weight as op
from ops.operator import Lowering

from grouped_conv_bwd_weight_cases import PROBLEMS
from lowering import (compile_and_dump, compile_as_shipped, configured_ir, kernel_for, one_matrix_contraction, shipped,
                      without_gpu_configs, workgroup_counts)

SIXTEEN_BIT = ("float16", "bfloat16")
SPLIT_REDUCTION = "--iree-dispatch-creation-enable-split-reduction"


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def manifest_problems() -> dict:
    """The operator's entries of build_tools/manifests/ck_examples.json (CK's default, depthwise, ResNeXt)."""
    return {
        f"manifest_{entry['name']}": op.problem_from_params(**{k: _tuples(v) for k, v in entry["params"].items()})
        for entry in catalog.entries("ck_examples")
        if entry["op"] == op.OP
    }


GPU_PROBLEMS = {**PROBLEMS, **manifest_problems()}


# 16-bit problems that IREE 3.13 lowers without an MMA intrinsic (found, not wished): depthwise with one filter
# per channel (K = C = 1: a 1 x 9 GEMM per group) on both targets, and on sm_80 the ResNeXt layer (K = C = 4 per
# group: below mma.sync's 16x8x16 tile, where gfx942 has MFMA_F32_4x4x4x16B; no iterator order changes that).
NO_MMA = {
    "rocm:gfx942": {"manifest_mobilenetv2_dw"},
    "cuda:sm_80": {"manifest_mobilenetv2_dw", "manifest_resnext_32x4d"},
}


def expects_mma(name: str, target: str) -> bool:
    return GPU_PROBLEMS[name].dtype in SIXTEEN_BIT and name not in NO_MMA[target]


def test_the_manifest_has_the_ck_default_depthwise_and_resnext_problems():
    assert {"manifest_ck_default", "manifest_mobilenetv2_dw", "manifest_resnext_32x4d"} <= set(GPU_PROBLEMS)


def test_rendered_grouped_strided_asymmetric_padding():
    problem = PROBLEMS["2d_nhwc_g4_s2x1_asym"]  # N=3, G=4, C=2, K=3, 9x8 input, 3x3, stride (2, 1), pad ((1, 0), (2, 1))
    mlir = op.render(problem)
    with ir.Context():
        ir.Module.parse(mlir)
    # CHECK: func.func @grouped_conv_bwd_weight_2d_nhwc_float32_n3_g4_c2_k3_...(%x: !x, %grad_out: !grad_out, %dst: !grad_w {iree.abi.output = 0 : index})
    assert f"func.func @{problem.name}(%x: !x, %grad_out: !grad_out, %dst: !grad_w {{iree.abi.output = 0 : index}})" in mlir
    # CHECK: !x = tensor<3x9x8x8xf32>, !grad_out = tensor<3x4x9x12xf32>, !grad_w = tensor<12x3x3x2xf32>
    assert "!x = tensor<3x9x8x8xf32>" in mlir and "!grad_out = tensor<3x4x9x12xf32>" in mlir and "!grad_w = tensor<12x3x3x2xf32>" in mlir
    # CHECK: %x_read = tensor.extract_slice %x[0, 0, 0, 0] [3, 8, 8, 8]   (H: the 4 windows read rows -1..7, not 8)
    assert "%x_read = tensor.extract_slice %x[0, 0, 0, 0] [3, 8, 8, 8] [1, 1, 1, 1] : !x to tensor<3x8x8x8xf32>" in mlir
    # CHECK: tensor.expand_shape %x_read [[0], [1], [2], [3, 4]] output_shape [3, 8, 8, 4, 2]   (no batch split)
    assert "%x_unpadded_groups = tensor.expand_shape %x_read [[0], [1], [2], [3, 4]] output_shape [3, 8, 8, 4, 2]" in mlir
    # CHECK: %x_groups = tensor.pad %x_unpadded_groups low[0, 1, 2, 0, 0] high[0, 0, 1, 0, 0]   (only the zeros the
    # windows read: H needs none behind; padded after the split, so IREE can fuse the pad into the convolution)
    assert "%x_groups = tensor.pad %x_unpadded_groups low[0, 1, 2, 0, 0] high[0, 0, 1, 0, 0]" in mlir
    assert "} : tensor<3x8x8x4x2xf32> to !x_groups" in mlir
    # CHECK: tensor.expand_shape %grad_out [[0], [1], [2], [3, 4]] output_shape [3, 4, 9, 4, 3]
    assert "tensor.expand_shape %grad_out [[0], [1], [2], [3, 4]] output_shape [3, 4, 9, 4, 3]" in mlir
    # CHECK: one generic over (g, k, f0, f1, c | n, o0, o1): x[n, 2*o0 + f0, o1 + f1, g, c] * grad_out[n, o0, o1, g, k]
    domain = "(d0, d1, d2, d3, d4, d5, d6, d7)"
    conv = re.findall(r"linalg\.generic \{indexing_maps = \[(.*?)\], iterator_types = \[(.*?)\]\}\n\s*ins\(%x_groups, %grad_out_groups", mlir)
    assert len(conv) == 1
    maps, iterators = conv[0]
    assert maps == (
        f"affine_map<{domain} -> (d5, d6 * 2 + d2, d7 + d3, d0, d4)>, affine_map<{domain} -> (d5, d6, d7, d0, d1)>, "
        f"affine_map<{domain} -> (d0, d1, d2, d3, d4)>"
    )
    assert iterators == ", ".join(['"parallel"'] * 5 + ['"reduction"'] * 3)
    # CHECK: linalg.fill ins(%zero : f32) ... -> !partial = tensor<4x3x3x3x2xf32>
    assert "!partial = tensor<4x3x3x3x2xf32>" in mlir and "linalg.fill ins(%zero : f32) outs(%partial_empty : !partial)" in mlir
    # CHECK: tensor.collapse_shape %partial [[0, 1], [2], [3], [4]] : !partial into !partial_flat   (and no sum over chunks)
    assert "tensor.collapse_shape %partial [[0, 1], [2], [3], [4]] : !partial into !partial_flat" in mlir
    assert "ins(%partial_flat : !acc_flat) outs(%dst : !grad_w)" in mlir and "%acc_zero" not in mlir
    # CHECK-NOT: a negative coefficient in any indexing map (llvm-cpu cannot tile those)
    for maps in re.findall(r"indexing_maps = \[(.*?)\]", mlir):
        assert not re.search(r"-\s*d\d|d\d\s*\*\s*-", maps)


def test_rendered_channels_first_16_bit_with_float32_result():
    problem = PROBLEMS["2d_nchw_g1_s2_f16_out_f32"]  # N=2, C=16, K=32, 7x7, 3x3, stride 2, no padding, f16 -> f32
    mlir = op.render(problem)
    with ir.Context():
        ir.Module.parse(mlir)
    assert problem.name.endswith("_out_float32")
    # CHECK-NOT: tensor.pad    (nothing outside x is read)
    assert "tensor.pad" not in mlir
    # CHECK: tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [2, 1, 16, 7, 7]   (N, G, C, H, W)
    assert "tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [2, 1, 16, 7, 7]" in mlir
    # CHECK: x[n, g, c, 2*o0 + f0, 2*o1 + f1] with the partial sums in PyTorch's (G, K, C, F0, F1) order
    assert "-> (d5, d0, d2, d6 * 2 + d3, d7 * 2 + d4)>" in mlir and "!partial = tensor<1x32x16x3x3xf32>" in mlir
    # CHECK: arith.extf %xv : f16 to f32 ... and a store without truncation into !grad_w = tensor<32x16x3x3xf32>
    assert "arith.extf %xv : f16 to f32" in mlir and "arith.truncf" not in mlir
    assert "!grad_w = tensor<32x16x3x3xf32>" in mlir


def test_rendered_batch_split():
    # the batch of 4 reduced in J=2 chunks of 2: partial sums in parallel, then their sum over j
    problem = dataclasses.replace(PROBLEMS["2d_nhwc_depthwise_k1_s2"], batch=4)
    mlir = op.render(problem, op.Form(batch_split=2))
    with ir.Context():
        ir.Module.parse(mlir)
    # CHECK: tensor.expand_shape %x [[0, 1], [2], [3], [4, 5]] output_shape [2, 2, 8, 7, 6, 1], then padded to 9x9
    assert "tensor.expand_shape %x [[0, 1], [2], [3], [4, 5]] output_shape [2, 2, 8, 7, 6, 1]" in mlir
    assert "%x_groups = tensor.pad %x_unpadded_groups low[0, 0, 1, 1, 0, 0] high[0, 0, 0, 1, 0, 0]" in mlir
    # CHECK: !partial = tensor<2x6x1x3x3x1xf32>, !partial_flat = tensor<2x6x3x3x1xf32>
    assert "!partial = tensor<2x6x1x3x3x1xf32>" in mlir and "!partial_flat = tensor<2x6x3x3x1xf32>" in mlir
    # CHECK: the sum over the chunks: j (the last dim) reduced into the weight-shaped float32 accumulator
    assert ('affine_map<(d0, d1, d2, d3, d4) -> (d4, d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], '
            'iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]') in mlir
    # CHECK: a split that does not divide the batch is refused before anything is compiled
    with pytest.raises(ValueError, match="batch_split must divide the batch 4, but got 3"):
        op.render(problem, op.Form(batch_split=3))


def test_default_batch_split_fills_a_gpu_and_leaves_the_cpu_alone():
    depthwise = op.problem_from_params(**CASES_FOR_SPLIT["depthwise"])  # weight 96*9: the whole batch in chunks
    video = op.problem_from_params(**CASES_FOR_SPLIT["video"])  # weight 128*27*64 = 221184: J*weight >= 2^22 at J=32
    cuda, cpu = targets.parse_target("cuda:sm_80"), targets.parse_target("llvm-cpu")
    assert gemm_policy.default_batch_split(depthwise, cuda) == 32
    assert gemm_policy.default_batch_split(video, cuda) == 32  # 16 chunks give 3.5 M partial sums, 32 give 7 M
    assert gemm_policy.default_batch_split(depthwise, cpu) == gemm_policy.default_batch_split(video, cpu) == 1
    assert op.Form().batch_split == 1  # the template's own default: the unsplit form


def test_f16x1_parts_of_several_taps_reduce_an_image_a_chunk_from_196_positions_at_stride_1():
    """The float16 problem of an f16x1 weight gradient (ResNet-50's 256-channel 3x3 layer, batch 32) takes an image a
    chunk from 14x14 positions (gemm_policy.IMAGE_CHUNK_MIN_POSITIONS; 8 chunks give its 2^22 partial sums)
    channels-last; channels-first (its float16 problem unpadded, x's parts written padded: IREE left 9,216 positions
    NaN or unwritten at J = 32 on an H200), at 7x7, strided, as a 1x1 layer, as float32 or bfloat16 into float32 or
    grouped, the partial sums decide."""
    cuda = targets.parse_target("cuda:sm_80")
    base = dict(batch=32, in_channels=256, out_channels=256, input_spatial=(14, 14), filter_spatial=(3, 3), padding=1,
                dtype="float32", layout="NHWC", precision="f16x1")

    def chunks(**changes):
        problem = op.problem_from_params(**{**base, **changes}).computed_as
        return gemm_policy.default_batch_split(problem, cuda)

    assert op.problem_from_params(**base).computed_as.dtype == "float16"
    assert chunks() == 32 and chunks(layout="NCHW") == 8
    assert chunks(input_spatial=(7, 7)) == 8  # 256 * 9 * 256 = 589,824 a chunk: 8 give 2^22
    assert chunks(input_spatial=(28, 28), stride=2) == 8  # 14x14 positions, strided
    assert chunks(filter_spatial=(1, 1), padding=0, in_channels=1024, out_channels=1024) == 4  # 2^20 a chunk
    assert chunks(precision="bf16x3") == 8
    assert chunks(precision="float32") == 8
    assert chunks(groups=2, in_channels=128, out_channels=128) == 16  # 2 x 128 x 9 x 128 = 294,912 a chunk


CASES_FOR_SPLIT = {
    "depthwise": dict(batch=32, groups=96, in_channels=1, out_channels=1, input_spatial=(112, 112), filter_spatial=(3, 3),
                      stride=2, padding=1, dtype="float16"),
    "video": dict(batch=32, groups=1, in_channels=64, out_channels=128, input_spatial=(4, 8, 8), filter_spatial=(3, 3, 3),
                  padding=1, layout="NDHWC", dtype="float16"),
}


@pytest.mark.parametrize("name", list(GPU_PROBLEMS))
def test_rocm_gfx942(tmp_path, name):
    problem = GPU_PROBLEMS[name]
    spec, lowered = shipped(problem, "rocm:gfx942", tmp_path)
    convs = [d for d in lowered.dispatches if d.is_contraction]
    # the partial sums are one convolution dispatch (IREE names it conv_...: it recognized the generic); the sum
    # over the batch chunks, when split, a reduction dispatch of its own; x's padding copy. A table entry's
    # --iree-dispatch-creation-enable-split-reduction adds the split partial products' own reduce dispatch
    split = SPLIT_REDUCTION in spec.flags
    assert len(lowered.dispatches) <= 3 + split, [d.name for d in lowered.dispatches]
    assert len(convs) == 1, [d.name for d in lowered.dispatches]
    # no kernel spills to scratch memory
    assert lowered.scratch_bytes and all(size == 0 for size in lowered.scratch_bytes.values()), lowered.scratch_bytes
    if expects_mma(name, "rocm:gfx942"):
        # the implicit-GEMM configuration picked an MFMA intrinsic, and the ISA issues it
        assert convs[0].mma_kind and convs[0].mma_kind.startswith("MFMA_F32_"), convs[0]
        assert "v_mfma" in kernel_for(lowered, convs[0]), convs[0].name


@pytest.mark.parametrize("name", list(GPU_PROBLEMS))
def test_cuda_sm80(tmp_path, name):
    problem = GPU_PROBLEMS[name]
    lowered = compile_as_shipped(problem, "cuda:sm_80", tmp_path)
    if policy.forms_for(problem, targets.parse_target("cuda:sm_80"))[0].contraction == "columns":
        # depthwise, x read where it lies (tests/test_weight_columns.py): the partial sums (a reduction to IREE,
        # which reads x in its body) and their sum, no copy of a padded x
        assert [d.name.split("_")[1] for d in lowered.dispatches] == ["reduction", "reduction"], lowered.dispatches
        return
    convs = [d for d in lowered.dispatches if d.is_contraction]
    assert len(convs) == 1, [d.name for d in lowered.dispatches]
    if expects_mma(name, "cuda:sm_80"):
        assert convs[0].mma_kind and convs[0].mma_kind.startswith("NV_MMA_SYNC"), convs[0]
        assert "mma.sync.aligned" in lowered.ptx


def test_a_pinned_configuration_reaches_the_convolution(tmp_path):
    # ops/policy.py's hook: configs={0: compilation_info} pins the one convolution's configuration (here IREE's
    # default for this problem, with a reduction tile of 2 MFMA K-steps instead of 4)
    problem = PROBLEMS["2d_nhwc_g4_s2_p1_f16"]
    info = (
        "#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{mma_kind = #iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>, "
        "padding = [1, 16, 1, 3, 16, 32], promote_operands = [0, 1], reduction = [0, 0, 0, 0, 0, 2], subgroup = [0, 1, 1, 1, 1, 0], "
        "workgroup = [1, 16, 1, 3, 16, 0]}>, translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
        "workgroup_size = [192, 1, 1] subgroup_size = 64, {gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = 2, "
        "no_reduce_shared_memory_bank_conflicts = false, use_igemm_convolution = true>}>>"
    )
    mlir = op.render(problem, op.Form(), Lowering({0: info}))
    # CHECK: ins(%x_groups, %grad_out_groups : ...) outs(%partial_zero : !partial) attrs = {compilation_info = ...}
    assert f"outs(%partial_zero : !partial) attrs = {{compilation_info = {info}}} {{" in mlir
    assert op.render(problem, op.Form(), Lowering({})) == op.render(problem)
    lowered = compile_and_dump(problem.name, mlir, "rocm:gfx942", tmp_path)
    configured = configured_ir(tmp_path)
    assert "reduction = [0, 0, 0, 0, 0, 2]" in configured and "padding = [1, 16, 1, 3, 16, 32]" in configured
    (conv,) = [d for d in lowered.dispatches if d.is_contraction]
    assert conv.mma_kind == "MFMA_F32_16x16x16_F16" and "v_mfma" in kernel_for(lowered, conv)


@pytest.mark.parametrize("params, name", [
    (dict(in_channels=256, out_channels=1024, input_spatial=(14, 14), filter_spatial=(1, 1), padding=0, layout="NCHW"), "matmul"),
    (dict(in_channels=64, out_channels=64, input_spatial=(28, 28), filter_spatial=(3, 3), padding=1, layout="NHWC"), "conv"),
], ids=["1x1_nchw", "3x3_nhwc"])
def test_float32_takes_gfx942s_float32_matrix_instruction(params, name, tmp_path):
    """Float32 stays float32 on gfx942 (no split there: ``precision.allowed_split``), and IREE configures its
    contraction on the float32 matrix instruction: the dispatch names MFMA_F32_16x16x4_F32 and its kernel issues
    v_mfma_f32_16x16x4_f32 (ResNet-50 layers at batch 8; compiler output only, no AMD GPU here)."""
    problem = op.problem_from_params(batch=8, groups=1, dtype="float32", **params)
    lowered = one_matrix_contraction(problem, "rocm:gfx942", tmp_path, name)
    (contraction,) = [d for d in lowered.dispatches if d.mma_kind]
    assert contraction.mma_kind == "MFMA_F32_16x16x4_F32"
    assert "v_mfma_f32_16x16x4_f32" in kernel_for(lowered, contraction)


def test_cuda_splits_the_reduction_of_stride_1_bfloat16_volumes(tmp_path):
    """``mlir/tuning/cuda-sm_80.json``'s split-reduction rule: r3d_18's stride-1 bfloat16 3x3x3 weight gradients
    that keep the generic (64 and 128 channels, batch 8) compile with IREE's split reduction on CUDA, which splits
    the 64-channel layer's images along their first output axis too: its convolution's 216 workgroups (27 taps x 8
    chunks of one image, 64 x 64 each) become 1,728, and a dispatch sums the parts (the 128-channel layer IREE
    leaves whole). Left out: strided, 2-D, float16, a split float32 problem's bfloat16 parts, 32 channels, ROCm and
    the CPU."""
    cuda = targets.parse_target("cuda:sm_80")
    layer = dict(batch=8, groups=1, in_channels=64, out_channels=64, input_spatial=(16, 56, 56),
                 filter_spatial=(3, 3, 3), padding=1, layout="NDHWC", dtype="bfloat16")
    taken = [layer, dict(layer, in_channels=128, out_channels=128, input_spatial=(8, 28, 28))]
    left = [dict(layer, stride=2, out_channels=128), dict(layer, input_spatial=(56, 56), filter_spatial=(3, 3), layout="NHWC"),
            dict(layer, dtype="float16"), dict(layer, out_dtype="float32"), dict(layer, in_channels=32)]
    first = lambda params, target=cuda: policy.module_specs(op.problem_from_params(**params), target)[0]
    assert all(SPLIT_REDUCTION in first(params).extra_flags for params in taken)
    assert not any(SPLIT_REDUCTION in first(params).extra_flags for params in left)
    assert not any(SPLIT_REDUCTION in first(layer, targets.parse_target(t)).extra_flags for t in ("rocm:gfx942", "llvm-cpu"))
    counts = {}
    for number, params in enumerate(taken):
        spec = first(params)
        plain = dataclasses.replace(spec, extra_flags=tuple(f for f in spec.extra_flags if f != SPLIT_REDUCTION))
        counts[number] = [workgroup_counts(s, tmp_path / f"{number}_{i}") for i, s in enumerate((spec, plain))]
    (split, whole), (wider_split, wider_whole) = counts[0], counts[1]
    conv = lambda grids: [name for name in grids if "_conv_" in f"_{name}"]
    assert len(conv(split)) == len(conv(whole)) == 1 and len(split) == len(whole) + 1, (split, whole)
    assert whole[conv(whole)[0]] == 216 and split[conv(split)[0]] == 8 * 216, (split, whole)
    assert wider_split == wider_whole, (wider_split, wider_whole)  # the 128-channel layer's reduction stays whole


def test_cuda_gives_a_stem_a_row_of_taps_a_workgroup(tmp_path):
    """``mlir/tuning/cuda-sm_80.json``'s stem rule (``weight_tiles`` with ``taps: row``): a 3-channel weight gradient
    of 64 output channels with taps, bfloat16 or a float32 one's bfloat16 parts (bf16x3), compiles on CUDA with the
    filter's last axis whole a workgroup: its convolution's workgroups are IREE's default's (one tap each) over the
    row's 7 taps, the 3 channels padded to the intrinsic's 8. Left out: 32 output channels (measured slower), 1x1."""
    cuda = targets.parse_target("cuda:sm_80")
    stem = dict(batch=2, groups=1, in_channels=3, out_channels=64, input_spatial=(224, 224), filter_spatial=(7, 7),
                stride=2, padding=3, layout="NHWC", dtype="bfloat16")
    taken = [stem, dict(stem, input_spatial=(8, 112, 112), filter_spatial=(3, 7, 7), stride=(1, 2, 2),
                        padding=(1, 3, 3), layout="NDHWC"), dict(stem, dtype="float32", layout="NCHW")]
    left = [dict(stem, out_channels=32, filter_spatial=(3, 3), padding=1), dict(stem, filter_spatial=(1, 1), padding=0)]
    problem = lambda params: dataclasses.replace(op.problem_from_params(**params),
                                                 **({"precision": "bf16x3"} if params["dtype"] == "float32" else {}))
    conv = lambda grids: [count for name, count in grids.items() if "_conv_" in f"_{name}"]
    for number, params in enumerate(taken):
        spec = policy.module_specs(problem(params), cuda)[0]
        plain = dataclasses.replace(spec, mlir=without_gpu_configs(spec.mlir))
        assert plain.mlir != spec.mlir
        rows, taps = (conv(workgroup_counts(s, tmp_path / f"{number}_{i}")) for i, s in enumerate((spec, plain)))
        assert len(rows) == len(taps) == 1 and taps[0] == 7 * rows[0], (params, rows, taps)
    for params in left:  # no configuration pinned: IREE's default
        spec = policy.module_specs(problem(params), cuda)[0]
        assert without_gpu_configs(spec.mlir) == spec.mlir, params
