"""The launch plans beside the stored modules: stored as a module is compiled, verified when read.

A module's launch plan (``ops/launch/plan.py``) is read from the HAL-level program it is compiled from
(``compiler.HAL_PROGRAM_READERS``, which this module joins on import) and stored beside the module with its digest
(``plan_path``); a program no plan expresses leaves the reason instead (``unsupported_path``). ``plan_of`` reads a
stored module's verified plan and its executables, rebuilding it where it is missing or damaged (``ensure``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from .. import compiler
from ..validation import warn_caller
from . import plan as plan_module
from .plan import Plan


def plan_path(vmfb: Path) -> Path:
    """Where a module's launch plan is stored (the extractor's version in its name)."""
    return vmfb.with_name(f"{vmfb.stem}.launch-v{plan_module.EXTRACTOR_VERSION}.json")


def unsupported_path(vmfb: Path) -> Path:
    """Where the reason is kept that a module has no launch plan (it runs through IREE's runtime)."""
    return plan_path(vmfb).with_suffix(".unsupported")


def store_plan(vmfb: Path, hal_text: str, data: bytes) -> None:
    """Read the launch plan of ``hal_text`` and store it beside ``vmfb``, the executables located in ``data`` (the
    module's bytes, which embed them verbatim); or store why there is none."""
    try:
        plan = plan_module.locate(*plan_module.extract(hal_text), data)
    except plan_module.UnsupportedModule as error:
        compiler.atomic_write(unsupported_path(vmfb), f"{error}\n".encode())
        return
    text = plan.to_json().encode()
    compiler.atomic_write(compiler.digest_path(plan_path(vmfb)), (compiler.digest(text) + "\n").encode())
    compiler.atomic_write(plan_path(vmfb), text)


def ensure(spec: compiler.ModuleSpec, vmfb: Path, data: bytes) -> None:
    """Store the launch plan of a cached module that has none intact beside it: one compiled before plans were read
    for its target (neither a plan nor the reason there is none beside it), or one whose plan does not match its
    recorded digest (damaged: rebuilt, with a warning, as a damaged module is). Its HAL-level program is compiled
    again and the plan located in the module's bytes ``data`` (a program that does not embed the same executables
    leaves that reason). In a cache this process cannot write, nothing is stored: IREE's runtime serves the module,
    and ``load`` says why."""
    root, path = compiler.root_of(vmfb), plan_path(vmfb)
    if root == compiler.artifacts_dir() or (root == compiler.cache_dir() and compiler.writes_elsewhere()):
        return
    damaged = path.is_file() and compiler.recorded_digest(root, path) != compiler.digest(path.read_bytes())
    if (path.is_file() and not damaged) or (not path.is_file() and unsupported_path(vmfb).is_file()):
        return
    try:
        if damaged:
            path.unlink()  # where the plan cannot be rebuilt, the reason serves instead of a damaged plan
            warn_caller(f"{path} did not match its recorded SHA-256 digest; rebuilding it")
        plan_again(spec, vmfb, data)
    except OSError as error:
        if error.errno not in compiler.UNWRITABLE:
            raise


def plan_again(spec: compiler.ModuleSpec, vmfb: Path, data: bytes) -> None:
    """``vmfb``'s HAL-level program compiled again from ``spec``, and its plan stored (``store_plan``), or, where
    it cannot be compiled, the reason."""
    with tempfile.TemporaryDirectory() as directory:
        # the source's name as compile_module gave it: IREE names the executables after it
        source, hal = Path(directory) / vmfb.with_suffix(".mlir").name, Path(directory) / f"{vmfb.stem}.hal.mlir"
        source.write_text(spec.mlir)
        shown = ["iree-compile", source.name, *spec.flags, "--compile-to=hal", "-o", hal.name]
        try:
            compiler.run_compiler([compiler.compiler_tool(), *shown[1:]], Path(directory), spec, shown)
        except Exception as error:  # no compiler here (a runtime-only install), or it fails: IREE's runtime serves it
            reason = f"its HAL program could not be compiled again: {error}\n"
            compiler.atomic_write(unsupported_path(vmfb), reason.encode())
            return
        store_plan(vmfb, hal.read_text(), data)


def load(root: Path, vmfb: Path, data: bytes) -> "Plan | str":
    """The verified launch plan of the module ``vmfb`` (under ``root``, its verified bytes ``data``), or why there
    is none: never stored, its digest does not match, or its executables are not those of the module."""
    path = plan_path(vmfb)
    if not path.is_file():
        reason = unsupported_path(vmfb)
        return reason.read_text().strip() if reason.is_file() else f"no launch plan beside {vmfb.name}"
    text = path.read_bytes()
    if compiler.recorded_digest(root, path) != compiler.digest(text):
        return f"{path} does not match its recorded SHA-256 digest"
    plan = Plan.from_json(text.decode())
    for executable in plan.executables:
        embedded = data[executable.offset: executable.offset + executable.nbytes]
        if compiler.digest(embedded) != executable.sha256:
            return f"{path}: executable {executable.name} is not at its recorded place in {vmfb.name}"
    return plan


def plan_of(spec: compiler.ModuleSpec, path: Path, data: bytes) -> tuple[Plan, list[bytes]] | str:
    """The verified launch plan of ``spec``'s stored module at ``path`` (its verified bytes ``data``) and its
    executables' containers; or why there is none. A cached module whose plan is missing or damaged gets it first
    (``ensure``)."""
    ensure(spec, path, data)
    found = load(compiler.root_of(path), path, data)
    if isinstance(found, str):
        return found
    return found, [data[e.offset: e.offset + e.nbytes] for e in found.executables]


compiler.HAL_PROGRAM_READERS.append(store_plan)
