"""The GPU's rules for the backward-weight gemm form (``ops/operators/weight_gemm.py``), part of the target policy
(``ops/policy.py``, which names them): where a GPU takes the form (``takes_gemm``, and last, tiled, ``simt_gemm``),
how its rows are chunked (``gemm_split``) and whether a channels-first problem reads its channels-last twin
(``gemm_transposes``); and the generic's batch split without a tuned choice (``default_batch_split``). Each
constant says what it was measured on."""

from __future__ import annotations

import math

from .geometry import ceil_div
from .operators import grouped_conv_bwd_weight, weight_gemm
from .problem import GEMM_BLOCK
from .targets import Target


# Partial sums enough to fill a GPU. Measured on the H100 (docs/perf/h100-session3/tune/): the 3D video layers ran
# fastest with 4-5 M float32 accumulators (J = 8), depthwise layers with the most chunks the batch allows.
# A rough rule; the tuning tables hold the measured choice per problem where it differs.
GPU_PARALLEL_ACCUMULATORS = 1 << 22

# The gemm form's chunks on a GPU: at least GEMM_MIN_CHUNK_TERMS terms each (a few K-steps of a matrix-instruction
# tile), so that splitting a one-tap weight gradient's reduction fills the GPU without making the sum of the chunks
# the work; and a multiple of GEMM_BLOCK rows, IREE 3.13's matrix pipelines pad a reduction to their K tile by
# reading on into the next chunk's rows: on an H200, bfloat16 chunks of 392 rows (8 past a 16-row tile) came out
# wrong by 0.49 (relative) and read past the end of x, those of 256, 512, 784 or 1568 rows right.
GEMM_MIN_CHUNK_TERMS = 256

# A float32 channels-first one-tap weight gradient whose images give fewer partial sums than this (an image a chunk:
# N x K x C) cuts each image's positions into segments, a chunk each, up to this many (``weight_gemm.segments``):
# EfficientNet-B0's 32 -> 16 layer at 112x112 had 32 workgroups of 32 threads, each summing 12,544 positions
# (docs/perf/h100-gemm-segments).
GEMM_SEGMENT_ACCUMULATORS = 1 << 18


# A float32 channels-first one-tap weight gradient's gemm form reads its activations transposed channels-last
# (``gemm_transposes``) where C x K / (C + K) is at least this many channels and the channels-last split gives at
# least that many partial sums: on an H200, the 26 of 87 models-suite layers so chosen ran 1.1-2.8x faster (ResNet-50's
# and ResNeXt-50's 1.4-2.8x), none slower; layers of fewer channels or partial sums ran up to 2.1x slower, the
# transposes' passes and the channels-last split's whole 32-row chunks outweighing their GEMM
# (docs/perf/h200-im2col-gemm/exp28.log).
GEMM_TRANSPOSE_MIN_CHANNELS = 40
GEMM_TRANSPOSE_MIN_PARTIALS = 1 << 21

# The gathered gemm form's columns (x's windows, im2col: N x O x taps x C elements) are a transient: at most this many
# bytes, beyond which the generic serves. r3d_18's first stage at batch 8 gathers 2.9 GB and ran 2.1x faster so
# (docs/perf/h200-im2col-gemm/exp27.log); a model at 4 GiB a layer would hold that much more memory for it.
GEMM_GATHER_MAX_BYTES = 1 << 32

# A 16-bit channels-last weight gradient of several taps takes the gathered gemm form from this many input channels
# (``_gathers_wide``). On an H200 (docs/perf/h200-bf16-gather), of 32 such layers timed both ways, the 17 it takes
# (256-512 channels at batch 4-128, stride 1, and a bfloat16 one strided at three axes) ran 0.92-1.67x the speed of
# the generic under its tiles, the 7 above 0.3 ms all 1.05-1.53x (r3d_18's 256- and 512-channel 3x3x3 layers at
# batch 8 1.28-1.67x, ResNet-50's 512-channel 7x7 ones 1.07-1.12x); of the 15 it leaves, the layers of 128 channels
# or fewer ran 0.37-0.95x (the gathered columns of many rows outweigh the GEMM), the 2-D strided ones 0.60-0.93x (the
# table's strided tiles serve them), the float16 strided one 0.71x and wrong, the three stems 0.75-1.15x.
GEMM_GATHER_MIN_CHANNELS = 256


# A padded float16 weight gradient of one group and several taps into float32 (f16x1's parts) at stride 1 whose images
# give at least this many output positions reduces an image a chunk (J = N), past the partial sums
# GPU_PARALLEL_ACCUMULATORS asks for. On an H200 (docs/perf/h200-split-weight-rows/exp63_weight_batch_split.log, modules
# at batch 32, two rounds): ResNet-50's 256-channel 3x3 layer at 14x14 0.269 / 0.275 ms at J = 8 -> 0.241 / 0.246 at J =
# 32 (J = 4 and 16 slower); the 128-channel one at 28x28 already took J = 32 (0.180 against 0.265 at 16); at 7x7 (49
# positions) the 512-channel layer's J = 2 stayed fastest (0.183 against 0.225-0.304 at 1, 4, 8); r3d_18's 256 at
# 4x14x14 (batch 8) level at J = 8 (0.435 / 0.429 against 0.437 / 0.430). The captured step, TF32 on, in turns with the
# tree before (step_ab_n105_n108.log, with the split_conv weight rows): ResNet-50 float32 channels-last 20.07 / 20.04 ->
# 19.83 / 19.83 ms, r3d_18 31.06 / 31.03 -> 30.54 / 30.53. Left out: unpadded problems (a channels-first split writes
# x's parts zero-padded, its float16 problem has no padding), whose ResNet-50 NCHW 256-channel 14x14 module at J = 32
# left 9,216 positions NaN or unwritten (the known-answer check refused it in the step; PyTorch's kernel served it), and
# strided layers, which IREE computed wrong (NaN) at larger J (the 256-channel 28x28 one at J = 16 and 32, the
# 512-channel 14x14 one at 4 and 8).
IMAGE_CHUNK_MIN_POSITIONS = 196


def default_batch_split(problem, target: Target) -> int:
    """J of the backward-weight generic without a tuned choice: on a GPU, the fewest chunks giving ~2^22 partial
    sums, or an image a chunk (``IMAGE_CHUNK_MIN_POSITIONS``); on the CPU, 1 (two cores have all the parallel work
    they need in the weight gradient itself, and a split costs a buffer of J weight-sized float32 partials there for
    nothing)."""
    if target.cpu:
        return 1
    if _image_chunks(problem):
        return problem.batch
    weight = math.prod(problem.weight_shape)
    return next((j for j in grouped_conv_bwd_weight.batch_split_choices(problem) if j * weight >= GPU_PARALLEL_ACCUMULATORS),
                problem.batch)


def _image_chunks(problem) -> bool:
    """Whether a GPU's generic reduces ``problem`` an image a chunk (``IMAGE_CHUNK_MIN_POSITIONS``): float16 into
    float32, padded, one group, several taps, stride 1, at least that many output positions an image."""
    return (problem.dtype == "float16" and problem.out_dtype == "float32" and problem.padded
            and problem.groups == 1 and math.prod(problem.filter_spatial) > 1 and not problem.strided
            and math.prod(problem.output_spatial) >= IMAGE_CHUNK_MIN_POSITIONS)


def takes_gemm(problem) -> bool:
    """Whether a GPU takes the backward-weight gemm form for ``problem``: a GEMM of its rows as they lie
    (``gemm_rows``), and channels-last (its rows completed to whole GEMM_BLOCK blocks by zero rows,
    ``weight_gemm.zero_rows``: r3d_18's 784-row downsample at batch 8 had only the generic, whose 1x1 convolution
    IREE computed wrong in bfloat16 under every flag set), or channels-first with 16-bit inputs (each image's
    (channels, positions) matrices, the positions in whole blocks). Float32 channels-first,
    the form reduces along rows without a matrix instruction: 1.1-59 ms against the generic's 0.8-4.2 on
    ResNet-50's layers (docs/perf/h200-gemm). The split float32 problems of channels-first models are such 16-bit
    problems where their positions allow: their split then writes its parts as the activations lie, where the
    channels-last parts took a transposing pass (ResNet-50's 1x1 layer 64 -> 256 at 56x56, 0.914 -> 0.413 ms on an
    H100; docs/perf/h100-split-nchw). With taps or padding (x's windows gathered), where ``_gathers_wide`` says."""
    if weight_gemm.gathers(problem):
        return _gathers_wide(problem)
    if not problem.gemm_rows:  # one tap and no padding (``weight_gemm.applies``), and its rows as they lie
        return False
    return problem.channels_last or problem.dtype in ("bfloat16", "float16")


def _gathers_wide(problem) -> bool:
    """Whether a GPU takes the gathered gemm form (``weight_gemm.gathers``: x's windows in columns, one GEMM under
    IREE's matrix pipeline) of a 16-bit channels-last problem of one group and 16-bit grad_w: at least
    GEMM_GATHER_MIN_CHANNELS input channels, at stride 1 or, bfloat16, strided at three spatial axes; its columns at
    most GEMM_GATHER_MAX_BYTES. The split float32 problems (bfloat16 parts, float32 grad_w) keep the generic: the
    gemm form ran 0.83-1.79x as fast on 17 of ResNet-50's and r3d_18's 18 such (docs/perf/h200-bf16-gather/
    exp33.log; the 18th's generic did not finish its benchmark), and r3d_18's TF32 step was level with it."""
    if problem.groups != 1 or not problem.channels_last or problem.dtype not in ("bfloat16", "float16"):
        return False
    if problem.out_dtype != problem.dtype:  # a split float32 problem's parts
        return False
    if problem.strided and (problem.rank < 3 or problem.dtype != "bfloat16"):  # float16: policy.WORKAROUNDS
        return False
    return (problem.in_channels >= GEMM_GATHER_MIN_CHANNELS
            and weight_gemm.gathered_bytes(problem) <= GEMM_GATHER_MAX_BYTES)


def gemm_split(problem) -> int:
    """J of the backward-weight gemm form: the fewest chunks giving GPU_PARALLEL_ACCUMULATORS partial sums, of at
    least GEMM_MIN_CHUNK_TERMS terms each (else the most such; 1 where none is). Channels-last (or read so,
    ``gemm_transposes``), the rows split in chunks of whole GEMM_BLOCK blocks; channels-first, the images, and a
    float32 problem whose images give fewer than GEMM_SEGMENT_ACCUMULATORS partial sums each image's positions in
    segments too (``_segments``)."""
    return rows_split(gemm_read(problem))


def gemm_read(problem):
    """The problem as the gemm form's GEMM reads it: ``problem``, or its channels-last twin where ``gemm_transposes``
    (``weight_gemm.twin``)."""
    return weight_gemm.twin(problem, gemm_transposes(problem))


def gemm_transposes(problem) -> bool:
    """Whether the gemm form reads a channels-first problem's activations transposed channels-last
    (``weight_gemm.twin``): gathered, always; a float32 one-tap problem where the GEMM outweighs the transposes, C x
    K / (C + K) (its multiply-adds per element the transposes move) at least GEMM_TRANSPOSE_MIN_CHANNELS, and where
    the channels-last split still fills the GPU, at least GEMM_TRANSPOSE_MIN_PARTIALS partial sums."""
    if problem.channels_last or not weight_gemm.applies(problem):
        return False
    if weight_gemm.gathers(problem):
        return True
    c, k = problem.in_channels, problem.out_channels
    if problem.dtype != "float32" or c * k < GEMM_TRANSPOSE_MIN_CHANNELS * (c + k):
        return False
    return rows_split(weight_gemm.twin(problem, True)) * math.prod(problem.weight_shape) >= GEMM_TRANSPOSE_MIN_PARTIALS


def rows_split(problem) -> int:
    """``gemm_split``'s J for the problem the GEMM reads, in its layout."""
    rows = weight_gemm.rows(problem)
    weight = math.prod(problem.weight_shape)
    if problem.channels_last:
        choices = [j for j in range(1, rows // GEMM_BLOCK + 1) if rows % (j * GEMM_BLOCK) == 0
                   and rows // j >= GEMM_MIN_CHUNK_TERMS] or [1]
    else:
        positions = math.prod(problem.output_spatial)
        choices = [j for j in range(1, rows + 1) if rows % j == 0
                   and rows // j * positions >= GEMM_MIN_CHUNK_TERMS] or [1]
        few = problem.dtype == "float32" and rows * weight < GEMM_SEGMENT_ACCUMULATORS
        cut = _segments(positions, ceil_div(GEMM_SEGMENT_ACCUMULATORS, rows * weight)) if few else 1
        if cut > 1:
            return rows * cut
    return next((j for j in choices if j * weight >= GPU_PARALLEL_ACCUMULATORS), choices[-1])


def _segments(positions: int, wanted: int) -> int:
    """The segments an image's ``positions`` are cut into for the float32 gemm form: the fewest dividing them from
    ``wanted`` on, of at least GEMM_MIN_CHUNK_TERMS positions each, else the most such (1 where none is: the images
    are then chunked as any others')."""
    cuts = [s for s in range(1, positions // GEMM_MIN_CHUNK_TERMS + 1) if positions % s == 0] or [1]
    return next((s for s in cuts if s >= wanted), cuts[-1])


def simt_gemm(problem) -> bool:
    """Whether ``problem`` is a float32 one whose gemm form ``takes_gemm`` leaves out: channels-first one-tap and
    unpadded, or of one group with its windows gathered (``weight_gemm.gathers``) in any layout, their columns at most
    GEMM_GATHER_MAX_BYTES. A GPU's forms have it last where a table rule tiles it (``weight_gemm_tiles``; the rule
    puts it first)."""
    if takes_gemm(problem) or not weight_gemm.applies(problem) or problem.dtype != "float32":
        return False
    if weight_gemm.gathers(problem):
        return weight_gemm.gathered_bytes(problem) <= GEMM_GATHER_MAX_BYTES
    return not problem.channels_last


def float32_gemm(problem) -> bool:
    """Whether a GPU's gemm form of ``problem`` computes float32 one-tap products: a channels-first one tiled last
    (``simt_gemm``), or a channels-last one, whose gemm form is its first (``takes_gemm``)."""
    return simt_gemm(problem) or (takes_gemm(problem) and problem.channels_last and problem.dtype == "float32")
