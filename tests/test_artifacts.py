"""The committed ahead-of-time artifacts: current with the templates, and each module exports what the manifest says.

When a template or a tuning entry changes, these fail until the artifacts are rebuilt:
    python -m build_tools.aot --suite ck_examples --suite zoo --targets rocm:gfx942
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import iree.runtime as rt
from ops import catalog, compiler, targets, policy

ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
MANIFEST = json.loads((ARTIFACTS / "manifest.json").read_text())
COMMITTED_TARGET = targets.parse_target("rocm:gfx942")
REBUILD = "rebuild with: python -m build_tools.aot --suite ck_examples --suite zoo --targets rocm:gfx942"


def _tensor_types(text: str) -> list[str]:
    return re.findall(r"tensor<[^>]*>", text)


def _signature(mlir: str, function: str) -> list[str]:
    line = next(line for line in mlir.splitlines() if line.startswith(f"func.func @{function}("))
    aliases = dict(re.findall(r"^(![\w]+) = (tensor<[^>]*>)", mlir, flags=re.M))
    arguments = line[line.index("(") + 1:line.rindex(") ->")]
    return _tensor_types(re.sub(r"![\w]+", lambda m: aliases.get(m.group(0), m.group(0)), arguments))


def test_the_manifest_records_the_installed_compiler():
    assert MANIFEST["compiler_version"] == compiler.installed_compiler_version(), REBUILD


@pytest.mark.parametrize("suite", ["ck_examples", "zoo"])
def test_every_manifest_problem_has_a_current_gfx942_module(suite):
    version = MANIFEST["compiler_version"]
    stale = []
    for op, name, problem in catalog.problems(suite):
        specs = policy.module_specs(problem, COMMITTED_TARGET)
        if not any(spec.path(ARTIFACTS, version).is_file() for spec in specs):
            stale.append(f"{op}/{name}")
    assert not stale, f"no current module for {stale}; {REBUILD}"


def test_exported_functions_and_signatures_match_the_manifest():
    instance = rt.VmInstance()
    by_key = {m["key"]: m for m in MANIFEST["modules"]}
    checked = 0
    for op, name, problem in catalog.problems("ck_examples") + catalog.problems("zoo"):
        specs = policy.module_specs(problem, COMMITTED_TARGET)
        spec = next((s for s in specs if s.key(MANIFEST["compiler_version"]) in by_key), specs[0])
        record = by_key.get(spec.key(MANIFEST["compiler_version"]))
        assert record is not None, f"{op}/{name} is not in artifacts/manifest.json; {REBUILD}"
        assert record["function"] == problem.name and record["target"] == str(COMMITTED_TARGET)
        module = rt.VmModule.copy_buffer(instance, (ARTIFACTS / record["module"]).read_bytes())
        function = module.lookup_function(problem.name)
        assert function is not None, f"{record['module']} does not export {problem.name}"
        declared = _tensor_types(function.reflection["iree.abi.declaration"].split(") -> (")[0])
        assert declared == _signature(spec.mlir, problem.name), f"{op}/{name}: {declared}"
        checked += 1
    assert checked >= 40
