"""The operator protocol: what every operator module declares, and the one path that runs a problem.

Each module in ``ops/operators/`` is one operator and declares::

    OP                                  its name, the problem's ``op``
    Problem                             its frozen problem type (ops/problem.py)
    normalize(arrays..., **kwargs)      the public call's arguments, checked, as a Problem (nothing compiled)
    problem_from_params(**params)       a Problem from named-problem parameters (the manifests, tests, benchmarks)
    random_inputs(problem, rng)         arrays for the problem: the module function's arguments
    reference(problem, arrays)          the float64 NumPy answer, from the direct definition
    results(problem)                    the (shape, dtype) of each result
    forms(problem, target)              the template's forms to try, preferred first (dicts; ``[{}]``: one form)
    render(problem, choices)            the MLIR module

and its public function is ``normalize`` then ``run``. The command line, the benchmarks, the tuner, the tests and
the PyTorch bridge call ``run`` (or ``render``) with a Problem; nothing re-enters a public function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

from .targets import Target


@dataclass(frozen=True)
class Choices:
    """What a module may vary beyond its problem: the target, the template's form (e.g. ``weight_flip``,
    ``batch_split``; what is not given is the target's first choice) and tuned dispatch configurations
    (phase index -> ``#iree_codegen.compilation_info``), and how a GPU target's data-movement dispatches are
    tiled (``copy``: the tuning table's ``copy_config``; empty: IREE's defaults)."""

    target: Target | None = None
    form: Mapping[str, Any] = field(default_factory=dict)
    configs: Mapping[int, str] = field(default_factory=dict)
    copy: Mapping[str, Any] = field(default_factory=dict)

    def choose(self, alternatives: list[dict]) -> dict:
        """The full form: the first of the operator's ``alternatives`` for the target, with what this asks for."""
        return {**alternatives[0], **self.form}


class Operator(Protocol):
    """An operator module (see the module docstring)."""

    OP: str
    Problem: type
    normalize: Callable
    problem_from_params: Callable
    random_inputs: Callable
    reference: Callable
    results: Callable[[Any], list]
    forms: Callable[[Any, Target | None], list[dict]]
    render: Callable[[Any, Choices], str]


def operator(op_or_problem) -> Operator:
    """The operator module of an operator name or a problem."""
    from .operators import OPERATORS

    return OPERATORS[getattr(op_or_problem, "op", op_or_problem)]


def run(problem, arrays: list, device: str | None = None, out=None, *, form: Mapping[str, Any] | None = None):
    """Run ``problem`` on ``arrays``: NumPy in, NumPy out; DeviceArrays (or ``out``) keep the results on the device.

    ``form`` replaces the target's choice of the template's form (tests and the tuner try each).
    """
    from . import runtime  # the IREE runtime only when something runs

    return runtime.execute(problem, list(arrays), results=operator(problem).results(problem), device=device, out=out,
                           form=form)
