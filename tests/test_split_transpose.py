"""The transposing bf16x3 split on CUDA (ops/operators/split_precision.split_as, ops/render.py transpose_attrs): a
float32 channels-first activation split into channels-last bfloat16 parts gets the CUDA table's transpose tile, its
spatial dims merged around the pass (IREE merges them itself and drops a tile set on the pass when it does); the
tile reaches the compiled dispatch; the merged form computes what the plain one does (run on the CPU, the tile's GPU
attributes left out); targets whose table has no such tile keep IREE's tiling. An in-order split (the parts as the
activation lies) gets the table's split tile instead: its elements as one dim, all three parts of 8 a thread. A split
whose parts are zero-padded next (the split_conv form's grad_out, a padded weight gradient's x) writes them into the
padded tensor in place, its spatial dims apart (render.window_transpose_attrs): no copy dispatch of IREE's. f16x1's
one part has no part axis (IREE drops a unit axis, and the tile set on the pass with it): the same tiles, a dim
fewer."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from ops import compiler, policy, registry, render, targets
from ops.operator import Lowering
from ops.operators import conv_bwd_data, grouped_conv_bwd_weight

from lowering import compile_and_dump, configured_ir, run_on_cpu, without_gpu_configs

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))
TILE = "lowering_config<{thread = [1, 1, 4, 2], workgroup = [1, 1, 32, 64]}>"  # (j, n, positions, channels)


def _data(**params):
    base = dict(batch=2, in_channels=64, out_channels=64, input_spatial=(8, 8), filter_spatial=(1, 1), padding=0,
                layout="NCHW", dtype="float32", precision="bf16x3")
    return conv_bwd_data.problem_from_params(**{**base, **params})


def _weight(**params):
    base = dict(batch=2, in_channels=64, out_channels=64, input_spatial=(8, 8), filter_spatial=(3, 3), padding=1,
                layout="NCHW", dtype="float32", precision="bf16x3")
    return grouped_conv_bwd_weight.problem_from_params(**{**base, **params})


# each form whose split of an activation transposes, its positions merged: the 1x1 gemm form, a 3x3 and a 3-D
# weight gradient (the stacked batch); the 3x3 split_conv form's split (its parts' part axis after the positions)
# writes into a padded tensor instead (PADDED)
CASES = {"data_gemm": lambda: _data(),
         "weight_3x3": lambda: _weight(),
         "weight_3d": lambda: _weight(input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), layout="NCDHW")}
# each split whose parts are zero-padded next (the split_conv form's grad_out; a padded weight gradient's x, whose
# inner problem is then the unpadded gradient of the padded x): (problem, the split activation)
PADDED = {"weight_3x3_x": (lambda: _weight(), "x"),
          "weight_3d_x": (lambda: _weight(input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), layout="NCDHW"), "x"),
          "weight_5x5_one_sided_x": (lambda: _weight(input_spatial=(12, 10), filter_spatial=(5, 5),
                                                      padding=((2, 1), (0, 3))), "x"),
          "data_split_conv": (lambda: _data(filter_spatial=(3, 3), padding=1), "grad_out"),
          "data_split_conv_3d": (lambda: _data(input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), padding=1,
                                               layout="NCDHW"), "grad_out"),
          "data_split_conv_5x5_one_sided": (lambda: _data(input_spatial=(12, 10), filter_spatial=(5, 5),
                                                          padding=((2, 1), (0, 3))), "grad_out")}


@pytest.mark.parametrize("name", list(CASES))
def test_cudas_transposing_splits_take_the_transpose_tile_with_their_positions_merged(name):
    problem = CASES[name]()
    mlir = policy.module_spec(problem, CUDA).mlir
    assert re.search(r"%\w+_rows = tensor\.collapse_shape", mlir), name
    assert "thread = [" in mlir and "workgroup_size = [256, 1, 1]" in mlir
    for target in (ROCM, CPU):  # no transpose tile in their tables
        assert "_rows = tensor.collapse_shape" not in policy.module_spec(problem, target).mlir


IN_ORDER_TILE = "lowering_config<{thread = [3, 8], workgroup = [3, 2048]}>"  # (part, element), copy_config.split_tile
# in-order splits: channels-last activations into channels-last parts, and a channels-first 1x1 weight gradient's
# (its gemm form reads the parts as the activations lie)
IN_ORDER = {"data_nhwc": lambda: _data(layout="NHWC"), "weight_nhwc": lambda: _weight(layout="NHWC"),
            "weight_1x1_nchw": lambda: _weight(batch=4, filter_spatial=(1, 1), padding=0)}


@pytest.mark.parametrize("name", list(IN_ORDER))
def test_cudas_in_order_splits_take_the_split_tile_over_their_elements(name):
    """No transposing tile, no merge of positions: the elements as one dim, all three parts of 8 a thread."""
    problem = IN_ORDER[name]()
    mlir = policy.module_spec(problem, CUDA).mlir
    assert "_rows = tensor.collapse_shape" not in mlir and "thread = [1, 1, 4, 2]" not in mlir
    assert IN_ORDER_TILE in mlir and re.search(r"%\w+_flat = tensor\.collapse_shape", mlir), name
    for target in (ROCM, CPU):
        assert "thread = [3, 8]" not in policy.module_spec(problem, target).mlir


def test_a_split_of_elements_in_no_whole_workgroups_keeps_irees_tiling():
    problem = _weight(batch=1, in_channels=3, out_channels=5, input_spatial=(7, 7), filter_spatial=(1, 1), padding=0,
                      layout="NHWC")
    assert "thread = [3, 8]" not in policy.module_spec(problem, CUDA).mlir


def test_the_split_tile_reaches_the_compiled_split(tmp_path):
    """At ResNet-50's sizes (64 -> 256 at 56x56, batch 32). IREE may rebuild a small split around the reshapes
    that feed the gemm form and drop its tile (4 images of 64 x 8 x 8 did): such a pass keeps IREE's tiling."""
    problem = _weight(batch=32, out_channels=256, input_spatial=(56, 56), filter_spatial=(1, 1), padding=0)
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert IN_ORDER_TILE in configured


def test_the_tile_reaches_the_compiled_split(tmp_path):
    problem = _data(batch=4, in_channels=64, out_channels=256, input_spatial=(28, 28))
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert TILE in configured


@pytest.mark.parametrize("name", list(PADDED))
def test_cudas_padded_splits_write_their_parts_into_the_padded_tensor_in_place(name):
    make, v = PADDED[name]
    problem = make()
    mlir = policy.module_spec(problem, CUDA).mlir
    assert re.search(rf"%{v}_padded = tensor\.insert_slice %{v}_parts into %{v}_padded_zero", mlir), name
    assert "= tensor.pad " not in mlir and "thread = [" in mlir
    for target in (ROCM, CPU):  # no transpose tile: split and stacked, then padded
        other = policy.module_spec(problem, target).mlir
        assert f"%{v}3_padded = tensor.pad %{v}3" in other and f"%{v}_padded = tensor.insert_slice" not in other


def test_a_padded_weight_gradients_inner_problem_is_unpadded_at_stride_1_only():
    """Stride 1 reads the padded x whole: the inner problem is the unpadded gradient of it. A strided one keeps its
    padding, and so does a grouped one: pre-padded, r3d_18's 3x3x3 stride-2 layer and ResNeXt-50's g32 7x7 layer
    compiled wrong on an H100 (2-D strided ones fuse their padding by the CUDA rule)."""
    inner = _weight(input_spatial=(12, 10), filter_spatial=(5, 5), padding=((2, 1), (0, 3))).computed_as
    assert inner.input_spatial == (15, 13) and inner.padding == ((0, 0), (0, 0)) and inner.output_spatial == (11, 9)
    strided = _weight(input_spatial=(4, 14, 14), filter_spatial=(3, 3, 3), stride=2, layout="NCDHW")
    assert strided.computed_as.padding == strided.padding and strided.computed_as.input_spatial == (4, 14, 14)
    grouped = _weight(batch=32, groups=32, in_channels=32, out_channels=32, input_spatial=(7, 7))
    assert grouped.computed_as.padding == grouped.padding  # ResNeXt-50's 7x7 layer compiled wrong pre-padded
    assert _weight(layout="NHWC").computed_as.padding == ((1, 1), (1, 1))  # an in-order split keeps it too


def test_the_window_tile_takes_its_rows_from_the_spatial_axes_innermost_first():
    copy = policy.copy_config(CUDA)  # 32 rows (4 a thread) x 64 channels (2 a thread)

    def tile(shape, axes):
        attrs = render.window_transpose_attrs(shape, axes, copy)
        return re.search(r"thread = (\[[^]]*\]), workgroup = (\[[^]]*\])", attrs).groups()
    assert tile((3, 32, 56, 56, 64), [2, 3]) == ("[1, 1, 1, 4, 2]", "[1, 1, 1, 28, 64]")
    assert tile((3, 32, 14, 14, 64), [2, 3]) == ("[1, 1, 1, 2, 2]", "[1, 1, 2, 14, 64]")
    assert tile((32, 4, 7, 7, 3, 128), [1, 2, 3]) == ("[1, 1, 1, 1, 1, 2]", "[1, 4, 1, 7, 1, 64]")
    assert tile((3, 8, 224, 224, 64), [2, 3]) == ("[1, 1, 1, 4, 2]", "[1, 1, 1, 32, 64]")
    # channels the 64 columns do not divide: the narrow tile (32 x 32, 4 a thread along the channels, promoted)
    assert tile((3, 8, 56, 56, 96), [2, 3]) == ("[1, 1, 1, 1, 4]", "[1, 1, 1, 28, 32]")
    assert "promote_operands = [0]" in render.window_transpose_attrs((3, 8, 56, 56, 96), [2, 3], copy)
    assert render.window_transpose_attrs((3, 8, 56, 56, 24), [2, 3], copy) == ""  # no tile's columns divide 24


def test_a_split_whose_channels_the_tile_does_not_divide_takes_the_narrow_tile():
    """MobileNetV2's 16 <- 96 1x1 layer: its grad_out split, 96 channels, gets the 32 x 32 promoted tile."""
    mlir = policy.module_spec(_data(in_channels=16, out_channels=96, input_spatial=(16, 16)), CUDA).mlir
    assert "lowering_config<{promote_operands = [0], thread = [1, 1, 1, 4], workgroup = [1, 1, 32, 32]}>" in mlir
    assert "promote_operands" not in policy.module_spec(_data(), CUDA).mlir  # 64 channels: the 32 x 64 tile


def test_the_padded_split_is_stored_in_place_when_compiled(tmp_path):
    """At ResNet-50's 64-channel 56x56 3x3 layer (batch 2): the window tile reaches the split, and no copy dispatch
    (a tensor.pad of the stacked parts was IREE's slow_memcpy, 0.18 ms of the module's 0.58 at batch 32)."""
    problem = _data(filter_spatial=(3, 3), padding=1, input_spatial=(56, 56))
    spec = policy.module_spec(problem, CUDA)
    lowered = compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert "thread = [1, 1, 4, 1, 2], workgroup = [1, 1, 28, 1, 64]" in configured
    assert not [d.name for d in lowered.dispatches if "memcpy" in d.name], [d.name for d in lowered.dispatches]


@pytest.mark.parametrize("name", [*CASES, *IN_ORDER, *PADDED])
def test_the_merged_split_computes_what_the_plain_one_does(name, rng, tmp_path):
    """The CPU form rendered with the CUDA copy_config (its GPU attributes then left out) against the CPU's own."""
    problem = PADDED[name][0]() if name in PADDED else {**CASES, **IN_ORDER}[name]()
    module = registry.module(problem)
    form = policy.forms_for(problem.computed_as, CPU)[0]
    copy = policy.copy_config(CUDA)
    merged = module.render(problem, form, Lowering(copy=copy, transients=True))
    assert re.search(r"_(rows|flat) = tensor\.collapse_shape|_padded = tensor\.insert_slice", merged)
    merged = without_gpu_configs(merged)
    plain = module.render(problem, form, Lowering(transients=True))
    inputs = module.random_inputs(problem, rng)
    (_, dtype), = module.results(problem)
    shape = problem.input_shape if module is conv_bwd_data else problem.weight_shape
    got = [run_on_cpu(compiler.ModuleSpec(problem.name, text, CPU), inputs, np.zeros(shape, np.float32),
                      tmp_path / label) for label, text in (("merged", merged), ("plain", plain))]
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6, atol=1e-6 * np.abs(got[1]).max())


# f16x1's one part: its splits have no part axis (IREE drops a unit dim, and the tile set on the pass with it)
F16X1_TILE = "lowering_config<{thread = [1, 4, 2], workgroup = [1, 32, 64]}>"  # (n, positions, channels)


def _f16x1(problem):
    return dataclasses.replace(problem, precision="f16x1")


@pytest.mark.parametrize("name", list(CASES))
def test_f16x1s_transposing_splits_take_the_tile_without_a_part_axis(name):
    mlir = policy.module_spec(_f16x1(CASES[name]()), CUDA).mlir
    assert F16X1_TILE in mlir and TILE not in mlir, name
    assert not re.search(r"tensor<1x\d+x\d+x\d+xf16>", mlir), name  # no unit part axis


@pytest.mark.parametrize("name", list(IN_ORDER))
def test_f16x1s_in_order_splits_take_the_split_tile_over_their_elements_alone(name):
    mlir = policy.module_spec(_f16x1(IN_ORDER[name]()), CUDA).mlir
    assert "lowering_config<{thread = [8], workgroup = [2048]}>" in mlir and IN_ORDER_TILE not in mlir, name


@pytest.mark.parametrize("name", list(PADDED))
def test_f16x1s_padded_splits_write_their_one_part_into_the_padded_tensor(name):
    make, v = PADDED[name]
    mlir = policy.module_spec(_f16x1(make()), CUDA).mlir
    assert re.search(rf"%{v}3_padded = tensor\.insert_slice %{v}_parts into %{v}_padded_zero", mlir), name
    assert f"%{v}_padded = " not in mlir and "= tensor.pad " not in mlir


def test_f16x1s_tile_reaches_the_compiled_split(tmp_path):
    """With a unit part axis, IREE dropped it and rebuilt the pass with its own tiling (32 threads a workgroup,
    each thread's reads a channel's stride apart; ResNet-50's 128 -> 512 at 28x28 split of grad_out, 88 us on an
    H200, docs/perf/h200-f16x1-passes)."""
    problem = _f16x1(_weight(batch=4, in_channels=64, out_channels=128, input_spatial=(28, 28),
                             filter_spatial=(1, 1), padding=0))
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert F16X1_TILE in configured
