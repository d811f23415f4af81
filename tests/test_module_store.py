"""The content-addressed module store: keys, atomic writes, artifacts before cache, runtime-only machines."""

from __future__ import annotations


import numpy as np
import pytest

from ops import compiler, runtime, targets
from ops.operators import conv_bwd_data as op

PROBLEM = op.problem_from_params(batch=1, in_channels=3, out_channels=2, input_spatial=(6,), filter_spatial=(3,), stride=2, padding=1, layout="NWC", dtype="float32")
CPU = targets.parse_target("llvm-cpu")


def spec(**changes):
    fields = dict(name=PROBLEM.name, mlir=op.render_mlir(PROBLEM), target=CPU)
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
    monkeypatch.setattr(runtime, "_functions", {})
    before = compiler.stats["compiles"]
    inputs = op.random_inputs(PROBLEM, rng)
    result = op.call(PROBLEM, inputs)
    assert compiler.stats["compiles"] == before
    assert not (tmp_path / "empty-cache").exists()
    np.testing.assert_allclose(result, op.reference(PROBLEM, inputs), rtol=1e-5, atol=1e-6)


def test_a_runtime_only_machine_runs_artifacts_and_names_what_is_missing(tmp_path, monkeypatch, rng):
    artifacts = tmp_path / "artifacts"
    monkeypatch.setenv("OPS_ARTIFACTS_DIR", str(artifacts))
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    version = compiler.installed_compiler_version()
    compiler.compile_module(spec(), spec().path(artifacts, version))
    (artifacts / "manifest.json").write_text(f'{{"compiler_version": "{version}"}}')
    # from here on, no compiler: keys use the version artifacts/ was built with
    monkeypatch.setattr(compiler, "installed_compiler_version", lambda: None)
    monkeypatch.setattr(runtime, "_functions", {})
    inputs = op.random_inputs(PROBLEM, rng)
    np.testing.assert_allclose(op.call(PROBLEM, inputs), op.reference(PROBLEM, inputs), rtol=1e-5, atol=1e-6)
    other = op.problem_from_params(batch=1, in_channels=3, out_channels=2, input_spatial=(7,), filter_spatial=(3,), stride=2, padding=1, layout="NWC", dtype="float32")
    with pytest.raises(compiler.MissingModuleError, match=rf"no compiled module for {other.name} on target llvm-cpu .* iree-base-compiler is not installed"):
        op.call(other, op.random_inputs(other, rng))
