"""Named problems from the manifests in ``build_tools/manifests/`` (``ck_examples.json``, ``zoo.json``).

OPERATORS holds the operators the manifests name (the five CK examples), on the protocol of ``ops/operator.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from .operators import OPERATORS as _ALL
from .validation import check

OPERATORS = {op: _ALL[op] for op in ("conv_bwd_data", "grouped_conv_bwd_data", "grouped_conv_bwd_weight",
                                     "maxpool2d_bwd", "avgpool3d_bwd")}
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
    return {**_as_params(found[0]["params"]), **overrides}


def problem(op: str, name: str, suite: str = "ck_examples", **overrides):
    return OPERATORS[op].problem_from_params(**params(op, name, suite, **overrides))


def problems(suite: str = "ck_examples", ops: list[str] | None = None) -> list[tuple[str, str, object]]:
    """(op, name, problem) for every manifest entry of the suite (optionally only some operators)."""
    return [
        (e["op"], e["name"], problem(e["op"], e["name"], suite))
        for e in entries(suite)
        if e["op"] in OPERATORS and (ops is None or e["op"] in ops)
    ]
