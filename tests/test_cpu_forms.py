"""The llvm-cpu forms of the grouped convolutions: the module the runtime ships for a channels-last grouped problem
is the im2col form (taps gathered, a batch_matmul per group), IREE compiles its contractions as matmuls, and the
gathered taps stay within the stated budget; each rule of mlir/tuning/llvm-cpu.json names a form its kind of problem
has, and that form is what ships; the depthwise, per_image, per_image_nn and taps forms (the taps forms' phase-major
store and zero taps too) match the definition; the per_image_nn rules hold on the hosts they were measured on; the
pointwise flag rule takes what was measured, and its module matches the definition. Numerics of the shipped forms
are every CPU test's (tests/test_grouped_conv_*)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from ops import catalog, dtypes, geometry, layouts, policy, registry, render, tables, targets, verify
from ops.api import run
from ops.operators import contractions, phase_plan, weight_per_image

from conftest import poisoned
from lowering import shipped

CK = {(op, name): catalog.problem(op, name, batch=1, dtype="float32")
      for op, name, _ in catalog.problems("ck_examples", ["grouped_conv_bwd_data", "grouped_conv_bwd_weight"])}
CASES = {**{f"{op}/{name}": p for (op, name), p in CK.items() if p.in_channels * p.out_channels > 1},
         # channels-first, but 32 output channels x 9 taps: more terms than the taps form takes (CPU_TAPS_MAX_TERMS)
         "bwd_data/g3_2d_nchw_k32": catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=3, in_channels=5,
                                                      out_channels=32, input_spatial=(9, 8), filter_spatial=(3, 3),
                                                      padding=1, layout="NCHW"),
         "bwd_weight/g2_3d_ncdhw_s2": catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=2,
                                                        in_channels=3, out_channels=5, input_spatial=(6, 7, 5), stride=2,
                                                        layout="NCDHW")}


@pytest.mark.parametrize("name", list(CASES))
def test_the_cpu_module_contracts_with_batch_matmul(tmp_path, monkeypatch, name):
    """Under the Intel AMX host's rules (on Zen 4 the few-channel channels-last case takes the taps form instead:
    test_channels_last_grouped_weight_gradients_of_few_channels_take_the_taps_form_with_slp_on_zen4)."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: AMX_HOST)
    problem = CASES[name]
    spec, lowered = shipped(problem, "llvm-cpu", tmp_path)
    assert "linalg.batch_matmul" in spec.mlir, "the im2col form did not compile: the runtime fell back to the generic"
    contractions = [d.name for d in lowered.dispatches if d.is_contraction]
    assert contractions and all("batch_matmul" in c for c in contractions), [d.name for d in lowered.dispatches]


def test_a_chunk_of_gathered_taps_stays_within_the_budget():
    video = catalog.problem("grouped_conv_bwd_data", "ck_3d", batch=1, dtype="float32")  # 27 taps: chunked
    (phase,) = phase_plan.phases(video)
    lead = contractions.im2col_leading_axes(video, phase)
    assert lead >= 1
    itemsize = dtypes.numpy_dtype(video.dtype).itemsize
    window = video.batch * math.prod(p.rows for p in phase) * video.groups * video.out_channels * itemsize
    inputs = (math.prod(video.output_shape) + math.prod(video.weight_shape) + sum(math.prod(s) for s in video.d_shapes)) * itemsize
    assert window * math.prod(p.filter_taps for p in phase[lead:]) <= geometry.CPU_GATHER_BUDGET * inputs
    assert window * math.prod(p.filter_taps for p in phase[lead - 1:]) > geometry.CPU_GATHER_BUDGET * inputs


CPU = targets.parse_target("llvm-cpu")
TABLE = json.loads((render.templates_dir() / "tuning" / "llvm-cpu.json").read_text())
# problems of each (operator, kind) the CPU table has rules for: each rule's examples are those it applies to
EXAMPLES = [
    catalog.problem("conv_bwd_data", "ck_default", batch=2, in_channels=8, out_channels=6, input_spatial=(2, 8, 8),
                    filter_spatial=(1, 3, 3), stride=1, padding=(0, 1, 1), layout="NCDHW", dtype="float32"),
    catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=1, in_channels=8, out_channels=6,
                    input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), layout="NDHWC", dtype="float32"),
    CK[("grouped_conv_bwd_data", "ck_default")],
    catalog.problem("grouped_conv_bwd_data", "mobilenetv2_b4_144_s2_dw_bwd_data", "zoo", batch=1, dtype="float32"),
    CK[("grouped_conv_bwd_weight", "resnext_32x4d")],
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=1, in_channels=8, out_channels=6,
                    input_spatial=(7, 6, 5)),
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=1, in_channels=3, out_channels=8,
                    input_spatial=(12, 12), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"),
    # 8 channels: the dense rule's, where the 3 above are a stem's (stems keep per_image without AMX)
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=1, in_channels=8, out_channels=8,
                    input_spatial=(12, 12), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"),
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=1, in_channels=3, out_channels=8,
                    input_spatial=(28, 28), filter_spatial=(3, 3), padding=1, layout="NHWC", dtype="float32"),
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=4, in_channels=2, out_channels=3,
                    input_spatial=(4, 8, 8), filter_spatial=(3, 3, 3), padding=1, layout="NCDHW", dtype="float32"),
    CK[("grouped_conv_bwd_weight", "mobilenetv2_dw")],
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=8, in_channels=1, out_channels=1,
                    input_spatial=(10, 12), filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float32"),
    catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=4, in_channels=2, out_channels=3,
                    input_spatial=(6, 8), filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="float32"),
    catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=6, in_channels=1, out_channels=1,
                    input_spatial=(4, 5, 6), filter_spatial=(3, 3, 3), padding=1, layout="NCDHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=2, in_channels=8, out_channels=6, input_spatial=(8, 8),
                    filter_spatial=(1, 1), stride=2, layout="NCHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=512, out_channels=256, input_spatial=(7, 7),
                    filter_spatial=(1, 1), stride=1, layout="NCHW", dtype="float32"),  # wide pointwise, few positions
    catalog.problem("conv_bwd_data", "ck_default", batch=2, in_channels=8, out_channels=6, input_spatial=(8, 8),
                    filter_spatial=(3, 3), stride=2, padding=1, layout="NHWC", dtype="float32"),
    # channels-first, few positions, large weights: on the Xeon without AMX, im2col data-tiled (several taps at
    # strides 1 and 2, one at stride 2, and one at stride 1 of a 512K-element weight each way)
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=256, out_channels=256, input_spatial=(4, 4),
                    filter_spatial=(3, 3), stride=1, padding=1, layout="NCHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=512, out_channels=512, input_spatial=(8, 8),
                    filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=512, out_channels=1024, input_spatial=(8, 8),
                    filter_spatial=(1, 1), stride=2, padding=0, layout="NCHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=512, out_channels=1024, input_spatial=(4, 4),
                    filter_spatial=(1, 1), stride=1, padding=0, layout="NCHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=1024, out_channels=512, input_spatial=(4, 4),
                    filter_spatial=(1, 1), stride=1, padding=0, layout="NCHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=256, out_channels=256, input_spatial=(2, 4, 4),
                    filter_spatial=(3, 3, 3), stride=1, padding=1, layout="NCDHW", dtype="float32"),
    catalog.problem("conv_bwd_data", "ck_default", batch=1, in_channels=256, out_channels=256, input_spatial=(4, 8, 8),
                    filter_spatial=(3, 3, 3), stride=2, padding=1, layout="NCDHW", dtype="float32"),
    # strided along the last axis: no taps form for the weight gradient, the per_image rule decides
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=4, in_channels=2, out_channels=3,
                    input_spatial=(16, 16), filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="float32"),
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=6, in_channels=1, out_channels=1,
                    input_spatial=(8, 9), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"),
    # channels-last, 4 channels a group: on AVX-512 hosts without AMX, the taps form with LLVM's SLP vectorizer
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=4, in_channels=4, out_channels=4,
                    input_spatial=(8, 8), filter_spatial=(3, 3), padding=1, layout="NHWC", dtype="float32"),
    # 49 output positions, channels-first depthwise: on AVX-512 hosts without AMX, the taps form
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=6, in_channels=1, out_channels=1,
                    input_spatial=(7, 7), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"),
    # strided along the last axis: no taps form; on the AVX-512 + AMX host, the convolution-form generic
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=6, in_channels=1, out_channels=1,
                    input_spatial=(12, 12), filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW", dtype="float32"),
    # 16 channels, 56x56 positions, stride 1: on AVX-512 hosts without AMX, the shifted form
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=1, groups=1, in_channels=16, out_channels=16,
                    input_spatial=(56, 56), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"),
    # 3-D channels-first, there: per_image_nn, stride 1 at any channels, strided from 16
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=1, groups=1, in_channels=8, out_channels=8,
                    input_spatial=(4, 6, 6), filter_spatial=(3, 3, 3), padding=1, layout="NCDHW", dtype="float32"),
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=1, groups=1, in_channels=16, out_channels=16,
                    input_spatial=(4, 8, 8), filter_spatial=(3, 3, 3), stride=2, padding=1, layout="NCDHW",
                    dtype="float32"),
    # 3-D, 3136 output positions an image: on the Intel host without AMX, channels-first per_image (here strided,
    # where the shifted form does not apply), channels-last the shifted form
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=1, groups=1, in_channels=16, out_channels=16,
                    input_spatial=(8, 56, 56), filter_spatial=(3, 3, 3), stride=2, padding=1, layout="NCDHW",
                    dtype="float32"),
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=1, groups=1, in_channels=8, out_channels=8,
                    input_spatial=(4, 28, 28), filter_spatial=(3, 3, 3), padding=1, layout="NDHWC", dtype="float32"),
    # channels-last 1x1, 196 positions: on the Intel host without AMX, per_image_nn
    catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=1, groups=1, in_channels=32, out_channels=16,
                    input_spatial=(14, 14), filter_spatial=(1, 1), layout="NHWC", dtype="float32"),
]
# each CPU form's contraction: what marks it in the module, and what IREE names its contraction dispatches (the
# taps form has none: its generic is elementwise)
CONTRACTS_WITH = {"generic": ("partial[j, g, k, f, c] += x_padded", "conv"),
                  "im2col": ("linalg.batch_matmul", "matmul"), "per_image": ("linalg.batch_matmul", "matmul"),
                  "per_image_nn": ("linalg.batch_matmul", "matmul"),
                  "depthwise": ("linalg.depthwise_conv_", "conv"),
                  "taps": ({"grouped_conv_bwd_data": "// taps: acc[", "grouped_conv_bwd_weight": "%per_tap:"}, None),
                  "shifted": ("tensor.extract_slice %x_flat", "matmul")}


def _offers(problem, form: dict) -> bool:
    return any(all(getattr(f, key) == value for key, value in form.items()) for f in policy.target_forms(problem, CPU))


def _preferred_rule(problem) -> dict:
    """The first rule that applies and names a form the problem has (``policy.forms_for``), or None."""
    return next((r for r in TABLE["rules"] if "form" in r and policy.rule_applies(r, problem) and _offers(problem, r["form"])),
                None)


@pytest.mark.parametrize("rule", [r for r in TABLE["rules"] if "form" in r],
                         ids=lambda r: f"{r['operator']}-{'+'.join(r['kinds'])}-{r['form']['contraction']}")
def test_each_cpu_rule_names_a_form_of_its_kind_and_the_runtime_ships_it(tmp_path, monkeypatch, rule):
    """On a host with exactly the CPU flags the rule asks for (the rules keyed on others do not apply there)."""
    assert rule["source"] and rule["why"]
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(rule.get("host_flags", ())))
    for kind in rule["kinds"]:
        examples = [p for p in EXAMPLES if p.kind == kind and _preferred_rule(p) is rule]
        assert examples, f"no example problem of kind {kind} that the rule decides"
        problem = examples[0]
        offered = [{key: getattr(form, key) for key in rule["form"]} for form in policy.target_forms(problem, CPU)]
        assert rule["form"] in offered, f"the rule names a form the operator does not offer for {kind} problems"
        spec, lowered = shipped(problem, "llvm-cpu", tmp_path / kind)
        marker, expected = CONTRACTS_WITH[rule["form"]["contraction"]]
        marker = marker[rule["operator"]] if isinstance(marker, dict) else marker
        assert marker in spec.mlir, "the form did not compile: the runtime fell back to another"
        first = policy.forms_for(problem, CPU)[0]
        assert {key: getattr(first, key) for key in rule["form"]} == rule["form"]
        assert spec.mlir == policy.module_spec(problem, CPU).mlir, "the runtime shipped another form than the rule's"
        contractions = [d.name for d in lowered.dispatches if d.is_contraction]
        if expected is None:
            assert not contractions, contractions
        else:
            assert contractions and all(expected in name for name in contractions), [d.name for d in lowered.dispatches]


def test_a_rule_narrows_by_layout_and_output_positions(tmp_path, monkeypatch):
    """The per_image rule takes channels-first weight gradients of 64 or more output positions per image; the others
    keep the im2col rule. A misspelt narrowing key is refused, not ignored (it would widen its rule). A host of
    neither AVX2 nor AVX-512 (whose dense layers take per_image_nn by their own rules)."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset({"sse4_2"}))

    def preferred(**params):
        base = dict(batch=2, groups=1, in_channels=3, out_channels=8, filter_spatial=(3, 3), padding=1, dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        return policy.forms_for(problem, CPU)[0].contraction
    assert preferred(input_spatial=(8, 8), layout="NCHW") == "per_image"  # 64 positions
    assert preferred(input_spatial=(7, 8), layout="NCHW") == "im2col"  # 56
    assert preferred(input_spatial=(8, 8), layout="NHWC") == "im2col"
    (tmp_path / "tuning").mkdir()
    (tmp_path / "tuning" / "misspelt.json").write_text(
        json.dumps({"rules": [{"operator": "grouped_conv_bwd_weight", "layout": []}]}))
    monkeypatch.setattr(tables, "templates_dir", lambda: tmp_path)
    with pytest.raises(ValueError, match=r"misspelt.json: .* unknown keys \['layout'\]"):
        policy.rules("misspelt")


DEPTHWISE = {  # rank, stride, dilation, padding, layout, dtype
    "2d_nhwc_s1_f32": ((9, 8), 1, 1, 1, "NHWC", "float32"),
    "2d_nchw_s2_f16": ((9, 8), 2, 1, 1, "NCHW", "float16"),
    "2d_nhwc_s3_bf16": ((10, 11), 3, 1, 0, "NHWC", "bfloat16"),
    "2d_nhwc_s1x2_d2x1_f32": ((8, 9), (1, 2), (2, 1), (1, 0), "NHWC", "float32"),
    "1d_ncw_s2_d3_f32": ((13,), 2, 3, 1, "NCW", "float32"),
}


@pytest.mark.parametrize("op", ["grouped_conv_bwd_data", "grouped_conv_bwd_weight"])
@pytest.mark.parametrize("case", list(DEPTHWISE))
def test_the_depthwise_forms_match_the_definition(rng, op, case):
    spatial, stride, dilation, padding, layout, dtype = DEPTHWISE[case]
    problem = catalog.problem(op, "ck_default", batch=2, groups=5, in_channels=1, out_channels=1, input_spatial=spatial,
                              filter_spatial=(3,) * len(spatial), stride=stride, dilation=dilation, padding=padding,
                              layout=layout, dtype=dtype)
    error = _form_error(problem, rng, "depthwise")
    assert error <= verify.tolerance(op, dtype), error


def _nonzero_inputs(module, problem, rng) -> list:
    """Random inputs whose reference is not all zeros (a tiny problem's ReLU epilogue can zero it: OPS_TEST_SEED=
    1251766856 drew such inputs for a 1-D depthwise problem of 27 outputs, 398986966 for a one-channel 1-D problem of
    18; such a check proves nothing)."""
    return next(drawn for drawn in (module.random_inputs(problem, rng) for _ in range(8))
                if np.any(np.asarray(module.reference(problem, drawn), np.float64)))


def _form_error(problem, rng, contraction: str) -> float:
    """The normwise relative error of ``problem`` run in the CPU's form of ``contraction`` (a poisoned destination),
    on inputs whose reference is not all zeros."""
    module = registry.module(problem)
    inputs = _nonzero_inputs(module, problem, rng)
    (shape, result_dtype), = module.results(problem)
    form = next(f for f in policy.target_forms(problem, CPU) if f.contraction == contraction)
    got = run(problem, inputs, "local-task", poisoned(shape, result_dtype, "local-task"), form=form).to_host()
    return verify.relative_error(got, module.reference(problem, inputs))


def _dense_problems(rng, count: int) -> list:
    """Random one-group backward-data problems (both operators), 1-3 spatial axes, one-tap axes among them."""
    from ops.operators import conv_bwd_data, grouped_conv_bwd_data

    problems = []
    while len(problems) < count:
        module = [conv_bwd_data, grouped_conv_bwd_data][len(problems) % 2]
        params = module.random_params(rng, int(rng.integers(1, 4)))
        params.update(groups=1, dtype="float32") if "groups" in params else params.update(dtype="float32")
        try:
            problems.append(module.problem_from_params(**params))
        except ValueError:
            continue
    return problems


@pytest.mark.parametrize("flip", ["planes", "gather"])
def test_both_weight_flips_match_the_definition(rng, flip):
    """The CPU's phases take the weight's taps plane by plane (``Form.weight_flip``, the policy's CPU_PHASES); the
    gather, an element at a time, stays a form (the GPUs' without negative map coefficients): both against float64
    on random one-group problems of both operators, strides, zero taps and layouts among them (the grouped and
    depthwise forms' own tests run the planes as shipped)."""
    problems = [p for p in _dense_problems(rng, 4) if "im2col" in {f.contraction for f in policy.target_forms(p, CPU)}]
    assert all(policy.forms_for(p, CPU)[0].weight_flip == "planes" for p in problems)
    for problem in problems:
        module = registry.module(problem)
        inputs = _nonzero_inputs(module, problem, rng)
        for form in policy.forms_for(problem, CPU)[:2]:
            got = run(problem, inputs, out=poisoned(problem.input_shape, problem.dtype),
                      form=dataclasses.replace(form, weight_flip=flip)).to_host()
            error = verify.relative_error(got, module.reference(problem, inputs))
            assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name} ({form}): {error:.2e}"


@pytest.mark.parametrize("contraction", ["generic", "im2col"])
def test_both_one_group_contractions_match_the_definition(rng, contraction):
    """The CPU ships im2col for one group (the rule above); the named convolution (the GPUs' form) stays checked."""
    for problem in _dense_problems(rng, 4):
        offered = {form.contraction for form in policy.target_forms(problem, CPU)}
        if contraction not in offered:  # one channel each way: no im2col (policy.WORKAROUNDS)
            assert problem.in_channels == problem.out_channels == 1 and offered == {"generic"}, problem.name
            continue
        module = registry.module(problem)
        inputs = _nonzero_inputs(module, problem, rng)
        expected = module.reference(problem, inputs)
        dst = poisoned(problem.input_shape, problem.dtype)
        got = run(problem, inputs, out=dst, form={"contraction": contraction}).to_host()
        error = verify.relative_error(got, expected)
        assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name} ({contraction}): {error:.2e}"


def _channels_first_weight_problems(rng, count: int, taps: bool = False) -> list:
    """Random channels-first weight-gradient problems (1-3 spatial axes, groups, strides, dilations, padding, each
    dtype), not depthwise; with ``taps``, those the taps form takes, depthwise ones among them."""
    from ops.operators import grouped_conv_bwd_weight

    problems, dtypes_ = [], ["float32", "float16", "bfloat16"]
    while len(problems) < count:
        params = grouped_conv_bwd_weight.random_params(rng, int(rng.integers(1, 4)))
        params.update(layout=("NCW", "NCHW", "NCDHW")[len(params["input_spatial"]) - 1],
                      dtype=dtypes_[len(problems) % len(dtypes_)])
        if taps and len(problems) % 3 == 2:
            params.update(in_channels=1, out_channels=1)
        try:
            problem = grouped_conv_bwd_weight.problem_from_params(**params)
        except ValueError:
            continue
        offered = {form.contraction for form in policy.target_forms(problem, CPU)}
        if ("taps" in offered) if taps else problem.kind != "depthwise":
            problems.append(problem)
    return problems


def test_the_weight_taps_form_matches_the_definition(rng):
    """Channels-first and channels-last (``_as_channels_last``: the same problems' other layout), depthwise among them."""
    problems = _channels_first_weight_problems(rng, 6, taps=True)
    for problem in [*problems, *map(_as_channels_last, problems)]:
        error = _form_error(problem, rng, "taps")
        assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


def _as_channels_last(problem):
    """The same problem (out_dtype included) in its rank's channels-last layout."""
    return dataclasses.replace(problem, layout=layouts.layouts_of_rank(problem.rank)[0])


def test_the_weight_taps_form_is_offered_channels_first_for_unit_strides_along_the_last_axis_and_channels_last():
    def offered(**params):
        base = dict(batch=2, groups=4, in_channels=2, out_channels=3, input_spatial=(8, 8), filter_spatial=(3, 3),
                    padding=1, layout="NCHW", dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        return "taps" in {form.contraction for form in policy.target_forms(problem, CPU)}, problem
    assert offered()[0] and offered(stride=(2, 1))[0]
    assert not offered(stride=(1, 2))[0]
    assert not offered(groups=1)[0]
    assert offered(layout="NHWC")[0] and offered(layout="NHWC", stride=(1, 2))[0]  # rows along the channels
    # (per_image still refuses channels-last: test_the_per_image_form_refuses_channels_last)


def test_the_per_image_form_matches_the_definition(rng):
    for problem in _channels_first_weight_problems(rng, 6):
        error = _form_error(problem, rng, "per_image")
        assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


def test_the_per_image_nn_form_matches_the_definition(rng):
    """Both of its matrix layouts (grad_out moved where the (c, f) columns are at least K, else the gathered
    windows), in channels-first and channels-last problems."""
    from ops.operators import weight_per_image

    problems = _channels_first_weight_problems(rng, 6)
    problems += [catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=3, groups=g, in_channels=c, out_channels=k,
                                 input_spatial=spatial, filter_spatial=filters, stride=stride, padding=padding,
                                 layout=layout, dtype="float32")
                 for g, c, k, spatial, filters, stride, padding, layout in [
                     (1, 3, 32, (9, 10), (3, 3), 1, 1, "NCHW"), (1, 24, 40, (6, 7), (1, 1), 2, 0, "NCHW"),
                     (2, 5, 4, (4, 5, 6), (3, 1, 3), 1, (1, 0, 1), "NCDHW"), (3, 2, 9, (11,), (3,), 2, 1, "NCW"),
                     (1, 3, 32, (9, 10), (3, 3), 2, 1, "NHWC"), (2, 24, 40, (6, 7), (1, 1), 2, 0, "NHWC"),
                     (2, 5, 4, (4, 5, 6), (3, 1, 3), 1, (1, 0, 1), "NDHWC"), (1, 2, 9, (11,), (3,), 2, 1, "NWC")]]
    moved = {(weight_per_image.grad_out_moved(p), p.channels_last) for p in problems}
    assert moved == {(True, False), (False, False), (True, True), (False, True)}, \
        "the problems cover both of the form's matrix layouts in both layouts"
    for problem in problems:
        error = _form_error(problem, rng, "per_image_nn")
        assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


NN_FLAG = "--iree-global-opt-propagate-transposes=false"


def test_the_per_image_nn_rules_hold_on_the_hosts_they_were_measured_on(monkeypatch):
    """On an AVX2 host without AVX-512 (where they were measured), float32 channels-first weight gradients of 64 or
    more positions take per_image_nn with IREE's transpose propagation off (3-D grouped ones before the taps form,
    2-D grouped ones after it); on an AVX-512 host with AMX (the other host measured), dense and 3-D grouped ones
    take it (but the two layers it measured slower), and 2-D grouped ones per_image, both before the taps form; on
    an AVX-512 host without AMX (AMD's Zen 4), 2-D and 3-D dense ones take it by rules measured there (strided 3-D
    ones from 16 channels), and the others keep per_image, 2-D grouped ones take per_image before the taps form as
    on the AMX host (measured on both), and channels-last dense ones (not pointwise) of 784 or more output positions
    take it by another (the other hosts keep im2col); on one without AVX2 all keep per_image and IREE's defaults; a
    form other than the rule's never gets the rule's flag."""
    def chosen(flags, **params):
        monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(flags))
        base = dict(batch=2, groups=1, in_channels=16, out_channels=8, input_spatial=(8, 8), filter_spatial=(1, 1),
                    padding=0, layout="NCHW", dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        spec = policy.module_spec(problem, CPU)
        return policy.forms_for(problem, CPU)[0].contraction, NN_FLAG in spec.extra_flags

    avx2, avx512 = {"avx2", "fma"}, {"avx2", "fma", "avx512f"}
    assert chosen(avx2) == ("per_image_nn", True)
    assert chosen(avx2, groups=4, in_channels=2, out_channels=3, input_spatial=(16, 16), filter_spatial=(3, 3),
                  stride=2, padding=1) == ("per_image_nn", True)
    assert chosen(avx2, groups=4, in_channels=2, out_channels=3, input_spatial=(4, 8, 8), filter_spatial=(3, 3, 3),
                  padding=1, layout="NCDHW") == ("per_image_nn", True)
    assert chosen(avx2, groups=4, in_channels=2, out_channels=3, filter_spatial=(3, 3), padding=1) == ("taps", False)
    assert chosen(avx2, dtype="float16") == ("per_image", False)
    assert chosen(avx2, input_spatial=(7, 8)) == ("im2col", False)
    for host in ({"sse4_2"}, set()):
        assert chosen(host) == ("per_image", False), host
    # AVX-512 without AMX (AMD's Zen 4): 2-D and 3-D dense rules of its own, measured there (a strided 3-D layer of
    # under 16 channels, the stem, keeps per_image); 2-D grouped layers per_image, as on the AMX host
    assert chosen(avx512) == ("per_image_nn", True)
    assert chosen(avx512, input_spatial=(4, 8, 8), filter_spatial=(1, 3, 3), padding=(0, 1, 1), layout="NCDHW") == (
        "per_image_nn", True)
    assert chosen(avx512, in_channels=3, input_spatial=(4, 8, 8), filter_spatial=(3, 3, 3), stride=(1, 2, 2),
                  padding=1, layout="NCDHW") == ("per_image", False)
    assert chosen(avx512, groups=4, in_channels=2, out_channels=3, filter_spatial=(3, 3), padding=1) == (
        "per_image", False)
    # and channels-last dense ones of 784 or more output positions (2-D and 3-D, not pointwise), measured there only
    assert chosen(avx512, in_channels=3, input_spatial=(28, 28), filter_spatial=(3, 3), padding=1,
                  layout="NHWC") == ("per_image_nn", True)
    assert chosen(avx512, input_spatial=(8, 28, 28), filter_spatial=(1, 1, 1), stride=2, layout="NDHWC") == (
        "per_image_nn", True)
    assert chosen(avx512, input_spatial=(27, 28), filter_spatial=(3, 3), padding=1, layout="NHWC") == ("im2col", False)
    assert chosen(avx512, input_spatial=(28, 28), layout="NHWC") == ("im2col", False)  # pointwise
    for host in (avx2, amx := avx512 | {"amx_tile"}):  # not measured there
        assert chosen(host, input_spatial=(28, 28), filter_spatial=(3, 3), padding=1, layout="NHWC") == (
            "im2col", False), host
    # amx (above): the Intel host of stop 38: dense and 3-D grouped layers; 2-D grouped: per_image
    assert chosen(amx) == ("per_image_nn", True)
    assert chosen(amx, filter_spatial=(3, 3), padding=1) == ("per_image_nn", True)
    assert chosen(amx, input_spatial=(16, 16), stride=2) == ("per_image_nn", True)
    assert chosen(amx, groups=4, in_channels=2, out_channels=3, filter_spatial=(3, 3), padding=1) == ("per_image", False)
    assert chosen(amx, groups=4, in_channels=2, out_channels=3, input_spatial=(4, 8, 8), filter_spatial=(3, 3, 3),
                  padding=1, layout="NCDHW") == ("per_image_nn", True)
    assert chosen(amx, input_spatial=(4, 8, 8), filter_spatial=(1, 3, 3), padding=(0, 1, 1), layout="NCDHW") == (
        "per_image_nn", True)
    assert chosen(amx, batch=16, in_channels=24, out_channels=144, input_spatial=(16, 16)) == ("per_image", False)
    assert chosen(amx, filter_spatial=(3, 3), padding=1, dtype="float16") == ("per_image", False)
    assert chosen(amx, filter_spatial=(3, 3), padding=1, layout="NHWC") == ("im2col", False)


def test_the_per_image_form_refuses_channels_last():
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, input_spatial=(6, 6), filter_spatial=(3, 3),
                              layout="NHWC", dtype="float32")
    assert "per_image" not in {form.contraction for form in policy.target_forms(problem, CPU)}
    with pytest.raises(ValueError, match="grouped_conv_bwd_weight: the per_image form reads channels-first"):
        registry.module(problem).render(problem, registry.module(problem).Form(contraction="per_image"))


def _channels_first_data_problems(rng, count: int) -> list:
    """Random channels-first grouped backward-data problems within the taps form's term limit (1-3 spatial axes,
    strides, dilations, padding, each dtype, the sweep's epilogues), depthwise ones among them."""
    from ops.operators import grouped_conv_bwd_data

    problems, dtypes_ = [], ["float32", "float16", "bfloat16"]
    while len(problems) < count:
        params = grouped_conv_bwd_data.random_params(rng, int(rng.integers(1, 4)))
        params.update(layout=("NCW", "NCHW", "NCDHW")[len(params["input_spatial"]) - 1],
                      dtype=dtypes_[len(problems) % len(dtypes_)])
        if len(problems) % 3 == 2:
            params.update(in_channels=1, out_channels=1)
        try:
            problem = grouped_conv_bwd_data.problem_from_params(**params)
        except ValueError:
            continue
        if problem.groups > 1 and "taps" in {form.contraction for form in policy.target_forms(problem, CPU)}:
            problems.append(problem)
    return problems


def test_the_taps_form_matches_the_definition(rng):
    for problem in _channels_first_data_problems(rng, 6):
        error = _form_error(problem, rng, "taps")
        assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


# strided channels-first problems whose phases tile grad_in exactly: the taps form's phase-major store and transpose
TRANSPOSED = {
    "2d_nchw_s2_relu_f32": dict(groups=4, in_channels=2, out_channels=3, input_spatial=(8, 6), filter_spatial=(3, 3),
                                stride=2, padding=1, layout="NCHW", dtype="float32", epilogue="relu_mask"),
    "3d_ncdhw_s1x2x3_bf16": dict(groups=2, in_channels=3, out_channels=2, input_spatial=(3, 4, 6),
                                 filter_spatial=(2, 3, 3), stride=(1, 2, 3), padding=((1, 0), 1, 1), layout="NCDHW",
                                 dtype="bfloat16"),
    "1d_ncw_s3_d2_f16": dict(groups=3, in_channels=1, out_channels=1, input_spatial=(12,), filter_spatial=(4,),
                             stride=3, dilation=2, padding=((3, 2),), layout="NCW", dtype="float16"),
}


@pytest.mark.parametrize("case", list(TRANSPOSED))
def test_the_taps_forms_phase_major_store_matches_the_definition(rng, case):
    params = dict(TRANSPOSED[case])
    relu = params.pop("epilogue", None)
    problem = catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, **params)
    if relu:
        problem = dataclasses.replace(problem, **_relu_mask(problem))
    form = next(f for f in policy.target_forms(problem, CPU) if f.contraction == "taps")
    assert form.store == "transpose" and phase_plan.transposes(problem, form), [
        [(p.grad_in_offset, p.rows) for p in phase] for phase in phase_plan.phases(problem)]
    text = registry.module(problem).render(problem, form)
    assert "linalg.transpose ins(%slots_" in text and "[1, 1, 2, 2]" not in text
    error = _form_error(problem, rng, "taps")
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


def _relu_mask(problem) -> dict:
    """The ReLU-mask epilogue ops.torch fuses (``where(d0 <= 0, 0, acc)``, d0 grad_in-shaped)."""
    from ops import epilogue as epilogues
    parsed, _ = epilogues.parse(problem.op, "where(d0 <= 0.0, 0.0, acc)", 1, {})
    return dict(epilogue=parsed, d_shapes=(problem.input_shape,), d_dtypes=(problem.dtype,))


def test_the_taps_form_keeps_the_strided_store_where_phases_do_not_tile_grad_in():
    problem = catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=4, in_channels=2, out_channels=3,
                              input_spatial=(7, 6), filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW",
                              dtype="float32")
    form = next(f for f in policy.target_forms(problem, CPU) if f.contraction == "taps")
    assert not phase_plan.transposes(problem, form)  # 7 rows: not a multiple of the stride
    assert "[1, 1, 2, 2]" in registry.module(problem).render(problem, form)


def test_the_taps_form_skips_zero_taps(rng):
    """Asked for with the other forms' zero taps (a one-tap axis beside a 3-tap one), the taps form writes no term
    for them: its planes are the weight's real taps (a zero tap's would lie outside the weight)."""
    problem = catalog.problem("grouped_conv_bwd_data", "ck_default", batch=2, groups=3, in_channels=2, out_channels=2,
                              input_spatial=(5, 7), filter_spatial=(3, 1), stride=(1, 2), dilation=(1, 2),
                              padding=((1, 1), (1, 2)), layout="NCHW", dtype="float32")
    form = registry.module(problem).Form(contraction="taps", single_taps="zero_tap", d_read="slice", store="strided")
    (phase,) = phase_plan.phase_list(problem, form)
    assert [axis.filter_taps for axis in phase] == [3, 2] and [axis.taps for axis in phase] == [3, 1]
    assert registry.module(problem).render(problem, form).count("arith.mulf") == 3 * problem.out_channels
    module = registry.module(problem)
    inputs = module.random_inputs(problem, rng)
    (shape, dtype), = module.results(problem)
    got = run(problem, inputs, "local-task", poisoned(shape, dtype, "local-task"),
              form={"contraction": "taps", "single_taps": "zero_tap"}).to_host()
    error = verify.relative_error(got, module.reference(problem, inputs))
    assert error <= verify.tolerance(problem.op, problem.dtype), error


def test_the_taps_form_takes_channels_first_problems_within_its_term_limit():
    def offered(**params):
        base = dict(batch=2, groups=4, in_channels=2, input_spatial=(6, 6), filter_spatial=(3, 3), padding=1,
                    dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_data", "ck_default", **{**base, **params})
        return "taps" in {form.contraction for form in policy.target_forms(problem, CPU)}, problem
    assert offered(out_channels=policy.CPU_TAPS_MAX_TERMS // 9, layout="NCHW")[0]
    assert not offered(out_channels=policy.CPU_TAPS_MAX_TERMS // 9 + 1, layout="NCHW")[0]
    taken, channels_last = offered(out_channels=3, layout="NHWC")
    assert not taken
    with pytest.raises(ValueError, match="grouped_conv_bwd_data: the taps form reads a channels-first grad_out"):
        registry.module(channels_last).render(channels_last, registry.module(channels_last).Form(contraction="taps"))


POINTWISE_FLAG = "--iree-global-opt-propagate-transposes=false"


def _pointwise(**params):
    base = dict(batch=2, in_channels=32, out_channels=24, input_spatial=(6, 5), filter_spatial=(1, 1), stride=1,
                padding=0, layout="NCHW", dtype="float32")
    return catalog.problem("conv_bwd_data", "ck_default", **{**base, **params})


def test_the_pointwise_flag_rule_narrows_to_what_was_measured():
    """The rule that turns IREE's transpose propagation off takes float32 NCW and NCHW 1 x 1 backward-data problems
    at unit stride (measured faster); the others keep IREE's default."""
    assert POINTWISE_FLAG in policy.module_spec(_pointwise(), CPU).extra_flags
    for taken in (_pointwise(in_channels=4), _pointwise(input_spatial=(11,), filter_spatial=(1,), layout="NCW")):
        assert POINTWISE_FLAG in policy.flags_for(taken, CPU), taken.name
    for other in (_pointwise(filter_spatial=(3, 3), padding=1), _pointwise(stride=2), _pointwise(layout="NHWC"),
                  _pointwise(dtype="float16"), _pointwise(input_spatial=(3, 4, 5), filter_spatial=(1, 1, 1), layout="NCDHW")):
        assert POINTWISE_FLAG not in policy.flags_for(other, CPU), other.name


def test_the_pointwise_module_without_transpose_propagation_matches_the_definition(rng):
    problem = _pointwise(batch=3, in_channels=40, out_channels=19, input_spatial=(7, 9))
    assert POINTWISE_FLAG in policy.module_spec(problem, CPU).extra_flags
    error = _module_error(problem, rng, problem.input_shape)
    assert error <= verify.tolerance(problem.op, problem.dtype), error


def _module_error(problem, rng, out_shape) -> float:
    """The normwise error of ``problem``'s shipped CPU module, run once on random inputs, against the definition."""
    module = registry.module(problem)
    inputs = _nonzero_inputs(module, problem, rng)
    got = run(problem, inputs, out=poisoned(out_shape, problem.dtype)).to_host()
    return verify.relative_error(got, module.reference(problem, inputs))


GATHER_FLAG = "--iree-llvmcpu-experimental-vectorize-to-transfer-gather"
AMX_HOST = frozenset({"avx2", "fma", "avx512f", "amx_tile"})  # an Intel host with AMX
ZEN4_HOST = frozenset({"avx2", "fma", "avx512f"})  # AVX-512 without AMX: the CPU rules measured on AMD Zen 4
AVX2_HOST = frozenset({"avx2", "fma"})


def test_the_gather_flag_rule_gives_its_flag_to_the_per_image_forms_only_and_chooses_no_form(rng, monkeypatch):
    """On the AVX-512 + AMX host it was measured on, the per_image and per_image_nn modules of float32
    channels-first weight gradients with taps take IREE's vectorization of gathers; the other forms' modules, the 1 x 1
    layers, other dtypes and other hosts do not, and the form each problem takes first is the one it took without
    the rule (``only_forms``)."""
    without = tuple(r for r in policy.rules("llvm-cpu") if GATHER_FLAG not in r.get("flags", ()))
    assert len(without) == len(policy.rules("llvm-cpu")) - 1

    def flagged(problem, contraction):
        form = next(f for f in policy.target_forms(problem, CPU) if f.contraction == contraction)
        return GATHER_FLAG in policy.module_spec(problem, CPU, options=form).extra_flags

    base = dict(batch=2, groups=1, in_channels=5, out_channels=8, input_spatial=(9, 8), filter_spatial=(3, 3),
                padding=1, layout="NCHW", dtype="float32")
    problem = lambda **params: catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})  # noqa: E731
    taken = [problem(), problem(groups=2, in_channels=2, out_channels=4, stride=2),
             problem(input_spatial=(4, 5, 6), filter_spatial=(3, 1, 3), padding=(1, 0, 1), layout="NCDHW"),
             problem(input_spatial=(12, 10), filter_spatial=(1, 1), stride=2, padding=0)]
    others = [problem(filter_spatial=(1, 1), padding=0), problem(dtype="float16"), problem(layout="NHWC")]
    for host, expected in ((AMX_HOST, True), (AMX_HOST - {"amx_tile"}, False), (AVX2_HOST, False)):
        monkeypatch.setattr(targets, "host_cpu_flags", lambda: host)
        for p in taken + others:
            offered = {f.contraction for f in policy.target_forms(p, CPU)}
            for contraction in offered & {"per_image", "per_image_nn"}:
                assert flagged(p, contraction) == (expected and p in taken), (sorted(host), p.name, contraction)
            for contraction in offered - {"per_image", "per_image_nn"}:
                assert not flagged(p, contraction), (sorted(host), p.name, contraction)
            preferred = policy.forms_for(p, CPU)[0]
            with monkeypatch.context() as m:
                m.setattr(policy, "rules", lambda name: without if name == "llvm-cpu" else ())
                assert policy.forms_for(p, CPU)[0] == preferred, p.name


def test_the_per_image_forms_with_the_gather_flag_match_the_definition(rng, monkeypatch):
    """The modules the rule above flags, on whatever host runs the suite: random float32 channels-first weight
    gradients of 1-3 spatial axes, both forms."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: AMX_HOST)
    problems = [p for p in _channels_first_weight_problems(rng, 9) if p.dtype == "float32"]
    assert problems
    for problem in problems:
        for contraction in ("per_image", "per_image_nn"):
            form = next(f for f in policy.target_forms(problem, CPU) if f.contraction == contraction)
            assert GATHER_FLAG in policy.module_spec(problem, CPU, options=form).extra_flags or tables._pointwise(problem)
            error = _form_error(problem, rng, contraction)
            assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name} {contraction}: {error:.2e}"


def _entry_checked_problem(function: str):
    """A small problem with the same per-image matmul rows and columns as the tuning table's entry ``function``
    (its channels, groups and filter; batch 2 and a few positions, a multiple of the tile's reduction)."""
    from grouped_conv_bwd_weight_cases import TABLE_NAMED

    named = next(p for p in TABLE_NAMED.values() if p.name == function)
    spatial = (2, 4, 4) if named.rank == 3 else (4, 4)
    return catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=named.groups,
                           in_channels=named.in_channels, out_channels=named.out_channels, input_spatial=spatial,
                           filter_spatial=named.filter_spatial, padding=1, layout=named.layout, dtype=named.dtype)


CPU_ENTRIES = [e for e in TABLE.get("entries", ()) if "compilation_info" in e]


@pytest.mark.parametrize("entry", CPU_ENTRIES, ids=lambda e: e["function"][:60])
def test_a_cpu_entry_pins_its_matmul_tile_on_the_hosts_it_was_measured_on(entry, monkeypatch):
    """On the host its rule says (AVX-512 + AMX), an entry's problem takes its form with the entry's
    compilation_info on the per-image batch_matmul; on another host, neither (entries narrow by host as rules do)."""
    from grouped_conv_bwd_weight_cases import TABLE_NAMED

    assert entry["source"] and entry["why"] and entry["host_flags"]
    problem = next(p for p in TABLE_NAMED.values() if p.name == entry["function"])
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset({"avx2", *entry["host_flags"]}))
    assert [f.contraction for f in policy.forms_for(problem, CPU)] == [entry["render"]["contraction"]]
    assert f"linalg.batch_matmul {{compilation_info = {entry['compilation_info']}}}" in policy.module_spec(problem, CPU).mlir
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: AVX2_HOST)
    assert "compilation_info" not in policy.module_spec(problem, CPU).mlir


@pytest.mark.parametrize("entry", CPU_ENTRIES, ids=lambda e: e["function"][:60])
def test_the_per_image_nn_matmul_with_an_entrys_tile_matches_the_definition(entry, rng, monkeypatch):
    """The entry's tile pinned on a small problem of the same per-image rows and columns, on any host."""
    problem = _entry_checked_problem(entry["function"])
    monkeypatch.setattr(policy, "configs_for",
                        lambda p, target, form=None: {0: entry["compilation_info"]} if p == problem else {})
    form = next(f for f in policy.target_forms(problem, CPU) if f.contraction == entry["render"]["contraction"])
    assert entry["compilation_info"] in policy.module_spec(problem, CPU, options=form).mlir
    error = _form_error(problem, rng, form.contraction)
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"


@pytest.mark.parametrize("host, expected", [
    (ZEN4_HOST, "im2col"),    # AMD Zen 4 (issue 46)
    (AMX_HOST, "im2col"),     # the Intel host of stop 38
    (AVX2_HOST, "generic"),   # unmeasured: the named convolution's phases
])
def test_strided_dense_channels_first_backward_data_takes_im2col_on_avx512_hosts(monkeypatch, host, expected):
    """ResNet-50's strided layers ran 1.4-4.7x faster as im2col on Zen 4, as on the Intel host (the rule's source):
    the rule is keyed on AVX-512, which both have; unit-stride layers keep the named convolution. Channels-last
    strided layers take im2col by a rule of Zen 4's own."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def preferred(**params):
        base = dict(batch=2, in_channels=8, out_channels=16, input_spatial=(8, 8), filter_spatial=(1, 1), padding=0,
                    stride=1, layout="NCHW", dtype="float32")
        return policy.forms_for(catalog.problem("conv_bwd_data", "ck_default", **{**base, **params}), CPU)[0].contraction
    assert preferred(stride=2) == expected
    assert preferred(stride=2, filter_spatial=(3, 3), padding=1) == expected
    assert preferred(filter_spatial=(3, 3), padding=1) == "generic"
    # channels-last: measured on Zen 4 only
    zen4 = host == ZEN4_HOST
    assert preferred(stride=2, filter_spatial=(3, 3), padding=1, layout="NHWC") == ("im2col" if zen4 else "generic")
    assert preferred(filter_spatial=(3, 3), padding=1, layout="NHWC") == "generic"


@pytest.mark.parametrize("host, expected", [
    (ZEN4_HOST, "im2col"),    # AMD Zen 4, where it was measured (issue 46)
    (AMX_HOST, "generic"),    # unmeasured on AMX hosts
    (AVX2_HOST, "generic"),
    (ZEN4_HOST | {"avx512_fp16"}, "generic"),  # an Intel Xeon without AMX: measured slower (docs/perf/xeon-data-tiling)
])
def test_wide_pointwise_channels_first_backward_data_of_few_positions_takes_im2col_on_zen4(monkeypatch, host,
                                                                                           expected):
    """ResNet-50's 1x1 stride-1 layers of 512+ input and 256+ output channels at 7x7 and 14x14 ran 1.5-27% faster as
    im2col on Zen 4 in two runs, MobileNetV2's 960 <- 320 8% (docs/perf/zen4-pointwise-im2col), and 2-40% slower on
    an Intel Xeon with AVX512-FP16 and no AMX; fewer channels, more positions or a single one keep the generic form."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def preferred(**params):
        base = dict(batch=2, in_channels=1024, out_channels=256, input_spatial=(14, 14), filter_spatial=(1, 1),
                    padding=0, stride=1, layout="NCHW", dtype="float32")
        return policy.forms_for(catalog.problem("conv_bwd_data", "ck_default", **{**base, **params}), CPU)[0].contraction
    assert preferred() == expected
    # the Xeon's own rule takes 1x1 layers of 1M-element weights at 7x7 as im2col, data-tiled (test_cpu_data_tiling)
    xeon = host == ZEN4_HOST | {"avx512_fp16"}
    assert preferred(in_channels=512, out_channels=2048, input_spatial=(7, 7)) == ("im2col" if xeon else expected)
    assert preferred(in_channels=256, out_channels=1024) == "generic"        # 256 columns
    assert preferred(in_channels=512, input_spatial=(28, 28)) == "generic"  # 784 positions
    assert preferred(input_spatial=(1, 1)) == "generic"                      # one position: unmeasured
    assert preferred(in_channels=960, out_channels=160, input_spatial=(7, 7)) == "generic"  # K = 160: level or slower
    assert preferred(layout="NHWC") == "generic"


@pytest.mark.parametrize("host, stem", [
    (ZEN4_HOST, "per_image"),                    # AMD Zen 4: 0.90-0.99x as per_image_nn (docs/perf/zen4-resnet50)
    (ZEN4_HOST | {"avx512_fp16"}, "per_image"),  # an Intel Xeon without AMX: 0.55-0.61x (docs/perf/xeon-data-tiling)
    (AMX_HOST, "per_image_nn"),                  # the AMX host's rule (its own exceptions by name)
])
def test_channels_first_stems_keep_per_image_on_avx512_hosts_without_amx(monkeypatch, host, stem):
    """A 3-channel stem's weight gradient (ResNet-50's 7x7 stride 2) keeps per_image where the dense rule gives the
    others per_image_nn, and without that rule's flag."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    assert _stem_choice() == (stem, stem == "per_image_nn")
    assert _stem_choice(in_channels=128, out_channels=128, input_spatial=(28, 28), filter_spatial=(3, 3), stride=1,
                        padding=1)[0] == "per_image_nn"


def _stem_choice(**params) -> tuple[str, bool]:
    """The CPU's first form for a stem's weight gradient (ResNet-50's: 3 -> 64 channels, 7x7 stride 2 at 224x224,
    where ``params`` do not say otherwise), and whether its module takes the per_image_nn rule's flag."""
    base = dict(batch=4, groups=1, in_channels=3, out_channels=64, input_spatial=(224, 224), filter_spatial=(7, 7),
                stride=2, padding=3, layout="NCHW", dtype="float32")
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
    return policy.forms_for(problem, CPU)[0].contraction, NN_FLAG in policy.module_spec(problem, CPU).extra_flags


@pytest.mark.parametrize("host, many", [
    (ZEN4_HOST | {"avx512_fp16"}, "per_image"),  # an Intel Xeon without AMX: 1.7-1.8x (docs/perf/xeon-3d-weight-forms)
    (ZEN4_HOST, "per_image_nn"),                  # AMD Zen 4: per_image_nn the faster (docs/perf/zen4-resnet50)
])
def test_3d_weight_gradients_of_many_positions_take_per_image_on_the_intel_host(monkeypatch, host, many):
    """r3d_18's channels-first 3x3x3 weight gradients (batch 4) of 6,272 output positions an image, at stride 1 and 2,
    take per_image on the Intel host and per_image_nn on Zen 4; of 784 positions per_image_nn on both; the 64-channel
    16x56x56 layer the shifted form on both."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    layer = dict(in_channels=128, out_channels=128, input_spatial=(8, 28, 28), filter_spatial=(3, 3, 3), stride=1,
                 padding=1, layout="NCDHW")
    assert _stem_choice(**layer)[0] == many
    assert _stem_choice(**{**layer, "in_channels": 64, "input_spatial": (16, 56, 56), "stride": 2})[0] == many
    assert _stem_choice(**{**layer, "in_channels": 256, "out_channels": 256, "input_spatial": (4, 14, 14)})[0] == (
        "per_image_nn")
    assert _stem_choice(**{**layer, "in_channels": 64, "out_channels": 64, "input_spatial": (16, 56, 56)})[0] == (
        "shifted")


@pytest.mark.parametrize("host, intel", [(ZEN4_HOST | {"avx512_fp16"}, True), (ZEN4_HOST, False)])
def test_channels_last_2d_weight_gradients_take_per_image_nn_from_196_positions_on_the_intel_host(monkeypatch, host,
                                                                                                    intel):
    """ResNet-50's channels-last weight gradients (batch 4) on the Intel host without AMX: per_image_nn from 196
    output positions an image, 1x1 layers included, up to 512 output channels (docs/perf/xeon-3d-weight-forms);
    on Zen 4 the 1x1 and 14x14 layers keep im2col (its rule starts at 784 positions, 1x1 left out)."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    layer = dict(in_channels=1024, out_channels=256, input_spatial=(14, 14), filter_spatial=(1, 1), stride=1,
                 padding=0, layout="NHWC")
    assert _stem_choice(**layer)[0] == ("per_image_nn" if intel else "im2col")
    assert _stem_choice(**{**layer, "in_channels": 256, "filter_spatial": (3, 3), "padding": 1})[0] == (
        "per_image_nn" if intel else "im2col")
    assert _stem_choice(**{**layer, "in_channels": 256, "out_channels": 1024})[0] == "im2col"  # K = 1024
    assert _stem_choice(**{**layer, "in_channels": 2048, "out_channels": 512, "input_spatial": (7, 7)})[0] == (
        "im2col")  # 49 positions
    assert _stem_choice(**{**layer, "in_channels": 64, "out_channels": 64, "input_spatial": (56, 56),
                           "filter_spatial": (3, 3), "padding": 1})[0] == "shifted"


@pytest.mark.parametrize("host, wide", [
    (ZEN4_HOST | {"avx512_fp16"}, "shifted"),  # an Intel Xeon without AMX: 2.9x (docs/perf/xeon-3d-weight-forms)
    (ZEN4_HOST, "per_image_nn"),                # AMD Zen 4: the shifted form 0.73-1.09x from 128 channels
])
def test_channels_last_3d_weight_gradients_of_128_channels_take_the_shifted_form_on_the_intel_host(monkeypatch, host,
                                                                                                   wide):
    """r3d_18's channels-last 128-channel 3x3x3 weight gradient at 8x28x28 takes the shifted form on the Intel host
    (the 64-channel one takes it on both); at 4x14x14 and at stride 2 per_image_nn on both."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    layer = dict(in_channels=128, out_channels=128, input_spatial=(8, 28, 28), filter_spatial=(3, 3, 3), stride=1,
                 padding=1, layout="NDHWC")
    assert _stem_choice(**layer)[0] == wide
    assert _stem_choice(**{**layer, "in_channels": 64, "out_channels": 64, "input_spatial": (16, 56, 56)})[0] == (
        "shifted")
    assert _stem_choice(**{**layer, "in_channels": 256, "out_channels": 256, "input_spatial": (4, 14, 14)})[0] == (
        "per_image_nn")
    assert _stem_choice(**{**layer, "in_channels": 64, "input_spatial": (16, 56, 56), "stride": 2})[0] == (
        "per_image_nn")


@pytest.mark.parametrize("host, stem", [
    (ZEN4_HOST | {"avx512_fp16"}, "per_image_nn"),  # an Intel Xeon without AMX: 1.07-1.54x (docs/perf/xeon-stem-3x3)
    (ZEN4_HOST, "per_image"),                        # unmeasured on Zen 4: the stem rule's
])
def test_a_3x3_stem_takes_per_image_nn_on_the_intel_host_without_amx(monkeypatch, host, stem):
    """MobileNetV2's, EfficientNet-B0's and RegNetY-400MF's stem (3 -> 32 channels, 3x3 stride 2 at 224x224): its
    per-image matmul has 27 columns (3 channels x 9 taps) where the 7x7 stem's 147 kept per_image the faster; a
    filter of more than 9 taps keeps the stem rule (``max_taps``)."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    assert _stem_choice(out_channels=32, filter_spatial=(3, 3), padding=1) == (stem, stem == "per_image_nn")
    assert _stem_choice(out_channels=32, filter_spatial=(5, 5), padding=2) == ("per_image", False)
    assert _stem_choice() == ("per_image", False)  # the 7x7 stem


PEEL_FLAG = "--iree-llvmcpu-vector-pproc-strategy=peel"


@pytest.mark.parametrize("host, peeled", [
    (ZEN4_HOST, True),        # AMD Zen 4, where it was measured (issue 46)
    (AMX_HOST, False),        # unmeasured on AMX hosts
    (AVX2_HOST, False),
])
def test_pointwise_channels_first_backward_data_of_few_positions_peels_on_zen4(monkeypatch, host, peeled):
    """At most 49 positions an image, 1x1 stride-1 float32 NCHW backward-data compiles with IREE's peel strategy on
    Zen 4 (RegNetY's 440-channel layer at 7x7 2.6x faster, ResNeXt-50's 1.4-1.7x: docs/perf/zen4-peel); more positions,
    a filter of several taps, a stride or channels-last keep IREE's default."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    assert (PEEL_FLAG in policy.module_spec(_pointwise(in_channels=440, out_channels=440, input_spatial=(7, 7)),
                                            CPU).extra_flags) == peeled
    assert (PEEL_FLAG in policy.flags_for(_pointwise(input_spatial=(1, 1)), CPU)) == peeled  # a squeeze-excite's
    for other in (_pointwise(input_spatial=(14, 14)), _pointwise(input_spatial=(7, 7), filter_spatial=(3, 3), padding=1),
                  _pointwise(input_spatial=(14, 14), stride=2), _pointwise(input_spatial=(7, 7), layout="NHWC")):
        assert PEEL_FLAG not in policy.flags_for(other, CPU), other.name


def test_the_peeled_pointwise_module_matches_the_definition(rng, monkeypatch):
    """RegNetY-400MF's 440 <- 440 layer at 7x7 (batch 2: 43 K elements of grad_in), peeled, against float64."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: ZEN4_HOST)
    problem = _pointwise(in_channels=440, out_channels=440, input_spatial=(7, 7))
    assert PEEL_FLAG in policy.module_spec(problem, CPU).extra_flags
    assert _module_error(problem, rng, problem.input_shape) <= verify.tolerance(problem.op, problem.dtype)


@pytest.mark.parametrize("host, peeled", [(ZEN4_HOST, True), (AMX_HOST, False), (AVX2_HOST, False)])
def test_channels_last_440_channel_pointwise_backward_data_peels_on_zen4(monkeypatch, host, peeled):
    """A measured exception (docs/perf/zen4-peel-nhwc): RegNetY-400MF's 440 <- 440 1x1 layer channels-last ran
    2.5-2.6x faster peeled on Zen 4 at any batch and size measured; other channel counts keep IREE's default."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    for spatial, batch in (((7, 7), 4), ((14, 14), 32)):
        layer = _pointwise(in_channels=440, out_channels=440, input_spatial=spatial, batch=batch, layout="NHWC")
        assert (PEEL_FLAG in policy.module_spec(layer, CPU).extra_flags) == peeled
    for c, k in ((208, 440), (440, 208), (600, 600), (120, 120)):
        other = _pointwise(in_channels=c, out_channels=k, input_spatial=(7, 7), layout="NHWC")
        assert PEEL_FLAG not in policy.flags_for(other, CPU), other.name


def test_the_peeled_channels_last_pointwise_module_matches_the_definition(rng, monkeypatch):
    """RegNetY-400MF's 440 <- 440 layer channels-last at 7x7, batch 16 (345 K elements of grad_in), peeled."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: ZEN4_HOST)
    problem = _pointwise(in_channels=440, out_channels=440, input_spatial=(7, 7), batch=16, layout="NHWC")
    assert PEEL_FLAG in policy.module_spec(problem, CPU).extra_flags and math.prod(problem.input_shape) > 1 << 18
    assert _module_error(problem, rng, problem.input_shape) <= verify.tolerance(problem.op, problem.dtype)


@pytest.mark.parametrize("host, peeled", [(ZEN4_HOST, True), (AMX_HOST, False), (AVX2_HOST, False)])
def test_channels_last_depthwise_weight_gradients_of_stride_one_peel_on_zen4(monkeypatch, host, peeled):
    """MobileNetV2's 144-channel depthwise weight gradient at 56x56, channels-last, ran 2.3-3.1x faster with IREE's peel
    strategy on Zen 4 (docs/perf/zen4-peel); strided ones (mixed) keep IREE's default, and channels-first ones take it
    with reassociation, by their own rule (test_channels_first_depthwise_taps_weight_gradients_reassociate_on_zen4)."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def flags(**params):
        base = dict(batch=2, groups=144, in_channels=1, out_channels=1, input_spatial=(56, 56), filter_spatial=(3, 3),
                    padding=1, stride=1, layout="NHWC", dtype="float32")
        return policy.flags_for(catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params}), CPU)
    assert (PEEL_FLAG in flags()) == peeled
    assert PEEL_FLAG not in flags(stride=2)
    assert flags(layout="NCHW") == ((REASSOCIATE_FLAG, PEEL_FLAG) if peeled else ())
    assert PEEL_FLAG not in flags(groups=4, in_channels=8, out_channels=8)  # grouped, not depthwise


def test_the_peeled_depthwise_weight_module_matches_the_definition(rng, monkeypatch):
    """MobileNetV2's 144-channel depthwise layer at 56x56, channels-last, batch 2 (903 K elements of x), peeled."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: ZEN4_HOST)
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=144, in_channels=1,
                              out_channels=1, input_spatial=(56, 56), filter_spatial=(3, 3), padding=1, stride=1,
                              layout="NHWC", dtype="float32")
    assert PEEL_FLAG in policy.module_spec(problem, CPU).extra_flags
    assert _module_error(problem, rng, problem.weight_shape) <= verify.tolerance(problem.op, problem.dtype)


@pytest.mark.parametrize("host, taps", [(ZEN4_HOST, True), (AMX_HOST, False), (AVX2_HOST, False)])
def test_channels_first_depthwise_weight_gradients_at_7x7_take_the_taps_form_on_zen4(monkeypatch, host, taps):
    """At 49 output positions, below the channels-first taps rule's 64, Zen 4 hosts take the taps form (1.27-2.3x
    the named depthwise op's speed, docs/perf/zen4-depthwise-7x7); other hosts, smaller planes and 3-D problems keep
    the named op, and 56x56 planes the taps form on every host."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def first(**params):
        base = dict(batch=4, groups=960, in_channels=1, out_channels=1, input_spatial=(7, 7), filter_spatial=(3, 3),
                    padding=1, stride=1, layout="NCHW", dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        return policy.forms_for(problem, CPU)[0].contraction
    assert (first() == "taps") == taps
    assert (first(filter_spatial=(5, 5), padding=2, groups=1152) == "taps") == taps
    assert first(input_spatial=(6, 6)) == "depthwise"  # 36 positions: not measured
    assert first(input_spatial=(56, 56), groups=144) == "taps"
    assert first(input_spatial=(1, 7, 7), filter_spatial=(1, 3, 3), padding=(0, 1, 1), layout="NCDHW") == "generic"


REASSOCIATE_FLAG = "--iree-llvmcpu-reassociate-fp-reductions=true"


@pytest.mark.parametrize("host, flagged", [
    (ZEN4_HOST, True), (AMX_HOST, False), (AVX2_HOST, False),
    (ZEN4_HOST | {"avx512_fp16"}, False),  # an Intel Xeon without AMX: MobileNetV2 1.19-1.21x -> 1.05-1.07x
], ids=["zen4", "amx", "avx2", "xeon_without_amx"])
def test_channels_first_depthwise_taps_weight_gradients_reassociate_on_zen4(monkeypatch, host, flagged):
    """The taps form of a stride-1 channels-first depthwise or grouped weight gradient, 2-D or 3-D, keeps vector
    partial sums on Zen 4 (IREE's reassociation and peel: 1.1-2.6x, docs/perf/zen4-taps-reassociate), not on an
    Intel Xeon without AMX (AVX512-FP16; its 14x14 and 28x28 layers 3.8-5.7x slower so,
    docs/perf/xeon-depthwise-reassoc); other hosts, other forms (the strided layers' named depthwise op, 2-D grouped
    layers' per_image), channels-last and dense problems keep IREE's in-order sums."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def flags(form=None, **params):
        base = dict(batch=2, groups=144, in_channels=1, out_channels=1, input_spatial=(56, 56), filter_spatial=(3, 3),
                    padding=1, stride=1, layout="NCHW", dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        return policy.flags_for(problem, CPU, form or policy.forms_for(problem, CPU)[0])
    assert (REASSOCIATE_FLAG in flags() and PEEL_FLAG in flags()) == flagged
    depthwise_op = registry.module(catalog.problem("grouped_conv_bwd_weight", "ck_default")).Form(contraction="depthwise")
    assert REASSOCIATE_FLAG not in flags(form=depthwise_op)
    assert REASSOCIATE_FLAG not in flags(stride=2) and REASSOCIATE_FLAG not in flags(layout="NHWC")
    grouped_3d = dict(groups=4, in_channels=4, out_channels=8, input_spatial=(4, 16, 16), filter_spatial=(3, 3, 3),
                      layout="NCDHW")  # train.py's cnn3d layer
    assert (REASSOCIATE_FLAG in flags(**grouped_3d)) == flagged
    assert REASSOCIATE_FLAG not in flags(groups=4, in_channels=8, out_channels=8)  # 2-D grouped: per_image first
    assert REASSOCIATE_FLAG not in flags(groups=1, in_channels=8, out_channels=8)  # dense


@pytest.mark.parametrize("params", [
    dict(batch=2, groups=144, in_channels=1, out_channels=1, input_spatial=(56, 56), filter_spatial=(3, 3)),
    dict(batch=4, groups=8, in_channels=4, out_channels=8, input_spatial=(8, 32, 32), filter_spatial=(3, 3, 3))],
    ids=["depthwise_2d", "grouped_3d"])
def test_the_reassociated_taps_weight_module_matches_the_definition(rng, monkeypatch, params):
    """MobileNetV2's 144-channel depthwise layer at 56x56, channels-first, batch 2 (903 K elements of x), and a 3-D
    grouped layer of 1 M elements of x, their taps form's sums reassociated, against float64."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: ZEN4_HOST)
    layout = "NCDHW" if len(params["input_spatial"]) == 3 else "NCHW"
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", padding=1, stride=1, layout=layout,
                              dtype="float32", **params)
    assert policy.forms_for(problem, CPU)[0].contraction == "taps"
    assert REASSOCIATE_FLAG in policy.module_spec(problem, CPU).extra_flags
    assert _module_error(problem, rng, problem.weight_shape) <= verify.tolerance(problem.op, problem.dtype)


SLP_FLAG = "--iree-llvmcpu-slp-vectorization"


@pytest.mark.parametrize("host, flagged", [(ZEN4_HOST, True), (AMX_HOST, False), (AVX2_HOST, False)])
def test_channels_last_depthwise_taps_weight_gradients_take_llvms_slp_vectorizer_on_zen4(monkeypatch, host, flagged):
    """The taps form of a channels-last depthwise weight gradient, of any stride, is packed back into vectors by
    LLVM's SLP vectorizer on Zen 4 (1.1-6.6x, docs/perf/zen4-taps-reassociate); other hosts, channels-first and
    grouped problems do not take it."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def flags(**params):
        base = dict(batch=2, groups=144, in_channels=1, out_channels=1, input_spatial=(56, 56), filter_spatial=(3, 3),
                    padding=1, stride=1, layout="NHWC", dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        return policy.flags_for(problem, CPU, policy.forms_for(problem, CPU)[0])
    assert (SLP_FLAG in flags()) == flagged and (SLP_FLAG in flags(stride=2)) == flagged
    assert SLP_FLAG not in flags(layout="NCHW")
    assert SLP_FLAG not in flags(groups=4, in_channels=32, out_channels=32)  # grouped: its own rule, to 16 channels


@pytest.mark.parametrize("stride", [1, 2])
def test_the_slp_vectorized_depthwise_weight_module_matches_the_definition(rng, monkeypatch, stride):
    """MobileNetV2's 144-channel depthwise layer at 56x56, channels-last, batch 2 (903 K elements of x), at both
    strides, compiled with LLVM's SLP vectorizer, against float64."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: ZEN4_HOST)
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=144, in_channels=1,
                              out_channels=1, input_spatial=(56, 56), filter_spatial=(3, 3), padding=1, stride=stride,
                              layout="NHWC", dtype="float32")
    assert SLP_FLAG in policy.module_spec(problem, CPU).extra_flags
    assert _module_error(problem, rng, problem.weight_shape) <= verify.tolerance(problem.op, problem.dtype)


@pytest.mark.parametrize("host, taken", [(ZEN4_HOST, True), (AMX_HOST, False), (AVX2_HOST, False)])
def test_channels_last_grouped_weight_gradients_of_few_channels_take_the_taps_form_with_slp_on_zen4(monkeypatch, host,
                                                                                                       taken):
    """Channels-last grouped weight gradients of at most 16 input and 16 output channels a group take the taps form
    with LLVM's SLP vectorizer on Zen 4 (1.1-6.2x im2col's speed, docs/perf/zen4-taps-reassociate); 24 or 32
    channels a group, channels-first layouts and other hosts keep their forms, without the flag."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))

    def first(**params):
        base = dict(batch=2, groups=32, in_channels=4, out_channels=4, input_spatial=(28, 28), filter_spatial=(3, 3),
                    padding=1, stride=1, layout="NHWC", dtype="float32")
        problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", **{**base, **params})
        form = policy.forms_for(problem, CPU)[0]
        return form.contraction, SLP_FLAG in policy.flags_for(problem, CPU, form)
    assert first() == (("taps", True) if taken else ("im2col", False))
    assert first(in_channels=16, out_channels=16, stride=2) == (("taps", True) if taken else ("im2col", False))
    assert first(in_channels=24, out_channels=24) == ("im2col", False)
    assert first(in_channels=16, out_channels=32) == ("im2col", False)
    assert not first(layout="NCHW")[1]


def test_the_slp_vectorized_grouped_taps_weight_module_matches_the_definition(rng, monkeypatch):
    """ResNeXt-50's 4-channel groups at 56x56, channels-last, batch 4 (1.6 M elements of x), as the taps form with
    LLVM's SLP vectorizer, against float64."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: ZEN4_HOST)
    problem = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=4, groups=32, in_channels=4,
                              out_channels=4, input_spatial=(56, 56), filter_spatial=(3, 3), padding=1, stride=1,
                              layout="NHWC", dtype="float32")
    spec = policy.module_spec(problem, CPU)
    assert policy.forms_for(problem, CPU)[0].contraction == "taps" and SLP_FLAG in spec.extra_flags
    assert _module_error(problem, rng, problem.weight_shape) <= verify.tolerance(problem.op, problem.dtype)


XEON_HOST = ZEN4_HOST | {"avx512_fp16"}  # an Intel Xeon with AVX512-FP16 and no AMX
MATMUL_RULE = next(r for r in TABLE["rules"] if "matmul_tiles" in r and r["operator"] == "grouped_conv_bwd_weight")


def _resnet_weight(in_channels, out_channels, size, taps, batch=4):
    return catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=batch, groups=1, in_channels=in_channels,
                           out_channels=out_channels, input_spatial=(size, size), filter_spatial=(taps, taps),
                           padding=taps // 2, layout="NCHW", dtype="float32")


@pytest.mark.parametrize("host, tiled", [(XEON_HOST, True), (ZEN4_HOST, False), (AMX_HOST, False)])
def test_per_image_nn_matmuls_take_a_32_column_tile_on_the_intel_host_without_amx(monkeypatch, host, tiled):
    """ResNet-50's 256 -> 64 1x1 weight gradient at 56x56 (batch 4): its per-image batch_matmul, 256 x 64 x 3136,
    gets 16 rows by 32 columns, 8 of the positions a step, where it was measured (1.36x,
    docs/perf/xeon-gemm-tiles/per_image_nn_modules.log); other hosts keep IREE's tile."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: frozenset(host))
    problem = _resnet_weight(256, 64, 56, 1)
    assert policy.forms_for(problem, CPU)[0].contraction == "per_image_nn"
    mlir = policy.module_spec(problem, CPU).mlir
    assert ("vector_common_parallel = [1, 16, 32, 0], vector_reduction = [0, 0, 0, 8]" in mlir) == tiled


@pytest.mark.parametrize("params, tile", [
    ((256, 64, 56, 1), ([1, 64, 64, 0], [1, 16, 32, 0], 8)),       # 256 x 64 x 3136
    ((1024, 256, 14, 1), ([1, 64, 128, 0], [1, 16, 32, 0], 14)),   # 196 positions: 14 a step, 8 does not divide
    ((256, 256, 14, 3), ([1, 64, 128, 0], [1, 16, 32, 0], 14)),    # the columns (c, f): 2304 rows
    ((64, 112, 14, 3), None),                                      # N = 112: 32 does not divide it
    ((96, 80, 28, 1), None),                                       # N = 80 (M = 96, K = 784)
])
def test_the_matmul_tile_divides_the_per_image_gemm(params, tile):
    """Rows of the first of 16, 14, 8 that divides M, a reduction step of the first of 8, 14, 7, 4 that divides K
    (a remainder ran up to 2x slower), 32 columns, or IREE's own tile (None) where 32 does not divide N."""
    problem = _resnet_weight(*params)
    got = policy.matmul_tiles(problem, CPU, MATMUL_RULE["matmul_tiles"])
    m, n, k = weight_per_image.nn_gemm(problem)[1:]
    if tile is None:
        assert n % 32 and got == {}
        return
    distribution, vector, reduction = tile
    assert got == {0: render.cpu_compilation_info(distribution, vector, [0, 0, 0, reduction])}
    assert m % vector[1] == 0 and k % reduction == 0


def test_the_per_image_nn_module_with_the_matmul_tile_matches_the_definition(rng, monkeypatch):
    """The tile on a small problem of 16-row tiles and a 14-position step (64 -> 64 3x3 at 14x14, batch 2), run on
    this host against the float64 reference."""
    monkeypatch.setattr(targets, "host_cpu_flags", lambda: XEON_HOST)
    problem = _resnet_weight(64, 64, 14, 3, batch=2)
    assert "vector_common_parallel = [1, 16, 32, 0], vector_reduction = [0, 0, 0, 14]" in policy.module_spec(
        problem, CPU).mlir
    error = _form_error(problem, rng, "per_image_nn")
    assert error <= verify.tolerance(problem.op, problem.dtype), f"{problem.name}: {error:.2e}"
