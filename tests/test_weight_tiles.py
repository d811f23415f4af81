"""The weight gradient's tile rule on CUDA (ops/policy.py weight_tiles, the table's ``weight_tiles`` rule): a 3-D
stride-1 bf16x3 weight gradient's generic gets a pinned implicit-GEMM tile, written without its unit dims
(grouped_conv_bwd_weight._pinned_units: IREE rebuilds a generic that has them and drops the tile); the tile reaches
the compiled dispatch; the unit-free generic computes what the plain one does (run on the CPU, the GPU attributes
left out); 2-D, strided and small-channel problems, and the other targets, keep IREE's defaults (float32 ones
take the SIMT rule's). 2-D f16x1 weight gradients keep them too: the 128 x 128 tile ran faster on four of
ResNet-50's seven 3x3 layers, three of which it compiled wrong (docs/perf/h200-weight-tiles-2d: the known-answer
check refused them, positions left unwritten)."""

from __future__ import annotations


import numpy as np
import pytest

from ops import compiler, gemm_policy, policy, targets
from ops.operator import Lowering
from ops.operators import grouped_conv_bwd_weight as weight

from lowering import compile_and_dump, run_on_cpu, without_gpu_configs

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))
GEMM_TILE = ("compilation_info = #iree_codegen.compilation_info<lowering_config = "
             "#iree_gpu.lowering_config<{convert_acc_gemm")


def _split(**params):
    base = dict(batch=2, in_channels=64, out_channels=64, input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3),
                padding=1, layout="NCDHW", dtype="float32", precision="bf16x3")
    return weight.problem_from_params(**{**base, **params})


def _tile(problem, target=CUDA) -> str | None:
    return policy.configs_for(problem.computed_as, target).get(0)


def test_3d_stride_1_split_weight_gradients_take_the_tile():
    config = _tile(_split())
    assert "workgroup = [1, 64, 1, 1, 1, 64, 0]" in config and "workgroup_size = [128, 1, 1]" in config
    wide = _tile(_split(batch=2, in_channels=512, out_channels=512, input_spatial=(2, 4, 4)))
    assert "workgroup = [128, 1, 1, 1, 128, 0]" in wide  # one chunk (no j dim): 128 x 128 of 512 x 512
    mlir = policy.module_spec(_split(), CUDA).mlir
    assert "%x_conv = tensor.collapse_shape" in mlir and GEMM_TILE in mlir


@pytest.mark.parametrize("problem", [
    _split(input_spatial=(8, 8), filter_spatial=(3, 3), layout="NCHW"),  # 2-D: measured mixed, no rule
    _split(stride=2),
    _split(in_channels=32, out_channels=32),
    _split(groups=2, in_channels=64, out_channels=64),
    _split(input_spatial=(14, 14), filter_spatial=(3, 3), layout="NCHW", in_channels=256, out_channels=256,
           precision="f16x1"),  # the tile left positions of ResNet-50's 256-channel 14x14 layer unwritten
], ids=["2d", "strided", "32_channels", "grouped", "2d_f16x1"])
def test_other_weight_gradients_keep_irees_tiles(problem):
    assert _tile(problem) is None
    assert GEMM_TILE not in policy.module_spec(problem, CUDA).mlir


def test_a_float32_one_takes_the_simt_tiles_instead():
    """Unsplit (TF32 off), no matrix tile: the gathered gemm form's SIMT tiles, and the generic's SIMT rule after it
    (tests/test_weight_simt_tiles.py)."""
    problem = _split(precision="float32")
    assert GEMM_TILE not in policy.module_spec(problem, CUDA).mlir
    assert "thread = [4, 4, 0]" in _tile(problem)  # the gemm form of one chunk: (k, c) a thread, the rows reduced
    generic = weight.Form(batch_split=gemm_policy.default_batch_split(problem, CUDA))
    assert "thread = [1, 4, 4, 1, 1, 1" in policy.configs_for(problem, CUDA, generic)[0]


def test_no_tile_on_rocm_or_the_cpu():
    for target in (ROCM, CPU):
        assert _tile(_split(), target) is None


def test_the_tile_reaches_the_compiled_convolution(tmp_path):
    problem = _split()
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    convs = [text for p in (tmp_path / "dump").glob("configured_*.mlir") if "mma_kind" in (text := p.read_text())]
    assert len(convs) == 1 and "workgroup = [1, 64, 1, 1, 1, 64, 0]" in convs[0] and "padding_conv" in convs[0]


# (batch, groups, spatial, batch_split): chunks of one image (n and g left out), chunks of three (g left out), one
# chunk (no j), and two groups (n left out, g kept: the partial sums are flattened after the generic)
UNIT_CASES = {"chunk_of_one": (2, 1, (4, 6, 6), 6), "chunk_of_three": (2, 1, (4, 6, 6), 2),
              "one_chunk": (2, 1, (3, 5, 5), 1), "grouped": (1, 2, (3, 5, 5), 3)}


@pytest.mark.parametrize("name", list(UNIT_CASES))
def test_the_unit_free_generic_computes_what_the_plain_one_does(name, rng, tmp_path):
    """Rendered with a configuration (which leaves the unit dims out), the configuration then cut, against the
    generic rendered without one; both compiled for the CPU."""
    batch, groups, spatial, chunks = UNIT_CASES[name]
    problem = _split(batch=batch, groups=groups, input_spatial=spatial, in_channels=8, out_channels=16)
    form = weight.Form(batch_split=chunks)
    pinned = weight.render(problem, form, Lowering(configs={0: _tile(_split())}, transients=True))
    assert "_conv = tensor.collapse_shape" in pinned
    plain = weight.render(problem, form, Lowering(transients=True))
    inputs = weight.random_inputs(problem, rng)
    got = [run_on_cpu(compiler.ModuleSpec(problem.name, text, CPU), inputs, np.zeros(problem.weight_shape, np.float32),
                      tmp_path / label) for label, text in (("pinned", without_gpu_configs(pinned)), ("plain", plain))]
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6, atol=1e-6 * np.abs(got[1]).max())
    expected = weight.reference(problem, inputs)
    np.testing.assert_allclose(got[0], expected, rtol=0, atol=1e-4 * np.abs(expected).max())
