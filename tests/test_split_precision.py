"""A float32 weight gradient as bfloat16 x 3 (mlir/split_bf16x3.mlir, ops/operators/split_precision.py): each
product is three bfloat16 products summed in float32, within about 2^-16 of its magnitude; ops.torch uses it only
where PyTorch allows its float32 convolutions reduced precision on a GPU, for filters of more than one tap."""

from __future__ import annotations

import numpy as np
import pytest

from ops import api, catalog, known_answer, policy, targets
from ops.precision import allowed_split, weight_gradient_precision
from ops.operators import grouped_conv_bwd_weight

_PARAMS = dict(batch=4, groups=2, in_channels=6, out_channels=5, input_spatial=(9, 7), filter_spatial=(3, 2),
               stride=(2, 1), padding=((1, 1), (0, 1)), dtype="float32")


@pytest.mark.parametrize("layout", ["NCHW", "NHWC", "NCDHW"])
def test_bf16x3_is_within_two_to_the_minus_16_of_each_magnitude_and_far_better_than_bfloat16(layout, rng):
    params = dict(_PARAMS, layout=layout)
    if layout == "NCDHW":
        params.update(input_spatial=(5, 6, 4), filter_spatial=(2, 3, 1), stride=(1, 2, 1),
                      padding=((1, 0), (1, 1), (0, 0)))
    problem = grouped_conv_bwd_weight.problem_from_params(**params, precision="bf16x3")
    assert problem.name.endswith("_split_bf16x3") and problem.computed_as.dtype == "bfloat16"
    assert grouped_conv_bwd_weight.problem_from_params(**problem.params()) == problem
    x, grad_out = (rng.standard_normal(s).astype(np.float32) for s in (problem.input_shape, problem.output_shape))
    got = np.asarray(api.grouped_conv_bwd_weight(x, grad_out, groups=2, filter_spatial=params["filter_spatial"],
                                                 stride=params["stride"], padding=params["padding"], layout=layout,
                                                 precision="bf16x3"), np.float64)
    want = grouped_conv_bwd_weight.reference(problem, [x, grad_out])
    magnitude = grouped_conv_bwd_weight.magnitudes(problem, [x, grad_out], [want])[0]
    error = np.abs(got - want) / magnitude
    assert error.max() < 2.0 ** -16, error.max()
    bfloat16 = grouped_conv_bwd_weight.reference(problem, [_bf16(x), _bf16(grad_out)])
    assert (np.abs(bfloat16 - want) / magnitude).max() > 16 * error.max()  # the lo parts count


def test_a_one_tap_channels_first_split_keeps_its_layout_and_its_accuracy(rng):
    """1x1, no padding, 32 positions an image (whole GEMM_BLOCKs): the bfloat16 problem inside keeps NCHW (the
    split writes its parts as x and grad_out lie), and the products stay within 2^-16 of their magnitude."""
    params = dict(batch=3, groups=1, in_channels=6, out_channels=5, input_spatial=(8, 4), filter_spatial=(1, 1),
                  dtype="float32", layout="NCHW")
    problem = grouped_conv_bwd_weight.problem_from_params(**params, precision="bf16x3")
    assert problem.computed_as.layout == "NCHW" and problem.computed_as.batch == 9
    x, grad_out = (rng.standard_normal(s).astype(np.float32) for s in (problem.input_shape, problem.output_shape))
    got = np.asarray(api.grouped_conv_bwd_weight(x, grad_out, groups=1, filter_spatial=(1, 1), layout="NCHW",
                                                 precision="bf16x3"), np.float64)
    want = grouped_conv_bwd_weight.reference(problem, [x, grad_out])
    magnitude = grouped_conv_bwd_weight.magnitudes(problem, [x, grad_out], [want])[0]
    assert (np.abs(got - want) / magnitude).max() < 2.0 ** -16


def _bf16(a):
    import ml_dtypes

    return a.astype(ml_dtypes.bfloat16).astype(np.float64)


def test_the_split_is_checked_with_its_own_tolerance_and_a_lost_lo_part_fails(monkeypatch):
    """The known-answer check allows a split product its 2^-16 (doubled), and refuses the bfloat16-only answer
    (what a compiler folding extf(truncf(v)) into v gives: the lo parts zero)."""
    monkeypatch.setattr(known_answer, "WHOLE", 0)
    problem = grouped_conv_bwd_weight.problem_from_params(**_PARAMS, layout="NHWC", precision="bf16x3")
    inputs = known_answer.inputs_for(problem)
    hi_only = grouped_conv_bwd_weight.reference(problem, [_bf16(a) for a in inputs]).astype(np.float32)
    assert not known_answer.judge(problem, inputs, [hi_only]).passed
    right = grouped_conv_bwd_weight.reference(problem, inputs).astype(np.float32)
    assert known_answer.judge(problem, inputs, [right]).passed


def test_bf16x3_takes_float32_only():
    with pytest.raises(ValueError, match="grouped_conv_bwd_weight: precision bf16x3 splits float32"):
        grouped_conv_bwd_weight.problem_from_params(**dict(_PARAMS, dtype="bfloat16"), precision="bf16x3")
    with pytest.raises(ValueError, match="grouped_conv_bwd_weight: precision must be one of float32, bf16x3, bf16x6"):
        grouped_conv_bwd_weight.problem_from_params(**_PARAMS, precision="tf32")


@pytest.mark.parametrize("dtype, taps, groups, channels, allowed, expected", [
    ("float32", (3, 3), 1, 8, True, "f16x1"), ("float32", (1, 1), 1, 8, True, "f16x1"),  # its split takes the gemm form
    ("float32", (3, 3), 1, 8, False, "float32"), ("bfloat16", (3, 3), 1, 8, True, "float32"),
    ("float32", (3,), 2, 16, True, "bf16x3"),  # grouped: bf16x3, not f16x1 (policy.WORKAROUNDS)
    ("float32", (3, 3), 8, 1, True, "float32"),  # depthwise: not split
    ("float32", (3, 3), 2, 8, True, "float32"),  # grouped, under 16 channels a group: the bfloat16 tiles mostly padding
])
def test_the_policy_splits_where_reduced_precision_is_allowed_and_the_filter_has_taps(dtype, taps, groups, channels,
                                                                                       allowed, expected):
    problem = grouped_conv_bwd_weight.problem_from_params(
        batch=2, groups=groups, in_channels=channels, out_channels=channels, input_spatial=(6,) * len(taps),
        filter_spatial=taps, layout="NCHW" if len(taps) == 2 else "NCW", dtype=dtype)
    split = "bf16x3" if allowed else "float32"
    assert weight_gradient_precision(problem, split) == expected
    if allowed:  # where PyTorch allows no reduced precision, a CUDA driver allows bf16x6 on the same problems
        assert weight_gradient_precision(problem, "bf16x6") == ("bf16x6" if expected in ("f16x1", "bf16x3") else expected)


@pytest.mark.parametrize("layout, batch, expected", [
    ("NCHW", 32, "f16x1"),   # its split problem (channels-last: 36 positions an image) has 96 x 36 rows
    ("NCHW", 2, "f16x1"),    # 6 x 36 = 216 rows: 8 zero rows complete 7 blocks (weight_gemm.zero_rows)
    ("NHWC", 32, "f16x1"),
    ("NHWC", 2, "f16x1"),
])
def test_a_one_tap_weight_gradient_splits_where_its_split_problem_takes_the_gemm_form(layout, batch, expected):
    problem = grouped_conv_bwd_weight.problem_from_params(
        batch=batch, in_channels=8, out_channels=8, input_spatial=(6, 6), filter_spatial=(1, 1), layout=layout, dtype="float32")
    assert weight_gradient_precision(problem, "bf16x3") == expected
    assert weight_gradient_precision(problem, "float32") == "float32"
    # padded: channels-last no gemm form, and one tap, so not split; channels-first its split writes x's parts
    # zero-padded and the inner problem, unpadded, is the gemm form's
    padded = grouped_conv_bwd_weight.problem_from_params(
        batch=batch, in_channels=8, out_channels=8, input_spatial=(6, 6), filter_spatial=(1, 1), padding=1,
        layout=layout, dtype="float32")
    assert weight_gradient_precision(padded, "bf16x3") == ("float32" if layout == "NHWC" else "f16x1")


@pytest.mark.parametrize("channels, spatial, expected", [
    ((104, 104), 28, "float32"),   # its split runs channels-last (784 positions), 104 not whole 32s: SIMT float32
    ((480, 80), 14, "float32"),
    ((1024, 256), 14, "f16x1"),   # channels in whole 32s: the split's tiles fit
    ((48, 104), 56, "bf16x3"),    # 3136 positions, whole 32s: the split runs channels-first, in order (bf16x3)
    ((440, 110), 1, "f16x1"),     # 110 channels: no float32 SIMT tile divides them (weight_gemm_tiles)
])
def test_a_ragged_one_tap_weight_gradient_stays_float32_where_its_split_runs_channels_last(channels, spatial,
                                                                                            expected):
    problem = grouped_conv_bwd_weight.problem_from_params(
        batch=32, in_channels=channels[0], out_channels=channels[1], input_spatial=(spatial, spatial),
        filter_spatial=(1, 1), layout="NCHW", dtype="float32")
    assert weight_gradient_precision(problem, "bf16x3") == expected
    nhwc = grouped_conv_bwd_weight.problem_from_params(
        batch=32, in_channels=channels[0], out_channels=channels[1], input_spatial=(spatial, spatial),
        filter_spatial=(1, 1), layout="NHWC", dtype="float32")
    assert weight_gradient_precision(nhwc, "bf16x3") == "f16x1"  # channels-last float32: unmeasured, split as before


def test_ops_torch_splits_only_float32_on_a_gpu():
    torch = pytest.importorskip("torch")
    from ops.torch import kernels

    assert kernels.split_precision(torch.randn(2, 3, 4, 4)) == "float32"  # the CPU: PyTorch's oneDNN has no TF32
    assert torch.backends.cudnn.allow_tf32  # PyTorch's default, which a CUDA float32 tensor would then follow
    assert allowed_split("cuda", True) == "bf16x3" and allowed_split("cuda", False) == "float32"
    assert allowed_split("cuda", False, emulated=True) == "bf16x6"
    assert allowed_split("hip", True) == allowed_split(None, False, emulated=True) == "float32"


def test_precompile_for_a_gpu_records_the_split_problems_a_gpu_step_makes():
    """Built on a machine without a GPU, a CUDA step's modules are those CUDA tensors make: the float32 weight
    gradients and the one-tap layer's backward-data as f16x1 where PyTorch allows TF32 (its default), and not
    otherwise (unless OPS_FLOAT32=bf16x6 opts in: test_opting_in_to_bf16x6), nor for ROCm or the CPU; a one-tap
    layer whose positions the float32 GEMM's tiles of 16 take (data_tiles.gemm_tiles) stays float32."""
    torch = pytest.importorskip("torch")
    from ops.torch import kernels
    import ops.torch as otorch

    model = otorch.convert(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 32, 1)))
    x = torch.randn(4, 3, 4, 6)  # the 1x1 layer split too: 4 x 24 rows, whole 32-row blocks; 24 positions, no tile
    for driver, allowed, expected in (("cuda", True, ["f16x1", "f16x1"]), ("cuda", False, ["float32"] * 2),
                                      ("hip", True, ["float32"] * 2), (None, True, ["float32"] * 2)):
        torch.backends.cudnn.allow_tf32 = allowed
        try:
            with kernels.recording(driver) as problems:
                model(x).sum().backward()
        finally:
            torch.backends.cudnn.allow_tf32 = True
        weights = [p for p in problems if p.op == "grouped_conv_bwd_weight"]
        assert [p.precision for p in weights] == [expected[0]] * 2
        (data,) = [p for p in problems if p.op == "conv_bwd_data"]  # the 1x1 layer's: K = 32, channels-first
        assert data.precision == expected[1]
    with kernels.recording("cuda") as problems:  # 256 positions: the tiled float32 GEMM, which f16x1 beats only
        model(torch.randn(2, 3, 16, 16)).sum().backward()  # at 196 or fewer (precision.F16X1_GEMM_MAX_POSITIONS)
    assert [p.precision for p in problems if p.op == "conv_bwd_data"] == ["float32"]


def test_strided_split_weight_gradients_fuse_their_padding_on_cuda_and_stride_one_ones_keep_the_copy():
    """The CUDA table's rule (docs/perf/h100-pad-fusion): a strided bfloat16 weight gradient's generic, here a float32
    channels-last one's split problem, reads its padding inside the convolution; a stride-1 one keeps the pad's own
    dispatch, and so do one of few channels and a 3-D one: ResNet-50's stem (C = 3, 7x7 stride 2) and r3d_18's
    strided layers compiled wrong with the fusion on an H100, and the known-answer check refused them
    (docs/perf/h100-split-conv-tiles). (Channels-first, the split writes x's parts zero-padded, and the inner
    problem has no padding to fuse.)"""
    cuda = targets.parse_target("cuda:sm_80")
    fuse = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"

    def flags(stride, channels=64, filters=3, rank=2):
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=4, groups=1, in_channels=channels,
                                  out_channels=64, input_spatial=(16,) * rank, filter_spatial=(filters,) * rank,
                                  stride=stride, padding=filters // 2, layout="NHWC" if rank == 2 else "NDHWC",
                                  dtype="float32", precision="bf16x3")
        assert problem.computed_as.dtype == "bfloat16"
        return policy.module_spec(problem, cuda).flags
    assert fuse in flags(2)
    assert fuse not in flags(1)
    assert fuse not in flags(2, channels=3, filters=7)
    assert fuse not in flags(2, rank=3)
