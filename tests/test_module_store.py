"""The content-addressed module store: keys, atomic writes, artifacts before cache, runtime-only machines."""

from __future__ import annotations


import numpy as np
import pytest

from ops import compiler, executor, policy, targets
from ops.operators import conv_bwd_data as op
from ops.api import run

PROBLEM = op.problem_from_params(batch=1, in_channels=3, out_channels=2, input_spatial=(6,), filter_spatial=(3,), stride=2, padding=1, layout="NWC", dtype="float32")
CPU = targets.parse_target("llvm-cpu")


def spec(**changes):
    fields = dict(name=PROBLEM.name, mlir=op.render(PROBLEM, policy.forms_for(PROBLEM, CPU)[0], policy.lowering(PROBLEM, CPU)), target=CPU)
    fields.update(changes)
    return compiler.ModuleSpec(**fields)


def test_the_key_covers_mlir_flags_target_and_compiler_version():
    base = spec()
    assert base.key("3.13.0") == spec().key("3.13.0")
    assert base.key("3.13.0") != base.key("3.13.1")
    assert base.key("3.13.0") != spec(mlir=base.mlir + "\n// edited").key("3.13.0")
    assert base.key("3.13.0") != spec(extra_flags=("--iree-opt-level=O3",)).key("3.13.0")
    assert base.key("3.13.0") != spec(target=targets.parse_target("rocm:gfx942")).key("3.13.0")


def test_compiling_leaves_the_module_its_mlir_and_its_command(tmp_path):
    vmfb = spec().path(tmp_path, "v")
    compiler.compile_module(spec(), vmfb)
    assert vmfb.read_bytes()[:8] and vmfb.stat().st_size > 0
    assert vmfb.with_suffix(".mlir").read_text() == spec().mlir
    command = vmfb.with_suffix(".compile.sh").read_text()
    assert f"iree-compile {vmfb.with_suffix('.mlir').name} --iree-hal-target-device=local" in command
    assert not [p for p in vmfb.parent.iterdir() if p.name.endswith(".tmp")]  # no half-written files left


def test_a_compile_error_carries_the_compilers_message_and_command(tmp_path):
    broken = spec(mlir="func.func @f() { not_an_op }")
    with pytest.raises(compiler.CompileError, match=r"(?s)iree-compile failed for .*Command: cd .*iree-compile .*error"):
        compiler.compile_module(broken, broken.path(tmp_path, "v"))
    assert not broken.path(tmp_path, "v").exists()


def test_artifacts_are_used_before_the_cache_and_without_compiling(tmp_path, monkeypatch, rng):
    artifacts = tmp_path / "artifacts"
    monkeypatch.setenv("OPS_ARTIFACTS_DIR", str(artifacts))
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "empty-cache"))
    version = compiler.compiler_version()
    compiler.compile_module(spec(), spec().path(artifacts, version))
    executor.forget()
    before = compiler.stats["compiles"]
    inputs = op.random_inputs(PROBLEM, rng)
    result = run(PROBLEM, inputs)
    assert compiler.stats["compiles"] == before
    cache = tmp_path / "empty-cache"  # only the known-answer verdict is written there, never beside the artifacts
    assert [p.relative_to(cache).parent.as_posix() for p in cache.rglob("*") if p.is_file()] == ["verified"]
    assert not list(artifacts.rglob("verified"))
    np.testing.assert_allclose(result, op.reference(PROBLEM, inputs), rtol=1e-5, atol=1e-6)


def test_a_cached_later_form_does_not_stand_in_for_the_preferred_one(tmp_path, monkeypatch):
    """A cache that holds only a later form (one an earlier version's rules preferred, or a test forced) serves the
    problem only where the preferred form cannot be built: it fails to compile, or no compiler is installed."""
    monkeypatch.setenv("OPS_ARTIFACTS_DIR", str(tmp_path / "no-artifacts"))
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    preferred, later = spec(), spec(extra_flags=("--iree-opt-level=O1",))
    version = compiler.compiler_version()
    compiler.compile_module(later, later.path(compiler.cache_dir(), version))
    assert compiler.load_first([preferred, later])[0] == preferred
    assert preferred.path(compiler.cache_dir(), version).is_file()

    preferred.path(compiler.cache_dir(), version).unlink()
    monkeypatch.setattr(compiler, "installed_compiler_version", lambda: None)
    monkeypatch.setattr(compiler, "compiler_version", lambda: version)  # as artifacts/' manifest would say
    assert compiler.load_first([preferred, later])[0] == later  # nothing can build the preferred form here
    monkeypatch.undo()
    monkeypatch.setenv("OPS_ARTIFACTS_DIR", str(tmp_path / "no-artifacts"))
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    broken = spec(mlir="func.func @f() { not_an_op }")
    before = compiler.stats["compiles"]
    assert compiler.load_first([broken, later])[0] == later  # compiled once, failed, remembered
    assert compiler.load_first([broken, later])[0] == later
    assert compiler.stats["compiles"] == before + 1


def test_a_runtime_only_machine_runs_artifacts_and_names_what_is_missing(tmp_path, monkeypatch, rng):
    artifacts = tmp_path / "artifacts"
    monkeypatch.setenv("OPS_ARTIFACTS_DIR", str(artifacts))
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    version = compiler.installed_compiler_version()
    compiler.compile_module(spec(), spec().path(artifacts, version))
    (artifacts / "manifest.json").write_text(f'{{"compiler_version": "{version}"}}')
    # from here on, no compiler: keys use the version artifacts/ was built with
    monkeypatch.setattr(compiler, "installed_compiler_version", lambda: None)
    executor.forget()
    inputs = op.random_inputs(PROBLEM, rng)
    np.testing.assert_allclose(run(PROBLEM, inputs), op.reference(PROBLEM, inputs), rtol=1e-5, atol=1e-6)
    other = op.problem_from_params(batch=1, in_channels=3, out_channels=2, input_spatial=(7,), filter_spatial=(3,), stride=2, padding=1, layout="NWC", dtype="float32")
    with pytest.raises(compiler.MissingModuleError, match=rf"no compiled module for {other.name} on target llvm-cpu .* iree-base-compiler is not installed"):
        run(other, op.random_inputs(other, rng))


# --- Read-only places, digests ---------------------------------------------------------------------------

_LOAD_AS_ANOTHER_USER = r"""
import os, sys
import numpy as np
import mmap  # noqa: F401  (imported lazily by iree.runtime's copy_buffer)
import iree.compiler.version  # imported while this process may still read the installer's files (root's pyenv)
import iree.runtime  # ops imports it on the first call: here, while the installer's files are readable
import numpy.random  # noqa: F401  (the known-answer check's inputs)
import ops
import ops.runtime  # noqa: F401  (with the known-answer check's imports)
from ops.operators import conv_bwd_data as op
if os.geteuid() == 0:  # root writes anything: drop to nobody, so the read-only module really is read-only
    os.setgid(65534)
    os.setuid(65534)
grad_out = np.load(sys.argv[1])
weight = np.load(sys.argv[2])
got = ops.conv_bwd_data(grad_out, weight, input_shape=(1, 6, 3), stride=2, padding=1, layout="NWC")
np.save(sys.argv[3], got)
"""


def _read_only(root):
    for path in sorted(root.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    root.chmod(0o555)
    for parent in root.parents:  # reachable by another user
        if parent == parent.parent or parent.stat().st_mode & 0o005 == 0o005:
            continue
        parent.chmod(parent.stat().st_mode | 0o005)


def _loaded_as_another_user(root, rng, **env) -> np.ndarray:
    """What ``_LOAD_AS_ANOTHER_USER`` computes as nobody, ``env`` set, the inputs and outputs under ``root``: a
    mismatch with the reference fails the test."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    grad_out, weight = op.random_inputs(PROBLEM, rng)
    outputs = root / "outputs"
    outputs.mkdir()
    np.save(root / "grad_out.npy", grad_out)
    np.save(root / "weight.npy", weight)
    (root / "grad_out.npy").chmod(0o444)
    (root / "weight.npy").chmod(0o444)
    outputs.chmod(0o777)
    root.chmod(0o755)
    env = {**os.environ, **env, "PYTHONPATH": str(Path(op.__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_AS_ANOTHER_USER, str(root / "grad_out.npy"), str(root / "weight.npy"),
         str(outputs / "got.npy")], env=env, capture_output=True, text=True, cwd=root, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(np.load(outputs / "got.npy"), op.reference(PROBLEM, [grad_out, weight]), rtol=1e-5, atol=1e-6)
    return result.stderr


def _removed(root) -> None:
    import shutil

    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("place", ["OPS_ARTIFACTS_DIR", "OPS_CACHE_DIR"])
def test_read_only_modules_load_for_a_user_who_cannot_write_them(place, rng):
    """A shared, read-only artifacts directory or cache serves a user without write access to it."""
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp(prefix="ops-read-only-"))
    try:
        store = root / "store"
        compiler.compile_module(spec(), spec().path(store, compiler.compiler_version()))
        _read_only(store)
        other = "OPS_CACHE_DIR" if place == "OPS_ARTIFACTS_DIR" else "OPS_ARTIFACTS_DIR"
        _loaded_as_another_user(root, rng, **{place: str(store), other: str(root / "nowhere")})
        assert not (root / "nowhere").exists()  # nothing was compiled
    finally:
        _removed(root)


def test_a_cache_one_user_fills_under_umask_022_serves_another_as_it_is(monkeypatch, rng):
    """What one user compiles into a shared cache under the usual umask (module, digest, plan, verdict) another user
    (nobody) loads with no chmod, and writes nothing: mkstemp's 0o600 kept the digests from them."""
    import os
    import tempfile
    from pathlib import Path

    from ops import known_answer

    root = Path(tempfile.mkdtemp(prefix="ops-shared-"))
    cache = root / "cache"
    monkeypatch.setenv("OPS_CACHE_DIR", str(cache))
    executor.forget()
    monkeypatch.setattr(known_answer, "_remembered", {})  # the verdict is recorded in the cache
    before = os.umask(0o022)
    try:
        run(PROBLEM, op.random_inputs(PROBLEM, rng))
        filled = sorted(cache.rglob("*"))
        _loaded_as_another_user(root, rng, OPS_CACHE_DIR=str(cache), OPS_ARTIFACTS_DIR=str(root / "nowhere"))
        assert sorted(cache.rglob("*")) == filled and not (root / "nowhere").exists()
    finally:
        os.umask(before)
        _removed(root)


def _damage(vmfb, how):
    data = vmfb.read_bytes()
    if how == "truncated":
        vmfb.write_bytes(data[: len(data) // 2])
    elif how == "flipped":
        middle = len(data) // 2
        vmfb.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 64]) + data[middle + 64:])
    else:  # "no digest"
        compiler.digest_path(vmfb).unlink()


@pytest.mark.parametrize("how", ["truncated", "flipped", "no digest"])
def test_a_damaged_cached_module_is_rebuilt_not_run(how, tmp_path, monkeypatch, rng):
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    executor.forget()
    inputs = op.random_inputs(PROBLEM, rng)
    run(PROBLEM, inputs)
    vmfb = spec().path(tmp_path / "cache", compiler.compiler_version())
    assert compiler.digest_path(vmfb).read_text().strip() == compiler.digest(vmfb.read_bytes())
    _damage(vmfb, how)
    executor.forget()
    before = compiler.stats["compiles"]
    with pytest.warns(RuntimeWarning, match=rf"{vmfb.name} did not match its recorded SHA-256 digest; rebuilding"):
        result = run(PROBLEM, inputs)
    assert compiler.stats["compiles"] == before + 1
    np.testing.assert_allclose(result, op.reference(PROBLEM, inputs), rtol=1e-5, atol=1e-6)
    assert compiler.digest_path(vmfb).read_text().strip() == compiler.digest(vmfb.read_bytes())


def test_a_damaged_artifact_without_a_compiler_is_named_with_its_rebuild_command(tmp_path, monkeypatch, rng):
    import json

    artifacts = tmp_path / "artifacts"
    monkeypatch.setenv("OPS_ARTIFACTS_DIR", str(artifacts))
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    version = compiler.installed_compiler_version()
    vmfb = compiler.compile_module(spec(), spec().path(artifacts, version))
    good = compiler.digest(vmfb.read_bytes())
    record = {"module": vmfb.relative_to(artifacts).as_posix(), "sha256": good}
    (artifacts / "manifest.json").write_text(json.dumps({"compiler_version": version, "modules": [record]}))
    monkeypatch.setattr(compiler, "installed_compiler_version", lambda: None)
    executor.forget()
    inputs = op.random_inputs(PROBLEM, rng)
    np.testing.assert_allclose(run(PROBLEM, inputs), op.reference(PROBLEM, inputs), rtol=1e-5, atol=1e-6)
    # the manifest's digest rules: a module that still matches the digest beside it, but not the manifest's, is refused
    _damage(vmfb, "flipped")
    compiler.digest_path(vmfb).write_text(compiler.digest(vmfb.read_bytes()))
    executor.forget()
    with pytest.raises(compiler.DamagedModuleError,
                       match=rf"{vmfb} does not match its recorded SHA-256 digest .* python -m build_tools.aot --targets llvm-cpu"):
        run(PROBLEM, inputs)


def test_the_manifest_records_each_committed_modules_digest():
    import json
    from pathlib import Path

    artifacts = Path(op.__file__).resolve().parents[2] / "artifacts"
    modules = json.loads((artifacts / "manifest.json").read_text())["modules"]
    assert modules
    for record in modules:
        assert record["sha256"] == compiler.digest((artifacts / record["module"]).read_bytes()), record["module"]
        assert compiler.digest_path(artifacts / record["module"]).read_text().strip() == record["sha256"]
