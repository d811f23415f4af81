"""The epilogue grammar's limits: what validation accepts renders, compiles and computes; what it rejects is a
ValueError from validation, in linear time."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ops import epilogue
from ops.api import grouped_conv_bwd_data
from ops.operators import conv_bwd_data as conv

from conftest import compiles_nothing

OP = "grouped_conv_bwd_data"


def _call(rng, text, ds=(), **params):
    """grouped_conv_bwd_data on a small problem with ``text`` as epilogue; (result, acc without epilogue)."""
    p = conv.problem_from_params(batch=1, in_channels=2, out_channels=3, input_spatial=(5, 4), filter_spatial=(2, 2),
                                 stride=2, dtype="float32")
    grad_out, weight = conv.random_inputs(p, rng)
    kwargs = dict(groups=1, input_shape=p.input_shape, stride=2)
    return grouped_conv_bwd_data(grad_out, weight, ds, epilogue=text, **kwargs, **params), \
        grouped_conv_bwd_data(grad_out, weight, **kwargs)


def _nested(levels: int) -> str:
    """An expression nested ``levels`` deep, every level a comparison, a sum, a product and a call or a minus."""
    text = "acc"
    for level in range(levels):
        text = f"(0 < 2 + 3 * -{text})" if level % 2 else f"max(1 < 2 + 3 * {text}, acc)"
    return text


def test_a_flat_sum_at_the_length_limit_renders_compiles_and_computes(rng):
    text = "acc" + " + 1" * ((epilogue.MAX_LENGTH - 3) // 4)
    assert len(text) == epilogue.MAX_LENGTH - 1
    got, acc = _call(rng, text)
    np.testing.assert_allclose(got, acc + (epilogue.MAX_LENGTH - 3) // 4, rtol=1e-6)


def test_seventy_one_terms_and_the_deepest_nesting_accepted_compile(rng):
    got, acc = _call(rng, " + ".join(["acc"] * 71))
    # acc is a float32 sum with cancellation: an element near 0 carries an error relative to the sum's terms, not
    # to itself, and the fused module may accumulate in another order (seen: 1.4e-5 relative on an acc of 0.019
    # among values of 10-80). So the absolute slack scales with the largest acc; a wrong count of terms is off by
    # a whole acc, far outside it.
    np.testing.assert_allclose(got, 71 * acc, rtol=1e-5, atol=71 * 1e-6 * np.abs(acc).max())
    deepest = _nested(epilogue.MAX_DEPTH * 2 // 3 - 1)
    root = epilogue._Parser(OP, deepest).parse()
    got, acc = _call(rng, deepest)
    np.testing.assert_allclose(got, epilogue.evaluate(root, {"acc": acc.astype(np.float64)}), rtol=1e-5,
                               atol=1e-6 * np.abs(acc).max())


def test_canonical_text_parses_to_the_same_tree_no_deeper():
    for text in ["acc + d0", "a - (b + c)", "(a + b) + c", "-(a * b) * -c", "(a < b) < c", "a + (b < c)",
                 "1e20 * acc / (2 - -acc)", "where(d1 >= 0, max(acc, -d0), abs(acc - 1))", _nested(40)]:
        root = epilogue._Parser(OP, text).parse()
        again = epilogue.parse_canonical(root.text())
        assert again.text() == root.text()
        assert epilogue.evaluate(again, dict.fromkeys("abc", 1.5) | {"acc": 2.0, "d0": -1.0, "d1": 3.0}) == \
            epilogue.evaluate(root, dict.fromkeys("abc", 1.5) | {"acc": 2.0, "d0": -1.0, "d1": 3.0})


@pytest.mark.parametrize("text, message", [
    ("d00 + acc", r"'d00' at position 0 is no D tensor's name: they are d0, d1, \.\.\. without leading zeros"),
    ("acc * d01", r"'d01' at position 6 is no D tensor's name"),
    ("-" * 64 + "acc", r"nested deeper than 64 levels"),
    (_nested(epilogue.MAX_DEPTH), r"nested deeper than 64 levels"),
    ("acc" + " + 1" * 500, r"epilogue is longer than 2000 characters"),
])
def test_rejected_in_validation(rng, text, message):
    p = conv.problem_from_params(batch=1, in_channels=2, out_channels=3, input_spatial=(5, 4), filter_spatial=(2, 2),
                                 dtype="float32")
    grad_out, weight = conv.random_inputs(p, rng)
    with compiles_nothing(), pytest.raises(ValueError, match=f"{OP}: .*{message}"):
        grouped_conv_bwd_data(grad_out, weight, (np.ones(2, np.float32),), groups=1, input_shape=p.input_shape,
                              epilogue=text)


def test_a_megabyte_of_text_is_rejected_at_once():
    for text in ["acc + " * 200_000, " " * 1_000_000 + "acc", "(" * 1_000_000]:
        start = time.perf_counter()
        with pytest.raises(ValueError, match="longer than 2000 characters"):
            epilogue.parse(OP, text, 0, {})
        assert time.perf_counter() - start < 0.5


def test_tokenizing_is_linear():
    """Within the length limit the tokenizer's work grows with the text, not its square."""
    def seconds(text):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(10):
                epilogue._Parser(OP, text, max_length=None)
            best = min(best, time.perf_counter() - start)
        return best
    short, long = "acc " + "+ 1 " * 500, "acc " + "+ 1 " * 8000
    assert seconds(long) < 40 * seconds(short)  # 16x the text; quadratic would be 256x


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(0.5), np.int64(2), np.float16(0.5), 2, 0.5])
def test_numpy_scalars_are_parameters_like_python_numbers(rng, value):
    got, acc = _call(rng, "alpha * acc", alpha=value)
    np.testing.assert_allclose(got, float(value) * acc, rtol=1e-6, atol=1e-6 * float(value) * np.abs(acc).max())


@pytest.mark.parametrize("value", [True, np.bool_(True), "2", np.ones(1), None])
def test_non_numbers_are_refused_as_parameters(value):
    with pytest.raises(ValueError, match=r"epilogue parameter alpha must be a number"):
        epilogue.parse(OP, "alpha * acc", 0, {"alpha": value})
