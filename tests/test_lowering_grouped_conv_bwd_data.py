"""Lowering tests for grouped backward-data with fused epilogues: the epilogue adds no dispatch."""

from __future__ import annotations

import re
from math import prod

import pytest

from ops.operators import grouped_conv_bwd_data as op
from ops import policy, targets
from ops.operator import Lowering
from ops.operators import phase_plan

from grouped_bwd_data_cases import CASES, grouped_problem
from lowering import compile_as_shipped, configured_ir, kernel_for

CK_PROBLEMS = {
    # CK 38's default: 2D, G=32, N=4, K=C=192 per group, 28x28, 3x3, stride 1, pad 1, with and without bias-ReLU
    "ck_2d": dict(groups=32, batch=4, in_channels=192, out_channels=192, input_spatial=(28, 28), filter_spatial=(3, 3), stride=1, padding=1, dtype="float16"),
    # the 3D variant: G=4, N=4, K=C=128, 3x3x3, 14^3 (needs the checked-in gfx942 configuration: IREE's default overflows LDS)
    "ck_3d": dict(groups=4, batch=4, in_channels=128, out_channels=128, input_spatial=(14, 14, 14), filter_spatial=(3, 3, 3), stride=1, padding=1, layout="NDHWC", dtype="float16"),
    "s2_g8": dict(groups=8, batch=4, in_channels=32, out_channels=32, input_spatial=(28, 28), filter_spatial=(3, 3), stride=2, padding=1, dtype="float16"),
}
EPILOGUES = {"ck_2d": ("add_relu", ("channel",)), "ck_3d": ("bilinear", ("full",)), "s2_g8": ("where(d1 > 0, acc + d0, 0) * alpha", ("channel", "full"))}


def lowered(problem, target, tmp_path):
    return compile_as_shipped(problem, target, tmp_path)


def test_rendered_epilogue_sits_in_the_phase_store():
    p = op.problem_from_params(**CK_PROBLEMS["ck_2d"], epilogue="add_relu", d_kinds=("channel",))
    mlir = op.render(p)
    # CHECK: %d0_split = tensor.expand_shape %d0 [[0, 1]] output_shape [32, 192]      (the bias as (G, C))
    assert "%d0_split = tensor.expand_shape %d0 [[0, 1]] output_shape [32, 192] : !d0 into tensor<32x192xf16>" in mlir
    # CHECK: linalg.generic ... ins(%acc_0, %d0_split ...) ... arith.addf ... arith.maximumf ... arith.truncf
    store = mlir[mlir.index("%store_0 = linalg.generic"):mlir.index("%stored_0")]
    assert "ins(%acc_0, %d0_split" in store
    assert re.search(r"arith\.addf %acc, %d0_f32 : f32.*arith\.maximumf .*arith\.truncf", store, flags=re.S)
    # CHECK: the D tensor's channels are read as (G, C), a projected permutation (no g*C + c index arithmetic)
    assert "* 192 +" not in mlir


def test_rendered_strided_phases_read_their_rows_of_d_through_the_map():
    """The strided store: a full D is read at the phase's rows s*m + offset by the store's indexing map, not through
    a strided slice of the reshaped D (IREE 3.13's CUDA backend mis-indexed that; docs/perf/h100-sweep). (The
    interleaved store reads D once, by the interleave's identity map.)"""
    p = op.problem_from_params(batch=1, in_channels=4, out_channels=3, input_spatial=(7,), filter_spatial=(1,), stride=3,
                               dilation=2, padding=1, layout="NWC", dtype="float32", groups=1,
                               epilogue="where(d1 > 0, acc + d0, 0) * alpha", d_kinds=("channel", "full"))
    mlir = op.render(p, op.Form(store="strided"))
    assert "tensor.extract_slice %d" not in mlir
    # CHECK: affine_map<(n, m0, g, c) -> (m0 * 3 + 2, g, c)>      (phase 0 writes grad_in rows 2 + 3*m)
    assert "affine_map<(n, m0, g, c) -> (m0 * 3 + 2, g, c)>" in mlir


@pytest.mark.parametrize("name", list(CK_PROBLEMS))
def test_the_fused_epilogue_adds_no_dispatch_on_gfx942(tmp_path, name):
    plain = op.problem_from_params(**CK_PROBLEMS[name])
    epilogue, d_kinds = EPILOGUES[name]
    fused = op.problem_from_params(**CK_PROBLEMS[name], epilogue=epilogue, d_kinds=d_kinds)
    without = lowered(plain, "rocm:gfx942", tmp_path / "plain")
    with_epilogue = lowered(fused, "rocm:gfx942", tmp_path / "fused")
    assert len(with_epilogue.dispatches) == len(without.dispatches), [d.name for d in with_epilogue.dispatches]
    convs = [d for d in with_epilogue.dispatches if d.is_contraction]
    assert len(convs) == len(phase_plan.phases(fused))
    for dispatch in convs:
        assert dispatch.mma_kind and dispatch.mma_kind.startswith("MFMA_F32_16x16x16_F16"), dispatch
        assert "v_mfma" in kernel_for(with_epilogue, dispatch)
    assert all(size == 0 for size in with_epilogue.scratch_bytes.values())


_case_problem = grouped_problem


# 16-bit test problems whose convolutions are too thin for a matrix intrinsic, and why
NO_MMA = {"g3_2d_nchw_add_relu_bias_f16": "2 input and 3 output channels per group: IREE 3.13 picks no MMA for a 27-deep, 2-wide GEMM"}


def contracting_phases(problem) -> int:
    """Phases with more than one multiply-add per output (one tap and K=1 per group is elementwise)."""
    return sum(1 for phase in phase_plan.phases(problem) if problem.out_channels * prod(p.taps for p in phase) > 1)


@pytest.mark.parametrize("target", ["rocm:gfx942", "cuda:sm_80"])
@pytest.mark.parametrize("name", list(CASES))
def test_every_test_problem_compiles_for_the_gpus(tmp_path, name, target):
    problem = _case_problem(name)
    result = lowered(problem, target, tmp_path)
    convs = [d for d in result.dispatches if d.is_contraction]
    assert len(convs) == contracting_phases(problem), [d.name for d in result.dispatches]
    if problem.dtype == "float16" and name not in NO_MMA:
        prefix = "MFMA_F32_" if target.startswith("rocm") else "NV_MMA_SYNC"
        assert all(d.mma_kind and d.mma_kind.startswith(prefix) for d in convs), convs
    if target.startswith("rocm"):
        assert all(size == 0 for size in result.scratch_bytes.values())


def test_a_tuned_grouped_configuration_reaches_its_dispatch(tmp_path):
    """build_tools/tune.py's grouped candidates tile the grouped generic's space [n, *spatial, g, c, K], one group
    a workgroup; the configuration the table would pin is the one IREE compiles."""
    from ops import render
    from lowering import compile_and_dump

    problem = op.problem_from_params(groups=4, batch=2, in_channels=64, out_channels=32, input_spatial=(12, 12),
                                     filter_spatial=(3, 3), stride=1, padding=1, layout="NHWC", dtype="float16")
    config = render.conv_compilation_info(2, targets.MMA_INTRINSICS[("cuda", "f16")], (2, 32, 64), (1, 1, 4), 2, 2,
                                          grouped=True)
    mlir = op.render(problem, policy.target_forms(problem, targets.parse_target("cuda:sm_80"))[0], Lowering({0: config}))
    compile_and_dump(problem.name, mlir, "cuda:sm_80", tmp_path)
    configured = configured_ir(tmp_path)
    assert "workgroup = [1, 2, 32, 1, 64, 0]" in configured, re.findall(r"workgroup = \[[\d, ]*\]", configured)
    assert "padding_conv = [1, 2, 32, 1, 64, 0, 0, 0]" in configured
