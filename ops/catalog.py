"""Named problems from the manifests in ``build_tools/manifests/`` (``ck_examples.json``, ``zoo.json``).

OPERATORS holds the operators the manifests name (the five CK examples; ``ops/registry.py``), by name.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np

from .registry import manifest_operators
from .validation import check

OPERATORS = manifest_operators()
_PACKAGE_DIR = Path(__file__).resolve().parent


def manifests_dir() -> Path:
    """``build_tools/manifests`` in a source checkout, ``ops/manifests`` inside an installed wheel."""
    for candidate in (_PACKAGE_DIR.parent / "build_tools" / "manifests", _PACKAGE_DIR / "manifests"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the problem manifests were not found beside {_PACKAGE_DIR}")


def suites() -> list[str]:
    return sorted(p.stem for p in manifests_dir().glob("*.json"))


def entries(suite: str = "ck_examples") -> list[dict]:
    """The manifest's problems: dicts with ``op``, ``name`` and ``params``."""
    check(suite in suites(), f"unknown suite {suite!r}; known: {', '.join(suites())}")
    return json.loads((manifests_dir() / f"{suite}.json").read_text())["problems"]


def _as_params(params: dict) -> dict:
    """JSON lists back to the tuples the operators take (padding pairs stay nested)."""
    def convert(value):
        return tuple(convert(v) for v in value) if isinstance(value, list) else value

    return {key: convert(value) for key, value in params.items()}


def problem_names(op: str, suite: str = "ck_examples") -> list[str]:
    return [e["name"] for e in entries(suite) if e["op"] == op]


def params(op: str, name: str, suite: str = "ck_examples", **overrides) -> dict:
    check(op in OPERATORS, f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    found = [e for e in entries(suite) if e["op"] == op and e["name"] == name]
    check(bool(found), f"unknown problem {name!r} for {op} in {suite}; known: {', '.join(problem_names(op, suite))}")
    base = _as_params(found[0]["params"])
    valid = [*base, *(name for name in parameter_names(op) if name not in base)]
    unknown = sorted(set(overrides) - set(valid))
    check(not unknown, f"{op}: unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                       f"its parameters are {', '.join(valid)}")
    return {**base, **overrides}


def parameter_names(op: str) -> list[str]:
    """The parameters ``problem_from_params`` of ``op`` names (a manifest entry's are valid too)."""
    return [name for name, p in inspect.signature(OPERATORS[op].problem_from_params).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "op"]


def problem(op: str, name: str, suite: str = "ck_examples", **overrides):
    return OPERATORS[op].problem_from_params(**params(op, name, suite, **overrides))


def problems(suite: str = "ck_examples", ops: list[str] | None = None) -> list[tuple[str, str, object]]:
    """(op, name, problem) for every manifest entry of the suite (optionally only some operators)."""
    return [
        (e["op"], e["name"], entry_problem(e))
        for e in entries(suite)  # read once (a suite's file may hold hundreds of problems: models.json)
        if e["op"] in OPERATORS and (ops is None or e["op"] in ops)
    ]


def entry_problem(entry: dict):
    """The problem of a manifest entry (its ``op`` and ``params`` as the JSON holds them); a problem's
    ``params()`` are the inverse (``build_tools/model_layers.py`` writes entries from recorded problems)."""
    return OPERATORS[entry["op"]].problem_from_params(**_as_params(entry["params"]))


# --- Random problems: the compile sweep's ------------------------------------------------------------------


def _random_problem(rng, op):
    """A random valid problem of ``op`` (invalid draws, e.g. an output size below 1, are drawn again)."""
    module = OPERATORS[op]
    while True:
        rank = int(rng.integers(1, 4))
        try:
            return module.problem_from_params(**module.random_params(rng, rank))
        except ValueError:
            continue


def random_problems(seed: int, count: int) -> list[tuple[str, object]]:
    """``count`` random valid problems, the operators in turn, from ``seed``: the compile sweep's
    (``tests/test_sweep.py``) and the GPU checks' (``build_tools/verify_run.py``)."""
    rng = np.random.default_rng([seed, 20261122])
    ops = list(OPERATORS)
    return [(ops[i % len(ops)], _random_problem(rng, ops[i % len(ops)])) for i in range(count)]
