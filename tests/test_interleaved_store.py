"""The interleaved store of the stride-phase form (``stride_phases.Form``'s ``store="interleave"``, the GPU targets'
form): every phase writes its slot of a phase-major tensor whole, and one linalg.generic interleaves the slots
into grad_in through the epilogue. Run on the CPU device with the GPU targets' phases (no zero taps) and with the
CPU's, on every backward-data test problem of both operators, against the float64 definitions. (That the
shipped GPU modules have no copy dispatch is tests/test_lowering_data_movement.py's.)"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from ops import catalog, executor, render, targets, policy
from ops.operators import conv_bwd_data as conv
from ops.operators import phase_plan, stride_phases

from conftest import gpu_phases, interleaved_store
from conv_cases import PROBLEMS
from grouped_bwd_data_cases import CASES, problem as case_problem
from test_conv_bwd_data import check_against_the_direct_definition
from test_grouped_conv_bwd_data import check_against_the_definition_and_the_epilogue


@pytest.fixture(params=["gpu phases", "cpu phases"])
def interleave(request, monkeypatch):
    """The interleaved store, with the GPU targets' phases or the CPU's (zero taps on one-tap axes)."""
    executor.forget()  # ready calls are keyed by problem and host, not by the form a test forces
    interleaved_store(monkeypatch)
    if request.param == "gpu phases":
        gpu_phases(monkeypatch)


@pytest.mark.parametrize("name", [name for name, p in PROBLEMS.items() if any(s > 1 for s in p.stride)])
def test_conv_bwd_data_matches_the_direct_definition(rng, interleave, name):
    check_against_the_direct_definition(rng, name)


@pytest.mark.parametrize("name", [n for n in CASES if any(s > 1 for s in case_problem(n).stride)])
def test_grouped_conv_bwd_data_matches_the_definition_and_the_epilogue(rng, interleave, name):
    check_against_the_definition_and_the_epilogue(rng, name)


def _tiles(attrs: str, name: str) -> list[int]:
    return [int(v) for v in re.search(name + r" = \[([^]]*)\]", attrs).group(1).split(", ")]


@pytest.mark.parametrize("shape, steps", [
    ((128, 71, 71, 256), (1, 2, 2, 1)), ((2, 10, 2, 9), (1, 3, 3, 1)), ((3, 8, 4), (1, 1, 3)), ((1, 6, 10, 1), (1, 1, 3, 1)),
    ((32, 28, 28, 96), (1, 2, 2, 1)), ((4, 7, 7, 7, 12), (1, 3, 3, 3, 1)), ((32, 3, 3, 192, 192), None),
])
def test_copy_tiles_cut_strided_dims_at_multiples_of_the_stride(shape, steps):
    # IREE 3.13 computes a wrong slice for a mod / floordiv map whose tile and step do not divide one another
    copy = {"threads": 256, "thread_elements": 8, "subgroup_size": 32}
    attrs = render.copy_attrs(shape, copy, steps)
    workgroup, thread = _tiles(attrs, "workgroup"), _tiles(attrs, "thread")
    threads = int(re.search(r"workgroup_size = \[(\d+), 1, 1\]", attrs).group(1))
    assert len(workgroup) == len(thread) == len(shape)
    assert threads == math.prod(w // t for w, t in zip(workgroup, thread)) <= 1024
    assert all(w % t == 0 for w, t in zip(workgroup, thread))
    for tile in (workgroup, thread):
        for size, step in zip(tile, steps or [1] * len(shape)):
            assert size == 1 or size % step == 0, (tile, steps)
    assert math.prod(workgroup) <= copy["threads"] * copy["thread_elements"]


GPU = [targets.parse_target("cuda:sm_80"), targets.parse_target("rocm:gfx942")]


@pytest.mark.parametrize("target", GPU, ids=str)
def test_the_gpu_modules_interleave_channels_last_16_bit_strided_problems_only(target):
    ck = catalog.problem("conv_bwd_data", "ck_default", "ck_examples")
    shipped = policy.module_specs(ck, target)[0].mlir
    assert "%grad_in_interleaved = linalg.generic" in shipped and "compilation_info" in shipped
    assert not re.search(r"tensor\.insert_slice %stored_\d+ into %grad_in", shipped)
    kept = {
        "float32 (the tables' rule)": dataclasses.replace(ck, dtype="float32"),
        "channels-first": conv.problem_from_params(batch=2, in_channels=4, out_channels=3, input_spatial=(9, 8),
                                                   filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="float16"),
        "stride 1": catalog.problem("conv_bwd_data", "stride1_36", "ck_examples"),
    }
    for why, problem in kept.items():
        assert "%grad_in_interleaved" not in policy.module_specs(problem, target)[0].mlir, why


def test_a_rule_leaves_out_the_problems_it_excepts():
    # the CUDA table's grouped float16 pad-fusion rule: measured slower on resnext50_l1 alone, which keeps its pad copy
    cuda = targets.parse_target("cuda:sm_80")
    fuse = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"
    excepted = catalog.problem("grouped_conv_bwd_data", "resnext50_l1_bwd_data", "zoo")
    assert fuse not in policy.flags_for(excepted, cuda)
    assert fuse in policy.flags_for(catalog.problem("grouped_conv_bwd_data", "resnext50_l2_bwd_data", "zoo"), cuda)


@pytest.fixture
def tuned_phases(monkeypatch):
    """Every phase of the GPU targets' phases rendered as a tuned one (``contractions.dense_tuned`` for one group
    with single-tap axes), its configuration then left out: the CPU device compiles the same contraction."""
    convolution = stride_phases.convolution

    def tuned(*args):
        *leading, _config, contraction = args
        text, shape, read = convolution(*leading, "TUNED", contraction)
        return text.replace(" attrs = {compilation_info = TUNED}", "").replace(", compilation_info = TUNED", ""), shape, read

    monkeypatch.setattr(stride_phases, "convolution", tuned)
    executor.forget()
    gpu_phases(monkeypatch)


@pytest.mark.parametrize("name", [name for name, p in PROBLEMS.items()
                                  if any(map(phase_plan.single_taps_beside_others, phase_plan.phases(p)))])
def test_tuned_phases_without_their_single_tap_axes_match_the_direct_definition(rng, tuned_phases, name):
    assert "_taps = tensor.collapse_shape" in conv.render(PROBLEMS[name])  # the form under test is the one rendered
    check_against_the_direct_definition(rng, name)


def test_channels_first_float32_strided_phases_fuse_their_padding_on_cuda():
    """The CUDA table's rule (docs/perf/h200-split-inplace/exp21.log): a channels-first float32 2-D backward-data of
    stride 2, dense or depthwise, reads each phase's padding inside its convolution; stride 1, channels-last, 3-D
    and the float32 problems computed as bf16x3 keep IREE's pad copies."""
    cuda = targets.parse_target("cuda:sm_80")
    fuse = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"

    def flags(op="conv_bwd_data", stride=2, layout="NCHW", rank=2, groups=1, channels=64, precision="float32"):
        problem = catalog.problem(op, "ck_default", batch=4, groups=groups, in_channels=channels,
                                  out_channels=channels, input_spatial=(16,) * rank, filter_spatial=(3,) * rank,
                                  stride=stride, padding=1, layout=layout, dtype="float32")
        return policy.flags_for(dataclasses.replace(problem, precision=precision), cuda)
    assert fuse in flags()
    assert fuse in flags("grouped_conv_bwd_data", groups=96, channels=1)
    assert fuse not in flags(stride=1)
    assert fuse not in flags(layout="NHWC")
    assert fuse not in flags(layout="NCDHW", rank=3)
    assert fuse not in flags(stride=1, precision="bf16x3")
