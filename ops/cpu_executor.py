"""The CPU side of the executor: a module's launch plan on PyTorch's own OpenMP threads, and how a CPU call through
IREE's runtime shares the cores with PyTorch's pool.

- **Launched** (``CpuLaunchedCall``, ``launcher() == "plan"``, the default): the plan's dispatch functions run in one
  parallel region of the pool PyTorch's own kernels use, the calling thread among them, on the tensors' own memory
  (``ops/launch/cpu.py``). Nothing is handed over or released; transients live in this thread's workspace.
- **Through IREE's runtime** (a module without a plan, a host without a C compiler for the runner, or
  ``OPS_CPU_LAUNCHER=runtime``): before each call PyTorch's OpenMP pool is released (``RELEASE_OPENMP``), the call
  waits with the calling thread under ``SCHED_BATCH`` (``SCHED_BATCH``), and a convolution layer's two calls may be
  queued behind each other with one wait (``queued_calls``, ``LAYER_CALLS_QUEUED``).

The measured evidence of each setting is beside it; docs/perf/cpu-step holds the runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from typing import Callable

from . import runtime
from .launch import cpu as cpu_launch

ALIGNMENT = 64  # IREE's CPU code and its runtime's host imports assume 64-byte aligned memory (buffer_heap.c)

# A CPU call through IREE's runtime first releases PyTorch's OpenMP pool (``omp_pause_resource_all``): libgomp's
# workers spin after every parallel region, on the cores IREE's workers are about to need. Measured with
# docs/perf/cpu-step/in-step: cnn3d's step 17.4 -> 15.4 and 19.6 -> 15.8 ms, resnext2d's 27.7 -> 27.8 and 32.9 ->
# 28.9 ms; the next parallel region makes its thread again (about 45 us).
RELEASE_OPENMP = True

# A CPU call through IREE's runtime waits with the calling thread under Linux's ``SCHED_BATCH`` (and back to
# ``SCHED_OTHER`` after; a thread may switch between the two without privileges). The call blocks in IREE's
# ``hal.fence.await``, and the worker that finishes the last dispatch wakes the caller *before* it marks its
# timepoint done, so the woken caller spins until that worker runs again; on two cores the woken caller preempted
# that very worker and spun to the scheduler's tick (4 ms). A ``SCHED_BATCH`` thread never preempts on wake-up, so
# the worker finishes first. Measured with docs/perf/cpu-step/sched-batch.
SCHED_BATCH = True

# A convolution layer's two gradient calls through IREE's runtime on the CPU are queued back to back (the weight
# gradient's module waits on the input gradient's fence in IREE's queue) and waited for once (``queued_calls``):
# IREE's workers go from one module to the next without a round trip through the calling thread. Measured with
# docs/perf/cpu-step/seventh: resnext2d's ten layers 12.80 -> 12.47 ms (1.01-1.05x a layer; an earlier run 14.88 ->
# 14.10), cnn3d's two 5.51 -> 5.39 ms, results bitwise equal. In whole steps the gain is within the noise.
LAYER_CALLS_QUEUED = True

# The launched calls' shared workspace (``launch_workspace``: their transients, such as the per-image forms'
# gathered windows, 10.6 MB for cnn3d's 3-D stem) is an anonymous mapping with ``MADV_HUGEPAGE``, where Linux offers
# it: 2 MB pages, so the gathers and the matmuls that stream it miss the TLB 512 times less often. Measured with
# docs/perf/cpu-step/eleventh: the kernels' sum a step cnn3d 2.251, 2.225 -> 2.181 ms (its 3-D stem 0.851 -> 0.799)
# and resnext2d 4.876, 4.871 -> 4.762 ms; the whole steps within their noise.
WORKSPACE_HUGE_PAGES = True


def launcher() -> str:
    """How a CPU module runs under ``ops.torch``: ``"plan"``, its launch plan's dispatch functions on PyTorch's own
    OpenMP threads, or ``"runtime"``, IREE's runtime on its own workers (``OPS_CPU_LAUNCHER=runtime``; also where a
    module has no plan, or the host no C compiler for the runner). Measured (docs/perf/cpu-step/ninth): IREE's runtime
    hands each call to its workers beside PyTorch's pool, which must be released first and made again after; on
    PyTorch's threads a call costs neither."""
    return "runtime" if os.environ.get("OPS_CPU_LAUNCHER", "") == "runtime" else "plan"


def layer_calls_queued() -> bool:
    """Whether a convolution layer's two gradient calls on the CPU are queued behind each other, one wait
    (``LAYER_CALLS_QUEUED``): through IREE's runtime only. A launched call has returned done, so the queue's block
    would only cost its own time (about 3 us a layer)."""
    return LAYER_CALLS_QUEUED and launcher() == "runtime"


@functools.lru_cache(maxsize=None)
def openmp_release() -> Callable[[], int] | None:
    """The OpenMP runtime this process has loaded (PyTorch's): its ``omp_pause_resource_all(omp_pause_soft)``, which
    lets the calling thread's pool go (libgomp's threads exit; the next parallel region makes them again). None
    where no OpenMP 5.0 runtime is loaded, or the process's maps cannot be read (not Linux)."""
    for library in cpu_launch.loaded_openmp_runtimes():
        pause = getattr(library, "omp_pause_resource_all", None)
        if pause is not None:
            pause.argtypes, pause.restype = [ctypes.c_int], ctypes.c_int
            return functools.partial(pause, 1)  # omp_pause_soft
    return None


_SCHED_PARAM = os.sched_param(0) if hasattr(os, "sched_param") else None


def batch_waits() -> bool:
    """Whether CPU calls wait under ``SCHED_BATCH``: the setting, where the platform has it."""
    return SCHED_BATCH and hasattr(os, "SCHED_BATCH")


def batch_scheduled(call: Callable, *args):
    """``call(*args)`` with the calling thread under ``SCHED_BATCH`` where it was under ``SCHED_OTHER`` (Linux; an
    unprivileged thread may switch between the two, its nice value kept), then back: a batch thread woken from a
    wait does not preempt the running thread that woke it (``SCHED_BATCH``)."""
    try:
        switched = os.sched_getscheduler(0) == os.SCHED_OTHER
        if switched:
            os.sched_setscheduler(0, os.SCHED_BATCH, _SCHED_PARAM)
    except OSError:
        switched = False
    try:
        return call(*args)
    finally:
        if switched:
            os.sched_setscheduler(0, os.SCHED_OTHER, _SCHED_PARAM)


runtime_calls = 0  # queueable CPU calls made through IREE's runtime: until one is, no layer's calls are queued


class RuntimeCpuCall:
    """How a CPU call through IREE's runtime runs ``function.invoke(views)``: after PyTorch's OpenMP pool is
    released, and under ``SCHED_BATCH``, where the settings say so; inside ``queued_calls()``, queued where its
    host's calls may be (``queues``: a host that reads its results only after the block, as ``ops.torch``'s)."""

    def __init__(self, function, queues: bool):
        global runtime_calls
        runtime_calls += queues
        self.function, self.queues = function, queues
        self.release = openmp_release() if RELEASE_OPENMP else None
        self.batch = batch_waits()

    def __call__(self, views: list) -> None:
        if self.release is not None:
            self.release()
        if _queueing.depth and self.queues:
            self.function.invoke(views, queue=True)
            _queueing.kept.append(views)  # their memory lives until the block's wait
        elif self.batch:
            batch_scheduled(self.function.invoke, views)
        else:
            self.function.invoke(views)


class _Queueing(threading.local):
    def __init__(self):
        self.depth = 0  # open queued_calls() blocks on this thread
        self.kept = []  # the queued calls' buffer views


_queueing = _Queueing()


@contextlib.contextmanager
def queued_calls():
    """CPU calls through IREE's runtime in the block are queued, each behind the one before, and return at once; the
    block's end waits for them (under ``SCHED_BATCH`` where the setting says so). The block must not read their
    destinations, and keeps their memory alive."""
    _queueing.depth += 1
    try:
        yield
    finally:
        _queueing.depth -= 1
        if not _queueing.depth:
            try:
                runtime.finish(_batch_wait if batch_waits() else None)
            finally:
                _queueing.kept.clear()


def _batch_wait(fence) -> None:
    batch_scheduled(fence.wait)


_launch_workspace = threading.local()


def launch_workspace(size: int) -> int:
    """The address of this thread's workspace for launched CPU calls, at least ``size`` bytes: one mapping
    (``cpu_launch.Workspace``, in 2 MB pages where ``WORKSPACE_HUGE_PAGES`` and the host allow), grown when a module
    needs more, reused by every later call (a launched call is over when it returns), so that it stays in the caches
    from one call to the next."""
    workspace = getattr(_launch_workspace, "workspace", None)
    if workspace is None or workspace.size < size:
        workspace = _launch_workspace.workspace = cpu_launch.Workspace(size, WORKSPACE_HUGE_PAGES)
    return workspace.address


def release_launch_workspace() -> None:
    """Let go of this thread's launch workspace (the next launched call makes its own again)."""
    _launch_workspace.__dict__.pop("workspace", None)


class CpuLaunchedCall:
    """A module's launch plan on PyTorch's own OpenMP threads (``ops/launch/cpu.py``): the calling thread and the
    pool's workers run its dispatches in one parallel region, as PyTorch's own CPU kernels run; nothing is handed
    to IREE's workers, so PyTorch's pool is not released. Its transients live in this thread's workspace
    (``launch_workspace``), each at a 64-byte aligned offset. ``host``: the caller's arrays' addresses
    (``host.addresses``: an aligned copy where one is not, kept until the launch returns) and its thread count (``host.threads``)."""

    def __init__(self, kernels, plan, host, problem):
        self.kernels, self.plan, self.host, self.problem = kernels, plan, host, problem
        starts = [0]
        for size in plan.transients:
            starts.append(starts[-1] + -(-size // ALIGNMENT) * ALIGNMENT)
        self.workspace_bytes = starts[-1]
        self.slots = tuple((s.argument, s.offset if s.argument is not None else starts[s.transient] + s.offset)
                           for s in plan.slots)

    def __call__(self, inputs: list, outputs: list) -> None:
        kept, addresses = self.host.addresses(inputs, outputs, ALIGNMENT)  # kept until the launch returns
        self.kernels(self._bases(addresses, self.workspace_bytes), self.host.threads())

    def _bases(self, addresses: list, workspace_bytes: int) -> list[int]:
        workspace = launch_workspace(workspace_bytes) if workspace_bytes else 0
        return [addresses[a] + offset if a is not None else workspace + offset for a, offset in self.slots]

    def then(self, second: "CpuLaunchedCall", inputs: list, outputs: list, second_inputs: list,
             second_outputs: list) -> None:
        """This call on (inputs, outputs), then ``second`` on its own, in one parallel region. Their transients
        share the workspace: the second's run after the first's are done with."""
        kept, addresses = self.host.addresses(inputs, outputs, ALIGNMENT)
        second_kept, second_addresses = second.host.addresses(second_inputs, second_outputs, ALIGNMENT)
        workspace_bytes = max(self.workspace_bytes, second.workspace_bytes)
        self.kernels.then(second.kernels, self._bases(addresses, workspace_bytes),
                          second._bases(second_addresses, workspace_bytes), self.host.threads())
