"""How a float32 convolution's gradients compute on each driver (the policy's split-precision decisions, which
``ops.torch`` applies): float32 arithmetic, or the bfloat16 products of ``problem.SPLIT_PRODUCTS`` (bf16x3 where
PyTorch allows reduced precision, bf16x6 where the user opts in), problem by problem."""

from __future__ import annotations

import dataclasses
import math

from . import gemm_policy, policy, targets
from .problem import GEMM_BLOCK, SCALED_PRECISIONS
from .operators import data_gemm, data_scaled, data_split_conv, stride_phases


# The target whose table the split decisions read (``_splits_data``): the one ``allowed_split`` splits for.
SPLIT_TARGET = targets.parse_target("cuda:sm_80")


def allowed_split(driver: str | None, reduced: bool, emulated: bool = False) -> str:
    """The split a float32 convolution's gradients may take on ``driver`` (a key of ``problem.SPLIT_PRODUCTS``, or
    ``"float32"``: none): on NVIDIA's GPUs, whose IREE target has matrix instructions for 16-bit inputs only, bf16x3
    where PyTorch allows reduced precision (``reduced``: ``torch.backends.cudnn.allow_tf32``); where it does not,
    none, or bf16x6 where the user opts in (``emulated``: ``OPS_FLOAT32=bf16x6``). bf16x6's products are float32's,
    but the matrix units' float32 sums are not (truncated): on an H100, ResNet-50's first-step gradients came 1.0e-4
    from PyTorch's FP32 ones, ours in float32 5.2e-6, its step 3.8x faster (docs/perf/h100-bf16x6-small-first). Not
    on ROCm: gfx942 has float32 ones (MFMA_F32_16x16x4_F32), and the split is unmeasured there; nor on the CPU."""
    if driver != "cuda":
        return "float32"
    return "bf16x3" if reduced else "bf16x6" if emulated else "float32"


# A grouped weight gradient of fewer input channels a group than this stays float32: the bfloat16 matrix tiles (16
# wide) are mostly padding there. ResNeXt-50's g32 3x3 layers at batch 32 on an H100 (docs/perf/h200-grouped-split/
# grouped_split_modules_h100.log): float32 / bf16x3 modules 0.689 / 1.84 ms at 4 channels (56x56), 0.478 / 1.26 at 8
# (28x28), 0.950 / 1.91 at 8 strided; from 16 the split wins at stride 1 (1.07 / 0.497 at 16, 0.909 / 0.298 at 32),
# and the strided 16-channel layer is the one measured miss (0.684 / 0.955).
SPLIT_MIN_GROUP_CHANNELS = 16


def weight_gradient_precision(problem, split: str) -> str:
    """How ``ops.torch`` computes a float32 weight gradient (``ConvBwdWeightProblem.precision``): as the ``split`` its
    driver allows (``allowed_split``: bf16x3, computed as f16x1 where ``_weight_split`` says, or bf16x6)
    where the convolution is not depthwise nor grouped with fewer than SPLIT_MIN_GROUP_CHANNELS channels a group,
    and the filter has more than one tap or its split problem takes the gemm form (``gemm_policy.takes_gemm``);
    else in float32. Measured (docs/perf/h100-split, docs/perf/h200-models, docs/perf/h200-gemm): ResNet-50's 3x3
    weight gradients ran 13-38x faster so on the H100 than the untiled float32 generic; its 1x1 ones, split into
    the gemm form, 2.9-10x faster than the float32 generic channels-first (0.18-1.16 ms against 0.82-4.2 on an
    H200) and 2.7x faster in sum than the float32 gemm form channels-last (2.2 against 6.1 ms for seven layers);
    r3d_18's step 907 -> 175 ms on an H200; MobileNetV2's, whose 3x3 convolutions are depthwise, 8% slower (with
    depthwise left in float32: 103 -> 92 ms)."""
    few_channels = problem.kind == "grouped" and problem.in_channels < SPLIT_MIN_GROUP_CHANNELS
    if split == "float32" or problem.dtype != "float32" or problem.kind == "depthwise" or few_channels:
        return problem.precision
    split = _weight_split(problem, split)
    taps = math.prod(problem.filter_spatial) > 1
    split_problem = dataclasses.replace(problem, precision=split).computed_as
    split_gemm = gemm_policy.takes_gemm(split_problem) and not _keeps_float32_gemm(problem, split_problem)
    return split if taps or split_gemm else problem.precision


# Where PyTorch allows TF32 (bf16x3 allowed), a split gradient's products are float16 ones of operands scaled by a
# power of two (f16x1, ``split_precision``): TF32's 11 significant bits in one 16-bit product where bf16x3 takes
# three. On an H200 (docs/perf/h200-f16x1), TF32 on, weight gradients so: r3d_18 float32 channels_last's captured
# step 83.4 -> 68.9 ms, ResNet-50 float32 NCHW's 43.2 -> 38.8; backward-data too: r3d_18 69.0 -> 45.8, ResNet-50
# 38.9 -> 35.1. Grouped weight gradients and channels-first in-order ones keep bf16x3 (``_weight_split``).
TF32_SPLITS = {"bf16x3": "f16x1"}


def _weight_split(problem, split: str) -> str:
    """The split of a weight gradient ``split`` allows: where TF32 is (bf16x3), f16x1 (``TF32_SPLITS``), but bf16x3
    for grouped ones (policy.WORKAROUNDS) and for channels-first ones whose split keeps their layout (one tap, whole
    GEMM_BLOCKs of positions: ``gemm_rows``, its parts written in order): on an H200 EfficientNet-B0's such layers
    ran 1.2-1.6x slower as f16x1, and keeping them bf16x3 took its float32 NCHW TF32 step 24.25 -> 23.75 ms,
    ResNet-50's 35.10 -> 34.44 (docs/perf/h200-f16x1/cf_in_order_ab6.log). With f16x1's passes cheaper it lost
    again: 25.07 -> 26.96 and 26.31 -> 27.00 (docs/perf/h200-f16x1-passes/*_variants.log, tree n73a); the modules of
    21 such layers of five models ran 0.79-1.52x the time of bf16x3's, slower on all but one strided layer
    (docs/perf/h200-weight-tiles-2d/exp49_in_order_f16x1.log). Both measured while IREE rebuilt f16x1's in-order
    pass at its own tiling, before that pass kept its tile (``split_precision._in_order``, twenty-seventh stop)."""
    if split not in TF32_SPLITS or problem.groups > 1 or (not problem.channels_last and problem.gemm_rows):
        return split
    return TF32_SPLITS[split]


def _keeps_float32_gemm(problem, split_problem) -> bool:
    """Whether a channels-first one-tap float32 weight gradient stays float32 though its split takes the gemm form:
    where the split runs channels-last (the positions not in whole GEMM_BLOCKs, so the split pass transposes), a
    channel count is not a whole GEMM_BLOCK, and the table tiles the float32 gemm form (``weight_gemm_tiles``).
    Measured on an H100 at batch 32 (docs/perf/h100-unaligned-weight/exp11.log): RegNetY-400MF's and
    EfficientNet-B0's six such layers (440 at 7x7, 208 and 208 -> 440 at 14x14, 104 at 28x28, 672 -> 112 and 480 ->
    80 at 14x14) 0.083-0.181 ms in float32 against 0.121-0.738 split; the split stayed faster where the channels
    come in whole blocks (1024 -> 256 at 14x14, 0.188 against 0.379) or it runs channels-first (56x56 and 112x112
    layers of 24-144 channels, 0.17-0.41 against 0.36-1.36)."""
    ragged = problem.in_channels % GEMM_BLOCK or problem.out_channels % GEMM_BLOCK
    if problem.channels_last or not split_problem.channels_last or not ragged:
        return False
    return bool(policy.configs_for(problem, SPLIT_TARGET, policy.forms_for(problem, SPLIT_TARGET)[0]))


# Where a channels-last float32 backward-data's GEMM has fewer columns (input channels C) than this, its stride
# phases in float32 beat the split (docs/perf/h200-data-gemm: at C = 64, 0.050 against 0.086 ms and 0.166 against
# 0.287; from C = 256, 4-8x slower than it). Channels-first, they are slower at any C (0.34-7.2 ms).
DATA_SPLIT_MIN_CHANNELS = 128
# f16x1's, whose grad_out scaling a layer's pair shares with its weight gradient (ops/operators/conv_pair.py): from
# 64. On an H200 (docs/perf/h200-joint-gradients/step_ab_n111_n112.log), captured steps in turns, TF32 on:
# ResNet-50 channels_last 19.24 / 19.28 -> 18.90 / 18.91 ms, MobileNetV2 16.30 / 16.30 -> 16.11 / 16.04,
# EfficientNet-B0 14.12 -> 13.76. Alone, ResNet-50's 64 -> 256 1x1 module is level with the float32 GEMM (0.144
# against 0.148 ms, docs/perf/h200-split-weight-rows/exp62).
SCALED_DATA_SPLIT_MIN_CHANNELS = 64


# Where the CUDA table tiles a stride-1 one-tap float32 GEMM (gemm_tiles), which beats bf16x3 there, f16x1's gemm
# form beats it channels-last (at the SCALED_DATA_SPLIT_MIN_CHANNELS the split takes there) and channels-first at
# most this many positions an image (where the table's float32 tile is 49 positions). On an H200
# (docs/perf/h200-f16x1-data/exp41.log), ResNet-50's 1x1 stride-1 layers at batch 32, iree-benchmark-module medians,
# float32 GEMM against f16x1: channels-last, the ten of 128 channels or more 0.102-0.288 ms, 1.971 in sum -> 1.326
# (c128 -> k512 level at 0.160 / 0.156; C = 64 slower, 0.064 -> 0.099 and 0.151 -> 0.264); channels-first at 14x14
# and 7x7 1.189 -> 0.841 over the five (2048 -> 512 at 7x7 the one loss, 0.153 -> 0.201), at 56x56 and 28x28 slower
# on six of seven (1.232 -> 1.547). With f16x1's passes made cheaper (docs/perf/h200-f16x1-passes), f16x1 at any
# count of positions was still no faster in ResNet-50's step (27.00 -> 27.07 ms, tree n73b against n73a).
F16X1_GEMM_MAX_POSITIONS = 196


def _beats_float32_gemm(problem, split: str) -> bool:
    """Whether ``split``'s gemm form beats the float32 GEMM the table tiles (``F16X1_GEMM_MAX_POSITIONS``); not
    measured on layers of one position an image (squeeze-excite's), which keep the float32 GEMM's own tiles."""
    positions = math.prod(problem.output_spatial)
    return (split in SCALED_PRECISIONS and positions > 1
            and (problem.channels_last or positions <= F16X1_GEMM_MAX_POSITIONS))


def data_gradient_precision(problem, split: str) -> str:
    """How ``ops.torch`` computes a float32 conv_bwd_data (``ConvBwdDataProblem.precision``): as the ``split`` its
    driver allows (as ``weight_gradient_precision``; bf16x3 as f16x1, ``TF32_SPLITS``) where a split form takes the
    problem (``_splits_data``); else in float32."""
    split = TF32_SPLITS.get(split, split)
    wanted = problem.op == "conv_bwd_data" and problem.dtype == "float32" and _splits_data(problem, split)
    return split if split != "float32" and wanted else problem.precision


def _splits_data(problem, split: str) -> bool:
    """Whether a float32 conv_bwd_data is split: the gemm form (``data_gemm``) where the problem is one-tap and
    unpadded with one group, its output channels and its rows come in whole GEMM_BLOCK blocks (the GEMM's
    reduction, which IREE pads into the next part's channels otherwise, and its rows, as the weight gradient's gemm
    form), and it is channels-first or has at least DATA_SPLIT_MIN_CHANNELS input channels (scaled, at least
    SCALED_DATA_SPLIT_MIN_CHANNELS), but not at stride 1 where the CUDA table tiles its float32 GEMM (``gemm_tiles``;
    strided, the split ran 1.1-1.7x faster than that GEMM: docs/perf/h100-f32-data-tiles) unless f16x1 beats it
    there (``_beats_float32_gemm``); the split_conv form (``data_split_conv``: the forward convolution over 3K
    channels, a 16-bit convolution IREE gives its matrix pipeline) where the problem is of stride 1 with several
    taps; scaled (f16x1), the stride phases of scaled operands (``data_scaled``) where the problem is of a stride
    above 1 with several taps."""
    if data_split_conv.applies(problem) or data_scaled.computes(problem, split):
        return True
    gemm = stride_phases.Form(contraction="gemm")
    if (data_gemm.takes_float32(problem) and max(problem.stride) == 1 and not _beats_float32_gemm(problem, split)
            and policy.configs_for(problem, SPLIT_TARGET, gemm)):
        return False  # the float32 GEMM, tiled by the table's rule (gemm_tiles), beats bf16x3 at stride 1
    return (data_gemm.applies(problem) and problem.out_channels % GEMM_BLOCK == 0
            and data_gemm.rows(problem) % GEMM_BLOCK == 0
            and (not problem.channels_last or problem.in_channels >= _data_split_min_channels(split)))


def _data_split_min_channels(split: str) -> int:
    return SCALED_DATA_SPLIT_MIN_CHANNELS if split in SCALED_PRECISIONS else DATA_SPLIT_MIN_CHANNELS
