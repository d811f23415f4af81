"""A machine with only iree-base-runtime: the CK example problems run from artifacts/, and what is missing is named.

The CPU modules are compiled here into a temporary artifacts folder; then a fresh Python in which
``import iree.compiler`` fails runs the main job over them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ops import catalog, compiler, targets, policy

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_ONLY = "import sys; sys.modules['iree.compiler'] = None; from ops.cli import main; sys.exit(main(sys.argv[1:]))"


# The CK default problems at batch 1 (``run all`` applies the override to each): the runtime-only path is the
# same, and the CPU runs conv_bwd_data's batch of 128 for 21 s.
OVERRIDES = {"batch": 1}


def _compile_ck_defaults(artifacts: Path) -> None:
    version = compiler.installed_compiler_version()
    cpu = targets.parse_target("llvm-cpu")
    for op in catalog.OPERATORS:
        name = catalog.problem_names(op)[0]
        spec = policy.module_spec(catalog.problem(op, name, **OVERRIDES), cpu)
        compiler.compile_module(spec, spec.path(artifacts, version))
    (artifacts / "manifest.json").write_text(json.dumps({"compiler_version": version, "modules": []}))


def _run(args: list[str], artifacts: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPS_ARTIFACTS_DIR": str(artifacts), "OPS_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", RUNTIME_ONLY, *args], env=env, capture_output=True, text=True, timeout=900)


def test_the_ck_problems_run_from_artifacts_without_a_compiler(tmp_path):
    artifacts, cache = tmp_path / "artifacts", tmp_path / "cache"
    _compile_ck_defaults(artifacts)
    result = _run(["run", "all", "--verify", "--repeat", "0", "--seed", "7", *(f"{k}={v}" for k, v in OVERRIDES.items())],
                  artifacts, cache)
    assert result.returncode == 0, result.stderr[-3000:]
    table = result.stdout
    for op in catalog.OPERATORS:
        assert any(line.startswith(op) and line.rstrip().endswith("PASS") for line in table.splitlines()), table
    assert "(compiled)" not in table
    assert not cache.exists() or not any(cache.rglob("*.vmfb"))


def test_a_problem_no_artifact_covers_is_named_with_the_command_that_compiles_it(tmp_path):
    artifacts, cache = tmp_path / "artifacts", tmp_path / "cache"
    artifacts.mkdir()
    (artifacts / "manifest.json").write_text(json.dumps({"compiler_version": compiler.installed_compiler_version(), "modules": []}))
    result = _run(["run", "maxpool2d_bwd", "--repeat", "0"], artifacts, cache)
    assert result.returncode != 0
    problem = catalog.problem("maxpool2d_bwd", "ck_default")
    assert f"no compiled module for {problem.name} on target llvm-cpu" in result.stderr
    assert "python -m build_tools.aot --targets llvm-cpu" in result.stderr
