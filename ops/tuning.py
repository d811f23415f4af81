"""Tuned dispatch configurations, checked in per target under ``mlir/tuning/<target>.json``.

Each entry pins one IREE ``#iree_codegen.compilation_info`` on one convolution (a stride phase) of one
problem, found by ``build_tools/tune.py`` (timed, on CUDA) or set by hand (ROCm, which cannot be timed here:
such entries say so, and must only compile and pass the lowering tests). Problems without an entry get
IREE's default configuration. Every module, at run time or ahead of time, is specified here, so both see
the same configurations.
"""

from __future__ import annotations

import functools
import json
from typing import Callable

from . import compiler
from .render import templates_dir
from .targets import Target


@functools.lru_cache(maxsize=None)
def table(target_name: str) -> dict[tuple[str, int], str]:
    path = templates_dir() / "tuning" / f"{target_name}.json"
    if not path.is_file():
        return {}
    entries = json.loads(path.read_text())["entries"]
    return {(e["function"], int(e["phase"])): e["compilation_info"] for e in entries}


def configs_for(problem, target: Target) -> dict[int, str]:
    """Phase index -> compilation_info for ``problem`` on ``target`` (empty: IREE's defaults)."""
    return {phase: config for (function, phase), config in table(target.directory_name).items() if function == problem.name}


def module_spec(problem, render_mlir: Callable, target: Target, extra_flags: tuple[str, ...] = ()) -> compiler.ModuleSpec:
    """The module that runs ``problem`` on ``target``, with its tuned configurations, if any."""
    configs = configs_for(problem, target)
    mlir = render_mlir(problem, configs) if configs else render_mlir(problem)
    return compiler.ModuleSpec(problem.name, mlir, target, tuple(extra_flags))
