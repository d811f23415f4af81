"""Known-answer checks (ops/known_answer.py): a module is served on a device only after computing a known answer
there; a wrong one is caught, recorded, and never served."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ops import api, arrays, compiler, dtypes, executor, known_answer, policy, registry, targets
from ops.operators import conv_bwd_data, grouped_conv_bwd_weight

CPU = targets.parse_target("llvm-cpu")


def _strided_problem(batch: int = 2, layout: str = "NHWC", in_channels: int = 4):
    return conv_bwd_data.problem_from_params(
        batch=batch, in_channels=in_channels, out_channels=8, input_spatial=(7, 7), filter_spatial=(3, 3), stride=(2, 2),
        dilation=(1, 1), padding=((1, 1), (1, 1)), layout=layout, dtype="float32")


def _answers(problem):
    inputs = known_answer.inputs_for(problem)
    return inputs, [np.asarray(registry.module(problem).reference(problem, inputs), dtype=np.float32)]


def test_the_right_answer_passes_and_a_wrong_phase_or_batch_index_fails_a_sampled_check(monkeypatch):
    monkeypatch.setattr(known_answer, "WHOLE", 0)  # the stratified sample, on a problem small enough to see
    problem = _strided_problem(batch=9)
    inputs, (right,) = _answers(problem)
    assert known_answer.judge(problem, inputs, [right]).passed
    wrong_phase = right.copy()
    wrong_phase[:, 1::2, 0::2, :] *= -1  # one stride phase of grad_in (odd rows, even columns)
    verdict = known_answer.judge(problem, inputs, [wrong_phase])
    assert not verdict.passed and verdict.position[2] % 2 == 1 and verdict.position[3] % 2 == 0
    wrong_batch = right.copy()
    wrong_batch[-1] = right[0]  # the last batch index computed from the first's data
    assert not known_answer.judge(problem, inputs, [wrong_batch]).passed
    unwritten = right.copy()
    unwritten[0, 0, 0, 0] = np.nan
    assert known_answer.judge(problem, inputs, [unwritten]).worst == np.inf


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_rounded_right_answer_is_no_false_alarm(dtype):
    """A result that is the float64 answer rounded to float16/bfloat16 passes; the same with one weight tap left
    out of every position does not (each position's tolerance follows its own terms)."""
    problem = grouped_conv_bwd_weight.problem_from_params(
        batch=4, groups=2, in_channels=4, out_channels=4, input_spatial=(9, 9), filter_spatial=(3, 3), stride=(2, 2),
        dilation=(1, 1), padding=((1, 1), (1, 1)), layout="NHWC", dtype=dtype)
    inputs = known_answer.inputs_for(problem)
    right = grouped_conv_bwd_weight.reference(problem, inputs)
    rounded = right.astype(dtypes.numpy_dtype(problem.out_dtype))
    assert known_answer.judge(problem, inputs, [rounded]).passed
    wrong = right.copy()
    wrong[:, 1, 1, :] = 0  # the centre tap's gradient lost
    assert not known_answer.judge(problem, inputs, [wrong]).passed


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_16_bit_weight_gradient_that_reads_into_the_next_chunk_fails(dtype):
    """The fault IREE 3.13 compiled into gemm-form modules whose chunks were not whole K tiles (docs/perf/h200-gemm):
    each of 256 chunks of 392 rows summed 8 of the next chunk's rows too, over ResNet-50's first stage (100,352
    rows). Its error is a fraction of 2 u_out of the terms' magnitudes (version 2 of the check passed it in
    bfloat16), and many times the bound a right float32 sum rounded once can miss by; the rounded right answer
    still passes."""
    problem = grouped_conv_bwd_weight.problem_from_params(
        batch=32, in_channels=8, out_channels=8, input_spatial=(56, 56), filter_spatial=(1, 1), layout="NHWC",
        dtype=dtype)
    inputs = known_answer.inputs_for(problem)
    x, grad_out = (np.asarray(a, np.float64).reshape(-1, 8) for a in inputs)  # the (n, o) rows
    chunks = np.arange(len(x)).reshape(256, 392)
    read = np.concatenate([np.concatenate([chunk, chunks[(i + 1) % 256][:8]]) for i, chunk in enumerate(chunks)])
    wrong = (grad_out[read].T @ x[read])[:, None, None, :]
    right = grouped_conv_bwd_weight.reference(problem, inputs)
    out = dtypes.numpy_dtype(problem.out_dtype)
    assert known_answer.judge(problem, inputs, [right.astype(out)]).passed
    assert not known_answer.judge(problem, inputs, [wrong.astype(out)]).passed


def test_verdicts_are_recorded_and_a_pass_is_trusted_later(monkeypatch, tmp_path):
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path))
    problem = _strided_problem(batch=3)
    checks = []
    original = known_answer.verify
    monkeypatch.setattr(known_answer, "verify", lambda p, run: checks.append(p.name) or original(p, run))
    executor.forget()
    arrays.ready(problem, "local-task")
    assert checks == [problem.name]
    assert len(list((tmp_path / "verified").glob("*.pass"))) == 1
    executor.forget()  # as a new process: the module is loaded again, its pass recalled
    arrays.ready(problem, "local-task")
    assert checks == [problem.name]


def test_ops_verify_off_always_and_a_wrong_value(monkeypatch, tmp_path, rng):
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path))
    problem = _strided_problem(batch=4, layout="NCHW")
    inputs = conv_bwd_data.random_inputs(problem, rng)
    checks = []
    original = known_answer.verify
    monkeypatch.setattr(known_answer, "verify", lambda p, run: checks.append(p.name) or original(p, run))
    executor.forget()
    monkeypatch.setenv("OPS_VERIFY", "off")
    api.run(problem, inputs)
    assert checks == [] and not (tmp_path / "verified").exists()
    executor.forget()
    monkeypatch.setenv("OPS_VERIFY", "always")
    for _ in range(2):
        api.run(problem, inputs)
    assert checks == [problem.name] * 3  # at load, then before each call
    monkeypatch.setenv("OPS_VERIFY", "sometimes")
    with pytest.raises(ValueError, match="OPS_VERIFY must be one of first, always, off, but got 'sometimes'"):
        api.run(problem, inputs)


_FRESH_PROCESS = textwrap.dedent("""
    import json, warnings
    import numpy as np, torch
    from ops import api, known_answer
    from ops.operators import conv_bwd_data
    import ops.torch as otorch

    problem = conv_bwd_data.problem_from_params(
        batch=2, in_channels=4, out_channels=8, input_spatial=(7, 7), filter_spatial=(3, 3), stride=(2, 2),
        dilation=(1, 1), padding=((1, 1), (1, 1)), layout="NHWC", dtype="float32")
    report = {}
    try:
        api.run(problem, conv_bwd_data.random_inputs(problem, np.random.default_rng(0)))
    except known_answer.WrongResultError as error:
        report["numpy_error"] = str(error)
    torch.manual_seed(0)
    x = torch.randn(2, 4, 7, 7).to(memory_format=torch.channels_last).requires_grad_()
    w = torch.randn(8, 4, 3, 3).to(memory_format=torch.channels_last)
    g = torch.randn(2, 8, 4, 4).to(memory_format=torch.channels_last)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        otorch.conv2d(x, w, stride=2, padding=1).backward(g)
        ours = x.grad.clone()
        x.grad = None
        otorch.conv2d(x, w, stride=2, padding=1).backward(g)
    x.grad = None
    torch.nn.functional.conv2d(x.double(), w.double(), stride=2, padding=1).backward(g.double())
    report["error"] = float((ours.double() - x.grad).norm() / x.grad.norm())
    report["warnings"] = [str(w.message) for w in caught if "PyTorch's own kernel" in str(w.message)]
    print(json.dumps(report))
""")


def test_a_module_that_computes_a_wrong_result_is_caught_in_a_fresh_process(tmp_path):
    """A simulated miscompile: the problem's own module, its first stride phase's results doubled, compiled and
    stored under the right module's key with its digest. A fresh process never serves it: the NumPy API raises
    an error naming the operator, the problem and the worst error; ops.torch gives the right gradient (PyTorch's
    own kernel, said once)."""
    cache = tmp_path / "cache"
    problem = _strided_problem()
    specs = policy.module_specs(problem, CPU)  # every CPU form, each miscompiled: nothing right to fall back to
    store = "  ^bb0(%acc: f32, %unused: f32):\n\n    linalg.yield %acc : f32"
    for spec in specs:
        assert store in spec.mlir
        altered = spec.mlir.replace(store, "  ^bb0(%acc: f32, %unused: f32):\n    %twice = arith.addf %acc, %acc : f32\n"
                                           "    linalg.yield %twice : f32", 1)
        wrong = compiler.ModuleSpec(spec.name, altered, spec.target, spec.extra_flags)
        compiler.compile_module(wrong, spec.path(cache, compiler.compiler_version()))
    environment = {**os.environ, "OPS_CACHE_DIR": str(cache), "OPS_ARTIFACTS_DIR": str(tmp_path / "none"),
                   "OPS_VERIFY": "first"}
    done = subprocess.run([sys.executable, "-c", _FRESH_PROCESS], env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    message = report["numpy_error"]
    assert message.startswith("conv_bwd_data: no compiled form of " + problem.name) and "worst" in message
    assert report["error"] < 1e-5
    assert len(report["warnings"]) == 1 and problem.name in report["warnings"][0]
    # each form refused on both paths that tried it: the CPU launcher's, then IREE's runtime's
    assert len(list((cache / "verified").glob("*.fail"))) == 2 * len(specs)


def test_the_torch_path_gathers_the_sampled_positions_before_they_reach_the_host(monkeypatch):
    """ops.torch's check reduces a result to the sampled positions where it lies (index_select on its device), in
    the problem's layout: the same values the whole result, reduced on the host, gives."""
    torch = pytest.importorskip("torch")
    from ops.torch import calls

    monkeypatch.setattr(known_answer, "WHOLE", 0)
    problem = _strided_problem(batch=9, in_channels=6)  # NHWC: channels-last tensors
    cpu = torch.device("cpu")
    kernel = calls.kernel_for(problem, cpu)
    inputs = known_answer.inputs_for(problem)
    sample = known_answer.sample_of(problem, inputs)
    assert [axis for axis, _ in sample.axes] == [0, 3]  # batch indices, then channels
    gathered = executor.known_run(kernel, inputs, sample.axes).results
    whole = executor.known_run(kernel, inputs).results
    assert gathered[0].shape == (4, 7, 7, 4) and np.array_equal(gathered[0], known_answer.take(whole[0], sample.axes))
    assert known_answer.verify(problem, lambda i, axes: executor.known_run(kernel, i, axes)).passed


def test_ops_verify_always_checks_every_torch_call(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    import ops.torch as otorch

    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("OPS_VERIFY", "always")
    checks = []
    original = known_answer.verify
    monkeypatch.setattr(known_answer, "verify", lambda p, run: checks.append(p.name) or original(p, run))
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    w = torch.randn(5, 3, 3, 3)
    for step in range(2):
        x.grad = None
        otorch.conv2d(x, w, padding=1, stride=2).sum().backward()
    assert len(checks) == 3 and len(set(checks)) == 1  # at load, then before each of the two calls
    leaf = x.detach().double().requires_grad_()
    torch.nn.functional.conv2d(leaf, w.double(), padding=1, stride=2).sum().backward()
    assert torch.allclose(x.grad.double(), leaf.grad, rtol=1e-5, atol=1e-5)


def test_an_unwritten_position_outside_the_sample_fails(monkeypatch):
    """The whole results are searched for NaN, infinities and negative indices (the NaN-filled destinations a module
    left unwritten), the positions the sample does not keep too."""
    monkeypatch.setattr(known_answer, "WHOLE", 0)
    problem = _strided_problem(batch=9, in_channels=12)
    inputs, (right,) = _answers(problem)
    sample = known_answer.sample_of(problem, inputs)
    kept_batches, kept_channels = (set(kept.tolist()) for _, kept in sample.axes)
    n = min(set(range(9)) - kept_batches)
    c = min(set(range(12)) - kept_channels)
    assert known_answer.judge(problem, inputs, [right]).passed
    unwritten = right.copy()
    unwritten[n, 3, 3, c] = np.nan
    verdict = known_answer.judge(problem, inputs, [unwritten])
    assert not verdict.passed and verdict.unwritten == 1
    assert "1 positions of the whole results are NaN, infinite or -1" in verdict.describe()


# Layers the batch sample once refused (issue 44), compiled and checked at their own, sampled, sizes.
_REFUSED_BEFORE = [
    pytest.param("conv_bwd_data", dict(batch=64, in_channels=64, out_channels=64, input_spatial=(8, 8),
                                       filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"), id="n-equals-k"),
    pytest.param("grouped_conv_bwd_data", dict(batch=64, groups=16, in_channels=8, out_channels=8, input_spatial=(8, 8),
                                               filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32",
                                               epilogue="acc + d0", d_kinds=("channel",)), id="per-channel-d"),
    pytest.param("maxpool2d_bwd", dict(batch=32, channels=32, input_spatial=(32, 32), kernel_size=(3, 3), stride=(2, 2),
                                       padding=(1, 1), layout="NHWC", dtype="float32"), id="pool-n-equals-c"),
]


@pytest.mark.parametrize("op, params", _REFUSED_BEFORE)
def test_right_modules_at_sampled_sizes_pass_the_whole_chain(monkeypatch, tmp_path, op, params):
    monkeypatch.setenv("OPS_CACHE_DIR", str(tmp_path))
    operator = registry.module(op)
    problem = operator.problem_from_params(**params)
    inputs = known_answer.inputs_for(problem)
    assert known_answer.sample_of(problem, inputs).axes, "the check must be sampled at this size"
    executor.forget()
    got = api.run(problem, inputs)  # refused with WrongResultError before the sample went by roles
    assert len(list((tmp_path / "verified").glob("*.pass"))) == 1
    expected = operator.reference(problem, inputs)
    np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=1e-4, atol=1e-4)
