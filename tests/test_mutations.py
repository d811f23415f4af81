"""The known-answer check (ops/known_answer.py) tested by mutation: wrong modules, made by changing a problem's MLIR
(build_tools/mutations.py), compiled by IREE for the CPU and run through IREE's runtime, are refused by
``known_answer.verify``; the unmutated module passes.

Each operator's problem is large enough that the check samples it (build_tools/mutations.py ``problems``), and each
mutation sits where the sample looks (``mutations.chosen``): a mutation outside it can be missed, at the chance
``build_tools/mutation_rates.py`` measures (docs/VERIFICATION.md). One module per problem holds every mutation."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from build_tools import mutation_rates, mutations
from ops import compiler, known_answer

needs_compiler = pytest.mark.skipif(compiler.installed_compiler_version() is None,
                                    reason="iree-base-compiler is not installed")
OPERATORS = tuple(mutations.problems())
SWEEP = [(op, dtype, layout) for op in OPERATORS for dtype in ("float32", "float16", "bfloat16")
         for layout in ("channels_last", "channels_first") if (dtype, layout) != ("float32", "channels_last")]


@functools.lru_cache(maxsize=None)
def compiled(op: str, dtype: str = "float32", layout: str = "channels_last"):
    """The problem of ``op``, its chosen mutations, and the one compiled module holding them (and, last, NaN at a
    position outside the sample)."""
    channels_last = layout == "channels_last"
    problem = mutations.problems(dtype, channels_last, source="indices" if channels_last else "x")[op]
    chosen = mutations.chosen(problem)
    outside = mutations.nan(problem, mutations.outside(problem))
    spec = mutations.module(problem, [*chosen, outside])
    return problem, chosen, outside, spec, mutations.compiled(spec)


def _refused(op: str, dtype: str = "float32", layout: str = "channels_last") -> None:
    problem, chosen, _, spec, data = compiled(op, dtype, layout)
    assert known_answer.sample_of(problem, known_answer.inputs_for(problem)).axes, f"{problem.name} is checked whole"
    unmutated = mutations.verdict(problem, mutations.function(spec, data, mutations.UNMUTATED))
    assert unmutated.passed, f"{problem.name}: the right module is refused: {unmutated.describe()}"
    kinds = {m.kind for m in chosen}
    assert kinds >= {"sign", "channel", "row", "padding", "nan"}, kinds
    passed = {}
    for mutation in chosen:
        verdict = mutations.verdict(problem, mutations.function(spec, data, mutation))
        if verdict.passed:
            passed[mutation.name] = verdict.describe()
    assert not passed, f"{problem.name}: mutations the check passed: {passed}"


@needs_compiler
@pytest.mark.parametrize("op", OPERATORS)
def test_every_mutation_inside_the_sample_is_refused_and_the_right_module_passes(op):
    _refused(op)


@needs_compiler
@pytest.mark.parametrize("op", OPERATORS)
def test_each_mutated_module_computes_what_its_mutation_says(op):
    """The mutations themselves: a rewritten result is the NumPy rewrite of the right module's (NaN and all); the
    weight's last tap zeroed gives the reference on that weight; another padding gives that padding's answer."""
    problem, chosen, _, spec, data = compiled(op)
    inputs = known_answer.inputs_for(problem)
    right = mutations.whole(problem, mutations.function(spec, data, mutations.UNMUTATED), inputs)
    for mutation in chosen:
        got = mutations.whole(problem, mutations.function(spec, data, mutation), inputs)
        rewrite = mutation.rewrite
        if rewrite is None:  # the same operator rendered for another padding
            verdict = known_answer.judge(mutation.inner, inputs, got)
            assert verdict.passed, f"{mutation.name}: {verdict.describe()}"
        elif rewrite.array[0] == "input":
            changed = list(inputs)
            changed[rewrite.array[1]] = rewrite.apply(inputs[rewrite.array[1]])
            verdict = known_answer.judge(problem, changed, got)
            assert verdict.passed, f"{mutation.name}: {verdict.describe()}"
        else:
            number = rewrite.array[1]
            np.testing.assert_array_equal(got[number], rewrite.apply(right[number]), err_msg=mutation.name)
            assert not np.array_equal(got[number], right[number]), f"{mutation.name} changed nothing"


@needs_compiler
@pytest.mark.parametrize("op", OPERATORS)
def test_a_nan_outside_the_sample_is_refused(op):
    """The whole results are searched for NaN (known_answer.Ran.unwritten), the positions the sample leaves too."""
    problem, _, outside, spec, data = compiled(op)
    assert not mutations.in_sample(problem, outside.at)
    assert not mutations.verdict(problem, mutations.function(spec, data, outside)).passed


@needs_compiler
@pytest.mark.sweep
@pytest.mark.parametrize("op, dtype, layout", SWEEP)
def test_every_mutation_is_refused_in_other_dtypes_and_layouts(op, dtype, layout):
    """The same in float16 and bfloat16 (their tolerances) and channels-first (max-pool's backward from x)."""
    _refused(op, dtype, layout)


@needs_compiler
def test_the_rates_script_counts_what_the_sample_keeps_and_its_compiled_runs_agree(monkeypatch):
    """build_tools/mutation_rates.py at a tiny size (the check made to sample it): of 16 channels and 8 batch
    indices the sample keeps 4 each, a NaN is caught exactly where the sample looks, and every compiled verdict
    is the predicted one."""
    monkeypatch.setattr(known_answer, "WHOLE", 0)
    problem = mutations.problems(scale=8)[OPERATORS[0]]
    rows = {row["mutation"]: row for row in mutation_rates.rates(problem, nan_count=8, confirm=2)}
    assert set(rows) == set(mutations.NAMES)
    assert (rows["channel"]["positions"], rows["channel"]["kept"], rows["channel"]["caught"]) == (16, 4, 4)
    assert (rows["batch"]["positions"], rows["batch"]["kept"], rows["batch"]["caught"]) == (8, 4, 4)
    assert rows["nan"]["caught"] == rows["nan"]["positions"] > rows["nan"]["kept"]  # sampled or not
    assert rows["row"]["caught"] == rows["row"]["positions"]
    assert all(row["agree"] and row["compiled"] >= 1 for row in rows.values()), rows
    assert "| conv_bwd_data | channel | 16 | 4 | 0 | 4 | 75% |" in mutation_rates.table(list(rows.values()))
