"""The registry: one entry per operator. Nothing else lists the operators (``ops.__all__`` names their functions).

An entry holds the operator's module (the protocol of ``ops/operator.py``), the tolerance its results are checked
with, and whether the manifests name problems of it (the five CK examples). What uses the operators keeps its own
map to them (the framework bridge its kernel ops, the timing tools their references).

A sixth operator adds its module under ``ops/operators/``, its template under ``mlir/``, one entry here, its
public function in ``ops/api.py``, its manifest entries and its tests (and, where it has them, its kernel op in
the framework bridge's plans and its reference in the timing tools).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Mapping

from .operators import avgpool3d, avgpool3d_fwd, conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight
from .operators import maxpool2d, maxpool2d_fwd
from .validation import check

# Normwise relative error allowed of a result against its float64 reference (ops/verify.py): float16 and
# bfloat16 results carry the final rounding of an f32 accumulator (2^-11 and 2^-8 relative) and f32 summation.
SUMMED = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 2e-2}


@dataclass(frozen=True)
class Entry:
    module: ModuleType
    tolerances: Mapping[str, float] | None  # by dtype; None: the results are exact (no sums)
    manifest: bool  # the manifests name problems of it: a CK example

    @property
    def op(self) -> str:
        return self.module.OP


OPERATORS: dict[str, Entry] = {entry.op: entry for entry in (
    Entry(conv_bwd_data, SUMMED, manifest=True),
    Entry(grouped_conv_bwd_data, SUMMED, manifest=True),
    Entry(grouped_conv_bwd_weight, SUMMED, manifest=True),
    Entry(maxpool2d, SUMMED, manifest=True),
    Entry(avgpool3d, SUMMED, manifest=True),
    Entry(maxpool2d_fwd, None, manifest=False),
    Entry(avgpool3d_fwd, SUMMED, manifest=False),
)}


def entry(op_or_problem) -> Entry:
    """The entry of an operator name or a problem."""
    op = getattr(op_or_problem, "op", op_or_problem)
    check(op in OPERATORS, f"unknown operator {op!r}; known: {', '.join(OPERATORS)}")
    return OPERATORS[op]


def module(op_or_problem) -> ModuleType:
    """The operator module of an operator name or a problem."""
    return entry(op_or_problem).module


def manifest_operators() -> dict[str, ModuleType]:
    """The operators the manifests name, by name, in registry order."""
    return {op: e.module for op, e in OPERATORS.items() if e.manifest}
