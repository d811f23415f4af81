"""What a newcomer tripped on: each with its fix's test (issue 24)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ops
from ops import cli, compiler, runtime
from ops.operators import avgpool3d

REPO = Path(__file__).resolve().parent.parent


def test_a_torch_tensor_in_the_numpy_api_names_the_parameter_and_points_to_ops_torch():
    torch = pytest.importorskip("torch")  # the test extra installs it; the message needs no torch
    with pytest.raises(TypeError, match=r"conv_bwd_data: grad_out is a torch.Tensor; .* use ops.torch"):
        ops.conv_bwd_data(torch.randn(2, 8, 4, 4), np.ones((8, 4, 3, 3), np.float32), input_shape=(2, 4, 7, 7),
                          stride=2, padding=1, layout="NCHW")


def test_a_missing_device_is_one_line_before_any_work(monkeypatch, capsys):
    def unavailable(driver):
        raise RuntimeError(f"IREE could not open device {driver!r}: CUDA driver library 'libcuda.so' not available\n"
                           "  more lines of the runtime's own")

    monkeypatch.setattr(runtime, "get_device", unavailable)
    monkeypatch.setattr(cli, "run_problem", lambda *a, **k: pytest.fail("work began before the device was opened"))
    assert cli.main(["run", "conv_bwd_data", "--device", "cuda"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error == ["error: IREE could not open device 'cuda': CUDA driver library 'libcuda.so' not available"]


def test_an_unknown_key_names_the_operators_keys_and_help_says_key_value(capsys):
    assert cli.main(["run", "conv_bwd_data", "bogus=1"]) == 2
    error = capsys.readouterr().err
    assert "conv_bwd_data: unknown parameter 'bogus'; its parameters are batch, in_channels" in error
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert "key=value overrides a parameter" in capsys.readouterr().out
    assert "--repeat 3" in cli.__doc__ and "--repeat 5" not in cli.__doc__


def test_run_all_applies_overrides_to_each_operator_and_takes_no_problem(capsys, nothing_compiles):
    assert cli.main(["run", "all", "bogus=1"]) == 2
    assert "conv_bwd_data: unknown parameter 'bogus'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["run", "all", "--problem", "stride1_36"])
    assert "run all takes no --problem" in capsys.readouterr().err


def test_ops_torch_without_pytorch_names_the_extra():
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None; import ops.torch"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1
    assert "ModuleNotFoundError: ops.torch needs PyTorch, which is not installed: pip install " \
           "'iree-ck-backward-ops[torch]'" in done.stderr


def test_a_compile_on_first_use_says_so_once_and_quiet_silences_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    problem = avgpool3d.problem_from_params(batch=1, channels=2, input_spatial=(4, 4, 4), kernel_size=(2, 2, 2),
                                            stride=(2, 2, 2), padding=(0, 0, 0), layout="NDHWC", dtype="float32")
    runtime._functions.clear()
    runtime.function_for(problem, "local-task")
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ops: compiling")]
    assert len(said) == 1 and problem.name in said[0] and "llvm-cpu" in said[0] and "precompile" in said[0]
    monkeypatch.setenv("OPS_QUIET", "1")
    other = avgpool3d.problem_from_params(batch=2, channels=2, input_spatial=(4, 4, 4), kernel_size=(2, 2, 2),
                                          stride=(2, 2, 2), padding=(0, 0, 0), layout="NDHWC", dtype="float32")
    runtime.function_for(other, "local-task")
    assert "ops: compiling" not in capsys.readouterr().err
    assert cli.main(["cache"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"cache: {compiler.cache_dir()} (") and "MiB" in shown
    assert cli.main(["cache", "--clear"]) == 0
    assert list(compiler.cache_dir().iterdir()) == []


def test_a_test_run_leaves_nothing_in_the_temporary_directory(tmp_path):
    environment = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_geometry.py"],
                          capture_output=True, text=True, cwd=REPO, env=environment, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    assert not list(tmp_path.glob("ops-tests-*"))


def _refused_on(monkeypatch, paths: set) -> None:
    """Every known-answer check by one of ``paths`` (``cpu-launch``, ``iree-runtime``) fails, nothing recorded; the
    kernel ops and IREE's runtime forget what they loaded."""
    from conftest import fresh_kernel_calls
    from ops import known_answer

    wrong = known_answer.Verdict(False, 3.0, (0, 0, 0, 0, 0), 1.0, 4.0, 1)
    checked = known_answer.ensure
    monkeypatch.setattr(known_answer, "ensure", lambda problem, sha, device, path, run: wrong if path in paths
                        else checked(problem, sha, device, path, run))
    monkeypatch.setattr(runtime, "_functions", {})
    monkeypatch.setenv("OPS_CPU_LAUNCHER", "plan")
    fresh_kernel_calls(monkeypatch)


def test_a_problem_no_form_computes_right_falls_back_to_pytorch_with_one_warning_at_the_users_line(monkeypatch):
    """The CPU launcher's forms and then IREE's runtime's are refused: one warning per problem (the forward's and
    the backward's), at most two lines, attributed to this file (the forward's call and the ``backward()``), naming
    the operator, the problem and the remedies; PyTorch's results."""
    torch = pytest.importorskip("torch")
    import warnings

    import ops.torch as otorch
    from ops.torch import kernels

    _refused_on(monkeypatch, {"cpu-launch", "iree-runtime"})
    x = torch.randn(1, 2, 6, 4, 4, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # said once
            y = otorch.avg_pool3d(x, 2)
            y.sum().backward()
    expected = torch.nn.functional.avg_pool3d(x.detach(), 2)
    assert torch.equal(y.detach(), expected) and torch.allclose(x.grad, torch.full_like(x, 2 / 8))
    said = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    problems = [call.problem for op in (kernels.avg_pool3d_forward, kernels.avg_pool3d_backward)
                for call in op.ready.values()]
    assert len(said) == len(problems) == 2, [str(w.message) for w in said]
    for warning, problem in zip(said, problems):
        message = str(warning.message)
        assert warning.filename == __file__, (warning.filename, message)
        assert len(message.splitlines()) <= 2
        assert f"{problem.op} {problem.name}" in message and "PyTorch's own kernel computes it instead" in message
        assert "OPS_VERIFY=off" in message and "python -m ops cache --clear" in message and "report" in message
        assert "launcher" not in message  # the CPU's change of path is no part of the outcome


def test_a_launcher_refusal_the_runtime_serves_is_one_line_at_the_users_line(monkeypatch):
    torch = pytest.importorskip("torch")
    import warnings

    import ops.torch as otorch
    from ops.torch import calls, kernels

    _refused_on(monkeypatch, {"cpu-launch"})
    x = torch.randn(1, 3, 10, 6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = otorch.max_pool2d(x, 2)
    assert torch.equal(y, torch.nn.functional.max_pool2d(x, 2))
    (call,) = kernels.max_pool2d.ready.values()
    assert type(call.kernel) is calls.RuntimeKernel
    said = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and said[0].filename == __file__
    message = str(said[0].message)
    assert len(message.splitlines()) == 1 and call.problem.name in message and "IREE's runtime" in message


def test_a_float64_call_through_a_module_warns_at_the_users_line():
    torch = pytest.importorskip("torch")
    import ops.torch as otorch
    from ops.torch import functional

    functional.float64_warned.discard("conv2d")
    layer = otorch.convert(torch.nn.Conv2d(2, 3, 3)).double()
    with pytest.warns(UserWarning, match="conv2d: float64 has no kernel here") as caught:
        layer(torch.randn(1, 2, 5, 5, dtype=torch.float64))
    assert [w.filename for w in caught] == [__file__]


_RUNTIME_CALLS = """
import numpy as np, torch
import ops, ops.torch as otorch
x = np.random.randn(1, 4, 4, 4, 2).astype(np.float32)
assert ops.avgpool3d_fwd(x, kernel_size=2, stride=2).shape == (1, 2, 2, 2, 2)
t = torch.randn(2, 3, 6, 6, requires_grad=True)
otorch.conv2d(t, torch.randn(4, 3, 3, 3), padding=1).sum().backward()
assert t.grad is not None
"""


def test_the_runtime_path_exits_without_leak_reports():
    """Through IREE's runtime (the NumPy API, and ops.torch with OPS_CPU_LAUNCHER=runtime), the interpreter's exit
    prints no nanobind "leaked" lines: the runtime's objects are let go before it ends."""
    pytest.importorskip("torch")
    environment = {**os.environ, "OPS_CPU_LAUNCHER": "runtime", "OPS_QUIET": "1"}
    done = subprocess.run([sys.executable, "-c", _RUNTIME_CALLS], capture_output=True, text=True, cwd=REPO,
                          env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "leaked" not in done.stderr, done.stderr[:2000]


def test_a_listing_cut_short_by_its_reader_ends_without_a_traceback():
    """``python -m ops list | head -1``: the reader takes one line and closes the pipe. The pipe holds one page, so
    the listing (three pages and more) is still being written when it closes."""
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    process = subprocess.Popen([sys.executable, "-m", "ops", "list"], stdout=write_end, stderr=subprocess.PIPE,
                               cwd=REPO, text=True)
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        first = reader.readline()
    error = process.communicate(timeout=300)[1]
    assert first.split()[:2] == ["operator", "problem"]
    assert "Traceback" not in error and "BrokenPipeError" not in error, error
    assert process.returncode == 1


def test_help_shows_no_restructuredtext_quotes():
    done = subprocess.run([sys.executable, "-m", "ops", "--help"], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert done.returncode == 0 and "key=value overrides a problem parameter" in done.stdout
    assert "``" not in done.stdout and "(padding=1:0,0:1)" in done.stdout


def test_grouped_conv_bwd_weight_takes_kernel_size_for_a_release_with_a_deprecation_warning(rng):
    x = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
    grad_out = rng.standard_normal((1, 3, 3, 2)).astype(np.float32)
    with pytest.warns(DeprecationWarning, match=r"grouped_conv_bwd_weight: kernel_size= is deprecated.*use "
                                                r"filter_spatial=") as caught:
        old = ops.grouped_conv_bwd_weight(x, grad_out, groups=2, kernel_size=3)
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]
    assert np.array_equal(old, ops.grouped_conv_bwd_weight(x, grad_out, groups=2, filter_spatial=3))


def test_grouped_conv_bwd_weight_with_both_names_or_neither_is_a_type_error(nothing_compiles):
    x, grad_out = np.ones((1, 5, 5, 2), np.float32), np.ones((1, 3, 3, 2), np.float32)
    with pytest.raises(TypeError, match=r"grouped_conv_bwd_weight: got both filter_spatial= and kernel_size= "):
        ops.grouped_conv_bwd_weight(x, grad_out, groups=2, filter_spatial=3, kernel_size=3)
    with pytest.raises(TypeError, match=r"grouped_conv_bwd_weight: missing the keyword argument filter_spatial"):
        ops.grouped_conv_bwd_weight(x, grad_out, groups=2)


def test_the_torch_extra_has_a_lower_and_an_upper_bound_and_the_test_pin_stays():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: pip's own copy of tomli
        from pip._vendor import tomli as tomllib
    from packaging.requirements import Requirement
    from packaging.version import Version

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (torch,) = [Requirement(r) for r in extras["torch"]]
    operators = {spec.operator for spec in torch.specifier}
    assert torch.name == "torch" and {">=", "<"} <= operators
    assert all(Version(v) in torch.specifier for v in ("2.11.0", "2.13.0")) and Version("3.0") not in torch.specifier
    assert "torch==2.13.0" in extras["test"]
