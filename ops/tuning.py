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

from . import compiler
from .operator import Choices, operator
from .render import templates_dir
from .targets import Target


@functools.lru_cache(maxsize=None)
def _table(target_name: str) -> dict:
    path = templates_dir() / "tuning" / f"{target_name}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def entries(target_name: str) -> tuple[dict, ...]:
    """Per-problem choices, keyed by the problem's function name."""
    return tuple(_table(target_name).get("entries", ()))


def rules(target_name: str) -> tuple[dict, ...]:
    """Per-operator choices: flags for every problem of an operator (and dtype) on the target."""
    return tuple(_table(target_name).get("rules", ()))


def fallback_flags(target_name: str) -> tuple[tuple[str, ...], ...]:
    """Flag sets to compile a problem with, in order, when none of its forms compiles with IREE's defaults."""
    return tuple(tuple(flags) for flags in _table(target_name).get("fallback_flags", {}).get("sets", ()))


def _rule_applies(rule: dict, problem) -> bool:
    """A rule names its operator, and may narrow to ``dtypes`` and to ``kinds`` (``ConvProblem.kind``), and leave
    out problems by function name (``except``: measured slower with it)."""
    return (rule["operator"] == getattr(problem, "op", None) and problem.dtype in rule.get("dtypes", [problem.dtype])
            and getattr(problem, "kind", None) in rule.get("kinds", [getattr(problem, "kind", None)])
            and problem.name not in rule.get("except", ()))


def copy_config(target: Target) -> dict:
    """How the target tiles a data-movement ``linalg.generic`` whose indexing IREE's defaults do not vectorize
    (``copy_config``: elements per workgroup, per thread, the subgroup size); empty: IREE's defaults."""
    return dict(_table(target.directory_name).get("copy_config", {}))


def configs_for(problem, target: Target) -> dict[int, str]:
    """Phase index -> compilation_info for ``problem`` on ``target`` (empty: IREE's defaults)."""
    return {
        int(e["phase"]): e["compilation_info"]
        for e in entries(target.directory_name)
        if e["function"] == problem.name and "compilation_info" in e
    }


def flags_for(problem, target: Target) -> tuple[str, ...]:
    """Compile flags that matter for ``problem`` on ``target`` (split reduction, padding fusion, ...): its
    operator's rules, then its own entries."""
    flags = [f for r in rules(target.directory_name) if _rule_applies(r, problem) for f in r.get("flags", ())]
    flags += [f for e in entries(target.directory_name) if e["function"] == problem.name for f in e.get("flags", ())]
    return tuple(dict.fromkeys(flags))  # each once, in order


def render_options_for(problem, target: Target) -> dict:
    """Per-problem choices of the template's form (e.g. ``weight_flip``) that a target needs."""
    options = {}
    for e in entries(target.directory_name):
        if e["function"] == problem.name:
            options.update(e.get("render", {}))
    return options


def forms_for(problem, target: Target, options: dict | None = None) -> list[dict]:
    """The template forms to try, in order, for ``problem`` on ``target``: with ``options`` (the tuner's candidate,
    a test's choice) that one; else the table's entry for the problem where it names one; else the operator's own
    ``forms``, the one the first rule for its operator, dtype and kind names (``"form"``) put first."""
    chosen = render_options_for(problem, target)
    if options:
        return [{**chosen, **options}]
    if chosen:
        return [chosen]
    forms = operator(problem).forms(problem, target)
    preferred = next((r["form"] for r in rules(target.directory_name) if "form" in r and _rule_applies(r, problem)), None)
    if preferred is not None:  # the rule's form first; the others stay, in order, as fallbacks
        forms = sorted(forms, key=lambda form: any(form.get(key) != value for key, value in preferred.items()))
    return forms


def module_specs(problem, target: Target, extra_flags: tuple[str, ...] = (), configs: dict[int, str] | None = None,
                 options: dict | None = None) -> list[compiler.ModuleSpec]:
    """The modules that can run ``problem`` on ``target``, preferred first: each form with IREE's defaults, then
    each again with the target's fallback flag sets. The runtime and the ahead-of-time build use the first that
    compiles (``compiler.load_first``), so no problem needs a hand-written entry.

    ``configs`` and ``options`` (the tuner's candidates) replace or extend the table's choices; the table's form
    with ``options`` is then the only one.
    """
    configs = {**configs_for(problem, target), **(configs or {})}
    render = operator(problem).render
    copy = copy_config(target)
    mlirs = [render(problem, Choices(target, form, configs, copy)) for form in forms_for(problem, target, options)]
    flags = (*flags_for(problem, target), *extra_flags)
    specs = [compiler.ModuleSpec(problem.name, mlir, target, (*flags, *fallback))
             for fallback in ((), *fallback_flags(target.directory_name)) for mlir in mlirs]
    return list(dict.fromkeys(specs))  # forms that render the same module, and flag sets that repeat, once


def module_spec(problem, target: Target, extra_flags: tuple[str, ...] = (), configs: dict[int, str] | None = None,
                options: dict | None = None) -> compiler.ModuleSpec:
    """The preferred module of ``module_specs`` (for the tuner and the benchmarks, which time one form)."""
    return module_specs(problem, target, extra_flags, configs, options)[0]
