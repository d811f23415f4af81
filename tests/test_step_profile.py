"""build_tools/step_profile.py without a GPU: its kernel attribution (IREE's dispatches to their module's problem,
every other kernel to PyTorch) and its per-module sums."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from build_tools import step_profile  # noqa: E402


def test_an_iree_dispatch_belongs_to_its_modules_problem_and_any_other_kernel_to_pytorch():
    problem = "conv_bwd_data_2d_nchw_float32_n32_g1_c64_k256_i56x56_f1x1_s1x1_d1x1_p0_0x0_0_split_bf16x3"
    assert step_profile.owner(f"{problem}_dispatch_2_matmul_like_100352x64x3x256_bf16xbf16xf32") == ("ours", problem)
    assert step_profile.owner(f"{problem}_dispatch_12_transpose_32x3136x64_f32") == ("ours", problem)
    kernel = "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float)"
    assert step_profile.owner(kernel) == ("pytorch", kernel)


def test_the_modules_rows_sum_their_dispatches():
    rows = {"a_dispatch_0_x": {"side": "ours", "module": "a", "us": 2.0, "count": 1},
            "a_dispatch_1_y": {"side": "ours", "module": "a", "us": 3.0, "count": 2},
            "bn": {"side": "pytorch", "module": "bn", "us": 4.0, "count": 5}}
    assert step_profile.by_module(rows) == {"a": {"side": "ours", "us": 5.0, "count": 3},
                                            "bn": {"side": "pytorch", "us": 4.0, "count": 5}}
