"""Compiling rendered MLIR into vmfb modules, and the content-addressed module store.

A module's key is the SHA-256 of its MLIR, the compile flags, the compiler version and (for host CPU
targets) the CPU it is compiled for. Modules live at ``<root>/<target>/<problem name>-<key[:16]>.vmfb``
with the MLIR and the exact compile command beside them, so any module can be recompiled by hand.
Two roots are searched, in order: ``artifacts/`` (modules compiled ahead of time, see
``artifacts/manifest.json``) and the user cache (``$OPS_CACHE_DIR``, default ``~/.cache/iree-ck-backward-ops``).
Writes go to a temporary file first and are renamed into place, so a half-written module is never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .targets import Target

_REPO_ROOT = Path(__file__).resolve().parent.parent
_lock = threading.Lock()
_path_locks: dict[Path, threading.Lock] = {}  # one per module path: different modules compile in parallel
stats = {"compiles": 0}


class CompileError(RuntimeError):
    """iree-compile rejected a module; the message holds the compiler's own words and the command."""


class MissingModuleError(RuntimeError):
    """No compiled module covers a problem, and no compiler is installed to build one."""


def cache_dir() -> Path:
    return Path(os.environ.get("OPS_CACHE_DIR") or Path.home() / ".cache" / "iree-ck-backward-ops")


def artifacts_dir() -> Path:
    return Path(os.environ.get("OPS_ARTIFACTS_DIR") or _REPO_ROOT / "artifacts")


def installed_compiler_version() -> str | None:
    try:
        from iree.compiler import version
    except ImportError:
        return None
    return version.VERSION


def artifacts_compiler_version() -> str | None:
    manifest = artifacts_dir() / "manifest.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text()).get("compiler_version")


def compiler_version() -> str | None:
    """The version keys are computed with: the installed compiler's, else the one artifacts/ was built with."""
    return installed_compiler_version() or artifacts_compiler_version()


def compiler_tool() -> str:
    from iree.compiler.tools import binaries

    return binaries.find_tool("iree-compile")


@dataclass(frozen=True)
class ModuleSpec:
    """Everything that decides one compiled module."""

    name: str
    mlir: str
    target: Target
    extra_flags: tuple[str, ...] = ()

    @property
    def flags(self) -> list[str]:
        return [*self.target.compile_flags(), *self.extra_flags]

    def key(self, version: str | None) -> str:
        digest = hashlib.sha256()
        for part in (self.mlir, "\0".join(self.flags), version or "", self.target.machine_fingerprint()):
            digest.update(part.encode())
            digest.update(b"\0\0")
        return digest.hexdigest()

    def path(self, root: Path, version: str | None) -> Path:
        return root / self.target.directory_name / f"{self.name}-{self.key(version)[:16]}.vmfb"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def compile_module(spec: ModuleSpec, vmfb: Path, dump_dir: Path | None = None) -> Path:
    """Compile ``spec`` to ``vmfb`` (atomically), with ``<vmfb stem>.mlir`` and ``.compile.sh`` beside it."""
    mlir_path = vmfb.with_suffix(".mlir")
    _atomic_write(mlir_path, spec.mlir.encode())
    tmp_out = vmfb.with_name(f".{vmfb.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    extra = []
    if dump_dir is not None:
        extra = [
            f"--iree-hal-dump-executable-configurations-to={dump_dir}",
            f"--iree-hal-dump-executable-intermediates-to={dump_dir}",
            f"--iree-hal-dump-executable-binaries-to={dump_dir}",
        ]
    command = [compiler_tool(), mlir_path.name, *spec.flags, *extra, "-o", tmp_out.name]
    shown = ["iree-compile", mlir_path.name, *spec.flags, "-o", vmfb.name]
    _atomic_write(vmfb.with_suffix(".compile.sh"), f"#!/bin/sh\ncd \"$(dirname \"$0\")\"\n{shlex.join(shown)}\n".encode())
    result = subprocess.run(command, cwd=vmfb.parent, capture_output=True, text=True)
    stats["compiles"] += 1
    if result.returncode != 0:
        tmp_out.unlink(missing_ok=True)
        raise CompileError(
            f"iree-compile failed for {spec.name} on {spec.target} (exit {result.returncode}).\n"
            f"Command: cd {vmfb.parent} && {shlex.join(shown)}\n{result.stderr.strip()}"
        )
    os.replace(tmp_out, vmfb)
    return vmfb


def find_or_compile(spec: ModuleSpec) -> Path:
    """The module for ``spec``: from artifacts/, else the cache, else compiled into the cache."""
    version = compiler_version()
    for root in (artifacts_dir(), cache_dir()):
        candidate = spec.path(root, version)
        if candidate.is_file():
            return candidate
    if installed_compiler_version() is None:
        raise MissingModuleError(
            f"no compiled module for {spec.name} on target {spec.target} in {artifacts_dir()} or {cache_dir()}, "
            "and iree-base-compiler is not installed to compile one. Install it (pip install iree-base-compiler==3.13.0) "
            f"or compile the problem ahead of time: python -m build_tools.aot --targets {spec.target}"
        )
    vmfb = spec.path(cache_dir(), version)
    with _lock:
        path_lock = _path_locks.setdefault(vmfb, threading.Lock())
    with path_lock:
        if not vmfb.is_file():
            compile_module(spec, vmfb)
    return vmfb
