"""The llvm-cpu forms of the grouped convolutions: the module the runtime ships for the CPU is the im2col form
(taps gathered, a batch_matmul per group), IREE compiles its contractions as matmuls, and the gathered taps stay
within the stated budget. Numerics of these forms are every CPU test's (tests/test_grouped_conv_*)."""

from __future__ import annotations

import math

import pytest

from ops import catalog, dtypes, geometry
from ops.operators import grouped_conv_bwd_weight, stride_phases

from lowering import shipped

CK = {(op, name): catalog.problem(op, name, batch=1, dtype="float32")
      for op, name, _ in catalog.problems("ck_examples", ["grouped_conv_bwd_data", "grouped_conv_bwd_weight"])}
CASES = {**{f"{op}/{name}": p for (op, name), p in CK.items() if p.in_channels * p.out_channels > 1},
         "bwd_data/g3_2d_nchw_s2": catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=3, in_channels=5,
                                                     out_channels=4, input_spatial=(9, 8), stride=2, layout="NCHW"),
         "bwd_weight/g2_3d_ncdhw_s2": catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=2,
                                                        in_channels=3, out_channels=5, input_spatial=(6, 7, 5), stride=2,
                                                        layout="NCDHW")}


@pytest.mark.parametrize("name", list(CASES))
def test_the_cpu_module_contracts_with_batch_matmul(tmp_path, name):
    problem = CASES[name]
    spec, lowered = shipped(problem, "llvm-cpu", tmp_path)
    assert "linalg.batch_matmul" in spec.mlir, "the im2col form did not compile: the runtime fell back to the generic"
    contractions = [d.name for d in lowered.dispatches if d.is_contraction]
    assert contractions and all("batch_matmul" in c for c in contractions), [d.name for d in lowered.dispatches]


def test_a_chunk_of_gathered_taps_stays_within_the_budget():
    video = catalog.problem("grouped_conv_bwd_data", "ck_3d", batch=1, dtype="float32")  # 27 taps: chunked
    (phase,) = stride_phases.phases(video)
    lead = stride_phases._im2col_leading_axes(video, phase)
    assert lead >= 1
    itemsize = dtypes.numpy_dtype(video.dtype).itemsize
    window = video.batch * math.prod(p.rows for p in phase) * video.groups * video.out_channels * itemsize
    inputs = (math.prod(video.output_shape) + math.prod(video.weight_shape) + sum(math.prod(s) for s in video.d_shapes)) * itemsize
    assert window * math.prod(p.filter_taps for p in phase[lead:]) <= geometry.CPU_GATHER_BUDGET * inputs
    assert window * math.prod(p.filter_taps for p in phase[lead - 1:]) > geometry.CPU_GATHER_BUDGET * inputs


def test_depthwise_weight_gradients_keep_the_generic_on_the_cpu():
    depthwise = CK[("grouped_conv_bwd_weight", "mobilenetv2_dw")]
    from ops import targets
    assert [f["contraction"] for f in grouped_conv_bwd_weight.forms(depthwise, targets.parse_target("llvm-cpu"))] == ["generic"]
