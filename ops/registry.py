"""The registry: one entry per operator. Nothing else lists the operators (``ops.__all__`` names their functions).

An entry holds the operator's module (the protocol of ``ops/operator.py``), the tolerance its results are checked
with, whether the manifests name problems of it (the five CK examples), the PyTorch reference the benchmarks
compare with (a function of ``build_tools/bench.py``), and which ``ops.torch`` kernel serves it.

A sixth operator adds its module under ``ops/operators/``, its template under ``mlir/``, one entry here, its
public function in ``ops/api.py``, its manifest entries and its tests.
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
    manifest: bool  # the manifests (build_tools/manifests) name problems of it: a CK example
    bench: str | None  # the PyTorch reference in build_tools/bench.py (None: PyTorch has no such op)
    torch: str | None  # the ops.torch kernel that runs it (None: reached through another operator)

    @property
    def op(self) -> str:
        return self.module.OP


OPERATORS: dict[str, Entry] = {entry.op: entry for entry in (
    Entry(conv_bwd_data, SUMMED, manifest=True, bench="torch_conv_bwd_data", torch=None),
    Entry(grouped_conv_bwd_data, SUMMED, manifest=True, bench="torch_grouped_conv_bwd_data", torch="conv_backward_input"),
    Entry(grouped_conv_bwd_weight, SUMMED, manifest=True, bench="torch_grouped_conv_bwd_weight", torch="conv_backward_weight"),
    Entry(maxpool2d, SUMMED, manifest=True, bench="torch_maxpool2d_bwd", torch="max_pool2d_backward"),
    Entry(avgpool3d, SUMMED, manifest=True, bench="torch_avgpool3d_bwd", torch="avg_pool3d_backward"),
    Entry(maxpool2d_fwd, None, manifest=False, bench=None, torch="max_pool2d"),
    Entry(avgpool3d_fwd, SUMMED, manifest=False, bench=None, torch="avg_pool3d"),
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
