"""What a newcomer tripped on: each with its fix's test (issue 24)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ops
from ops import arrays, cli, compiler, executor, known_answer, runtime, targets
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


def test_a_problem_in_a_few_words():
    """Operator, layout, dtype, sizes, and what differs from the defaults: enough to tell a model's layers apart."""
    from ops.operators import conv_bwd_data, grouped_conv_bwd_data, maxpool2d, maxpool2d_fwd

    dense = conv_bwd_data.problem_from_params(batch=64, in_channels=64, out_channels=64, input_spatial=(8, 8),
                                              filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32")
    assert dense.summary == "conv_bwd_data nchw float32 n64 c64->k64 8x8 f3x3 p1"
    grouped = grouped_conv_bwd_data.problem_from_params(
        batch=2, groups=4, in_channels=3, out_channels=5, input_spatial=(9, 7), filter_spatial=(3, 1), stride=(2, 1),
        dilation=(2, 2), padding=((1, 0), (0, 0)), layout="NHWC", dtype="bfloat16", epilogue="add_relu",
        d_kinds=("channel",))
    assert grouped.summary == ("grouped_conv_bwd_data nhwc bfloat16 n2 g4 c3->k5 9x7 f3x1 s2x1 d2 p1_0x0_0 "
                               "epilogue max(acc+d0,0.0)")
    pool = maxpool2d_fwd.problem_from_params(batch=1, channels=8, input_spatial=(12, 12), kernel_size=3, stride=2,
                                             padding=1, layout="NHWC", dtype="float16", input_activation="relu")
    assert pool.summary == "maxpool2d_fwd nhwc float16 n1 c8 12x12 k3x3 s2 p1 relu"
    backward = maxpool2d.problem_from_params(batch=1, channels=8, input_spatial=(12, 12), kernel_size=3, stride=2,
                                             padding=1, layout="NHWC", dtype="float16")
    assert backward.summary.endswith(" k3x3 s2 p1 from indices")


def test_a_compile_on_first_use_says_so_in_one_short_line_per_problem_and_quiet_silences_it(monkeypatch, tmp_path,
                                                                                           capsys):
    """One line per problem, under 100 characters: the operator, the shape and the target, even where two of its
    forms are compiled (the first does not compile here); where modules are kept, how to compile ahead and how to
    silence it all, once per process; nothing with OPS_QUIET=1."""
    from ops import policy
    from ops.operators import conv_bwd_data

    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiler, "_said", set())
    executor.forget()
    cpu = targets.parse_target("llvm-cpu")
    conv = conv_bwd_data.problem_from_params(batch=4, in_channels=16, out_channels=32, input_spatial=(15, 15),
                                             filter_spatial=(3, 3), stride=2, padding=1, layout="NCHW",
                                             dtype="float32")
    specs = policy.module_specs(conv, cpu)
    broken = compiler.ModuleSpec(conv.name, "func.func @f() { not_an_op }", cpu, title=conv.summary)
    before = compiler.stats["compiles"]
    compiler.load_first([broken, *specs])
    assert compiler.stats["compiles"] == before + 2  # two forms compiled
    pool = avgpool3d.problem_from_params(batch=1, channels=2, input_spatial=(4, 4, 4), kernel_size=(2, 2, 2),
                                         stride=(2, 2, 2), padding=(0, 0, 0), layout="NDHWC", dtype="float32")
    arrays.ready(pool, "local-task")
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ops: ")]
    assert said == [
        "ops: compiling conv_bwd_data nchw float32 n4 c16->k32 15x15 f3x3 s2 p1 for llvm-cpu (once)",
        f"ops: compiled modules are kept in {compiler.cache_dir()}; ops.torch.precompile or python -m "
        "build_tools.aot compiles them ahead; OPS_QUIET=1 silences these lines",
        "ops: compiling avgpool3d_bwd ndhwc float32 n1 c2 4x4x4 k2x2x2 s2 for llvm-cpu (once)",
    ]
    assert all(len(line) < 100 for line in said if line.startswith("ops: compiling"))
    monkeypatch.setenv("OPS_QUIET", "1")
    other = avgpool3d.problem_from_params(batch=2, channels=2, input_spatial=(4, 4, 4), kernel_size=(2, 2, 2),
                                          stride=(2, 2, 2), padding=(0, 0, 0), layout="NDHWC", dtype="float32")
    arrays.ready(other, "local-task")
    assert "ops: " not in capsys.readouterr().err
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
    executor.forget()
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
    from ops.torch import kernels

    _refused_on(monkeypatch, {"cpu-launch"})
    x = torch.randn(1, 3, 10, 6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = otorch.max_pool2d(x, 2)
    assert torch.equal(y, torch.nn.functional.max_pool2d(x, 2))
    (call,) = kernels.max_pool2d.ready.values()
    assert type(call.kernel) is executor.RuntimeCall
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


def _small_conv(rng):
    """A small float32 backward-data problem through the public API: its arguments and its float64 reference."""
    from ops.operators import conv_bwd_data

    problem = conv_bwd_data.problem_from_params(batch=1, in_channels=3, out_channels=2, input_spatial=(6,),
                                                filter_spatial=(3,), stride=2, padding=1, layout="NWC",
                                                dtype="float32")
    grad_out, weight = conv_bwd_data.random_inputs(problem, rng)
    call = dict(input_shape=(1, 6, 3), stride=2, padding=1, layout="NWC")
    return problem, (grad_out, weight), call, conv_bwd_data.reference(problem, [grad_out, weight])


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_cache_files_and_folders_are_as_readable_as_the_umask_says(umask, monkeypatch, tmp_path, rng):
    """Under umask 022 everything a compile, its plan, its verdict and a failed compile leave is readable by all
    (0o644, folders and the compile script 0o755); under 077 it stays private (0o600, 0o700)."""
    import stat

    cache = tmp_path / "cache"
    monkeypatch.setenv("OPS_CACHE_DIR", str(cache))
    executor.forget()
    monkeypatch.setattr(known_answer, "_remembered", {})  # the verdict is recorded, not recalled from the last case
    problem, arrays, call, expected = _small_conv(rng)
    broken = compiler.ModuleSpec(problem.name, "func.func @f() { not_an_op }", targets.parse_target("llvm-cpu"))
    before = os.umask(umask)
    try:
        np.testing.assert_allclose(ops.conv_bwd_data(*arrays, **call), expected, rtol=1e-5, atol=1e-6)
        with pytest.raises(compiler.CompileError):
            compiler.load_first([broken])
    finally:
        os.umask(before)
    modes = {p.relative_to(cache).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in cache.rglob("*")}
    suffixes = {".mlir", ".compile.sh", ".vmfb", ".vmfb.sha256", ".launch-v1.json", ".launch-v1.json.sha256",
                ".vmfb.failed", ".pass"}
    assert suffixes <= {next((s for s in suffixes if name.endswith(s)), None) for name in modes}, sorted(modes)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o777 & ~umask
    for name, mode in modes.items():
        wide = (cache / name).is_dir() or name.endswith(".compile.sh")
        assert mode == (0o777 if wide else 0o666) & ~umask, (name, oct(mode))


def _read_only_file_system(monkeypatch, root) -> None:
    """Every write under ``root`` fails as on a read-only file system (EROFS): a file created or opened for writing,
    a folder made, a rename, a removal (tests run as root, whom a chmod does not stop). Calls relative to a folder's
    descriptor (``dir_fd``, shutil.rmtree's) are taken to be under ``root``."""
    import builtins
    import errno
    import io

    root = os.path.abspath(root)

    def refused(*paths, dir_fd=None):
        for path in paths:
            if dir_fd is not None or os.path.abspath(os.fsdecode(path)).startswith(root):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    real_os_open, real_open = os.open, builtins.open

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
            refused(path, dir_fd=dir_fd)
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    def open_(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+"):
            refused(file)
        return real_open(file, mode, *args, **kwargs)

    def guarded(real, arity):
        def call(*args, **kwargs):
            refused(*args[:arity], dir_fd=kwargs.get("dir_fd", kwargs.get("src_dir_fd")))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)
    for name, arity in (("mkdir", 1), ("unlink", 1), ("remove", 1), ("rmdir", 1), ("replace", 2), ("rename", 2)):
        monkeypatch.setattr(os, name, guarded(getattr(os, name), arity))


@pytest.mark.parametrize("read_only", ["cache", "llvm-cpu"])
def test_an_unwritable_cache_compiles_elsewhere_for_this_process_with_one_warning(read_only, monkeypatch, tmp_path,
                                                                                   rng):
    """An empty cache on a read-only file system (or whose target folder alone cannot be written): the call still
    returns the right result (compiled into a temporary folder of this process's own, the verdict kept in memory),
    one warning names the cache and the remedy, a second problem compiles with no second warning, and nothing is
    written into the cache."""
    import warnings

    cache = tmp_path / "read-only-cache"
    cache.mkdir()
    monkeypatch.setenv("OPS_CACHE_DIR", str(cache))
    executor.forget()
    monkeypatch.setattr(known_answer, "_remembered", {})
    monkeypatch.setattr(compiler, "_elsewhere", {})
    monkeypatch.setattr(compiler, "_writable", set())
    _read_only_file_system(monkeypatch, cache if read_only == "cache" else cache / read_only)
    problem, (grad_out, weight), call, expected = _small_conv(rng)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_allclose(ops.conv_bwd_data(grad_out, weight, **call), expected, rtol=1e-5, atol=1e-6)
        twice = ops.conv_bwd_data(np.concatenate([grad_out] * 2), weight, **{**call, "input_shape": (2, 6, 3)})
    np.testing.assert_allclose(twice, np.concatenate([expected] * 2), rtol=1e-5, atol=1e-6)
    said = [str(w.message) for w in caught]
    assert len(said) == 1, said
    assert said[0].startswith(f"ops: cannot write the module cache {cache} (Read-only file system)")
    assert "Set OPS_CACHE_DIR to a writable folder" in said[0] and len(said[0]) < 300
    assert list(cache.iterdir()) == []
    elsewhere = compiler.write_dir()
    assert elsewhere != cache and str(elsewhere) in said[0] and len(list(elsewhere.rglob("*.vmfb"))) == 2


def test_clearing_an_unwritable_cache_is_one_error_line_and_a_failing_status(monkeypatch, tmp_path, capsys):
    cache = tmp_path / "cache"
    (cache / "llvm-cpu").mkdir(parents=True)
    (cache / "llvm-cpu" / "m.vmfb").write_bytes(b"module")
    (cache / "verified").mkdir()
    monkeypatch.setenv("OPS_CACHE_DIR", str(cache))
    _read_only_file_system(monkeypatch, cache)
    assert cli.main(["cache", "--clear"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith(f"cache: {cache} (1 files") and "cleared" not in out
    assert len(err.splitlines()) == 1
    assert err.startswith(f"error: cannot clear {cache}: Read-only file system ({cache}/") and "OPS_CACHE_DIR" in err
    assert (cache / "llvm-cpu" / "m.vmfb").is_file()
