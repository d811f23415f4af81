"""The weight gradient's row split (``grouped_conv_bwd_weight.Form.row_split``): the batch-split generic with the
first spatial axis's output rows as partial sums too, summed with the chunks. CUDA's table puts it first for
depthwise problems (a depthwise layer's nine sums a channel over N x H x W products, in parallel over the rows) but
float32 channels-first and float32 or bfloat16 NHWC ones (the columns form, tests/test_weight_columns.py);
other problems and the CPU keep their forms; the form computes the float64 reference (run on the CPU) in both
layouts, 1-D to 3-D, at MobileNetV2's sizes too; it takes the generic only."""

from __future__ import annotations

import numpy as np
import pytest

from ops import api, policy, targets
from ops.operator import Lowering
from ops.operators import grouped_conv_bwd_weight as weight

CUDA, CPU = targets.parse_target("cuda:sm_80"), targets.parse_target("llvm-cpu")


def _problem(**params):
    base = dict(batch=4, groups=16, in_channels=1, out_channels=1, input_spatial=(12, 12), filter_spatial=(3, 3),
                stride=1, padding=1, layout="NHWC", dtype="bfloat16")
    return weight.problem_from_params(**{**base, **params})


@pytest.mark.parametrize("params", [dict(dtype="float16"), dict(layout="NCHW", stride=2),
                                    dict(layout="NDHWC", input_spatial=(6, 8, 8), filter_spatial=(3, 3, 3))],
                         ids=["f16_cl", "bf16_nchw_s2", "bf16_ndhwc"])
def test_cuda_puts_the_row_split_first_for_depthwise_problems(params):
    problem = _problem(**params)
    first = policy.forms_for(problem, CUDA)[0]
    assert first.row_split and first.contraction == "generic" and first.batch_split == problem.batch
    assert not any(form.row_split for form in policy.forms_for(problem, CPU))


@pytest.mark.parametrize("params", [dict(groups=4, in_channels=8, out_channels=8),
                                    dict(groups=1, in_channels=16, out_channels=32)], ids=["grouped", "dense"])
def test_other_problems_keep_their_forms(params):
    assert not any(form.row_split for form in policy.forms_for(_problem(**params), CUDA))


def test_the_chunk_sum_adds_every_chunk_and_row():
    problem = _problem(batch=4, input_spatial=(12, 10), stride=2)  # 6 output rows
    mlir = weight.render(problem, weight.Form(batch_split=2, row_split=True))
    assert "tensor<12x16x3x3x1xf32>" in mlir  # partial_flat: 2 chunks x 6 rows of the (G*K, 3, 3, C) weight
    assert "sum over the 12 chunks" in mlir


def test_it_takes_the_generic_only_and_no_pinned_configuration():
    with pytest.raises(ValueError, match="row_split takes the generic form"):
        weight.Form(contraction="im2col", row_split=True)
    with pytest.raises(ValueError, match="the row split keeps IREE's tiling"):
        weight.render(_problem(), weight.Form(row_split=True), Lowering({0: "#config"}))


@pytest.mark.parametrize("params, chunks", [
    (dict(batch=2, groups=32, input_spatial=(112, 112)), 2),                                # MobileNetV2's, bf16
    (dict(batch=4, groups=24, input_spatial=(28, 30), stride=2, layout="NCHW", dtype="float32"), 4),
    (dict(batch=4, groups=8, input_spatial=(9, 8), filter_spatial=(5, 3), padding=(2, 1), dtype="float32"), 1),
    (dict(batch=2, groups=8, input_spatial=(4, 6, 8), filter_spatial=(3, 3, 3), stride=(1, 2, 2), layout="NCDHW",
          dtype="float32"), 2),
    (dict(batch=2, groups=8, input_spatial=(17,), filter_spatial=(3,), stride=2, layout="NWC", dtype="float32"), 1),
    (dict(batch=1, groups=8, input_spatial=(2, 8), stride=2, dtype="float32"), 1),  # one row, one chunk: no sum
], ids=["bf16_cl_mobilenet", "f32_nchw_s2", "f32_5x3", "f32_3d", "f32_1d", "one_partial_sum"])
def test_the_form_computes_the_reference(params, chunks, rng):
    problem = _problem(**params)
    inputs = weight.random_inputs(problem, rng)
    ours = np.asarray(api.run(problem, inputs, "local-task", form=weight.Form(batch_split=chunks, row_split=True)),
                      np.float64)
    reference = weight.reference(problem, inputs)
    tolerance = 1e-5 if problem.dtype == "float32" else 1e-2
    assert np.abs(ours - reference).max() <= tolerance * np.abs(reference).max()
