"""Every CK example problem (build_tools/manifests/ck_examples.json), as the runtime and the ahead-of-time build
compile it, for rocm:gfx942 and cuda:sm_80: what the compiled GPU code must show.

No AMD GPU is reachable here: for ROCm, the dumped configurations and gfx942 assembly are the evidence.
"""

from __future__ import annotations

import re
from math import prod

import pytest

from ops import catalog, targets
from ops.operators import phase_plan

from lowering import kernel_for, shipped, workgroup_counts

TARGETS = ["rocm:gfx942", "cuda:sm_80"]
PROBLEMS = catalog.problems("ck_examples")

# (op, problem, target) -> why its 16-bit contraction has no matrix intrinsic
NO_MMA = {
    ("grouped_conv_bwd_weight", "mobilenetv2_dw", "rocm:gfx942"): "depthwise: each group's weight gradient is a 1x9 product, no GEMM to give an intrinsic",
    ("grouped_conv_bwd_weight", "mobilenetv2_dw", "cuda:sm_80"): "depthwise: each group's weight gradient is a 1x9 product",
    ("grouped_conv_bwd_weight", "resnext_32x4d", "cuda:sm_80"): "4 output channels per group: below NV_MMA_SYNC's N=8 (gfx942 picks MFMA_F32_4x4x4x16B_F16)",
}


def expected_contractions(op, problem) -> int | None:
    """Contraction dispatches the operator's design gives (None: not a convolution)."""
    if op in ("conv_bwd_data", "grouped_conv_bwd_data"):
        return sum(1 for phase in phase_plan.phases(problem) if problem.out_channels * prod(p.taps for p in phase) > 1)
    if op == "grouped_conv_bwd_weight":
        return 1
    return None


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op, name, problem", PROBLEMS, ids=[f"{op}-{name}" for op, name, _ in PROBLEMS])
def test_ck_example_lowering(tmp_path, op, name, problem, target):
    spec, lowered = shipped(problem, target, tmp_path)
    contractions = [d for d in lowered.dispatches if d.is_contraction]
    if op in ("maxpool2d_bwd", "avgpool3d_bwd"):
        # pooling backward is one gather dispatch (from indices); no contraction
        assert len(lowered.dispatches) == 1 and not contractions, [d.name for d in lowered.dispatches]
    else:
        expected = expected_contractions(op, problem)
        if "--iree-dispatch-creation-enable-split-reduction" in spec.flags:
            expected += 1  # the split partial products, then their reduction (a matvec-like dispatch on some targets)
            assert len(contractions) in (expected - 1, expected), [d.name for d in lowered.dispatches]
        else:
            assert len(contractions) == expected, [d.name for d in lowered.dispatches]
        if problem.dtype in ("float16", "bfloat16") and (op, name, target) not in NO_MMA:
            prefix = "MFMA_F32_" if target.startswith("rocm") else "NV_MMA_SYNC"
            mma = [d for d in contractions if d.mma_kind and d.mma_kind.startswith(prefix)]
            split = "--iree-dispatch-creation-enable-split-reduction" in spec.flags
            # every convolution dispatch (a split reduction's final sum excepted) runs on the matrix units
            assert len(mma) >= (1 if split else len(contractions)), contractions
            if target.startswith("rocm"):
                assert all("v_mfma" in kernel_for(lowered, d) for d in mma)
            else:
                assert "mma.sync.aligned" in lowered.ptx
    if target.startswith("rocm"):
        assert lowered.scratch_bytes and all(size == 0 for size in lowered.scratch_bytes.values()), lowered.scratch_bytes


# gfx942's modules are compiled for the MI300X chip (targets.ROCM_CHIP: --iree-rocm-target=mi300x, as AMD's fusilli
# and iree-turbine compile convolutions for MI300): IREE's matrix heuristics then size a convolution's workgroup tile
# so that its workgroups fill the chip's 304 compute units. Against the architecture alone (--iree-rocm-target=gfx942,
# no chip, the flag before; docs/perf/gfx942-flags): the CK grouped weight gradient's convolution runs 432 workgroups
# instead of 108 (3 MFMA a K-step instead of 8, 43 VGPRs instead of 93), the grouped backward-data's 10752 instead of
# 2688, each with about half the LDS and still on MFMA, without scratch.
MI300X_COMPUTE_UNITS = 304


def _lds_bytes(kernel: str) -> int:
    return int(re.search(r"\.amdhsa_group_segment_fixed_size (\d+)", kernel).group(1))


def _vgprs(kernel: str) -> int:
    return int(re.search(r"\.amdhsa_next_free_vgpr (\d+)", kernel).group(1))


@pytest.mark.parametrize("op", ["grouped_conv_bwd_weight", "grouped_conv_bwd_data"])
def test_gfx942_modules_fill_the_mi300x_chip(tmp_path, monkeypatch, op):
    problem = next(p for o, n, p in PROBLEMS if o == op and n == "ck_default")
    spec, chip = shipped(problem, "rocm:gfx942", tmp_path / "mi300x")
    assert "--iree-rocm-target=mi300x" in spec.flags
    (conv,) = [d for d in chip.dispatches if d.is_contraction]
    groups = workgroup_counts(spec, tmp_path / "mi300x-hal")[conv.name]
    monkeypatch.setattr(targets, "ROCM_CHIP", {})  # the architecture alone
    arch_spec, arch = shipped(problem, "rocm:gfx942", tmp_path / "gfx942")
    assert "--iree-rocm-target=gfx942" in arch_spec.flags and arch_spec.mlir == spec.mlir
    (arch_conv,) = [d for d in arch.dispatches if d.is_contraction]
    arch_groups = workgroup_counts(arch_spec, tmp_path / "gfx942-hal")[arch_conv.name]
    assert conv.name == arch_conv.name and groups >= MI300X_COMPUTE_UNITS and groups >= 4 * arch_groups, (groups, arch_groups)
    kernel, arch_kernel = kernel_for(chip, conv), kernel_for(arch, arch_conv)
    assert _lds_bytes(kernel) < _lds_bytes(arch_kernel) and _vgprs(kernel) < _vgprs(arch_kernel)
    assert conv.mma_kind and conv.mma_kind.startswith("MFMA_F32_") and "v_mfma" in kernel
    assert chip.scratch_bytes and all(size == 0 for size in chip.scratch_bytes.values()), chip.scratch_bytes
