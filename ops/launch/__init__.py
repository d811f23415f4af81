"""Launching compiled modules' kernels directly: on a framework's GPU stream, or on its CPU threads.

``plan`` reads a module's static host program into a launch plan at compile time (stored beside the module, see
``ops.compiler``); ``cuda`` issues a plan's commands through NVIDIA's driver bindings, ``hip`` through AMD's HIP
runtime, and ``cpu`` runs a CPU plan's dispatch functions (``elf``: its executables loaded into the process) on
PyTorch's OpenMP threads. ``plan_of`` reads a stored module's verified plan (rebuilt where it is missing or damaged).
"""

from __future__ import annotations

from .plan import Plan


def plan_of(spec, path, data: bytes) -> tuple[Plan, list[bytes]] | str:
    """The verified launch plan of ``spec``'s stored module at ``path`` (its verified bytes ``data``) and its
    executables' containers; or why there is none. A cached module whose plan is missing or damaged gets it first
    (``compiler.ensure_plan``)."""
    from .. import compiler  # ops.compiler imports this package's plan module

    compiler.ensure_plan(spec, path, data)
    found = compiler.load_plan(compiler.root_of(path), path, data)
    if isinstance(found, str):
        return found
    return found, [data[e.offset: e.offset + e.nbytes] for e in found.executables]
