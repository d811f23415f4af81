"""Lowering tests, read like IREE's lit tests: the rendered MLIR, then what the compiled GPU code must show.

No AMD or NVIDIA GPU is needed: the compiler's own output (dispatch configurations, gfx942 assembly,
PTX) is the evidence.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from iree.compiler import ir
from ops import catalog, policy, targets
from ops.operators import conv_bwd_data as op
from ops.operator import Lowering
from ops.operators import phase_plan

from conv_cases import PROBLEMS
from lowering import compile_and_dump, configured_ir, kernel_for, one_matrix_contraction

SIXTEEN_BIT = ("float16", "bfloat16")


def test_rendered_ck_default_is_four_stride_one_phases():
    # 3x3, stride 2, pad 1: taps split 2+1 per axis, so phases of 2x2, 2x1, 1x2 and 1x1 taps.
    problem = catalog.problem("conv_bwd_data", "ck_default")
    mlir = op.render(problem)
    with ir.Context():
        ir.Module.parse(mlir)
    # CHECK: func.func @conv_bwd_data_2d_nhwc_float16_n128_..._s2x2_d1x1_p1_1x1_1(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {iree.abi.output = 0 : index})
    assert f"func.func @{problem.name}(%grad_out: !grad_out, %weight: !weight, %dst: !grad_in {{iree.abi.output = 0 : index}})" in mlir
    # CHECK-COUNT-4: linalg.conv_2d_nhwc_hwcf {dilations = dense<[1, 1]> ..., strides = dense<[1, 1]> ...}
    convs = re.findall(r"linalg\.conv_2d_nhwc_hwcf \{dilations = dense<\[1, 1\]> : tensor<2xi64>, strides = dense<\[1, 1\]>", mlir)
    assert len(convs) == 4
    # CHECK: filters 2x2x256x256, 2x1x256x256, 1x2x256x256, 1x1x256x256 (no zero taps)
    assert [m for m in re.findall(r"outs\(%w_\d+_empty : tensor<(\w+)xf16>\)", mlir)] == ["2x2x256x256", "2x1x256x256", "1x2x256x256", "1x1x256x256"]
    # CHECK-COUNT-4: tensor.insert_slice %stored_i into %slots_i[r0, r1, 0, 0, 0, 0] [1, 1, 128, 36, 36, 256]   (the
    # GPU targets' interleaved store: each phase, cast, fills its slot whole; slot (i mod 2, j mod 2) per residue)
    slots = re.findall(r"tensor\.insert_slice %stored_\d+ into %slots_\d+\[(\d), (\d), 0, 0, 0, 0\] \[1, 1, 128, 36, 36, 256\] "
                       r"\[1, 1, 1, 1, 1, 1\] : tensor<128x36x36x256xf16> into tensor<2x2x128x36x36x256xf16>", mlir)
    assert sorted(slots) == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    # CHECK: one interleave: grad_in[n, i0, i1, ch] = slots[i0 mod 2, i1 mod 2, n, i0 floordiv 2, i1 floordiv 2, ch],
    # read by tensor.extract (no target, as for llvm-cpu) or through the indexing map (a GPU target)
    assert mlir.count("%grad_in_interleaved = linalg.generic") == 1
    assert "tensor.extract %slots_4[%slot0, %slot1, %n, %row0, %row1, %ch]" in mlir
    assert "%slot0 = affine.apply affine_map<(i) -> (i mod 2)>(%i0)" in mlir
    gpu = op.render(problem, policy.target_forms(problem, targets.parse_target("cuda:sm_80"))[0])
    assert "affine_map<(n, i0, i1, ch) -> (i0 mod 2, i1 mod 2, n, i0 floordiv 2, i1 floordiv 2, ch)>" in gpu
    # CHECK-COUNT-4 (the strided store): tensor.insert_slice ... [1, 2, 2, 1] : tensor<...xf16> into !grad_in
    strided = op.render(problem, op.Form(store="strided"))
    assert len(re.findall(r"tensor\.insert_slice .*\[1, 2, 2, 1\] : tensor<128x3[56]x3[56]x256xf16> into !grad_in", strided)) == 4
    # CHECK-NOT: a float32 tensor of grad_in's full size (each phase stores its own positions, once)
    assert "tensor<128x71x71x256xf32>" not in mlir
    # CHECK: every position is reached (stride 2 <= 3 taps), so grad_in needs no initial fill
    assert "linalg.fill ins(%zero_element" not in mlir
    # CHECK: %f0 = affine.apply affine_map<(u) -> (2 - u * 2)>    (the 2x2-tap phase gathers taps f = 2 - 2u)
    assert "%f0 = affine.apply affine_map<(u) -> (2 - u * 2)>(%u0)" in mlir
    # CHECK-NOT: a negative coefficient in any indexing map (llvm-cpu cannot tile those, nor gfx942 always)
    for maps in re.findall(r"indexing_maps = \[(.*?)\]", mlir):
        assert not re.search(r"-\s*d\d|d\d\s*\*\s*-", maps)
    # the other form, chosen per problem where the gather does not compile (IREE 3.13's NVPTX backend):
    # CHECK: affine_map<(d0, d1, d2, d3) -> (d2, 2 - d0 * 2, 2 - d1 * 2, d3)>    (the flip as an indexing map)
    assert "affine_map<(d0, d1, d2, d3) -> (d2, 2 - d0 * 2, 2 - d1 * 2, d3)>" in op.render(problem, op.Form(weight_flip="map"))


def test_rendered_stride_one_is_the_flipped_filter_on_padded_grad_out():
    problem = catalog.problem("conv_bwd_data", "stride1_36")
    mlir = op.render(problem)
    # CHECK: %f0 = affine.apply affine_map<(u) -> (2 - u * 1)>    (tap 2 - u: the flip)
    assert "affine.apply affine_map<(u) -> (2 - u * 1)>(%u0)" in mlir
    # CHECK: tensor.pad %grad_out low[0, 1, 1, 0] high[0, 1, 1, 0]    (d*(F-1) - p_lo = 1)
    assert "tensor.pad %grad_out low[0, 1, 1, 0] high[0, 1, 1, 0]" in mlir
    assert mlir.count("linalg.conv_2d_nhwc_hwcf") == 1


GPU_PROBLEMS = {**PROBLEMS, "ck_default": catalog.problem("conv_bwd_data", "ck_default"), "stride1_36": catalog.problem("conv_bwd_data", "stride1_36")}


def phase_convolutions(mlir: str) -> int:
    """The phases' convolutions of distinct shapes: IREE forms one executable for identical dispatches, and the
    interleaved store gives phases with the same taps the same rows, so such phases may share one."""
    return len(set(re.findall(r"= linalg\.conv_\w+ (\{[^}]*\})\s+ins\([^:]*: ([^)]*)\) outs\([^:]*: ([^)]*)\)", mlir)))


@pytest.mark.parametrize("name", list(GPU_PROBLEMS))
def test_rocm_gfx942(tmp_path, name):
    problem = GPU_PROBLEMS[name]
    mlir = op.render(problem)
    lowered = compile_and_dump(problem.name, mlir, "rocm:gfx942", tmp_path)
    convs = [d for d in lowered.dispatches if d.is_contraction]
    # one convolution dispatch per stride phase: the decomposition survives dispatch formation
    assert phase_convolutions(mlir) <= len(convs) <= len(phase_plan.phases(problem)), [d.name for d in lowered.dispatches]
    # no kernel spills to scratch memory
    assert lowered.scratch_bytes and all(size == 0 for size in lowered.scratch_bytes.values()), lowered.scratch_bytes
    if problem.dtype in SIXTEEN_BIT:
        for dispatch in convs:
            # the implicit-GEMM configuration picked an MFMA intrinsic, and the ISA issues it
            assert dispatch.mma_kind and dispatch.mma_kind.startswith("MFMA_F32_"), dispatch
            assert "v_mfma" in kernel_for(lowered, dispatch), dispatch.name


@pytest.mark.parametrize("name", list(GPU_PROBLEMS))
def test_cuda_sm80(tmp_path, name):
    problem = GPU_PROBLEMS[name]
    mlir = op.render(problem)
    lowered = compile_and_dump(problem.name, mlir, "cuda:sm_80", tmp_path)
    convs = [d for d in lowered.dispatches if d.is_contraction]
    assert phase_convolutions(mlir) <= len(convs) <= len(phase_plan.phases(problem))
    if problem.dtype in SIXTEEN_BIT:
        assert all(d.mma_kind and d.mma_kind.startswith("NV_MMA_SYNC") for d in convs), convs
        assert "mma.sync.aligned" in lowered.ptx


def test_rendered_for_the_cpu_one_tap_axes_get_a_zero_tap():
    # llvm-cpu folds a one-tap filter axis away and then compiles a generic contraction 20-30x slower than a
    # convolution: on that target the 2x1 and 1x2 phases become 2x2 with a zero tap (the 1x1 phase stays a matmul)
    from ops import targets

    problem = catalog.problem("conv_bwd_data", "ck_default")
    cpu = targets.parse_target("llvm-cpu")
    mlir = op.render(problem, policy.target_forms(problem, cpu)[0], Lowering(transients=cpu.transients))
    assert re.findall(r"%w_\d+_empty = tensor.empty\(\) : tensor<(\w+)xf16>", mlir) == ["2x2x256x256"] * 3 + ["1x1x256x256"]
    # the CPU copies the taps plane by plane: a zero tap's plane is left zero in a zero-filled filter
    # CHECK: %w_1_zeros = linalg.fill ins(%zero_element : f16) outs(%w_1_empty : tensor<2x2x256x256xf16>)
    assert len(re.findall(r"%w_\d+_zeros = linalg.fill ins\(%zero_element : f16\)", mlir)) == 2
    gathered = op.render(problem, dataclasses.replace(policy.target_forms(problem, cpu)[0], weight_flip="gather"),
                         Lowering(transients=cpu.transients))
    # CHECK: %tap_or_zero = arith.select %real1, %tap, %zero_element : f16
    assert gathered.count("%tap_or_zero = arith.select") == 2
    assert "taps f = 0 + 2*t (t < 2), 1 + 2*t (t < 1) and 1 zero tap(s)" in mlir


def test_a_tuned_phase_keeps_its_configuration_when_it_has_single_tap_axes(tmp_path):
    """IREE 3.13 rebuilds a convolution without its single-tap axes, and the rebuilt op has lost its
    compilation_info: the tuned 2x1 and 1x2 phases of a 3x3 stride-2 problem ran IREE's defaults. A tuned phase is
    written without those axes (contractions.dense_tuned), and every tuned configuration reaches its dispatch."""
    from ops import render

    problem = op.problem_from_params(batch=2, in_channels=32, out_channels=48, input_spatial=(15, 15), filter_spatial=(3, 3),
                                     stride=2, padding=1, layout="NHWC", dtype="float16")
    taps = [[axis.filter_taps for axis in phase] for phase in phase_plan.phases(problem)]
    assert taps == [[2, 2], [2, 1], [1, 2], [1, 1]]
    intrinsic = targets.MMA_INTRINSICS[("cuda", "f16")]
    configs = {index: render.conv_compilation_info(2, intrinsic, (1, 32, 32), (1, 1, 2), 2, 2, sum(t > 1 for t in phase_taps))
               for index, phase_taps in enumerate(taps[:3])}
    mlir = op.render(problem, policy.target_forms(problem, targets.parse_target("cuda:sm_80"))[0], Lowering(configs))
    # CHECK: %w_1_taps = tensor.collapse_shape %w_1 [[0], [1, 2], [3]] : tensor<2x1x48x32xf16> into tensor<2x48x32xf16>
    assert "%w_1_taps = tensor.collapse_shape %w_1 [[0], [1, 2], [3]] : tensor<2x1x48x32xf16> into tensor<2x48x32xf16>" in mlir
    # CHECK: affine_map<(n, m0, m1, c, u1, k) -> (n, m0, m1 + u1 * 1, k)>      (phase 2: the taps of axis 1 only)
    assert "affine_map<(n, m0, m1, c, u1, k) -> (n, m0, m1 + u1 * 1, k)>" in mlir
    lowered = compile_and_dump(problem.name, mlir, "cuda:sm_80", tmp_path, ("--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops",))
    convs = [d for d in lowered.dispatches if d.is_contraction]
    assert len(convs) == 4, [d.name for d in lowered.dispatches]
    configured = [p.read_text() for p in sorted((tmp_path / "dump").glob("configured_*.mlir"))]
    tuned = [text for text in configured if "workgroup = [1, 1, 32, 32, 0]" in text]
    assert len(tuned) == 3, [re.findall(r"workgroup = \[[\d, ]*\]", text) for text in configured]


# (batch, C, width) -> the workgroup tile (rows, width, channels) CUDA's conv_tiles rule gives a 16-bit stride-1 3x3
# layer's one phase, float16's and bfloat16's: the split rule's tiles (tests/test_data_split_conv.py) over K channels
# instead of 3K (docs/perf/h100-bf16-conv-tiles: ResNet-50's four layers 1.4-1.7x faster as modules); bfloat16 from
# 256 channels 256 rows in at most 8 rows of the phase (docs/perf/h200-bf16-gather/exp32.log)
SIXTEEN_BIT_TILES = {(32, 64, 56): ("1, 2, 64, 64, 0",) * 2, (16, 256, 14): ("1, 4, 16, 128, 0", "1, 8, 16, 128, 0"),
                     (16, 640, 12): ("1, 4, 16, 128, 0", "1, 8, 16, 128, 0")}


def _3x3(dtype: str, batch: int, c: int, width: int, stride: int = 1):
    return catalog.problem("conv_bwd_data", "ck_default", batch=batch, in_channels=c, out_channels=c,
                           input_spatial=(width, width), filter_spatial=(3, 3), stride=stride, padding=1,
                           layout="NHWC", dtype=dtype)


@pytest.mark.parametrize("dtype", SIXTEEN_BIT)
@pytest.mark.parametrize("shape", list(SIXTEEN_BIT_TILES))
def test_cudas_tile_rule_pins_a_16_bit_stride_one_phase(dtype, shape):
    """The one phase's named convolution carries the rule's configuration: 8 warps, the dtype's mma.sync."""
    problem = _3x3(dtype, *shape)
    config = policy.configs_for(problem, targets.parse_target("cuda:sm_80"))[0]
    element = {"float16": "F16", "bfloat16": "BF16"}[dtype]
    tile = SIXTEEN_BIT_TILES[shape][dtype == "bfloat16"]
    assert f"workgroup = [{tile}]" in config and "workgroup_size = [256, 1, 1]" in config, config
    assert f"NV_MMA_SYNC_F32_16x8x16_{element}>" in config, config
    conv = [line for line in policy.module_spec(problem, targets.parse_target("cuda:sm_80")).mlir.splitlines()
            if "linalg.conv_2d_nhwc_hwcf" in line]
    assert len(conv) == 1 and f"compilation_info = {config}" in conv[0], conv


def test_cudas_tile_rule_pins_each_phase_with_taps_of_a_strided_16_bit_problem():
    """A 3x3 stride-2 layer's phases of 2x2, 2x1 and 1x2 taps each get the rule's tiles by their own width (14 of
    28: 16 wide, 4 rows), the 2x1 and 1x2 phases on the generic without their single-tap axis (one tap axis); the
    one-tap phase keeps IREE's matmul."""
    problem = _3x3("bfloat16", 16, 256, 28, stride=2)
    configs = policy.configs_for(problem, targets.parse_target("cuda:sm_80"))
    assert sorted(configs) == [0, 1, 2], configs
    for index, taps in ((0, 2), (1, 1), (2, 1)):
        assert "workgroup = [1, 4, 16, 128, 0]" in configs[index], configs[index]
        assert f"padding_conv = [1, 4, 16, 128, {', '.join(['0'] * (taps + 1))}]" in configs[index], configs[index]


@pytest.mark.parametrize("params", [dict(stride=2, input_spatial=(8, 28, 28), filter_spatial=(3, 3, 3),
                                         layout="NDHWC"),
                                    dict(in_channels=32, out_channels=32), dict(dtype="float32")])
def test_cudas_tile_rule_leaves_3d_strided_narrow_and_float32_phases_to_iree(params):
    """3-D strided problems (thin phases: measured slower), fewer than 48 channels (measured slower) and float32
    arithmetic keep IREE's own tiles, or float32 the SIMT rule's (``data_simt_tiles``, no matrix instruction); so
    does gfx942 (unmeasured)."""
    problem = catalog.problem("conv_bwd_data", "ck_default", **{
        **dict(batch=32, in_channels=64, out_channels=64, input_spatial=(28, 28), filter_spatial=(3, 3), stride=1,
               padding=1, layout="NHWC", dtype="bfloat16"), **params})
    cuda = targets.parse_target("cuda:sm_80")
    configs = policy.configs_for(problem, cuda, policy.forms_for(problem, cuda)[0])  # its module's
    assert not any("mma_kind" in config for config in configs.values())
    assert bool(configs) == (problem.dtype == "float32")  # the float32 one: the SIMT rule, NHWC too
    assert not policy.configs_for(_3x3("bfloat16", 32, 64, 28), targets.parse_target("rocm:gfx942"))


def test_the_16_bit_phases_tiles_reach_its_compiled_convolution(tmp_path):
    """The pinned configuration is the one IREE compiles, and the convolution issues mma.sync."""
    one_matrix_contraction(_3x3("bfloat16", 8, 128, 28), "cuda:sm_80", tmp_path, "conv")
    configured = configured_ir(tmp_path)
    assert "workgroup = [1, 4, 32, 128, 0]" in configured and "workgroup_size = [256, 1, 1]" in configured


@pytest.mark.parametrize("params, name", [
    (dict(in_channels=64, out_channels=64, input_spatial=(28, 28), filter_spatial=(3, 3), padding=1, layout="NCHW"), "conv"),
    (dict(in_channels=256, out_channels=1024, input_spatial=(14, 14), filter_spatial=(1, 1), padding=0, layout="NHWC"), "matmul"),
], ids=["3x3_nchw", "1x1_nhwc"])
def test_float32_takes_gfx942s_float32_matrix_instruction(params, name, tmp_path):
    """Float32 stays float32 on gfx942 (no split there: ``precision.allowed_split``), and IREE configures the stride
    phase's convolution on the float32 matrix instruction: the dispatch names MFMA_F32_16x16x4_F32 and its kernel
    issues v_mfma_f32_16x16x4_f32 (ResNet-50 layers at batch 8; compiler output only, no AMD GPU here)."""
    problem = op.problem_from_params(batch=8, dtype="float32", **params)
    lowered = one_matrix_contraction(problem, "rocm:gfx942", tmp_path, name)
    (contraction,) = [d for d in lowered.dispatches if d.mma_kind]
    assert contraction.mma_kind == "MFMA_F32_16x16x4_F32"
    assert "v_mfma_f32_16x16x4_f32" in kernel_for(lowered, contraction)
