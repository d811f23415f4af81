"""The CUDA rules that tile a float32 weight gradient for IREE's SIMT pipeline
(docs/perf/h100-f32-weight-tiles, docs/perf/h100-f32-data-tiles): the generic of several taps (``policy.
weight_simt_tiles``: dense in 32 x 32 tiles, grouped a group a workgroup, and the stem's few input channels a row of
taps a workgroup) and the gemm form (``policy.weight_gemm_tiles``, the form put first where the tiles take it: of
one tap, or of one group with x's windows gathered, ``weight_gemm.gathers``). Which problems they take, the
configuration they pin, and that the modules they pin it on (written without their unit dims) compute the
reference."""

from __future__ import annotations

import pytest

from ops import gemm_policy, policy, targets
from ops.operators import grouped_conv_bwd_weight as weight, weight_gemm

from lowering import compile_and_dump, configured_ir, gpu_module_on_cpu, tile_lists

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))


def _problem(**params):
    base = dict(batch=32, groups=1, in_channels=64, out_channels=64, input_spatial=(14, 14), filter_spatial=(3, 3),
                padding=1, dtype="float32", layout="NCHW")
    return weight.problem_from_params(**{**base, **params})


def _tiles(problem, target=CUDA, form=None) -> dict:
    """The pinned configuration's tile lists, by name (empty: none pinned)."""
    return tile_lists(policy.configs_for(problem, target, form).get(0, ""))


def _generic(problem, target=CUDA):
    """The problem's batch-split generic form on ``target``."""
    return weight.Form(batch_split=gemm_policy.default_batch_split(problem, target))


@pytest.mark.parametrize("params, workgroup, reduction", [
    # batch 32 in 32 chunks of one image (j, k, c, f0, f1; the unit image dim left out): every tap a workgroup (576
    # threads), two positions a step
    (dict(), [1, 32, 32, 3, 3, 0, 0], [0] * 5 + [1, 2]),
    # 512 channels: 2 chunks of 16 images (the image dim kept); 7 positions a row: one a step
    (dict(input_spatial=(7, 7), in_channels=512, out_channels=512), None, [0] * 5 + [1, 1, 1]),
    (dict(input_spatial=(56, 56), stride=2), None, [0] * 5 + [1, 2]),                     # strided: 28 a row
    # batch 8 in 8 chunks, three spatial axes: 27 taps of 64 threads exceed 1024, so a 3x3 plane of them (576)
    (dict(input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), layout="NCDHW", batch=8), [1, 32, 32, 1, 3, 3, 0, 0, 0],
     [0] * 6 + [1, 1, 2]),
    # a 5x5x5 filter: a plane of 25 taps exceeds 1024 threads, a row of 5 (320) does not
    (dict(input_spatial=(4, 6, 6), filter_spatial=(5, 5, 5), padding=2, layout="NCDHW", batch=8),
     [1, 32, 32, 1, 1, 5, 0, 0, 0], None),
    # channels-last 2-D (docs/perf/h100-3d-data-tiles/exp22.log): the same tile, its dims (j, k, f0, f1, c)
    (dict(layout="NHWC"), [1, 32, 3, 3, 32, 0, 0], [0] * 5 + [1, 2]),
])
def test_the_rule_tiles_dense_float32_problems_of_several_taps(params, workgroup, reduction):
    """The generic's tiles (where the gathered gemm form does not serve: the GPU's forms keep it after that)."""
    problem = _problem(**params)
    tiles = _tiles(problem, form=_generic(problem))
    assert tiles and [t for t in tiles["thread"][1:] if t > 1] == [4, 4]
    assert workgroup is None or tiles["workgroup"] == workgroup
    assert reduction is None or tiles["reduction"] == reduction
    for target in (ROCM, CPU):  # CUDA's table only
        assert not _tiles(problem, target, _generic(problem, target))


@pytest.mark.parametrize("params", [
    dict(filter_spatial=(1, 1), padding=0),               # one tap: the gemm form's rule (weight_gemm_tiles)
    dict(groups=2, in_channels=32, out_channels=32),      # grouped: its own rule, 2 x 2 a thread
    dict(layout="NWC", input_spatial=(14,), filter_spatial=(3,)),  # 1-D channels-last: unmeasured
    dict(dtype="bfloat16"),                               # 16-bit: the matrix pipelines' rules
    dict(in_channels=3, input_spatial=(56, 56), filter_spatial=(7, 7), padding=3, stride=2),  # the stem's own rule
    dict(precision="bf16x3"),                             # split: its bfloat16 problem's rules
])
def test_the_rule_leaves_other_problems_to_their_own_tiles(params):
    """The dense rule's tiles (4 x 4 a thread over (k, c)) pin none of these on the generic form."""
    problem = _problem(**params).computed_as
    generic = next(f for f in policy.forms_for(problem, CUDA) if f.contraction == "generic")
    assert "thread = [1, 4, 4" not in policy.configs_for(problem, CUDA, generic).get(0, "")


@pytest.mark.parametrize("params", [
    dict(batch=4, input_spatial=(6, 6)),                                        # 2 images a chunk (n kept)
    dict(batch=2, input_spatial=(9, 7), stride=2, in_channels=32, out_channels=64),  # chunks of one image (n left out)
    dict(batch=2, input_spatial=(3, 4, 5), filter_spatial=(3, 3, 3), layout="NCDHW", in_channels=32,
         out_channels=32),
    dict(batch=2, groups=4, in_channels=16, out_channels=16, input_spatial=(9, 8)),
    dict(batch=2, in_channels=3, input_spatial=(20, 18), filter_spatial=(7, 7), padding=3, stride=2),
    dict(batch=4, input_spatial=(12, 10), stride=2, layout="NHWC"),
], ids=["2d", "strided_unit_chunks", "3d", "grouped", "stem", "channels_last"])
def test_the_pinned_module_computes_the_reference(params, rng, tmp_path):
    problem = _problem(**params)
    spec = policy.module_spec(problem, CUDA, options=_generic(problem))
    assert "thread = [1, " in spec.mlir
    error, scale = gpu_module_on_cpu(problem, spec, weight, rng, tmp_path, problem.weight_shape)
    assert error <= 1e-5 * scale


@pytest.mark.parametrize("params, reduction, transpose", [
    # read channels-last (gemm_policy.gemm_transposes): 256 -> 64 in 392 chunks of 256 rows, 1024 -> 256 in 14 of 448
    (dict(input_spatial=(56, 56), in_channels=256), [0, 0, 0, 2], True),
    (dict(input_spatial=(14, 14), in_channels=1024, out_channels=256), [0, 0, 0, 2], True),
    (dict(input_spatial=(7, 7), in_channels=2048, out_channels=512), [0, 0, 0, 1, 1], False),  # 49 positions: one a step
])
def test_one_tap_problems_take_the_gemm_form_under_the_same_tiles(params, reduction, transpose):
    problem = _problem(filter_spatial=(1, 1), padding=0, out_channels=params.pop("out_channels", 64), **params)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm" and policy.forms_for(problem, CUDA)[1].contraction == "generic"
    assert form.transpose == transpose == gemm_policy.gemm_transposes(problem)
    tiles = _tiles(problem, form=form)
    assert tiles["workgroup"][:3] == [1, 32, 32] and tiles["thread"][:3] == [1, 4, 4]
    assert tiles["reduction"] == reduction
    # without the rule (ROCm, unmeasured) no gemm form: untiled, IREE's SIMT default ran it slower than the generic
    assert all(f.contraction != "gemm" for f in policy.forms_for(problem, ROCM))


@pytest.mark.parametrize("channels, workgroup", [
    ((144, 24), [24, 36]),   # MobileNetV2's 144 -> 24 pointwise layer: 36 of the 144 input channels, the 24 whole
    ((440, 440), [40, 40]),  # RegNetY-400MF's: the divisors of 440 nearest 32 (40, not 44; 20 and 22 farther)
    ((208, 208), [16, 16]),  # 208: 16 and 52 divide it; 16 is nearer 32
    ((104, 104), [52, 52]),  # 104: 52, the one multiple of 4 from 16 to 64 that divides it
    ((672, 112), [28, 32]),  # EfficientNet-B0's: 32 divides 672 (kept), 28 divides 112
])
def test_one_tap_channels_not_in_whole_32s_take_the_nearest_divisors(channels, workgroup):
    """A side where 32 does not divide the channels is the divisor of them nearest 32, a multiple of the thread's 4
    from 16 to 64 (``fit: divisor``; 32 x 32 tiles not dividing them lost their vector loads)."""
    problem = _problem(filter_spatial=(1, 1), padding=0, in_channels=channels[0], out_channels=channels[1],
                       input_spatial=(14, 14))
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm"
    tiles = _tiles(problem, form=form)
    assert tiles["workgroup"][:3] == [1, *workgroup] and tiles["thread"][:3] == [1, 4, 4]
    threads = workgroup[0] // 4 * (workgroup[1] // 4)
    assert f"workgroup_size = [{threads}, 1, 1]" in policy.configs_for(problem, CUDA, form)[0]


def test_a_one_tap_problem_with_no_such_divisor_keeps_the_generic():
    """110 channels (RegNetY-400MF's squeeze): no multiple of 4 from 16 to 64 divides 110, so no tiled gemm form."""
    problem = _problem(filter_spatial=(1, 1), padding=0, in_channels=440, out_channels=110, input_spatial=(7, 7))
    assert [f.contraction for f in policy.forms_for(problem, CUDA)] == ["generic"]


@pytest.mark.parametrize("params", [
    dict(batch=4, input_spatial=(6, 6)),                                      # one chunk: the chunk dim left out
    dict(batch=8, input_spatial=(3, 5), in_channels=64, out_channels=32),
    dict(batch=2, input_spatial=(9, 7), stride=2, groups=1),                  # strided: x's rows sliced
    dict(batch=2, input_spatial=(4, 4, 3), layout="NCDHW"),
    dict(batch=4, input_spatial=(5, 6), in_channels=40, out_channels=24),     # divisor tiles: 24 x 40
    dict(batch=8, input_spatial=(16, 16)),                                    # 8 chunks of an image
    dict(batch=4, input_spatial=(6, 6), layout="NHWC"),                       # one chunk of 144 rows and 16 zero rows
    dict(batch=8, input_spatial=(16, 16), layout="NHWC"),                     # 8 chunks of 256 rows
    dict(batch=2, input_spatial=(9, 7), stride=2, layout="NHWC"),
    dict(batch=4, input_spatial=(28, 28), in_channels=128, out_channels=64, layout="NHWC"),  # 401 K elements of x
], ids=["one_chunk", "images", "strided", "3d", "divisor_tiles", "chunks", "nhwc_one_chunk", "nhwc_chunks",
        "nhwc_strided", "nhwc_resnet_size"])
def test_the_pinned_gemm_module_computes_the_reference(params, rng, tmp_path):
    """The gemm form pinned to the rule's tiles over (j, k, c), j left out with one chunk (IREE 3.13 drops a
    configuration pinned on an op with a unit dim), channels-first and channels-last: the module, its tiles cut,
    computes the reference on the CPU."""
    problem = _problem(filter_spatial=(1,) * len(params["input_spatial"]), padding=0, **params)
    spec, chunks = policy.module_spec(problem, CUDA), gemm_policy.gemm_split(problem)
    assert f"thread = [{'1, ' * (chunks > 1)}4, 4, 0" in spec.mlir
    assert ("%partial_flat = linalg.generic" in spec.mlir) == (chunks > 1) == ("%partial = linalg.generic" not in spec.mlir)
    error, scale = gpu_module_on_cpu(problem, spec, weight, rng, tmp_path, problem.weight_shape)
    assert error <= 1e-5 * scale


@pytest.mark.parametrize("params, chunks, workgroup, reduction", [
    # EfficientNet-B0's 32 -> 16 at 112x112: 32 images x 512 weights; 16 segments of 784 positions an image
    (dict(in_channels=32, out_channels=16, input_spatial=(112, 112)), 512, [1, 1, 16, 32, 0], [0] * 4 + [2]),
    # ResNet-50's 64 -> 64 at 56x56: 131,072 partial sums from the images, 2 segments of 1,568 positions
    (dict(in_channels=64, out_channels=64, input_spatial=(56, 56)), 64, [1, 1, 32, 32, 0], [0] * 4 + [2]),
    # 48 -> 96 at 28x28: the images give 147,456, 2 segments of 392 positions
    (dict(in_channels=48, out_channels=96, input_spatial=(28, 28)), 64, [1, 1, 32, 24, 0], [0] * 4 + [2]),
])
def test_few_weights_cut_each_images_positions_into_segments(params, chunks, workgroup, reduction):
    """A float32 channels-first one-tap gradient of few weights (``gemm_policy.GEMM_SEGMENT_ACCUMULATORS``) gets a chunk
    for each segment of each image's positions (``weight_gemm.segments``), its (j, s) dims one a workgroup."""
    problem = _problem(filter_spatial=(1, 1), padding=0, **params)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "gemm" and form.batch_split == chunks == gemm_policy.gemm_split(problem)
    assert not form.transpose  # C x K / (C + K) under 40: read as the activations lie
    tiles = _tiles(problem, form=form)
    assert tiles["workgroup"] == workgroup and tiles["reduction"] == reduction


def test_images_of_too_few_positions_to_cut_are_chunked_as_before():
    """49 positions an image cannot make a segment of 256: 8 images of 16 -> 32 channels at 7x7 (392 terms) stay
    one chunk, as the gemm split's rule without segments has them."""
    problem = _problem(batch=8, in_channels=16, out_channels=32, input_spatial=(7, 7), filter_spatial=(1, 1), padding=0)
    assert gemm_policy.gemm_split(problem) == 1 and weight_gemm.segments(problem, 1) == 1


def test_a_segmented_module_keeps_its_tiles_and_computes_the_reference(rng, tmp_path):
    """EfficientNet-B0's 32 -> 16 layer at 112x112, batch 4 (1.6 M elements of x): 49 segments of 256 positions an
    image, the most of at least 256; IREE keeps the pinned tiles (the unit image dim left out), and the module, its
    tiles cut, computes the reference on the CPU."""
    problem = _problem(batch=4, in_channels=32, out_channels=16, input_spatial=(112, 112), filter_spatial=(1, 1),
                       padding=0)
    spec = policy.module_spec(problem, CUDA)
    assert gemm_policy.gemm_split(problem) == 4 * 49 and "4x32x49x256xf32" in spec.mlir
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path / "cuda", spec.extra_flags)
    configured = configured_ir(tmp_path / "cuda")
    assert "workgroup = [1, 1, 16, 32, 0]" in configured
    error, scale = gpu_module_on_cpu(problem, spec, weight, rng, tmp_path, problem.weight_shape)
    assert error <= 1e-5 * scale


@pytest.mark.parametrize("channels, workgroup, threads", [
    (16, [1, 1, 16, 16, 1, 1], 64),         # ResNeXt-50's g32 layers at 14x14: a group a workgroup
    (32, [1, 1, 32, 32, 1, 1], 256),
    (64, [1, 1, 32, 32, 1, 1], 256),        # wider groups in 32 x 32 tiles
    (8, None, None), (4, None, None), (24, None, None),  # 8 and 4 a group: measured no faster; 24: no 16 divides
])
def test_grouped_problems_of_16_or_more_channels_a_group_take_a_group_a_workgroup(channels, workgroup, threads):
    problem = _problem(groups=32, in_channels=channels, out_channels=channels)
    tiles = _tiles(problem)
    if workgroup is None:
        assert not tiles
        return
    assert tiles["workgroup"][:6] == workgroup and tiles["thread"][:6] == [1, 1, 2, 2, 1, 1]
    assert tiles["reduction"][6:][-2:] == [1, 2]  # (the chunk's images, where several,) a row, two positions a step
    assert f"workgroup_size = [{threads}, 1, 1]" in policy.configs_for(problem, CUDA)[0]


def test_the_stem_takes_a_row_of_taps_a_workgroup():
    """ResNet-50's stem, 3 -> 64 channels, 7x7 at stride 2: 64 output channels, one input channel and the 7 taps of a
    filter row a workgroup (2 x 1 x 1 a thread: 224 threads), two positions a step; at rank 3 (r3d_18's stem,
    docs/perf/h100-3d-data-tiles) the same tile with four positions a step; for a workgroup of fewer than 128
    threads no rule."""
    stem = dict(in_channels=3, input_spatial=(224, 224), filter_spatial=(7, 7), padding=3, stride=2)
    problem = _problem(**stem)
    tiles = _tiles(problem, form=_generic(problem))
    assert tiles["workgroup"] == [1, 64, 1, 1, 7, 0, 0] and tiles["thread"] == [1, 2, 1, 1, 1, 0, 0]
    assert "workgroup_size = [224, 1, 1]" in policy.configs_for(problem, CUDA, _generic(problem))[0]
    video = _problem(batch=8, in_channels=3, input_spatial=(16, 112, 112), filter_spatial=(3, 7, 7),
                     padding=(1, 3, 3), stride=(1, 2, 2), layout="NCDHW")
    tiles = _tiles(video, form=_generic(video))
    assert tiles["workgroup"][:6] == [1, 64, 1, 1, 1, 7] and tiles["thread"][:6] == [1, 2, 1, 1, 1, 1]
    assert tiles["reduction"][6:] == [1, 1, 4]  # (a chunk of one image left out) depth, rows, four positions a step
    # a 3x3 stem of 32 channels (MobileNetV2's, EfficientNet-B0's): 48 threads, fewer than the rule's 128
    small = _problem(in_channels=3, out_channels=32, input_spatial=(224, 224), stride=2)
    assert not _tiles(small, form=_generic(small))


@pytest.mark.parametrize("params, chunks, workgroup", [
    # ResNet-50's 3x3 layers at batch 32 (docs/perf/h200-im2col-gemm/exp27.log): 576 columns (9 taps x 64), 196
    # chunks of 512 rows; 2,304 columns; 4,608 columns at 7x7 in one chunk (1,568 rows, no split of whole blocks)
    (dict(input_spatial=(56, 56)), 196, [1, 32, 32, 0]),
    (dict(input_spatial=(14, 14), in_channels=256, out_channels=256, layout="NHWC"), 14, [1, 32, 32, 0]),
    (dict(input_spatial=(7, 7), in_channels=512, out_channels=512), 1, [32, 32, 0]),
    # r3d_18's strided 3x3x3 layer 64 -> 128 at batch 8: 1,728 columns
    (dict(batch=8, input_spatial=(16, 56, 56), filter_spatial=(3, 3, 3), stride=2, out_channels=128,
          layout="NCDHW"), 28, [1, 32, 32, 0]),
])
def test_dense_float32_problems_of_several_taps_take_the_gathered_gemm_form(params, chunks, workgroup):
    """The gemm form with x's windows gathered (``weight_gemm.gathers``) goes first on CUDA, under the one-tap rule's
    tiles over (k, taps x c), the generic after it; channels-first through its channels-last twin's rows. The
    generic keeps other targets (no rule tiles the gemm form there)."""
    problem = _problem(**params)
    first, second = policy.forms_for(problem, CUDA)[:2]
    assert first == weight.Form(batch_split=chunks, contraction="gemm", transpose=not problem.channels_last)
    assert second.contraction == "generic"
    assert weight_gemm.gathers(problem) and weight_gemm.twin(problem).channels_last
    tiles = _tiles(problem, form=first)
    assert tiles["workgroup"] == workgroup and tiles["thread"][-3:-1] == [4, 4]
    for target in (ROCM, CPU):
        assert all(f.contraction != "gemm" for f in policy.forms_for(problem, target))


@pytest.mark.parametrize("params", [
    dict(groups=2, in_channels=32, out_channels=32),                     # grouped: the gemm form takes one group
    dict(dtype="bfloat16"),                                              # 16-bit: the matrix pipelines' rules
    dict(precision="bf16x3"),                                            # split: its bfloat16 problem's
    # r3d_18's first stage at batch 32: 11 GB of columns, past GEMM_GATHER_MAX_BYTES
    dict(batch=32, input_spatial=(16, 56, 56), filter_spatial=(3, 3, 3), layout="NDHWC"),
])
def test_the_gathered_gemm_form_leaves_other_problems_to_the_generic(params):
    problem = _problem(**params).computed_as
    assert policy.forms_for(problem, CUDA)[0].contraction == "generic"


@pytest.mark.parametrize("params, chunks, workgroup", [
    # ResNet-50's 7x7 stem at batch 32: 3 channels padded to 4 (weight_gemm.COLUMN_GRAIN), 196 columns, 28 wide
    (dict(input_spatial=(224, 224), filter_spatial=(7, 7), padding=3, stride=2), 448, [1, 32, 28, 0]),
    # r3d_18's 3x7x7 stem at batch 8: 588 columns, 28 wide; EfficientNet-B0's 3x3 (3 -> 32) at batch 32: 36 wide
    (dict(batch=8, input_spatial=(16, 112, 112), filter_spatial=(3, 7, 7), padding=(1, 3, 3), stride=(1, 2, 2),
          layout="NCDHW"), 196, [1, 32, 28, 0]),
    (dict(input_spatial=(224, 224), out_channels=32, stride=2, layout="NHWC"), 1568, [1, 32, 36, 0]),
])
def test_stems_of_three_channels_take_the_gathered_gemm_form_padded_to_four(params, chunks, workgroup):
    """A stem's 3 input channels get a zero channel in the gathered columns (docs/perf/h200-im2col-gemm/exp29.log:
    the stems' weight gradients 1.6-2.9x faster, MobileNetV2's channels-last 0.96x), so that its columns fit the
    rule's 4-wide thread steps."""
    problem = _problem(in_channels=3, **params)
    assert weight_gemm.gathered_channels(problem) == 4 and weight_gemm.columns(problem) % 4 == 0
    form = policy.forms_for(problem, CUDA)[0]
    assert form == weight.Form(batch_split=chunks, contraction="gemm", transpose=not problem.channels_last)
    assert _tiles(problem, form=form)["workgroup"] == workgroup


def test_the_gathered_gemm_module_computes_the_reference(rng, tmp_path):
    """The CUDA module of a padded, strided 3x3 channels-first layer (its transposes, gather, pinned contraction and
    chunk sum), and of a 7x7 stem's (3 channels and a zero one, cut from grad_w), compiled for the CPU, against the
    float64 definition."""
    problem = _problem(batch=2, in_channels=32, out_channels=64, input_spatial=(9, 7), stride=2)
    spec = policy.module_spec(problem, CUDA)
    assert "linalg.transpose" in spec.mlir and "thread = [4, 4, 0]" in spec.mlir  # one chunk: j left out
    error, scale = gpu_module_on_cpu(problem, spec, weight, rng, tmp_path, problem.weight_shape)
    assert error <= 1e-5 * scale
    stem = _problem(batch=2, in_channels=3, input_spatial=(30, 28), filter_spatial=(7, 7), padding=3, stride=2,
                    layout="NHWC")
    spec = policy.module_spec(stem, CUDA)
    assert "%acc_padded" in spec.mlir and "thread = [4, 4, 0]" in spec.mlir  # 448 rows: one chunk
    error, scale = gpu_module_on_cpu(stem, spec, weight, rng, tmp_path / "stem", stem.weight_shape)
    assert error <= 1e-5 * scale
