"""grouped_conv_bwd_weight's gemm form (ops/operators/weight_gemm.py): a weight gradient as the GEMM it is, of x
itself for a one-tap unpadded filter, else of x's windows gathered into columns (im2col; one group). Its module
matches the float64 definition on the CPU in every layout, dtype, stride, padding, dilation and split (at a ResNet
layer's size too); the GPU targets take it first for one-tap problems, with the reduction split by rule; and the
compiled GPU code contracts it with matrix instructions (mma.sync on sm_80, MFMA on gfx942), with no scratch."""

from __future__ import annotations

import math

import pytest

from ops import gemm_policy, policy, targets, verify
from ops.api import run
from ops.operators import grouped_conv_bwd_weight as op
from ops.operators import weight_gemm

from conftest import poisoned
from lowering import compile_as_shipped, kernel_for, one_matrix_contraction

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))


def _problem(**params):
    base = dict(batch=4, groups=1, in_channels=8, out_channels=12, input_spatial=(6, 5),
                stride=1, padding=0, layout="NHWC", dtype="float32")
    params = {**base, **params}
    params.setdefault("filter_spatial", (1,) * len(params["input_spatial"]))
    return op.problem_from_params(**params)


# (params, J): layouts of 1-3 spatial axes, strides that skip rows and columns, groups, 16-bit inputs with a
# float32 or 16-bit result, x's unread end (stride 2 over an even size), no split, every row its own chunk; zero
# rows completing channels-last rows to 32-row blocks (90 -> 96, 28 -> 32, 72 -> 96, 100 -> 128)
CASES = {
    "2d_nhwc_j3": (dict(batch=3), 3),
    "2d_nchw_j2": (dict(batch=4, layout="NCHW"), 2),
    "2d_nhwc_s2_g3_bf16": (dict(groups=3, in_channels=5, out_channels=4, input_spatial=(8, 7), stride=2,
                                dtype="bfloat16"), 8),
    "2d_nchw_s2x1_g2_f16_f32": (dict(groups=2, in_channels=3, out_channels=6, stride=(2, 1), layout="NCHW",
                                     dtype="float16", out_dtype="float32"), 4),
    "1d_nwc_every_row": (dict(input_spatial=(7,), layout="NWC"), 32),
    "1d_ncw_s3": (dict(input_spatial=(10,), stride=3, layout="NCW", batch=2), 1),
    "3d_ndhwc_s2": (dict(input_spatial=(4, 5, 6), stride=2, layout="NDHWC", in_channels=3, out_channels=5), 2),
    "3d_ncdhw_depthwise": (dict(input_spatial=(3, 4, 5), layout="NCDHW", groups=6, in_channels=1, out_channels=1), 4),
    "2d_nhwc_dilated": (dict(dilation=3, stride=2, input_spatial=(9, 9)), 1),
    # channels-first, each image's positions cut into segments (weight_gemm.segments): 30 into 5, 9 strided into 3
    "2d_nchw_segments": (dict(layout="NCHW"), 20),
    "2d_nchw_s2_g2_segments": (dict(layout="NCHW", groups=2, in_channels=3, out_channels=5, stride=2,
                                    input_spatial=(6, 6)), 12),
    # gathered (weight_gemm.gathers): taps, padding, both layouts (channels-first through its channels-last twin),
    # strides, dilation, a filter of unequal sides, 1-D to 3-D, a padded one-tap filter
    "gathered_2d_nhwc_3x3": (dict(batch=3, filter_spatial=(3, 3), padding=1), 3),
    "gathered_2d_nchw_3x3": (dict(filter_spatial=(3, 3), padding=1, layout="NCHW"), 2),
    "gathered_2d_nhwc_s2_3x2": (dict(batch=2, in_channels=5, out_channels=4, input_spatial=(9, 8),
                                     filter_spatial=(3, 2), padding=(1, 0), stride=2), 4),
    "gathered_2d_nchw_dilated": (dict(batch=2, in_channels=5, out_channels=4, input_spatial=(9, 8),
                                      filter_spatial=(3, 3), padding=2, dilation=2, stride=(2, 1), layout="NCHW"), 1),
    "gathered_3d_ndhwc": (dict(batch=2, in_channels=3, out_channels=5, input_spatial=(4, 5, 6),
                               filter_spatial=(3, 3, 3), padding=1, layout="NDHWC"), 4),
    "gathered_3d_ncdhw_s2": (dict(batch=2, in_channels=3, out_channels=5, input_spatial=(4, 5, 6),
                                  filter_spatial=(3, 3, 3), padding=1, stride=2, layout="NCDHW"), 2),
    "gathered_1d_nwc_5": (dict(batch=3, in_channels=4, out_channels=6, input_spatial=(11,), filter_spatial=(5,),
                               padding=2, layout="NWC"), 4),
    # 3 channels and a zero one gathered (weight_gemm.COLUMN_GRAIN), cut from grad_w: a 7x7 and a 3x7x7 stem
    "gathered_2d_nchw_stem": (dict(batch=2, in_channels=3, out_channels=16, input_spatial=(20, 18),
                                   filter_spatial=(7, 7), padding=3, stride=2, layout="NCHW"), 4),
    "gathered_3d_ndhwc_stem": (dict(batch=2, in_channels=3, out_channels=8, input_spatial=(4, 10, 10),
                                    filter_spatial=(3, 7, 7), padding=(1, 3, 3), stride=(1, 2, 2), layout="NDHWC"), 2),
    # 3 channels, no padding and 256 rows (no zero rows): the zero channel alone pads x
    "gathered_2d_nhwc_unpadded_3_channels": (dict(in_channels=3, out_channels=8, input_spatial=(10, 10),
                                                  filter_spatial=(3, 3)), 2),
    "gathered_1d_ncw_padded_one_tap": (dict(batch=3, in_channels=4, out_channels=6, input_spatial=(11,),
                                            padding=1, layout="NCW"), 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_gemm_form_matches_the_definition(rng, name):
    params, chunks = CASES[name]
    problem = _problem(**params)
    error = _error(problem, chunks, rng)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


def test_the_gemm_form_matches_the_definition_at_a_resnet_layers_size(rng):
    """ResNet-50's first bottleneck's 1x1 layer at batch 2 in bfloat16 channels-last (x: 401,408 elements, more
    than the check samples), its reduction in the chunks the GPU rule gives."""
    problem = _problem(batch=2, in_channels=64, out_channels=64, input_spatial=(56, 56), dtype="bfloat16")
    assert math.prod(problem.input_shape) > 1 << 18
    error = _error(problem, gemm_policy.gemm_split(problem), rng)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_the_gathered_gemm_form_matches_the_definition_at_a_resnet_layers_size(rng, layout):
    """ResNet-50's first 3x3 layer (64 -> 64 at 56x56, padding 1) at batch 2 in float32 (x: 401,408 elements, more
    than the check samples), in the chunks the GPU rule gives: 2 x 56 x 56 x 576 gathered columns."""
    problem = _problem(batch=2, in_channels=64, out_channels=64, input_spatial=(56, 56), filter_spatial=(3, 3),
                       padding=1, layout=layout)
    assert math.prod(problem.input_shape) > 1 << 18 and weight_gemm.gathers(problem)
    error = _error(problem, gemm_policy.gemm_split(problem), rng)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


def test_the_gemm_form_with_zero_rows_matches_the_definition_at_r3d_18s_size(rng):
    """r3d_18's last downsample (256 -> 512, 1x1x1, stride 2) at batch 8 in bfloat16 channels-last: 784 rows, 16
    zero rows after them, in the chunks the GPU rule gives (IREE computed its generic form wrong on an H100 under
    every flag set, docs/perf/h100-bf16-conv-tiles)."""
    problem = _problem(batch=8, in_channels=256, out_channels=512, input_spatial=(4, 14, 14), stride=2,
                       layout="NDHWC", dtype="bfloat16")
    assert math.prod(problem.input_shape) > 1 << 18 and weight_gemm.zero_rows(problem) == 16
    assert policy.forms_for(problem, CUDA)[0] == op.Form(batch_split=gemm_policy.gemm_split(problem), contraction="gemm")
    error = _error(problem, gemm_policy.gemm_split(problem), rng)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


@pytest.mark.parametrize("params, chunks", [
    (dict(layout="NCHW", stride=2, input_spatial=(9, 8)), 2),             # 4 x 5 x 4 = 80 rows, 96 with zero rows
    (dict(layout="NCDHW", input_spatial=(4, 5, 6), in_channels=3, out_channels=5), 8),
    (dict(layout="NCW", input_spatial=(10,), batch=2, dtype="bfloat16", out_dtype="float32"), 1),
])
def test_the_transposed_gemm_form_matches_the_definition(rng, params, chunks):
    """A channels-first one-tap problem read transposed channels-last (``Form.transpose``, ``weight_gemm.twin``):
    its rows split as channels-last ones, grad_w transposed back."""
    problem = _problem(**params)
    assert weight_gemm.twin(problem, True).channels_last and weight_gemm.splits(weight_gemm.twin(problem, True), chunks)
    error = _error(problem, chunks, rng, transpose=True)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"
    with pytest.raises(ValueError, match="transpose takes the gemm form"):
        op.Form(transpose=True)


def _error(problem, chunks: int, rng, transpose: bool = False) -> float:
    inputs = op.random_inputs(problem, rng)
    (shape, dtype), = op.results(problem)
    form = op.Form(batch_split=chunks, contraction="gemm", transpose=transpose)
    got = run(problem, inputs, "local-task", poisoned(shape, dtype, "local-task"), form=form).to_host()
    return verify.relative_error(got, op.reference(problem, inputs))


@pytest.mark.parametrize("params", [dict(filter_spatial=(3, 3), padding=1), dict(padding=1),
                                    dict(filter_spatial=(1, 3))])
def test_the_gemm_form_refuses_taps_and_padding_of_several_groups(params):
    problem = _problem(groups=2, in_channels=4, out_channels=6, **params)
    assert not weight_gemm.applies(problem) and weight_gemm.applies(_problem(**params))
    with pytest.raises(ValueError, match="grouped_conv_bwd_weight: the gemm form needs one group, or a one-tap "):
        op.render(problem, op.Form(contraction="gemm"))


def test_the_gemm_forms_split_must_divide_its_rows():
    problem = _problem(batch=3)  # 3 x 6 x 5 = 90 rows channels-last, 96 with its zero rows; channels-first 3 images
    op.render(problem, op.Form(batch_split=48, contraction="gemm"))
    with pytest.raises(ValueError, match=r"batch_split must divide its rows 96 \(.*\), but got 5"):
        op.render(problem, op.Form(batch_split=5, contraction="gemm"))
    # channels-first, more chunks than images cut each image's 30 positions: 45 = 3 x 15 segments, 36 = 3 x 12 not
    assert "15 runs (s)" in op.render(_problem(batch=3, layout="NCHW"), op.Form(batch_split=45, contraction="gemm"))
    with pytest.raises(ValueError, match=r"batch_split must divide its rows 3 \(.*\), but got 36"):
        op.render(_problem(batch=3, layout="NCHW"), op.Form(batch_split=36, contraction="gemm"))


def test_gpus_take_the_gemm_form_first_for_one_tap_unpadded_channels_last_problems_and_the_cpu_does_not():
    one_tap = _problem(batch=32, in_channels=64, out_channels=256, input_spatial=(56, 56), dtype="bfloat16")
    for target in (CUDA, ROCM):
        first, *rest = policy.forms_for(one_tap, target)
        assert first.contraction == "gemm" and rest == [op.Form(batch_split=gemm_policy.default_batch_split(one_tap, target))]
        for other in (dict(filter_spatial=(3, 3), padding=1), dict(padding=1), dict(layout="NCHW")):
            assert policy.forms_for(_problem(**{"batch": 32, **other}), target)[0].contraction == "generic", other
        # 392 rows, no whole 32-row blocks: 24 zero rows complete them (416)
        odd = _problem(input_spatial=(7, 7), batch=8, dtype="bfloat16")
        assert policy.forms_for(odd, target)[0].contraction == "gemm" and weight_gemm.zero_rows(odd) == 24
        # channels-first 16-bit (a split float32 problem's inner one): the gemm form where each image's positions
        # come in whole 32-blocks; 4 chunks of 8 images, each 8 x 32 = 256 terms (GEMM_MIN_CHUNK_TERMS)
        cf = dict(batch=32, layout="NCHW", dtype="bfloat16")
        first = policy.forms_for(_problem(**cf, input_spatial=(8, 4)), target)[0]
        assert first == op.Form(batch_split=4, contraction="gemm")
        assert policy.forms_for(_problem(**cf, input_spatial=(7, 7)), target)[0].contraction == "generic"
    assert all(f.contraction != "gemm" for f in policy.forms_for(one_tap, CPU))


@pytest.mark.parametrize("channels, spatial, expected", [
    ((64, 64), 56, 392),       # 4,096 weights: as many chunks as keep 256 rows each (100,352 rows)
    ((1024, 256), 14, 14),     # 262,144 weights: 16 would fill the GPU, but 6,272 rows split in 32-row blocks
    ((2048, 512), 7, 1),       # 1,568 rows: 7 chunks would be 224 rows, short of 256
    ((2048, 512), 1, 1),       # 32 rows: shorter than one chunk's minimum, no split
])
def test_the_gemm_split_fills_a_gpu_with_chunks_of_whole_blocks_and_at_least_256_rows(channels, spatial, expected):
    c, k = channels
    problem = _problem(batch=32, in_channels=c, out_channels=k, input_spatial=(spatial, spatial))
    chunks = gemm_policy.gemm_split(problem)
    assert chunks == expected
    rows = weight_gemm.rows(problem)
    chunk = rows // chunks
    assert rows % chunks == 0 and (chunks == 1 or (chunk % gemm_policy.GEMM_BLOCK == 0
                                                   and chunk >= gemm_policy.GEMM_MIN_CHUNK_TERMS))
    weight = math.prod(problem.weight_shape)
    fewer = [j for j in range(1, chunks) if rows % (j * gemm_policy.GEMM_BLOCK) == 0]
    assert all(j * weight < gemm_policy.GPU_PARALLEL_ACCUMULATORS for j in fewer), "the fewest chunks that fill the GPU"


def test_gpus_take_the_gathered_gemm_form_for_16_bit_problems_of_256_channels_and_more():
    """Several taps, channels-last, one group, 16-bit grad_w (gemm_policy.GEMM_GATHER_MIN_CHANNELS): from 256
    channels at stride 1, and bfloat16 strided at three spatial axes; not at 128 channels, not 2-D strided, not
    float16 strided (policy.WORKAROUNDS), not a split float32 problem's bfloat16 parts (float32 grad_w), not
    channels-first, never on the CPU (float32 problems take it by a table rule: tests/test_weight_simt_tiles.py)."""
    layer = dict(batch=8, in_channels=256, out_channels=256, input_spatial=(14, 14), filter_spatial=(3, 3), padding=1,
                 dtype="bfloat16")
    volume = dict(layer, input_spatial=(4, 14, 14), filter_spatial=(3, 3, 3), layout="NDHWC")
    taken = [layer, dict(layer, dtype="float16"), volume, dict(volume, out_channels=512, stride=2)]
    left = [dict(layer, in_channels=128, out_channels=128), dict(layer, stride=2), dict(volume, dtype="float16", stride=2),
            dict(layer, out_dtype="float32"), dict(layer, layout="NCHW")]
    for target in (CUDA, ROCM):
        for params in taken:
            problem = _problem(**params)
            assert policy.forms_for(problem, target)[0] == op.Form(
                batch_split=gemm_policy.gemm_split(problem), contraction="gemm"), params
        for params in left:
            assert policy.forms_for(_problem(**params), target)[0].contraction != "gemm", params
    assert all(f.contraction != "gemm" for f in policy.forms_for(_problem(**layer), CPU))


def test_the_gathered_gemm_form_matches_the_definition_at_r3d_18s_strided_size(rng):
    """r3d_18's strided 3x3x3 layer (256 -> 512 at 4x14x14, stride 2, padding 1) at batch 2 in bfloat16
    channels-last (x: 401,408 elements, more than the check samples), which GPUs take gathered, in their chunks."""
    problem = _problem(batch=2, in_channels=256, out_channels=512, input_spatial=(4, 14, 14), filter_spatial=(3, 3, 3),
                       padding=1, stride=2, layout="NDHWC", dtype="bfloat16")
    assert math.prod(problem.input_shape) > 1 << 18 and gemm_policy.takes_gemm(problem)
    error = _error(problem, gemm_policy.gemm_split(problem), rng)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


@pytest.mark.parametrize("target", ["cuda:sm_80", "rocm:gfx942"])
def test_the_gathered_16_bit_module_contracts_with_matrix_instructions(tmp_path, target):
    """ResNet-50's 512-channel 3x3 layer at 7x7 (batch 4, bfloat16 channels-last) as shipped: the gathered
    columns' GEMM (K x taps*C x rows) is one matrix-instruction contraction, with no scratch on ROCm."""
    problem = _problem(batch=4, in_channels=512, out_channels=512, input_spatial=(7, 7), filter_spatial=(3, 3),
                       padding=1, dtype="bfloat16")
    one_matrix_contraction(problem, target, tmp_path, "matmul_like_512x4608x224_")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("target, instruction", [("cuda:sm_80", "mma.sync.aligned"), ("rocm:gfx942", "v_mfma")])
def test_the_gpu_module_contracts_with_matrix_instructions(tmp_path, dtype, target, instruction):
    """ResNet-50's strided 1x1 downsample (256 -> 512, 56x56, stride 2) at batch 8: the partial sums, their sum."""
    problem = _problem(batch=8, in_channels=256, out_channels=512, input_spatial=(56, 56), stride=2, dtype=dtype)
    lowered = compile_as_shipped(problem, target, tmp_path)
    contractions = [d for d in lowered.dispatches if d.mma_kind]
    assert len(contractions) == 1 and len(lowered.dispatches) <= 3, lowered.dispatches
    if target.startswith("rocm"):
        assert contractions[0].mma_kind.startswith("MFMA_F32_")
        assert instruction in kernel_for(lowered, contractions[0])
        assert all(size == 0 for size in lowered.scratch_bytes.values()), lowered.scratch_bytes
    else:
        assert contractions[0].mma_kind.startswith("NV_MMA_SYNC") and instruction in lowered.ptx



def test_a_split_channels_first_one_tap_gradient_contracts_with_mma_sync_and_transposes_nothing(tmp_path):
    """ResNet-50's 1x1 layer 64 -> 256 at 56x56 (batch 8) in float32 NCHW as bf16x3: its split writes the parts
    channels-first as x and grad_out lie (an elementwise pass in order; channels-last parts took a transposing
    pass, 2.2x the module's time on an H100, docs/perf/h100-split-nchw), and one mma.sync contraction sums each
    image's 3,136 positions. At 28x28 (784 positions, not whole 32-blocks) the split keeps channels-last parts."""
    problem = _problem(batch=8, in_channels=64, out_channels=256, input_spatial=(56, 56), layout="NCHW",
                       precision="bf16x3")
    assert problem.computed_as.layout == "NCHW" and problem.computed_as.dtype == "bfloat16"
    assert _problem(input_spatial=(28, 28), layout="NCHW", precision="bf16x3").computed_as.layout == "NHWC"
    lowered = one_matrix_contraction(problem, "cuda:sm_80", tmp_path, "matmul_like_24x256x64x3136_")
    assert not any("transpose" in d.name for d in lowered.dispatches), [d.name for d in lowered.dispatches]


@pytest.mark.parametrize("target", ["cuda:sm_80", "rocm:gfx942"])
def test_a_channels_first_16_bit_gemm_contracts_with_matrix_instructions(tmp_path, target):
    """bfloat16 NCHW, 256 -> 512 at 64x64 with stride 2 (1,024 positions an image, whole 32-blocks), batch 8: the
    gemm form per image, on the target's matrix instructions (no scratch on gfx942)."""
    problem = _problem(batch=8, in_channels=256, out_channels=512, input_spatial=(64, 64), stride=2, layout="NCHW",
                       dtype="bfloat16")
    assert policy.forms_for(problem, targets.parse_target(target))[0].contraction == "gemm"
    one_matrix_contraction(problem, target, tmp_path, "matmul_like_")


@pytest.mark.parametrize("target", ["cuda:sm_80", "rocm:gfx942"])
def test_zero_rows_leave_one_matrix_contraction(tmp_path, target):
    """r3d_18's last downsample at batch 8 (784 rows, 16 zero rows, bfloat16 channels-last): still one contraction
    with the target's matrix instructions, no scratch on gfx942."""
    problem = _problem(batch=8, in_channels=256, out_channels=512, input_spatial=(4, 14, 14), stride=2,
                       layout="NDHWC", dtype="bfloat16")
    one_matrix_contraction(problem, target, tmp_path, "matmul_like")
