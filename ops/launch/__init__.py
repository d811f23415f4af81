"""Launching compiled modules' kernels directly on a framework's stream.

``plan`` reads a GPU module's static host program into a launch plan at compile time (stored beside the module,
see ``ops.compiler``); ``cuda`` issues a plan's commands through NVIDIA's driver bindings. ``plan_for`` finds a
problem's module and its verified plan.
"""

from __future__ import annotations

from ..targets import Target
from .plan import Plan


def plan_for(problem, target: Target) -> tuple[Plan, list[bytes]] | str:
    """The launch plan of ``problem``'s module on ``target`` (found or compiled as the runtime would) and its
    executables' containers, from the module's verified bytes; or why there is none."""
    from .. import compiler, tuning  # ops.compiler imports this package's plan module

    spec, path, data = compiler.load_first(tuning.module_specs(problem, target))
    found = compiler.load_plan(compiler.root_of(path), path, data)
    if isinstance(found, str):
        return found
    return found, [data[e.offset: e.offset + e.nbytes] for e in found.executables]
