"""On the CPU a module's intermediates live in a workspace the runtime passes (``ops.runtime.workspace``): one per
thread, grown when a module needs more, reused by every later call. What must hold: a module never depends on
what the workspace held before (it is poisoned between calls here), modules of other sizes called in turn compute
their results, the workspace is not reallocated for a call that fits, and threads calling at once each get their
own (and their own timeline of fences). These run on local-task whatever OPS_TEST_DEVICE says: the GPUs' modules take no workspace."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ops import arrays, catalog, registry, runtime, verify
from ops.api import run

from conftest import poisoned

CPU = "local-task"
# the im2col form: gathered taps, the largest intermediates; the small one needs less than the large one
LARGE = catalog.problem("grouped_conv_bwd_data", "ck_default", batch=1, groups=4, in_channels=16, out_channels=8,
                        input_spatial=(12, 10), dtype="float32")
SMALL = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=2, in_channels=3, out_channels=4,
                        input_spatial=(5, 6, 4), dtype="float32")


def _check(problem, rng) -> None:
    module = registry.module(problem)
    inputs = module.random_inputs(problem, rng)
    (shape, dtype), = module.results(problem)
    got = run(problem, inputs, CPU, poisoned(shape, dtype, CPU)).to_host()
    error = verify.relative_error(got, module.reference(problem, inputs))
    assert error <= verify.tolerance(problem.op, problem.dtype), (problem.name, error)


def _poison_workspace() -> None:
    buffer = runtime.workspace(CPU, 0)
    mapped = buffer.map()
    mapped.asarray((buffer.byte_length() // 4,), np.dtype(np.float32))[:] = np.nan
    del mapped


def test_modules_of_two_sizes_in_turn_share_one_workspace_and_never_read_stale_data(rng):
    large = arrays.ready(LARGE, CPU).transient_bytes
    small = arrays.ready(SMALL, CPU).transient_bytes
    assert 0 < small < large, (small, large)
    runtime.release_workspaces()  # loading ran each module's known-answer check, in this thread's workspace
    _check(SMALL, rng)
    assert runtime.workspace(CPU, 0).byte_length() == small
    _check(LARGE, rng)  # grows
    first = runtime.workspace(CPU, 0)
    assert first.byte_length() == large
    for problem in (SMALL, LARGE, SMALL):
        _poison_workspace()
        _check(problem, rng)
        assert runtime.workspace(CPU, 0) is first  # reused, not reallocated


def test_threads_calling_at_once_each_use_their_own_workspace(rng):
    seeds = rng.integers(1 << 31, size=2)
    buffers, failures = {}, []

    def work(index: int) -> None:
        try:
            thread_rng = np.random.default_rng(seeds[index])
            for _ in range(3):
                _check(LARGE, thread_rng)
            buffers[index] = runtime.workspace(CPU, 0)
        except Exception as error:  # noqa: BLE001 - reported below, with the thread
            failures.append((index, error))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert buffers[0] is not buffers[1]


def test_threads_calling_one_module_at_once_each_reach_their_own_fences(rng):
    """A module's call waits on a fence of its thread's own timeline (``runtime._next_fence``): calls of one module
    from two threads at once finish in any order, which one shared timeline could not record (IREE refuses a
    value below one already signalled)."""
    function = arrays.ready(SMALL, CPU).function
    module = registry.module(SMALL)
    inputs = [runtime.to_device(a, CPU) for a in module.random_inputs(SMALL, rng)]
    expected = module.reference(SMALL, [a.to_host() for a in inputs])
    (shape, dtype), = module.results(SMALL)
    failures = []

    def work() -> None:
        try:
            for _ in range(40):
                got = function(*inputs, poisoned(shape, dtype, CPU))[-1].to_host()
                error = verify.relative_error(got, expected)
                assert error <= verify.tolerance(SMALL.op, SMALL.dtype), error
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def test_a_failed_queued_call_does_not_fail_the_threads_later_calls(rng):
    """A call that waits on a failed fence fails, and so does its signal (the thread's timeline semaphore, which
    stays failed): the failure is raised once, and the thread's next calls take a new timeline and compute."""
    function = arrays.ready(SMALL, CPU).function
    _check(SMALL, rng)
    broken = function.device.create_semaphore(0)
    broken.fail("a call before this one failed")
    runtime._queued.fence, runtime._queued.device = runtime.rt.HalFence.create_at(broken, 1), function.device
    module = registry.module(SMALL)
    (shape, dtype), = module.results(SMALL)
    with pytest.raises(Exception, match="a call before this one failed"):
        function(*module.random_inputs(SMALL, rng), poisoned(shape, dtype, CPU))
    assert getattr(runtime._queued, "fence", None) is None
    for _ in range(2):
        _check(SMALL, rng)
