"""The tuning tables, ``mlir/tuning/<target>.json``: read once each, and what narrows a rule to a problem
(``rule_applies``). What the rules choose, and every other target rule, is ``ops/policy.py``'s."""

from __future__ import annotations

import functools
import json
import math

from . import targets
from .render import templates_dir
from .targets import Target


# What a rule may hold: its operator, what narrows it (``rule_applies``), what it chooses, and its evidence.
RULE_KEYS = frozenset({"operator", "dtypes", "out_dtypes", "precisions", "kinds", "ranks", "layouts",
                       "min_output_positions", "max_output_positions", "min_channels", "max_channels",
                       "min_out_channels", "max_out_channels", "min_taps", "max_taps", "pointwise", "strided",
                       "host_flags", "host_lacks",
                       "except", "except_why",
                       "form", "only_forms", "flags", "conv_tiles", "weight_tiles", "weight_simt_tiles",
                       "weight_gemm_tiles", "data_simt_tiles", "depthwise_tiles", "merged_tiles", "gemm_tiles",
                       "column_tiles", "matmul_tiles", "zero_pad", "source", "why"})


@functools.lru_cache(maxsize=None)
def table(target_name: str) -> dict:
    """``mlir/tuning/<target_name>.json`` (empty where a target has none), read once; a rule holding a key no rule
    may hold is refused (a misspelt narrowing would widen its rule silently)."""
    path = templates_dir() / "tuning" / f"{target_name}.json"
    loaded = json.loads(path.read_text()) if path.is_file() else {}
    for rule in loaded.get("rules", ()):
        unknown = sorted(set(rule) - RULE_KEYS)
        if unknown:
            raise ValueError(f"mlir/tuning/{target_name}.json: a rule for {rule.get('operator')!r} has unknown keys "
                             f"{unknown}; a rule may hold {sorted(RULE_KEYS)}")
    return loaded


def entries(target_name: str) -> tuple[dict, ...]:
    """Per-problem choices, keyed by the problem's function name; one that names ``host_flags`` or ``host_lacks``
    holds only on such hosts, as a rule does (a CPU tile measured on one host)."""
    return tuple(e for e in table(target_name).get("entries", ()) if _on_host(e))


def rules(target_name: str) -> tuple[dict, ...]:
    """Per-operator choices: flags and the preferred form for the problems of an operator (dtype, kind)."""
    return tuple(table(target_name).get("rules", ()))


def fallback_flags(target_name: str) -> tuple[tuple[str, ...], ...]:
    """Flag sets to compile a problem with, in order, when none of its forms compiles with IREE's defaults."""
    return tuple(tuple(flags) for flags in table(target_name).get("fallback_flags", {}).get("sets", ()))


def rule_applies(rule: dict, problem) -> bool:
    """A rule names its operator, and may narrow to ``dtypes``, to ``out_dtypes`` (the result's), to ``precisions``
    (``bf16x3``: float32 computed as bfloat16 parts; a split weight gradient's rules see its bfloat16 problem of
    float32 result, ``computed_as``), to ``kinds`` (``ConvProblem.kind``), to ``ranks`` (spatial axes), to
    ``layouts``, to at least ``min_output_positions`` (at most ``max_output_positions``) output positions per
    image and ``min_channels`` (at most ``max_channels``) input channels a group and ``min_out_channels`` (at most
    ``max_out_channels``) output channels a group, to filters of at least ``min_taps`` (at most ``max_taps``) taps,
    to pointwise convolutions or to the others (``pointwise`` true or false: a 1 x 1 filter at unit stride), to
    strided ones or the others (``strided``: a stride above 1 along some axis), to hosts whose CPU has every one of
    ``host_flags`` and none of ``host_lacks`` (Linux's names, ``targets.host_cpu_flags``: a CPU rule holds where it
    was measured, and another host keeps the rules below it), and leave out problems by function name (``except``:
    measured slower with it)."""
    features = {"dtypes": problem.dtype, "out_dtypes": getattr(problem, "out_dtype", problem.dtype),
                "precisions": getattr(problem, "precision", None), "kinds": getattr(problem, "kind", None),
                "ranks": problem.rank, "layouts": problem.layout}
    return (rule["operator"] == problem.op and all(value in rule.get(key, [value]) for key, value in features.items())
            and rule.get("min_channels", 0) <= getattr(problem, "in_channels", 0) <= rule.get("max_channels", math.inf)
            and rule.get("min_out_channels", 0) <= getattr(problem, "out_channels", 0)
            <= rule.get("max_out_channels", math.inf)
            and (rule.get("min_output_positions", 0) <= math.prod(getattr(problem, "output_spatial", ()))
                 <= rule.get("max_output_positions", math.inf))
            and (rule.get("min_taps", 0) <= math.prod(getattr(problem, "filter_spatial", ()))
                 <= rule.get("max_taps", math.inf))
            and rule.get("pointwise", _pointwise(problem)) == _pointwise(problem)
            and rule.get("strided", _strided(problem)) == _strided(problem)
            and _on_host(rule) and problem.name not in rule.get("except", ()))


def _on_host(rule: dict) -> bool:
    """Whether this host's CPU has the rule's ``host_flags`` and lacks its ``host_lacks``."""
    if "host_flags" not in rule and "host_lacks" not in rule:
        return True
    flags = targets.host_cpu_flags()
    return set(rule.get("host_flags", ())) <= flags and not set(rule.get("host_lacks", ())) & flags


def _strided(problem) -> bool:
    """Whether ``problem`` has a stride above 1 along some axis."""
    return getattr(problem, "strided", False)


def _pointwise(problem) -> bool:
    """Whether ``problem`` is a pointwise convolution: a 1 x 1 filter at unit stride."""
    return set(getattr(problem, "filter_spatial", (0,))) == {1} == set(problem.stride)


def copy_config(target: Target) -> dict:
    """How the target tiles a data-movement ``linalg.generic`` whose indexing IREE's defaults do not vectorize
    (elements per workgroup, per thread, the subgroup size); empty: IREE's defaults."""
    return dict(table(target.directory_name).get("copy_config", {}))
