"""The ahead-of-time build: parallel, incremental, and a failing problem does not stop the others."""

from __future__ import annotations

import json

from build_tools import aot
from ops import compiler


def test_build_records_modules_skips_current_ones_and_reports_failures(tmp_path, monkeypatch, capsys):
    out = tmp_path / "artifacts"
    assert aot.build(["ck_examples"], ["llvm-cpu"], out, jobs=2, ops=["maxpool2d_bwd"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["compiler_version"] == compiler.installed_compiler_version()
    modules = manifest["modules"]
    assert {m["problem"] for m in modules} == {"ck_default", "ck_2x2_s2", "resnet_stem"}
    for m in modules:
        assert (out / m["module"]).is_file() and m["dispatches"] >= 1 and m["compile_seconds"] > 0
        assert m["flags"][0] == "--iree-hal-target-device=local" and len(m["key"]) == 64

    capsys.readouterr()
    compiles = compiler.stats["compiles"]
    assert aot.build(["ck_examples"], ["llvm-cpu"], out, jobs=2, ops=["maxpool2d_bwd"]) == 0
    assert compiler.stats["compiles"] == compiles  # nothing changed, nothing compiled
    assert capsys.readouterr().out.count("up to date") == 3

    real_specs = aot.module_specs

    def one_broken(op, problem, target, extra_flags=()):
        specs = real_specs(op, problem, target, extra_flags)
        if problem.input_spatial == (112, 112):
            return [compiler.ModuleSpec(s.name, s.mlir.replace("linalg.yield", "linalg.not_an_op", 1), s.target) for s in specs]
        return specs

    monkeypatch.setattr(aot, "module_specs", one_broken)
    assert aot.build(["ck_examples"], ["llvm-cpu"], tmp_path / "second", jobs=2, ops=["maxpool2d_bwd"]) == 1
    printed = capsys.readouterr()
    assert "failed     llvm-cpu     maxpool2d_bwd/resnet_stem" in printed.out
    assert "2 of 3 modules ready (1 failed)" in printed.out
    assert "iree-compile failed for maxpool2d_bwd" in printed.err and "not_an_op" in printed.err
    assert len(json.loads((tmp_path / "second" / "manifest.json").read_text())["modules"]) == 2
