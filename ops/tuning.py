"""Tuned dispatch configurations, checked in per target under ``mlir/tuning/<target>.json``.

Each entry pins one IREE ``#iree_codegen.compilation_info`` on one convolution (a stride phase) of one
problem, found by ``build_tools/tune.py`` (timed, on CUDA) or set by hand (ROCm, which cannot be timed here:
such entries say so, and must only compile and pass the lowering tests). Problems without an entry get
IREE's default configuration. Every module, at run time or ahead of time, is specified here, so both see
the same configurations.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Callable

from . import compiler
from .render import templates_dir
from .targets import Target


@functools.lru_cache(maxsize=None)
def entries(target_name: str) -> tuple[dict, ...]:
    path = templates_dir() / "tuning" / f"{target_name}.json"
    return tuple(json.loads(path.read_text())["entries"]) if path.is_file() else ()


def configs_for(problem, target: Target) -> dict[int, str]:
    """Phase index -> compilation_info for ``problem`` on ``target`` (empty: IREE's defaults)."""
    return {
        int(e["phase"]): e["compilation_info"]
        for e in entries(target.directory_name)
        if e["function"] == problem.name and "compilation_info" in e
    }


def flags_for(problem, target: Target) -> tuple[str, ...]:
    """Compile flags that matter for ``problem`` on ``target`` (split reduction, padding fusion, ...)."""
    return tuple(f for e in entries(target.directory_name) if e["function"] == problem.name for f in e.get("flags", ()))


def render_options_for(problem, target: Target) -> dict:
    """Per-problem choices of the template's form (e.g. ``weight_flip``) that a target needs."""
    options = {}
    for e in entries(target.directory_name):
        if e["function"] == problem.name:
            options.update(e.get("render", {}))
    return options


def module_spec(problem, render_mlir: Callable, target: Target, extra_flags: tuple[str, ...] = ()) -> compiler.ModuleSpec:
    """The module that runs ``problem`` on ``target``, with its tuned configurations, form and flags, if any."""
    configs = configs_for(problem, target)
    accepted = inspect.signature(render_mlir).parameters
    options = {k: v for k, v in {"target": target, **render_options_for(problem, target)}.items() if k in accepted}
    mlir = render_mlir(problem, configs, **options) if configs else render_mlir(problem, **options)
    return compiler.ModuleSpec(problem.name, mlir, target, (*flags_for(problem, target), *extra_flags))
