"""The operator protocol: what every operator module declares.

Each module in ``ops/operators/`` is one operator and declares::

    OP                                  its name, the problem's ``op``
    Problem                             its frozen problem type (ops/problem.py)
    Form                                its frozen form type: the template's keys that may vary, with their defaults
                                        (``SingleForm``, no keys, for a template of one form)
    normalize(arrays..., **kwargs)      the public call's arguments, checked, as a Problem (nothing compiled)
    problem_from_params(**params)       a Problem from named-problem parameters (the manifests, tests, benchmarks);
                                        the inverse is the problem's own ``params()`` (ops/problem.py)
    random_params(rng, rank)            parameters of a random valid-looking problem (the compile sweep's)
    random_inputs(problem, rng)         arrays for the problem: the module function's arguments
    reference(problem, arrays)          the float64 NumPy answer, from the direct definition
    results(problem)                    the (shape, dtype) of each result
    render(problem, form, lowering)     the MLIR module of that form

and the known-answer check's hooks (``ops/known_answer.py``)::

    terms(problem)                      the most terms summed into one result position
    roles(problem)                      what every axis of each input and result is (``ops.roles.Roles``: batch,
                                        group, channel, spatial, tap, parameter, broadcast); the check samples by
                                        these alone
    magnitudes(problem, inputs, values) each result position's sum of term magnitudes (float64)

An operator module never asks which target it renders for: ``ops/policy.py`` picks the forms per target, and
``Lowering`` carries what the target adds (tuned configurations, copy tiling, the workspace argument). Its
public function lives in ``ops/api.py``; its registry entry (tolerances, PyTorch reference) in ``ops/registry.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol


@dataclass(frozen=True)
class SingleForm:
    """The form of a template that has one: no keys."""


@dataclass(frozen=True)
class Lowering:
    """What a target adds to a form, decided by ``ops/policy.py``: tuned dispatch configurations (phase index ->
    ``#iree_codegen.compilation_info``), how a GPU's data-movement dispatches are tiled (``copy``: the tuning
    table's ``copy_config``; empty: IREE's defaults), and whether the module takes its intermediates' workspace
    as its last argument (``transients``: llvm-cpu)."""

    configs: Mapping[int, str] = field(default_factory=dict)
    copy: Mapping[str, Any] = field(default_factory=dict)
    transients: bool = False


def one_of(op: str, key: str, value, allowed: tuple) -> None:
    """A form key's check: ``value`` is one of ``allowed`` (a ValueError naming the operator and the key)."""
    if value not in allowed:
        raise ValueError(f"{op}: form key {key} must be one of {', '.join(map(repr, allowed))}, but got {value!r}")


class Operator(Protocol):
    """An operator module (see the module docstring)."""

    OP: str
    Problem: type
    Form: type
    normalize: Callable
    problem_from_params: Callable
    random_params: Callable
    random_inputs: Callable
    reference: Callable
    results: Callable[[Any], list]
    render: Callable[[Any, Any, Lowering], str]
    terms: Callable[[Any], int]
    roles: Callable
    magnitudes: Callable
