"""Compiling rendered MLIR into vmfb modules, and the content-addressed module store.

A module's key is the SHA-256 of its MLIR, the compile flags, the compiler version and (for host CPU
targets) the CPU it is compiled for. Modules live at ``<root>/<target>/<problem name>-<key[:16]>.vmfb``
with the MLIR and the exact compile command beside them, so any module can be recompiled by hand.
Two roots are searched, in order: ``artifacts/`` (modules compiled ahead of time, see
``artifacts/manifest.json``) and the user cache (``$OPS_CACHE_DIR``, default ``~/.cache/iree-ck-backward-ops``).
Writes go to a temporary file first and are renamed into place, so a half-written module is never loaded.

Every module has its SHA-256 beside it (``<module>.vmfb.sha256``; for ``artifacts/`` also in the manifest). A
module is read once, its bytes are checked against that digest, and only those checked bytes are loaded: a
damaged or unrecorded module is never run. It is rebuilt into the cache instead (or, without a compiler, a
``DamagedModuleError`` names the file and the command that rebuilds it). Modules are only ever read, so
read-only artifacts and caches serve; what a process must compile where the cache cannot be written goes to a
temporary folder of its own (``write_dir``). Files are written readable by all under the usual umask
(``atomic_write``), so a cache one user fills serves the others.
"""

from __future__ import annotations

import atexit
import errno
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .targets import Target
from .validation import warn_caller

_REPO_ROOT = Path(__file__).resolve().parent.parent
_lock = threading.Lock()
_path_locks: dict[Path, threading.Lock] = {}  # one per module path: different modules compile in parallel
stats = {"compiles": 0}


class CompileError(RuntimeError):
    """iree-compile rejected a module; the message holds the compiler's own words and the command."""


class MissingModuleError(RuntimeError):
    """No compiled module covers a problem, and no compiler is installed to build one."""


class DamagedModuleError(RuntimeError):
    """A stored module does not match its recorded digest, and no compiler is installed to rebuild it."""


def cache_dir() -> Path:
    return Path(os.environ.get("OPS_CACHE_DIR") or Path.home() / ".cache" / "iree-ck-backward-ops")


# Where the cache cannot be written (a read-only file system, another user's folder), what this process compiles
# goes to a temporary folder of its own, removed when it exits, and serves this process only (as known-answer
# verdicts are kept per process there). Errors that say so:
UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST)
_writable: set[Path] = set()  # caches this process has written into
_elsewhere: dict[Path, Path] = {}  # caches it cannot write into: the temporary folder it writes to instead


def write_dir() -> Path:
    """Where this process writes what it compiles: the cache, or where that cannot be written (tried once per
    cache: a file created and removed), a temporary folder of this process's own, said once with the remedy."""
    root = cache_dir()
    with _lock:
        known = root in _writable or root in _elsewhere
    if not known:
        try:
            root.mkdir(parents=True, exist_ok=True)
            fd, probe = _created(root / "write-probe", executable=False)
            os.close(fd)
            probe.unlink()
            _writable.add(root)
        except OSError as error:
            write_elsewhere(error)
    return _elsewhere.get(root, root)


def writes_elsewhere() -> bool:
    """Whether this process found the cache unwritable (``write_dir``): what it compiles or records is its own."""
    return cache_dir() in _elsewhere


def write_elsewhere(error: OSError) -> None:
    """From now on, write into a temporary folder of this process's own: the cache cannot be written (``error``
    says why). Said once per cache: the folder, and the remedy."""
    root = cache_dir()
    with _lock:
        if root in _elsewhere:
            return
        temporary = Path(tempfile.mkdtemp(prefix="ops-cache-"))
        atexit.register(shutil.rmtree, temporary, ignore_errors=True)
        _elsewhere[root] = temporary
    warn_caller(f"ops: cannot write the module cache {root} ({error.strerror or error}); what this process "
                f"compiles goes to {temporary} and lasts this process only. Set OPS_CACHE_DIR to a writable folder "
                "to keep it")


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
    title: str = field(default="", compare=False)  # the problem in a few words (its ``summary``), for messages

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


def _created(path: Path, executable: bool) -> tuple[int, Path]:
    """A new, empty temporary file beside ``path``, open for writing, and its path. Created as open(2) creates
    files, mode 0o666 (0o777 ``executable``) less the process's umask, as pip and PyTorch leave theirs: under the
    usual umask 022 another user reads it, under 077 it stays private. The umask is never read, since reading it
    means setting it (os.umask), a change other threads would see; the kernel applies it (default ACLs too)."""
    mode = 0o777 if executable else 0o666
    for _ in range(16):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it", str(path))


def atomic_write(path: Path, data: bytes, executable: bool = False) -> None:
    """``data`` written to ``path`` through a temporary file renamed into place: a reader sees the old file or the
    new one, never half of one. Folders are made as mkdir(2) makes them, files as ``_created`` says: readable by
    all under the usual umask, so a cache serves every user who can reach it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _created(path, executable)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_path(vmfb: Path) -> Path:
    return vmfb.with_name(vmfb.name + ".sha256")


# What reads a module's HAL-level program as it is compiled: ``reader(vmfb, hal_text, module_bytes)``. The launch
# plan store (``ops/launch/store.py``) adds itself when imported; the compiler knows nothing of launching.
HAL_PROGRAM_READERS: list = []


def run_compiler(command: list[str], cwd: Path, spec: ModuleSpec, shown: list[str]) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(
            f"iree-compile failed for {spec.name} on {spec.target} (exit {result.returncode}).\n"
            f"Command: cd {cwd} && {shlex.join(shown)}\n{result.stderr.strip()}"
        )


def compile_module(spec: ModuleSpec, vmfb: Path, dump_dir: Path | None = None) -> Path:
    """Compile ``spec`` to ``vmfb`` (atomically), with its digest, ``<vmfb stem>.mlir`` and ``.compile.sh`` beside it.

    Modules compile in two steps, to IREE's HAL-level program and on from it. Each of ``HAL_PROGRAM_READERS`` reads
    that program with the module's bytes before the module is in place (``ops/launch/store.py`` stores the launch
    plan read from it beside the module: the plan and the module come from one program)."""
    mlir_path = vmfb.with_suffix(".mlir")
    atomic_write(mlir_path, spec.mlir.encode())
    tmp = vmfb.with_name(f".{vmfb.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    extra = []
    if dump_dir is not None:
        extra = [
            f"--iree-hal-dump-executable-configurations-to={dump_dir}",
            f"--iree-hal-dump-executable-intermediates-to={dump_dir}",
            f"--iree-hal-dump-executable-binaries-to={dump_dir}",
        ]
    tool = compiler_tool()
    hal = vmfb.with_name(f"{vmfb.stem}.hal.mlir")
    steps = [[mlir_path.name, *spec.flags, *extra, "--compile-to=hal", "-o", hal.name],
             ["--compile-from=hal", hal.name, *spec.flags, "-o", vmfb.name]]
    shown = [["iree-compile", *(a for a in step if a not in extra)] for step in steps]
    script = "\n".join(shlex.join(s) for s in shown)
    atomic_write(vmfb.with_suffix(".compile.sh"), f"#!/bin/sh\nset -e\ncd \"$(dirname \"$0\")\"\n{script}\n".encode(),
                 executable=True)  # a script run by hand: ./<module>.compile.sh
    stats["compiles"] += 1
    hal_tmp = tmp.with_name(tmp.name + ".hal.mlir")
    try:
        for step, visible in zip(steps, shown):
            real = [tool, *(hal_tmp.name if a == hal.name else tmp.name if a == vmfb.name else a for a in step)]
            run_compiler(real, vmfb.parent, spec, visible)
        data = tmp.read_bytes()
        for read in HAL_PROGRAM_READERS:
            read(vmfb, hal_tmp.read_text(), data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        hal_tmp.unlink(missing_ok=True)
    # the digest first: a module without its digest in place is never taken for a good one
    atomic_write(digest_path(vmfb), (digest(data) + "\n").encode())
    os.replace(tmp, vmfb)
    return vmfb


def root_of(path: Path) -> Path:
    """The store root (artifacts/, the user cache, or this process's own where the cache cannot be written) a
    stored module lives under."""
    if path.is_relative_to(artifacts_dir()):
        return artifacts_dir()
    elsewhere = _elsewhere.get(cache_dir())
    return elsewhere if elsewhere is not None and path.is_relative_to(elsewhere) else cache_dir()


_manifest_digests: dict[tuple, dict[str, str]] = {}


def recorded_digest(root: Path, vmfb: Path) -> str | None:
    """The digest a stored file (a module, a launch plan) must have: artifacts/manifest.json's record of it,
    else the one beside it."""
    manifest = root / "manifest.json"
    if manifest.is_file():
        stamp = (str(manifest), manifest.stat().st_mtime_ns)
        if stamp not in _manifest_digests:
            modules = json.loads(manifest.read_text()).get("modules", [])
            _manifest_digests[stamp] = {
                **{m["module"]: m["sha256"] for m in modules if "sha256" in m},
                **{m["launch_plan"]: m["launch_plan_sha256"] for m in modules if "launch_plan" in m},
            }
        recorded = _manifest_digests[stamp].get(vmfb.relative_to(root).as_posix())
        if recorded:
            return recorded
    beside = digest_path(vmfb)
    return beside.read_text().strip() if beside.is_file() else None


def verified(root: Path, vmfb: Path, damaged: list[Path] | None = None) -> bytes | None:
    """``vmfb``'s bytes (under ``root``) if it exists and matches its recorded digest; a mismatch is noted in
    ``damaged``."""
    if not vmfb.is_file():
        return None
    data = vmfb.read_bytes()
    if recorded_digest(root, vmfb) == digest(data):
        return data
    if damaged is not None:
        damaged.append(vmfb)
    return None


def _rebuild_command(spec: ModuleSpec) -> str:
    return f"python -m build_tools.aot --targets {spec.target} (or install iree-base-compiler==3.13.0: the module is then rebuilt into the cache)"


announce = threading.local()  # ``quiet = True`` on a thread that reports its compiles itself (precompile)
_said: set[tuple[str, str]] = set()  # the problems (name, target) this process said it compiles


def _say_compiling(spec: ModuleSpec) -> None:
    """One short line on stderr for each problem compiled on first use, whatever number of its forms are tried:
    the problem in a few words and the target; after the first of the process, one line with where modules are
    kept, how to compile them ahead and how to silence these lines (``OPS_QUIET=1``)."""
    if os.environ.get("OPS_QUIET", "") not in ("", "0") or getattr(announce, "quiet", False):
        return
    problem = (spec.name, str(spec.target))
    with _lock:
        first, known = not _said, problem in _said
        _said.add(problem)
    if known:
        return
    print(f"ops: compiling {spec.title or spec.name} for {spec.target} (once)", file=sys.stderr, flush=True)
    if first:
        print(f"ops: compiled modules are kept in {write_dir()}; ops.torch.precompile or python -m build_tools.aot "
              "compiles them ahead; OPS_QUIET=1 silences these lines", file=sys.stderr, flush=True)


def failure_path(vmfb: Path) -> Path:
    """Where a module that does not compile keeps the compiler's message, so the next process skips it."""
    return vmfb.with_name(vmfb.name + ".failed")


def load_first(specs: Sequence[ModuleSpec], accept=None) -> tuple[ModuleSpec, Path, bytes]:
    """The first of ``specs`` (alternative forms of one problem, preferred first) that is stored or compiles, and
    that ``accept`` takes (the known-answer check of ``ops.known_answer``, on the device that will run it): the
    spec, where its module is, and its verified bytes.

    A stored module that matches its digest is taken from artifacts/, else from the cache if no earlier form is
    still to be built there (``_stored``). Otherwise the forms are compiled into the cache in order; a form that
    fails is remembered (``failure_path``) and the next one is tried. A damaged module is rebuilt with a warning,
    or, without a compiler, reported by DamagedModuleError.
    A module ``accept`` refuses is passed over like one that does not compile; when it has refused them all,
    ``accept.refuse_all`` raises (``known_answer.Gate``: WrongResultError, with the worst verdict).
    """
    accept = accept or _accept_all
    damaged: list[Path] = []
    refused: set[Path] = set()
    found = _stored(specs, accept, damaged, refused)
    if found is not None:
        return found
    _without_compiler(specs[0], accept, damaged, refused)
    if damaged:
        warn_caller(f"{', '.join(map(str, damaged))} did not match its recorded SHA-256 digest; rebuilding it into "
                    f"{write_dir()}")
    errors: list[str] = []
    for spec in specs:
        if spec.path(write_dir(), compiler_version()) in refused:
            continue
        vmfb, data = _compiled_somewhere(spec, errors)
        if data is not None and accept(spec, vmfb, data):
            return spec, vmfb, data
        if data is not None:
            refused.add(vmfb)
    if refused:
        accept.refuse_all(None)  # every form that compiles computes a wrong answer
    if len(errors) == 1:
        raise CompileError(errors[0])
    raise CompileError(f"none of the {len(specs)} forms of {specs[0].name} compiles on {specs[0].target}:\n\n" + "\n\n".join(errors))


def _stored(specs: Sequence[ModuleSpec], accept, damaged: list, refused: set):
    """The stored module to load, or None: the first that matches its digest and ``accept`` takes, from artifacts/
    (the ahead-of-time build's choice: it stores the form it chose per problem), then from the cache, in the forms'
    order up to the first form the cache neither holds nor knows not to compile, where a compiler can build it: a
    cache holding only a later form (one an earlier version of the rules preferred, or a test forced) does not stand
    in for the preferred form. Damaged modules go to ``damaged``, refused ones to ``refused`` (forms that render the
    same module: checked once)."""
    version = compiler_version()
    compiling = installed_compiler_version() is not None
    for root in (artifacts_dir(), cache_dir(), *filter(None, [_elsewhere.get(cache_dir())])):
        for spec in specs:
            candidate = spec.path(root, version)
            if candidate in refused:
                continue
            data = verified(root, candidate, damaged)
            if data is None:
                if root != artifacts_dir() and compiling and not failure_path(candidate).is_file():
                    break  # the preferred form is not built yet: the caller compiles it
                continue
            if accept(spec, candidate, data):
                return spec, candidate, data
            refused.add(candidate)
    return None


def _without_compiler(first: ModuleSpec, accept, damaged: list, refused: set) -> None:
    """Without a compiler, nothing else can serve: say why (every stored form refused, damaged, or missing)."""
    if installed_compiler_version() is not None:
        return
    if refused:
        accept.refuse_all(f"no compiler is installed to build the other forms: {_rebuild_command(first)}")
    if damaged:
        raise DamagedModuleError(
            f"{damaged[0]} does not match its recorded SHA-256 digest (damaged, truncated or replaced), so it is "
            f"not loaded; rebuild it: {_rebuild_command(first)}"
        )
    raise MissingModuleError(
        f"no compiled module for {first.name} on target {first.target} in {artifacts_dir()} or {cache_dir()}, "
        "and iree-base-compiler is not installed to compile one. Install it (pip install iree-base-compiler==3.13.0) "
        f"or compile the problem ahead of time: python -m build_tools.aot --targets {first.target}"
    )


def _compiled_somewhere(spec: ModuleSpec, errors: list) -> tuple[Path, bytes | None]:
    """``_compiled`` into ``write_dir()``: where the cache turns out not to be writable there (a folder in it that
    is not this user's), into this process's own folder instead (``write_elsewhere``). Where it is, and its bytes."""
    vmfb = spec.path(write_dir(), compiler_version())
    try:
        return vmfb, _compiled(spec, vmfb, errors)
    except OSError as error:
        if error.errno not in UNWRITABLE or writes_elsewhere():
            raise
        write_elsewhere(error)
    vmfb = spec.path(write_dir(), compiler_version())
    return vmfb, _compiled(spec, vmfb, errors)


def _compiled(spec: ModuleSpec, vmfb: Path, errors: list) -> bytes | None:
    """``spec`` compiled into the cache at ``vmfb`` (or found there, built by another thread meanwhile): its
    verified bytes, or None where it does not compile (the compiler's message goes to ``errors`` and is remembered
    beside it, ``failure_path``, so the next process skips it)."""
    with _lock:
        path_lock = _path_locks.setdefault(vmfb, threading.Lock())
    with path_lock:
        data = verified(root_of(vmfb), vmfb)
        if data is None and failure_path(vmfb).is_file():
            errors.append(failure_path(vmfb).read_text())
            return None
        if data is None:
            _say_compiling(spec)
            try:
                compile_module(spec, vmfb)
            except CompileError as error:
                atomic_write(failure_path(vmfb), str(error).encode())
                errors.append(str(error))
                return None
            data = verified(root_of(vmfb), vmfb)
    if data is None:
        raise DamagedModuleError(f"{vmfb} changed while it was being read after compiling; run the call again")
    return data


class _AcceptAll:
    def __call__(self, spec, path, data) -> bool:
        return True

    def refuse_all(self, hint) -> None:  # never reached: nothing is refused
        raise AssertionError(hint)


_accept_all = _AcceptAll()


def find_or_compile(spec: ModuleSpec | Sequence[ModuleSpec]) -> Path:
    """The verified module for ``spec`` (or the first of several alternatives that compiles)."""
    return load_first([spec] if isinstance(spec, ModuleSpec) else spec)[1]
