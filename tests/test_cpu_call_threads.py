"""ops.torch's CPU calls through IREE's runtime (``OPS_CPU_LAUNCHER=runtime``, and where a module has no launch plan)
and the threads beside them (the default launcher, on PyTorch's own threads: tests/test_cpu_launch.py):
- they release PyTorch's OpenMP pool first (``cpu_executor.RELEASE_OPENMP``): the pool's threads go, PyTorch's
  next parallel region makes them again, and the gradients do not change;
- they run with the calling thread under ``SCHED_BATCH`` (``cpu_executor.SCHED_BATCH``), and leave it as it was;
- a convolution layer's two gradient calls are queued back to back and waited for once
  (``cpu_executor.LAYER_CALLS_QUEUED``).
"""

import os

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

import numpy as np  # noqa: E402

from ops import cpu_executor, runtime  # noqa: E402
from ops.torch import calls, functional, kernels  # noqa: E402

from conftest import fresh_kernel_calls, iree_threads, pool_threads  # noqa: E402


@pytest.fixture(autouse=True)
def through_irees_runtime(monkeypatch):
    """Every kernel made in a test runs through IREE's runtime: the launcher switched, and no call prepared before
    (under the default launcher) reused."""
    monkeypatch.setattr(cpu_executor, "launcher", lambda: "runtime")
    fresh_kernel_calls(monkeypatch)


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def iree_thread_policies() -> dict:
    """IREE's own threads (its task workers) and their scheduling policies."""
    return {tid: os.sched_getscheduler(tid) for tid, iree in iree_threads().items() if iree}


@pytest.fixture
def sched_other():
    """The test's thread under SCHED_OTHER (a runner may start it under SCHED_BATCH), as it was again after."""
    before = os.sched_getscheduler(0)
    if before != os.SCHED_OTHER:
        try:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        except PermissionError:  # SCHED_IDLE without the privilege to leave it: nothing here can be tested
            pytest.skip("this thread runs under SCHED_IDLE and may not leave it")
    yield
    if before != os.SCHED_OTHER:
        os.sched_setscheduler(0, before, os.sched_param(0))


def conv_case(rng) -> tuple:
    """A grouped convolution's input, weight and output gradient (random, seeded from ``rng``)."""
    torch.manual_seed(int(rng.integers(2**31)))
    return (torch.randn(2, 8, 12, 12, requires_grad=True), torch.randn(8, 4, 3, 3, requires_grad=True),
            torch.randn(2, 8, 12, 12))


def parallel_region() -> None:
    torch.relu(torch.randn(1 << 22))  # large enough for ATen to use every thread


def test_the_release_lets_the_pool_go_and_pytorch_makes_it_again(two_threads):
    release = cpu_executor.openmp_release()
    assert release is not None, "PyTorch's OpenMP runtime was not found in /proc/self/maps"
    parallel_region()
    with_pool = pool_threads()
    assert release() == 0
    assert pool_threads() == with_pool - 1
    parallel_region()
    assert pool_threads() == with_pool


def test_a_cpu_kernel_call_releases_the_pool_and_keeps_pytorchs_gradients(two_threads, rng):
    assert cpu_executor.RELEASE_OPENMP
    x, w, grad = conv_case(rng)
    torch.autograd.grad(functional.conv2d(x, w, padding=1, groups=2), (x, w), grad)  # the kernels made and checked
    parallel_region()
    with_pool = pool_threads()
    ours = torch.autograd.grad(functional.conv2d(x, w, padding=1, groups=2), (x, w), grad)  # the pool released
    assert pool_threads() == with_pool - 1
    theirs = torch.autograd.grad(F.conv2d(x, w, padding=1, groups=2), (x, w), grad)
    for a, b in zip(ours, theirs):
        assert float((a - b).norm() / b.norm()) < 1e-5


def test_batch_scheduled_switches_the_calling_thread_and_back(sched_other):
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    assert cpu_executor.batch_scheduled(os.sched_getscheduler, 0) == os.SCHED_BATCH
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    with pytest.raises(ZeroDivisionError):
        cpu_executor.batch_scheduled(lambda: 1 / 0)
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_batch_scheduled_leaves_a_thread_it_did_not_switch_as_it_was(sched_other):
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    try:
        assert cpu_executor.batch_scheduled(os.sched_getscheduler, 0) == os.SCHED_BATCH
        assert os.sched_getscheduler(0) == os.SCHED_BATCH
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def test_a_cpu_kernel_call_runs_under_sched_batch(two_threads, sched_other, rng, monkeypatch):
    assert cpu_executor.SCHED_BATCH
    x, w, grad = conv_case(rng)
    torch.autograd.grad(functional.conv2d(x, w, stride=2, padding=1, groups=2), (x, w), grad[..., :6, :6])
    policies = []
    switching = cpu_executor.batch_scheduled

    def recorded(call, *args):
        return switching(lambda: (policies.append(os.sched_getscheduler(0)), call(*args))[1])

    monkeypatch.setattr(cpu_executor, "batch_scheduled", recorded)
    made = iree_thread_policies()
    assert made
    ours = torch.autograd.grad(functional.conv2d(x, w, stride=2, padding=1, groups=2), (x, w), grad[..., :6, :6])
    assert policies and set(policies) == {os.SCHED_BATCH}
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    assert iree_thread_policies() == made  # the switch stays with the calling thread
    theirs = torch.autograd.grad(F.conv2d(x, w, stride=2, padding=1, groups=2), (x, w), grad[..., :6, :6])
    for a, b in zip(ours, theirs):
        assert float((a - b).norm() / b.norm()) < 1e-5


def recorded_invokes(monkeypatch) -> list:
    """The ``queue`` argument of each module call from now on, in order (``None``: a call with its own fences)."""
    seen = []
    invoke = runtime.Function.invoke

    def recording(self, views, fences=None, queue=False):
        seen.append(None if fences is not None else queue)
        return invoke(self, views, fences, queue)

    monkeypatch.setattr(runtime.Function, "invoke", recording)
    return seen


def recorded_waits(monkeypatch) -> list:
    """The ``wait`` argument of each ``runtime.finish`` from now on that found a queued call to wait for."""
    waits = []
    finish = runtime.finish

    def recording(wait=None):
        if getattr(runtime._queued, "fence", None) is not None:
            waits.append(wait)
        return finish(wait)

    monkeypatch.setattr(runtime, "finish", recording)
    return waits


def test_a_layers_two_gradient_calls_are_queued_and_waited_for_once(two_threads, rng, monkeypatch):
    assert cpu_executor.LAYER_CALLS_QUEUED and cpu_executor.layer_calls_queued()  # this file runs IREE's runtime
    with monkeypatch.context() as launched:  # a launched call returns done: nothing to queue
        launched.setattr(cpu_executor, "launcher", lambda: "plan")
        assert not cpu_executor.layer_calls_queued()
    x, w, grad = conv_case(rng)
    torch.autograd.grad(functional.conv2d(x, w, padding=1, groups=2), (x, w), grad)  # the kernels made and checked
    seen, waits = recorded_invokes(monkeypatch), recorded_waits(monkeypatch)
    ours = torch.autograd.grad(functional.conv2d(x, w, padding=1, groups=2), (x, w), grad)
    assert seen == [True, True] and len(waits) == 1  # one wait, the block's, for both
    assert getattr(runtime._queued, "fence", None) is None
    theirs = torch.autograd.grad(F.conv2d(x, w, padding=1, groups=2), (x, w), grad)
    for a, b in zip(ours, theirs):
        assert float((a - b).norm() / b.norm()) < 1e-5
    seen.clear()
    torch.autograd.grad(functional.conv2d(x.detach(), w, padding=1, groups=2), (w,), grad)  # one: a plain call
    assert seen == [False]


def layer_calls(rng) -> tuple:
    """A strided grouped layer's two gradient calls (thunks) on seeded tensors, their modules' transient sizes,
    and PyTorch's gradients."""
    x, w, grad = conv_case(rng)
    grad = grad[..., :6, :6].contiguous()
    params = ([2, 2], [1, 1, 1, 1], [1, 1], 2)
    expected = torch.autograd.grad(F.conv2d(x, w, stride=2, padding=1, groups=2), (x, w), grad)
    x, w = x.detach(), w.detach()
    calls_made = [(kernels.conv_backward_input, (grad, w, None, list(x.shape), *params, False)),
                  (kernels.conv_backward_weight, (x, grad, list(w.shape), *params, False))]
    thunks = [lambda op=op, args=args: op.run(*args) for op, args in calls_made]
    for thunk in thunks:
        thunk()  # the kernels made and checked
    sizes = [op.ready[calls.signature(args)].kernel.function.transient_bytes for op, args in calls_made]
    return thunks, sizes, expected


def test_queued_calls_grow_the_workspace_only_after_the_queued_call_is_done(rng, monkeypatch):
    (data, weight), sizes, expected = layer_calls(rng)
    assert sizes[0] and sizes[1] and sizes[0] != sizes[1]
    finished = recorded_waits(monkeypatch)
    for first, second in ((data, weight), (weight, data)):  # in one of the two orders, the second call grows it
        runtime.release_workspaces()
        finished.clear()
        with cpu_executor.queued_calls():
            results = [first(), second()]
        grown = sizes[0] < sizes[1] if first is data else sizes[1] < sizes[0]
        assert len(finished) == 1 + grown  # a growth waited for the queued call first; then the block's end
        if first is weight:
            results.reverse()
        for got, want in zip(results, expected):
            assert float((got - want).norm() / want.norm()) < 1e-5


def test_a_block_that_raises_still_waits_for_its_queued_calls(rng):
    (data, _), _, expected = layer_calls(rng)
    with pytest.raises(ZeroDivisionError):
        with cpu_executor.queued_calls():
            result = data()
            1 / 0
    assert getattr(runtime._queued, "fence", None) is None
    assert float((result - expected[0]).norm() / expected[0].norm()) < 1e-5


def test_a_numpy_call_inside_a_block_starts_after_the_queued_call_and_waits_for_both(rng):
    """An ``ops.api`` call (its module waits on its own fence) inside a block queues behind the block's call:
    both results are right, and nothing is left queued."""
    from ops import api
    (data, _), _, expected = layer_calls(rng)
    grad_out, weight = rng.standard_normal((2, 4, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    x = torch.zeros(2, 3, 7, 7, dtype=torch.float64, requires_grad=True)
    (want,) = torch.autograd.grad(F.conv2d(x, torch.from_numpy(weight)), x, torch.from_numpy(grad_out))
    with cpu_executor.queued_calls():
        result = data()
        got = api.conv_bwd_data(grad_out.astype(np.float32), weight.astype(np.float32), input_shape=(2, 3, 7, 7),
                                layout="NCHW")
        assert getattr(runtime._queued, "fence", None) is None  # the plain call waited for the queued one too
    assert float((result - expected[0]).norm() / expected[0].norm()) < 1e-5
    assert np.linalg.norm(got - want.numpy()) / np.linalg.norm(want.numpy()) < 1e-5
