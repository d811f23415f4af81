"""build_tools/bench.py's CPU timing through IREE's runtime and as ops.torch runs the kernel (``--launcher torch``):
the same problem, the same check against the float64 reference, the same result."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from build_tools import bench  # noqa: E402


def _rows(tmp_path, launcher: str) -> list[dict]:
    out = tmp_path / launcher
    arguments = ["--suite", "ck_examples", "--ops", "maxpool2d_bwd", "--problems", "ck_2x2_s2,ck_default",
                 "--set", "batch=1", "--set", "dtype=float32", "--repeat", "2", "--seed", "3", "--launcher", launcher,
                 "--out", str(out)]
    assert bench.main(arguments) == 0  # every row's check passed
    (written,) = out.glob("*.json")
    return json.loads(written.read_text())["rows"]


def test_the_torch_launcher_times_the_same_kernel_and_checks_it_the_same(tmp_path):
    runtime, launched = _rows(tmp_path, "runtime"), _rows(tmp_path, "torch")
    assert [r["problem"] for r in runtime] == [r["problem"] for r in launched] == ["ck_default", "ck_2x2_s2"]
    for a, b in zip(runtime, launched):
        assert (a["launcher"], b["launcher"]) == ("runtime", "torch")
        assert a["ok"] and b["ok"] and a["seconds"] > 0 and b["seconds"] > 0
        assert a["error"] == b["error"]  # the launcher's result is bitwise IREE's runtime's (tests/test_cpu_launch.py)


@pytest.mark.parametrize("arguments", [["--device", "cuda"], ["--flags=--iree-opt-level=O2"], ["--form", "x=1"]])
def test_the_torch_launcher_refuses_what_it_cannot_time(arguments, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--launcher", "torch", *arguments])
    assert "--launcher torch times the CPU's kernels" in capsys.readouterr().err
