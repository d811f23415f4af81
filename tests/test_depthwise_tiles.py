"""The depthwise backward-data tile rule on CUDA (data_tiles.depthwise_tiles, the table's ``depthwise_tiles`` rule):
a bfloat16 channels-last depthwise problem the merged form cannot take (dilated, or a size its stride does not
divide; it takes the others, test_data_merged) takes the named depthwise form first, with a SIMT tile pinned on each
phase of taps (a phase with single-tap axes as the generic without them that IREE would rebuild, which keeps it);
the tile reaches the compiled dispatch; the CUDA module, its GPU attributes left out, computes the float64
reference on the CPU; other problems and targets keep their forms and IREE's tiles."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ops import compiler, policy, targets
from ops.operators import grouped_conv_bwd_data as data

from grouped_bwd_data_cases import depthwise as _depthwise
from lowering import compile_and_dump, configured_ir, run_on_cpu, without_gpu_configs

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))
TILE = "thread = [1, 1, 1, 4, 0, 0], workgroup = [1, 1, 16, 16, 0, 0]"


@pytest.mark.parametrize("stride, named, generics", [(1, 1, 0), (2, 2, 2)])
def test_cudas_rule_takes_the_depthwise_form_with_a_tile_on_each_phase_of_taps(stride, named, generics):
    """Stride 2 (at a size the merged form cannot take, 13 rows to a stride of 2; it takes the others:
    test_data_merged): of the 2x2, 2x1, 1x2 and 1x1-tap phases, the 2x2 one a named op, the 2x1 and 1x2 ones
    generics without their single-tap axis (the op IREE would rebuild: it keeps the tile so), each tiled; the 1x1
    one, a named op IREE makes a product of, keeps IREE's elementwise tiling."""
    problem = _depthwise(stride=stride, **(dict(dilation=2, padding=2) if stride == 1 else dict(input_spatial=(13, 13))))
    assert policy.forms_for(problem, CUDA)[0].contraction == "depthwise"
    mlir = policy.module_spec(problem, CUDA).mlir
    assert mlir.count("linalg.depthwise_conv_2d_nhwc_hwc") == named
    assert mlir.count("_kept = tensor.collapse") == generics
    assert mlir.count("thread = [1, 1, 1, 4, 0") == 1 + generics and mlir.count(TILE) == 1


@pytest.mark.parametrize("params", [dict(dtype="float32"), dict(layout="NCHW"),
                                    dict(groups=8, in_channels=2, out_channels=2), dict(groups=24)],
                         ids=["float32", "channels_first", "grouped", "groups_not_whole_tiles"])
def test_other_problems_keep_their_tiles(params):
    """Float32 and channels-first depthwise problems take the merged form (its own tile: test_data_merged)."""
    problem = _depthwise(**params)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction != "depthwise" or not policy.configs_for(problem, CUDA, form)
    assert TILE not in policy.module_spec(problem, CUDA).mlir


def test_rocm_keeps_its_form_and_the_cpu_its_tiles():
    problem = _depthwise()
    assert policy.forms_for(problem, ROCM)[0].contraction == "generic"
    assert not policy.configs_for(problem, CPU) and TILE not in policy.module_spec(problem, CPU).mlir


def test_the_tile_reaches_the_compiled_convolution(tmp_path):
    problem = _depthwise(batch=4, input_spatial=(28, 28), dilation=2, padding=2)
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert TILE in configured


@pytest.mark.parametrize("stride, size", [(1, 28), (2, 27), (2, 13)])
def test_the_cuda_form_computes_the_reference(stride, size, rng, tmp_path):
    """The CUDA module's form compiled for the CPU, against the float64 definition: stride 1, the CUDA module itself,
    its GPU attributes cut (dilated: undilated, the merged form takes it); stride 2, its interleave read by extract
    (llvm-cpu cannot tile the mod / floordiv map the GPUs read it through, an axis of the form every GPU stride-2
    problem already takes)."""
    dilated = dict(dilation=2, padding=2) if stride == 1 else {}
    problem = _depthwise(batch=4, stride=stride, input_spatial=(size, size), **dilated)
    form = policy.forms_for(problem, CUDA)[0]
    if stride == 1:
        mlir = policy.module_spec(problem, CUDA).mlir
    else:
        mlir = policy.module_spec(problem, CPU, configs=policy.configs_for(problem, CUDA, form),
                                  options=dataclasses.replace(form, interleave_read="extract")).mlir
        assert "_kept = tensor.collapse_shape" in mlir  # the tuned generics, their tiles then cut
    mlir = without_gpu_configs(mlir)
    assert "#iree_codegen.compilation_info" not in mlir and "depthwise_conv_2d" in mlir
    inputs = data.random_inputs(problem, rng)
    got = run_on_cpu(compiler.ModuleSpec(problem.name, mlir, CPU), inputs,
                     np.zeros(problem.input_shape, np.asarray(inputs[0]).dtype), tmp_path)
    expected = data.reference(problem, inputs)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-2 * np.abs(expected).max())
