"""grouped_conv_bwd_weight's columns form (ops/operators/weight_columns.py): a depthwise weight gradient as partial
sums kept along one side (channels-first the last output axis, channels-last the groups), then summed, x read where
it lies (no pad). The CUDA table gives it to float32 NCHW depthwise problems and float32 and bfloat16 NHWC ones with
its tile (a thread a partial sum, the side's neighbours side by side); its module, the tile cut, computes the float64
reference on the CPU at MobileNetV2's sizes in both layouts, for one image and in 1-D and 3-D; the CPU never takes
it, and problems it cannot take are refused by name."""

from __future__ import annotations

import pytest

from ops import policy, targets
from ops.operators import grouped_conv_bwd_weight as weight
from ops.operators import weight_columns

from lowering import compile_and_dump, configured_ir, gpu_module_on_cpu

CUDA, ROCM, CPU = (targets.parse_target(t) for t in ("cuda:sm_80", "rocm:gfx942", "llvm-cpu"))


def _depthwise(**params):
    base = dict(batch=2, groups=8, in_channels=1, out_channels=1, input_spatial=(12, 10), filter_spatial=(3, 3),
                stride=1, padding=1, layout="NCHW", dtype="float32")
    return weight.problem_from_params(**{**base, **params})


@pytest.mark.parametrize("params, tile", [
    (dict(batch=64, groups=96, input_spatial=(112, 112), stride=2), "workgroup = [1, 9, 56, 0]"),
    (dict(batch=64, groups=960, input_spatial=(7, 7)), "workgroup = [2, 9, 7, 0]"),  # 2 planes: nearest 128 threads
    (dict(batch=8, groups=32, input_spatial=(128, 128)), "workgroup = [1, 3, 128, 0]"),  # 9 x 128 > 1024 threads
    (dict(batch=1, groups=32, input_spatial=(16, 16)), "workgroup = [1, 9, 16, 0]"),  # planes (n, g): no unit dim
    (dict(input_spatial=(16, 1), filter_spatial=(3, 1), padding=(1, 0)), None),  # a unit dim would drop the tile
    (dict(batch=64, groups=144, input_spatial=(56, 56), layout="NHWC"), "workgroup = [1, 9, 16, 0]"),  # 16 | 144
    (dict(batch=64, groups=960, input_spatial=(7, 7), layout="NHWC", dtype="bfloat16"), "workgroup = [1, 9, 32, 0]"),
    (dict(batch=32, groups=8, input_spatial=(14, 14), layout="NHWC"), "workgroup = [2, 9, 8, 0]"),  # 2 planes: 144
    (dict(batch=32, groups=1152, input_spatial=(7, 7), filter_spatial=(5, 5), padding=2, layout="NHWC"),
     "workgroup = [1, 25, 32, 0]"),
    (dict(batch=4, groups=6, input_spatial=(7, 7), layout="NHWC"), "workgroup = [7, 9, 2, 0]"),  # 2 | 6, 126 threads
    (dict(input_spatial=(16, 1), filter_spatial=(3, 1), padding=(1, 0), layout="NHWC"), None),  # nothing to reduce
], ids=["s2", "7x7", "128x128", "one_image", "unit", "nhwc_g144", "nhwc_bf16_g960", "nhwc_g8", "nhwc_5x5", "nhwc_g6",
        "nhwc_unit"])
def test_cudas_rules_take_float32_nchw_and_nhwc_depthwise_problems_with_the_column_tile(params, tile):
    problem = _depthwise(**params)
    form = policy.forms_for(problem, CUDA)[0]
    assert form.contraction == "columns"
    assert (tile or "None") in policy.configs_for(problem, CUDA, form).get(0, "None")


@pytest.mark.parametrize("layout, tile", [("NCHW", "workgroup = [1, 9, 28, 0]"), ("NHWC", "workgroup = [1, 9, 32, 0]")])
def test_the_cuda_module_copies_no_padded_x(layout, tile, tmp_path):
    """IREE copied the zero-padded x in a slow_memcpy dispatch of its own (3.1 ms of MobileNetV2's NCHW step and 2.7
    of its NHWC one on an H200, docs/perf/h200-depthwise-gather and h200-depthwise-gather-nhwc); the columns form
    reads x where it lies, its tile on the partial sums."""
    problem = _depthwise(batch=4, groups=32, input_spatial=(28, 28), layout=layout)
    spec = policy.module_spec(problem, CUDA)
    compile_and_dump(problem.name, spec.mlir, "cuda:sm_80", tmp_path, spec.extra_flags)
    configured = configured_ir(tmp_path)
    assert tile in configured and "slow_memcpy" not in configured


@pytest.mark.parametrize("params", [dict(layout="NHWC", dtype="float16"), dict(groups=4, in_channels=2, out_channels=2),
                                    dict(dtype="bfloat16"), dict(layout="NDHWC", input_spatial=(6, 6, 6),
                                                                 filter_spatial=(3, 3, 3))],
                         ids=["float16_channels_last", "grouped", "bfloat16", "ndhwc"])
def test_others_keep_their_forms_and_the_cpu_never_takes_it(params):
    problem = _depthwise(**params)
    assert policy.forms_for(problem, CUDA)[0].contraction != "columns"
    assert all(f.contraction != "columns" for f in policy.forms_for(_depthwise(), CPU))
    assert policy.forms_for(_depthwise(), ROCM)[-1].contraction == "columns"  # unmeasured there: last
    if not weight_columns.applies(problem):
        with pytest.raises(ValueError, match="grouped_conv_bwd_weight: the columns form takes depthwise problems, but"):
            weight.render(problem, weight.Form(contraction="columns"))


@pytest.mark.parametrize("params", [
    dict(batch=2, groups=96, input_spatial=(112, 112), stride=2),   # MobileNetV2's, 2.4 M elements of x
    dict(batch=2, groups=144, input_spatial=(56, 56)),              # and a stride-1 one, 0.9 M
    dict(batch=1, groups=6, input_spatial=(9, 8), padding=(2, 0)),  # one image; x's last column no window reads
    dict(batch=3, groups=16, input_spatial=(14, 15), filter_spatial=(5, 3), padding=(2, 1), dilation=(1, 2)),
    dict(batch=2, groups=8, input_spatial=(6, 7, 9), filter_spatial=(3, 3, 3), stride=(1, 2, 2), layout="NCDHW"),
    dict(batch=2, groups=8, input_spatial=(17,), filter_spatial=(3,), stride=2, layout="NCW"),
    dict(batch=2, groups=8, input_spatial=(12, 10), dtype="bfloat16"),
    dict(batch=2, groups=96, input_spatial=(112, 112), stride=2, layout="NHWC"),
    dict(batch=2, groups=144, input_spatial=(56, 56), layout="NHWC"),
    dict(batch=3, groups=24, input_spatial=(14, 15), filter_spatial=(5, 3), padding=(2, 1), dilation=(1, 2),
         layout="NHWC"),
    dict(batch=2, groups=8, input_spatial=(6, 7, 9), filter_spatial=(3, 3, 3), stride=(1, 2, 2), layout="NDHWC"),
    dict(batch=2, groups=8, input_spatial=(17,), filter_spatial=(3,), stride=2, layout="NWC"),
    dict(batch=2, groups=32, input_spatial=(28, 28), layout="NHWC", dtype="bfloat16"),
], ids=["mobilenet_s2", "mobilenet_s1", "one_image", "5x3_dilated", "3d", "1d", "bf16", "nhwc_mobilenet_s2",
        "nhwc_mobilenet_s1", "nhwc_5x3_dilated", "ndhwc", "nwc", "nhwc_bf16"])
def test_the_cuda_module_computes_the_reference(params, rng, tmp_path):
    """x is read where it lies: the module pads nothing (IREE's copy of a pad, or a pad fused wrong)."""
    problem = _depthwise(**params)
    spec = policy.module_spec(problem, CUDA, options=weight.Form(contraction="columns"))
    assert spec.mlir.count("%columns = linalg.generic") == 1 and "= tensor.pad" not in spec.mlir
    error, scale = gpu_module_on_cpu(problem, spec, weight, rng, tmp_path, problem.weight_shape)
    assert error <= (1e-5 if problem.dtype == "float32" else 1e-2) * scale


def test_rocm_lists_it_last_and_compiles_it(tmp_path):
    """No AMD GPU here: ROCm keeps its forms first, and the channels-last columns form, its fallback, compiles for
    gfx942 reading x where it lies (no copy of a padded x among its dispatches)."""
    problem = _depthwise(batch=4, groups=32, input_spatial=(28, 28), stride=2, layout="NHWC")
    assert [form.contraction for form in policy.forms_for(problem, ROCM)][-1] == "columns"
    spec = policy.module_spec(problem, ROCM, options=weight.Form(contraction="columns"))
    lowered = compile_and_dump(problem.name, spec.mlir, "rocm:gfx942", tmp_path, spec.extra_flags)
    assert lowered.dispatches and not any("slow_memcpy" in d.name for d in lowered.dispatches)
