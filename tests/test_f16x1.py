"""Float32 gradients as float16 products of scaled operands (f16x1: mlir/split_bf16x3.mlir's scaled fragments,
ops/operators/split_precision.py; backward-data's split_conv and gemm forms): each operand times the power of two
that puts its largest finite magnitude in [2^14, 2^15), rounded to float16, one product summed in float32, the sum
scaled back. TF32's 11 significant bits: each product within about 2^-10 of its magnitude. ops.torch takes it where
PyTorch allows TF32 (precision.TF32_SPLITS), but for grouped weight gradients (policy.WORKAROUNDS)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ops import api, known_answer, policy, targets
from ops.operators import conv_bwd_data, grouped_conv_bwd_weight as op, split_precision
from ops.precision import data_gradient_precision, weight_gradient_precision

from lowering import compile_and_dump, configured_ir, gpu_module_on_cpu

# each product's two float16 roundings (2^-11 each, round to nearest), their product's, and float32's sums
F16X1_BOUND = 2.0 ** -9

_PARAMS = dict(batch=4, groups=2, in_channels=6, out_channels=5, input_spatial=(9, 7), filter_spatial=(3, 2),
               stride=(2, 1), padding=((1, 1), (0, 1)), dtype="float32")
_CASES = {
    "nchw_grouped_strided": dict(_PARAMS, layout="NCHW"),
    "nhwc_grouped_strided": dict(_PARAMS, layout="NHWC"),
    "ncdhw": dict(_PARAMS, layout="NCDHW", input_spatial=(5, 6, 4), filter_spatial=(2, 3, 1), stride=(1, 2, 1),
                  padding=((1, 0), (1, 1), (0, 0))),
    # one group at stride 1 channels-first: x's parts written zero-padded, channels-last (the padded split)
    "nchw_padded_parts": dict(_PARAMS, layout="NCHW", groups=1, stride=1, padding=1, filter_spatial=(3, 3)),
    # one tap, 32 positions an image: the float16 problem keeps NCHW (the in-order split)
    "nchw_one_tap": dict(_PARAMS, layout="NCHW", groups=1, input_spatial=(8, 4), filter_spatial=(1, 1), stride=1,
                         padding=0),
}


def _error(problem, x, grad_out, got) -> float:
    """The largest error of ``got`` as a share of each position's magnitude (its products' absolute sum)."""
    want = op.reference(problem, [x, grad_out])
    magnitude = op.magnitudes(problem, [x, grad_out], [want])[0]
    return float((np.abs(np.asarray(got, np.float64) - want) / magnitude).max())


def _run(problem, x, grad_out):
    return api.grouped_conv_bwd_weight(
        x, grad_out, groups=problem.groups, filter_spatial=problem.filter_spatial, stride=problem.stride,
        padding=problem.padding, layout=problem.layout, precision="f16x1")


@pytest.mark.parametrize("case", list(_CASES))
def test_f16x1_is_within_tf32s_error_at_any_scale_where_plain_float16_is_not(case, rng):
    """x near 1e3 and grad_out near 1e-7 (a gradient's size: plain float16 has only subnormals there, and x's
    squares overflow it): within F16X1_BOUND of each magnitude, where the same products of unscaled float16
    operands are 16 times worse or more."""
    problem = op.problem_from_params(**_CASES[case], precision="f16x1")
    assert problem.name.endswith("_split_f16x1") and problem.computed_as.dtype == "float16"
    assert problem.computed_as.batch == problem.batch and problem.computed_as.out_dtype == "float32"
    assert op.problem_from_params(**problem.params()) == problem
    x = (rng.standard_normal(problem.input_shape) * 1e3).astype(np.float32)
    grad_out = (rng.standard_normal(problem.output_shape) * 1e-7).astype(np.float32)
    error = _error(problem, x, grad_out, _run(problem, x, grad_out))
    assert error < F16X1_BOUND, error
    plain = op.reference(problem, [a.astype(np.float16).astype(np.float64) for a in (x, grad_out)])
    assert _error(problem, x, grad_out, plain) > 16 * error


def test_f16x1_keeps_float32s_zeros_nans_and_infinities(rng):
    """An operand's NaN or infinity is no part of its scale: grad_w is NaN or infinite exactly where float32's is,
    right elsewhere; an all-zero operand gives zeros."""
    problem = op.problem_from_params(**_CASES["nhwc_grouped_strided"], precision="f16x1")
    x = rng.standard_normal(problem.input_shape).astype(np.float32)
    grad_out = rng.standard_normal(problem.output_shape).astype(np.float32)
    assert not np.asarray(_run(problem, np.zeros_like(x), grad_out)).any()
    for bad in (np.nan, np.inf):
        spoilt = x.copy()
        spoilt[1, 4, 3, 2] = bad
        got = np.asarray(_run(problem, spoilt, grad_out), np.float64)
        want = op.reference(problem, [spoilt, grad_out])
        finite = np.isfinite(want)
        assert not finite.all() and np.array_equal(np.isfinite(got), finite)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        magnitude = op.magnitudes(problem, [x, grad_out], [op.reference(problem, [x, grad_out])])[0]
        assert (np.abs(got[finite] - want[finite]) / magnitude[finite]).max() < F16X1_BOUND


@pytest.mark.parametrize("row", [0, -1])
def test_f16x1_finds_an_operands_largest_magnitude_in_any_row_of_its_view(row, rng):
    """x's largest magnitude (1e4, the rest near 1) in the first or the last row of its (rows, columns) view
    (split_precision.largest_view: 64 rows of 384 here): missed, x scaled by the others' would overflow float16 to
    infinity; found, grad_w is right."""
    problem = op.problem_from_params(**dict(_PARAMS, groups=1, in_channels=64, out_channels=8, batch=4,
                                            input_spatial=(12, 8), layout="NCHW"), precision="f16x1")
    view = split_precision.largest_view(math.prod(problem.input_shape))
    assert view == (64, 384)
    x = rng.standard_normal(problem.input_shape).astype(np.float32)
    x.reshape(view)[row, 100] = 1e4
    grad_out = rng.standard_normal(problem.output_shape).astype(np.float32)
    got = np.asarray(_run(problem, x, grad_out))
    assert np.isfinite(got).all() and _error(problem, x, grad_out, got) < F16X1_BOUND


def test_the_largest_magnitudes_view_has_whole_blocks_of_columns_and_rows():
    """Rows of 784 (an image's positions at 28x28) got one thread a row on CUDA, 784 rows one thread for the rows'
    reduction, and 7,056 columns (MobileNetV2's 576 channels at 14x14, batch 64, in 1,024 rows) one thread a row:
    the most columns, at most LARGEST_MAX_COLUMNS, in whole blocks of columns and of rows."""
    most, columns_block, rows_block = (split_precision.LARGEST_MAX_COLUMNS, split_precision.LARGEST_COLUMN_BLOCK,
                                       split_precision.LARGEST_ROW_BLOCK)
    for elements in (32 * 128 * 28 * 28, 64 * 576 * 14 * 14, 8 * 64 * 8 * 56 * 56, 512 * 512 * 9, 64 * 96 * 14 * 14):
        rows, columns = split_precision.largest_view(elements)
        assert rows * columns == elements and columns <= most
        assert columns % columns_block == 0 and rows % rows_block == 0, elements
        assert not any(elements % c == 0 and c % columns_block == 0 and elements // c % rows_block == 0
                       for c in range(columns + 1, most + 1))  # the most such columns
    assert split_precision.largest_view(64 * 576 * 14 * 14) == (896, 8064)
    assert split_precision.largest_view(96 * 576) == (8, 6912)  # no whole blocks of both: the most columns
    assert split_precision.largest_view(100) == (1, 100)


def test_the_check_allows_f16x1_its_tf32_error():
    """The known-answer check's allowance for f16x1 is its products' 2^-10, doubled; a right answer passes."""
    problem = op.problem_from_params(**_CASES["nhwc_grouped_strided"], precision="f16x1")
    assert problem.term_roundoff == F16X1_BOUND
    inputs = known_answer.inputs_for(problem)
    right = op.reference(problem, inputs).astype(np.float32)
    assert known_answer.judge(problem, inputs, [right]).passed


def test_where_pytorch_allows_tf32_gradients_are_f16x1_but_grouped_and_in_order_weight_gradients():
    problem = op.problem_from_params(**dict(_PARAMS, groups=1, layout="NCHW"))
    assert weight_gradient_precision(problem, "bf16x3") == "f16x1"
    assert weight_gradient_precision(problem, "bf16x6") == "bf16x6"  # TF32 off: float32's products
    grouped = op.problem_from_params(**dict(_PARAMS, groups=2, in_channels=16, layout="NCHW"))
    assert weight_gradient_precision(grouped, "bf16x3") == "bf16x3"  # IREE computed them wrong (policy.WORKAROUNDS)
    for layout, expected in (("NCHW", "bf16x3"), ("NHWC", "f16x1")):  # channels-first in order: IREE's slow pass
        one_tap = op.problem_from_params(batch=32, in_channels=16, out_channels=96, input_spatial=(56, 56),
                                         filter_spatial=(1, 1), dtype="float32", layout=layout)
        assert weight_gradient_precision(one_tap, "bf16x3") == expected, layout
    data = conv_bwd_data.problem_from_params(batch=32, in_channels=64, out_channels=64, input_spatial=(8, 8),
                                             filter_spatial=(3, 3), padding=1, dtype="float32", layout="NHWC")
    assert data_gradient_precision(data, "bf16x3") == "f16x1" and data_gradient_precision(data, "bf16x6") == "bf16x6"
    strided = conv_bwd_data.problem_from_params(**dict(data.params(), stride=2))  # the stride phases, scaled
    assert data_gradient_precision(strided, "bf16x3") == "f16x1" and data_gradient_precision(strided, "bf16x6") == "float32"
    for layout, size, expected in (("NHWC", 56, "f16x1"), ("NCHW", 14, "f16x1"), ("NCHW", 56, "float32")):
        one_tap = conv_bwd_data.problem_from_params(batch=32, in_channels=256, out_channels=128, layout=layout,
                                                    input_spatial=(size, size), filter_spatial=(1, 1), dtype="float32")
        assert data_gradient_precision(one_tap, "bf16x3") == expected, (layout, size)  # F16X1_GEMM_MAX_POSITIONS
    with pytest.raises(ValueError, match="grouped_conv_bwd_weight: precision f16x1 splits float32"):
        op.problem_from_params(**dict(_PARAMS, dtype="float16", layout="NHWC"), precision="f16x1")


_DATA_CASES = {  # (layout, filter, stride, padding): the split_conv form at stride 1 with taps, the gemm form with
    # one tap, else the stride phases of scaled operands (data_scaled)
    "nhwc_split_conv": ("NHWC", 3, 1, 1), "nchw_split_conv": ("NCHW", 3, 1, 1), "ndhwc_split_conv": ("NDHWC", 3, 1, 1),
    "nchw_gemm_strided": ("NCHW", 1, 2, 0), "nhwc_gemm": ("NHWC", 1, 1, 0),
    "nhwc_phases": ("NHWC", 3, 2, 1), "ncdhw_phases": ("NCDHW", 3, 2, 1), "nchw_phases_uneven": ("NCHW", 2, 3, 0),
}


@pytest.mark.parametrize("case", list(_DATA_CASES))
def test_f16x1_backward_data_is_within_tf32s_error_at_any_scale(case, rng):
    """grad_out near 1e-7, the weight near 30: grad_in within F16X1_BOUND of each magnitude, where unscaled float16
    operands err 16 times more or worse."""
    layout, taps, stride, padding = _DATA_CASES[case]
    rank = len(layout) - 2
    problem = conv_bwd_data.problem_from_params(
        batch=2, in_channels=32, out_channels=32, input_spatial=(8,) * rank, filter_spatial=(taps,) * rank,
        stride=stride, padding=padding, dtype="float32", layout=layout, precision="f16x1")
    grad_out = (rng.standard_normal(problem.output_shape) * 1e-7).astype(np.float32)
    weight = (rng.standard_normal(problem.weight_shape) * 30).astype(np.float32)
    got = np.asarray(api.conv_bwd_data(grad_out, weight, input_shape=problem.input_shape, stride=stride,
                                       padding=padding, layout=layout, precision="f16x1"), np.float64)
    want = conv_bwd_data.reference(problem, [grad_out, weight])
    magnitude = conv_bwd_data.reference(problem, [np.abs(grad_out), np.abs(weight)])
    read = magnitude > 0  # strided: the positions no output reads are zero
    error = (np.abs(got - want)[read] / magnitude[read]).max()
    assert error < F16X1_BOUND and not got[~read].any(), error
    plain = conv_bwd_data.reference(problem, [a.astype(np.float16).astype(np.float64) for a in (grad_out, weight)])
    assert (np.abs(plain - want)[read] / magnitude[read]).max() > 16 * error


def test_f16x1_strided_backward_data_at_a_resnet_layers_size_passes_the_sampled_check(monkeypatch, tmp_path, rng):
    """ResNet-50's 3x3 stride-2 layer 128 -> 128 at 28x28 (channels-last, batch 3): 301,056 elements of grad_in, the
    known-answer check's sampled path; the stride phases of scaled operands pass it and are right."""
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path))
    problem = conv_bwd_data.problem_from_params(batch=3, in_channels=128, out_channels=128, input_spatial=(28, 28),
                                                filter_spatial=(3, 3), stride=2, padding=1, dtype="float32",
                                                layout="NHWC", precision="f16x1")
    assert math.prod(problem.input_shape) > 1 << 18
    assert known_answer.sample_of(problem, known_answer.inputs_for(problem)).axes, "the check must be sampled"
    grad_out, weight = (rng.standard_normal(s).astype(np.float32) for s in (problem.output_shape, problem.weight_shape))
    got = np.asarray(api.conv_bwd_data(grad_out, weight, input_shape=problem.input_shape, stride=2, padding=1,
                                       layout="NHWC", precision="f16x1"), np.float64)
    assert len(list((tmp_path / "verified").glob("*.pass"))) == 1
    want = conv_bwd_data.reference(problem, [grad_out, weight])
    magnitude = conv_bwd_data.reference(problem, [np.abs(grad_out), np.abs(weight)])
    assert (np.abs(got - want) / magnitude).max() < F16X1_BOUND


@pytest.mark.parametrize("layout", ["NCHW", "NDHWC"])
def test_cuda_computes_f16x1_with_float16_mma_and_the_modules_are_right(tmp_path, layout, rng):
    """On CUDA, the f16x1 weight gradient's and backward-data's convolutions issue float16 mma.sync (no bfloat16
    one); the weight gradient's module, its GPU configurations cut, computes within F16X1_BOUND on the CPU (the
    transposing and padded splits and the tables' float16 rules rendered as CUDA gets them; backward-data's reads
    its flipped weight through a map llvm-cpu cannot tile, policy.WORKAROUNDS)."""
    params = dict(batch=4, groups=1, in_channels=64, out_channels=64, input_spatial=(10, 10), filter_spatial=(3, 3),
                  stride=1, padding=1, dtype="float32", layout=layout)
    if layout == "NDHWC":
        params.update(input_spatial=(4, 10, 10), filter_spatial=(3, 3, 3))
    problem = op.problem_from_params(**params, precision="f16x1")
    spec = policy.module_specs(problem, targets.parse_target("cuda:sm_80"))[0]
    lowered = compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path / "cuda", tuple(spec.extra_flags))
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in lowered.ptx
    assert ".bf16" not in lowered.ptx
    worst, largest = gpu_module_on_cpu(problem, spec, op, rng, tmp_path / "cpu", problem.weight_shape)
    assert worst < 2.0 ** -9 * largest, (worst, largest)
    data_params = {k: v for k, v in params.items() if k not in ("groups", "stride")}
    for stride in (1, 2):  # the split_conv form, the stride phases of scaled operands (data_scaled)
        case = conv_bwd_data.problem_from_params(**data_params, stride=stride, precision="f16x1")
        spec = policy.module_specs(case, targets.parse_target("cuda:sm_80"))[0]
        lowered = compile_and_dump(case.name, spec.mlir, "cuda:sm_80", tmp_path / case.name, tuple(spec.extra_flags))
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in lowered.ptx and ".bf16" not in lowered.ptx


@pytest.mark.parametrize("layer", [(32, 128, 512, 28), (64, 96, 576, 14)])
def test_cuda_spreads_each_largest_magnitude_row_over_a_subgroup(tmp_path, layer):
    """ResNet-50's 128 -> 512 1x1 weight gradient at 28x28 (batch 32) and MobileNetV2's 96 -> 576 at 14x14 (batch
    64): every row reduction of the operands' largest magnitudes lowers through IREE's VectorDistribute (a subgroup
    or more a row, reads in runs), where rows of 784 positions, or 7,056 columns, got TileAndFuse's one thread a row
    (docs/perf/h200-f16x1-passes: 61 us for 12.8 MB, and MobileNetV2's step 33.0 -> 37.7 ms)."""
    batch, c, k, size = layer
    problem = op.problem_from_params(batch=batch, in_channels=c, out_channels=k, input_spatial=(size, size),
                                     filter_spatial=(1, 1), dtype="float32", layout="NCHW", precision="f16x1")
    spec = policy.module_specs(problem, targets.parse_target("cuda:sm_80"))[0]
    lowered = compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, tuple(spec.extra_flags))
    views = {"x".join(map(str, split_precision.largest_view(math.prod(shape))))
             for shape in (problem.input_shape, problem.output_shape)}
    rows = [d for d in lowered.dispatches if d.name.split("_reduction_")[-1][:-len("_f32")] in views]
    assert len(rows) == 2 and all(d.pipeline == "VectorDistribute" for d in rows), lowered.dispatches


@pytest.mark.parametrize("operator, in_order", [(op, 2), (conv_bwd_data, 1)])
def test_cuda_keeps_the_in_order_split_passes_tile(tmp_path, operator, in_order):
    """ResNet-50's channels-last 64 -> 256 1x1 layer (batch 4): every in-order f16x1 pass (the weight gradient's x
    and grad_out, backward-data's grad_out) runs on the copy_config's split_tile, in a dispatch region of its own.
    Without it IREE moved the reshape after the pass through it and rebuilt the pass at 32 threads a workgroup, 4
    elements a thread, about a third of the copy bandwidth (docs/perf/h200-f16x1-region: ResNet-50's f32_cl step
    23.8 -> 20.8 ms)."""
    params = dict(batch=4, in_channels=64, out_channels=256, input_spatial=(56, 56), filter_spatial=(1, 1),
                  dtype="float32", layout="NHWC", precision="f16x1")
    problem = operator.problem_from_params(**params)
    spec = policy.module_specs(problem, targets.parse_target("cuda:sm_80"))[0]
    assert spec.mlir.count("flow.dispatch.region") == in_order
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, tuple(spec.extra_flags))
    threads = policy.copy_config(targets.parse_target("cuda:sm_80"))["split_tile"]["threads"]
    tiled = re.findall(r"func\.func @\w+_elementwise_\d+_f32xf32xf16\(\) attributes \{translation_info = [^\n]*"
                       rf"workgroup_size = \[{threads}, 1, 1\]", configured_ir(tmp_path))
    assert len(tiled) == in_order, configured_ir(tmp_path)[:2000]


@pytest.mark.parametrize("size", [56, 57])
def test_a_strided_one_tap_weight_gradient_splits_x_at_its_read_positions_only(monkeypatch, tmp_path, size, rng):
    """A channels-last 1x1 stride-2 weight gradient (ResNet-50's shortcut, 64 -> 128 channels, batch 3; 602,112 and
    623,808 elements of x, the check's sampled path; at 57x57 the last row and column are never read): its float16
    problem is the stride-1 gradient of x at the positions s*o, the split reads only those (no copy of x's parts
    sliced afterwards: docs/perf/h200-f16x1-pad-fusion/exp58.log), and the module passes its check and is right."""
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path))
    problem = op.problem_from_params(batch=3, in_channels=64, out_channels=128, input_spatial=(size, size),
                                     filter_spatial=(1, 1), stride=2, dtype="float32", layout="NHWC",
                                     precision="f16x1")
    inner = problem.computed_as
    assert inner.stride == (1, 1) and inner.input_spatial == inner.output_spatial == problem.output_spatial
    assert math.prod(problem.input_shape) > 1 << 18
    x = rng.standard_normal(problem.input_shape).astype(np.float32)
    grad_out = rng.standard_normal(problem.output_shape).astype(np.float32)
    got = _run(problem, x, grad_out)
    assert len(list((tmp_path / "verified").glob("*.pass"))) == 1
    assert _error(problem, x, grad_out, got) < F16X1_BOUND


def test_cuda_splits_a_strided_one_tap_weight_gradients_x_in_rows_without_a_copy(tmp_path):
    """ResNet-50's channels-last 256 -> 512 1x1 stride-2 weight gradient (batch 4): x's pass reads x at s*o with
    rows of 256 channels, 8 a workgroup, 8 elements a thread (render.rows_attrs), and IREE forms no copy dispatch.
    Before, the float16 problem sliced x's parts after an in-order pass over all of x, and IREE copied the slice
    (slow_memcpy): the module took 0.31 ms at batch 32, 0.19 ms now (exp58.log)."""
    problem = op.problem_from_params(batch=4, in_channels=256, out_channels=512, input_spatial=(56, 56),
                                     filter_spatial=(1, 1), stride=2, dtype="float32", layout="NHWC",
                                     precision="f16x1")
    spec = policy.module_specs(problem, targets.parse_target("cuda:sm_80"))[0]
    assert "thread = [1, 1, 1, 8], workgroup = [1, 1, 8, 256]" in spec.mlir
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, tuple(spec.extra_flags))
    assert b"slow_memcpy" not in (tmp_path / f"{problem.name}.vmfb").read_bytes()


def test_cuda_splits_the_flipped_weight_of_a_split_conv_backward_data_in_rows_of_channels(tmp_path):
    """ResNet-50's channels-last 512-channel 3x3 f16x1 backward-data (batch 2): the weight's pass, which reads it
    flipped, runs on rows of 512 channels, 4 a workgroup, 8 elements a thread (render.rows_attrs over the part axis
    k), and the compiled dispatch keeps that tile. IREE's own tiling gave it 32 threads a workgroup, one element
    each: the module took 0.304 / 0.308 ms at batch 32 on an H200, 0.254 / 0.251 with rows (docs/perf/
    h200-split-weight-rows/exp61.log)."""
    problem = conv_bwd_data.problem_from_params(batch=2, in_channels=512, out_channels=512, input_spatial=(7, 7),
                                                filter_spatial=(3, 3), padding=1, dtype="float32", layout="NHWC",
                                                precision="f16x1")
    spec = policy.module_specs(problem, targets.parse_target("cuda:sm_80"))[0]
    tile = "lowering_config<{thread = [1, 1, 1, 8], workgroup = [1, 1, 4, 512]}>"
    assert re.search(r"%weight3 = linalg\.generic[^\n]*\n[^\n]*" + re.escape(tile), spec.mlir), spec.mlir[:3000]
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, tuple(spec.extra_flags))
    split = next(f for f in configured_ir(tmp_path).split("func.func @")[1:] if "_conv_3x3x512x512_f32xf32xf16()" in f)
    assert "workgroup_size = [256, 1, 1]" in split.splitlines()[0] and tile in split, split[:2000]


def test_cuda_fuses_channels_last_stride_1_backward_datas_padded_grad_out(tmp_path):
    """f16x1 channels-last stride-1 3x3 backward-data (64 channels, batch 8): from 196 output positions an image the
    table's rule fuses grad_out's zero pad into the convolution's reads (policy.FUSE_PADDING). Without it IREE copies
    the padded float16 grad_out (slow_memcpy; at batch 2 it did not), the pad being left between the scaling pass's
    dispatch region and the convolution (ResNet-50's 64-channel layer 0.240 -> 0.173 ms with the flag, r3d_18's
    1.537 -> 1.186: docs/perf/h200-f16x1-pad-fusion/exp56.log); at 7x7 the flag was slower and the rule leaves it
    out."""
    cuda = targets.parse_target("cuda:sm_80")
    problems = [conv_bwd_data.problem_from_params(batch=8, in_channels=64, out_channels=64, input_spatial=(size, size),
                                                  filter_spatial=(3, 3), padding=1, dtype="float32", layout="NHWC",
                                                  precision="f16x1") for size in (14, 7)]
    fused, unfused = (policy.module_specs(problem, cuda)[0] for problem in problems)
    assert policy.FUSE_PADDING in fused.extra_flags and policy.FUSE_PADDING not in unfused.extra_flags
    without = tuple(f for f in fused.extra_flags if f != policy.FUSE_PADDING)
    for flags, copied in ((fused.extra_flags, False), (without, True)):
        compile_and_dump(fused.name, fused.mlir, "cuda:sm_80", tmp_path / str(copied), flags)
        assert (b"slow_memcpy" in (tmp_path / str(copied) / f"{fused.name}.vmfb").read_bytes()) == copied
