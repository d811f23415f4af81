"""The host path of a kernel call from PyTorch: one ready call per call signature.

A kernel op's first call with a signature (every tensor's shape, strides, dtype and device, and the other
arguments) runs the op's *plan* (``ops/torch/plans.py``: the layout, the destinations, the frozen problem, all
checked) and keeps what it learned as a ``Prepared`` call: which inputs need one ``contiguous()``, the destinations'
shapes, dtypes and memory formats, and the kernel. Later calls with that signature do only what changes:
read the tensors' pointers, allocate the destinations (and the module's transients) from PyTorch's caching
allocator, and launch. No validation, no problem hashing, no host synchronization.

Kernels, by device:
- **CUDA** (NVIDIA): the module's launch plan (``ops.launch``) issues its kernels on PyTorch's current stream,
  read at every call (``torch._C._cuda_getCurrentRawStream``), through NVIDIA's driver bindings. Stream order
  does the rest: PyTorch's kernels that wrote the inputs come before, its readers of the results after. The
  call never waits, so it is capturable in a CUDA graph. Tensors used on a stream other than the device's
  default get ``record_stream``, so the caching allocator does not hand their memory out while our kernels may
  still read it. A module without a plan, or a machine without ``cuda-bindings``, runs IREE's runtime instead
  (synchronously, as below), and says so once.
- **ROCm** (a HIP build of PyTorch): IREE's runtime on PyTorch's current HIP stream, as iree-turbine runs it: one
  IREE device per stream (IREE's HIP HAL's ``hip_external_stream``), the module's asynchronous entry point
  (ROCm modules compile with ``--iree-execution-model=async-external``) called with empty fences, the tensors'
  own memory (DLPack, no copy). IREE issues the kernels onto that stream before the call returns; nothing is
  waited for. ``OPS_ROCM_LAUNCHER=plan`` opts in to the launch plans instead (``ops/launch/hip.py``). None of
  this has run on an AMD GPU (none is reachable where it was written).
- **The CPU**: the module's launch plan on PyTorch's own OpenMP threads (``ops/launch/cpu.py``, the default:
  ``policy.cpu_launcher``): its dispatch functions run in one parallel region of the pool PyTorch's own kernels
  use, the calling thread among them, on the tensors' own memory. Nothing is handed over or released. Where a
  module has no plan, or the host no C compiler for the runner, or ``OPS_CPU_LAUNCHER=runtime``: IREE's runtime,
  synchronously, on the tensors' own memory (DLPack, no copy). Before each such call,
  PyTorch's OpenMP pool is released where the policy says so (``policy.CPU_CALLS_RELEASE_OPENMP``): its spinning
  workers would hold the cores IREE's workers need (``openmp_release``). The call itself runs with the calling
  thread under ``SCHED_BATCH`` (``policy.CPU_CALLS_SCHED_BATCH``): woken when the module's work is done, it must not
  preempt the IREE worker that is still finishing the wake-up (``batch_scheduled``). Inside ``queued_calls()``
  (a convolution layer's two gradients through IREE's runtime, ``policy.cpu_layer_calls_queued``), each call is
  queued behind the one before it in IREE's queue and returns at once; the block's end waits, once.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import os
import threading
from typing import Callable

import numpy as np
import torch
from torch import Tensor
from torch.utils.dlpack import to_dlpack

from .. import compiler, dtypes, known_answer, policy, runtime, targets
from ..launch import cpu as cpu_launch
from ..validation import check, warn_caller

ALIGNMENT = 16  # IREE's GPU kernels assume 16-byte aligned bindings (ConvertToLLVM.cpp: "align 16")
CPU_ALIGNMENT = 64  # IREE's runtime imports host memory aligned to 64 bytes only (buffer_heap.c): RuntimeKernel
_said: set[str] = set()
_said_lock = threading.Lock()


def say_once(message: str) -> None:
    """``message`` as a RuntimeWarning at the user's line that led here (``validation.warn_caller``), once a
    process."""
    with _said_lock:
        if message in _said:
            return
        _said.add(message)
    warn_caller(message)


def signature(args: tuple) -> tuple:
    """What decides a call's layout, destinations and kernel: each tensor's shape, strides, dtype and device
    (not its data or storage offset), and every other argument."""
    return tuple([(a.shape, a.stride(), a.dtype, a.device) if isinstance(a, Tensor)  # torch.Size: a tuple
                  else tuple(a) if type(a) is list else a for a in args])


class Prepared:
    """One call signature of one kernel op, ready: ``reads`` are (argument index, whether it needs one
    ``contiguous(memory_format)`` first), ``results`` (shape, dtype) of the destinations in ``memory_format``."""

    __slots__ = ("problem", "reads", "memory_format", "results", "device", "kernel", "empty", "fallback", "always")

    def __init__(self, problem, reads, memory_format, results, device, kernel, empty: bool, fallback=None):
        self.problem, self.reads, self.memory_format, self.results = problem, reads, memory_format, results
        self.device, self.kernel, self.empty = device, kernel, empty
        self.fallback = fallback  # PyTorch's own kernel, where no form of the problem computes its known answer
        self.always = known_answer.mode() == "always" and kernel is not None

    def __call__(self, args: tuple):
        if self.fallback is not None:
            return self.fallback(*args)
        if self.always:  # OPS_VERIFY=always: the known answer first, waited for
            known_answer.check_again(self.problem, str(self.device),
                                     lambda inputs, axes: run_known(self.kernel, self.problem, self.device, inputs, axes))
        inputs, outputs = self.tensors(args)
        if self.empty:  # an empty batch or channel count: the gradient of nothing is zero (or empty)
            for t in outputs:
                t.zero_()
        else:
            self.kernel(inputs, outputs)
        return self.result(outputs)

    def tensors(self, args: tuple) -> tuple[list, list]:
        """(the kernel's inputs: ``args``' tensors, each in the layout, copied once where it is not; its fresh
        destinations)."""
        memory_format = self.memory_format
        inputs = [args[i].contiguous(memory_format=memory_format) if copy else args[i] for i, copy in self.reads]
        outputs = [torch.empty(shape, dtype=dtype, device=self.device, memory_format=memory_format)
                   for shape, dtype in self.results]
        return inputs, outputs

    @staticmethod
    def result(outputs: list):
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    @property
    def launched_on_cpu(self) -> bool:
        """Whether every call runs this signature's kernel through the CPU launcher (nothing else first)."""
        return type(self.kernel) is CpuLaunchedKernel and not (self.always or self.empty or self.fallback)


class Paired:
    """Two ready calls of one layer, run one after the other (a convolution's input gradient, then its weight
    gradient): where both launch on the CPU, their plans run in one parallel region of PyTorch's pool (one fork
    and join, one trip through the runner: ``cpu_launch.Kernels.then``); else each call as it is, on the CPU queued
    behind each other with one wait where they run through IREE's runtime (``queued_calls``, where
    ``policy.cpu_layer_calls_queued`` says so: asked only once some CPU call runs there). The first paired launch is
    checked: its results must be the two calls' own, bit for bit, or the pair is given up (said once)."""

    __slots__ = ("first", "second", "together", "checked")

    def __init__(self, first: Prepared, second: Prepared):
        self.first, self.second = first, second
        self.together = (first.launched_on_cpu and second.launched_on_cpu
                         and first.kernel.kernels is not second.kernel.kernels)
        self.checked = False

    def __call__(self, first_args: tuple, second_args: tuple) -> tuple:
        if not self.together:
            queued = cpu_runtime_kernels and self.first.device.type == "cpu" and policy.cpu_layer_calls_queued()
            with queued_calls() if queued else contextlib.nullcontext():
                return self.first(first_args), self.second(second_args)
        first_inputs, first_outputs = self.first.tensors(first_args)
        second_inputs, second_outputs = self.second.tensors(second_args)
        self.first.kernel.then(self.second.kernel, first_inputs, first_outputs, second_inputs, second_outputs)
        results = self.first.result(first_outputs), self.second.result(second_outputs)
        if not self.checked:
            results = self._check(first_args, second_args, results)
        return results

    def _check(self, first_args: tuple, second_args: tuple, results: tuple) -> tuple:
        """The first launch's ``results`` against the two calls' own: kept where equal, else the calls' (and the
        pair given up)."""
        own = self.first(first_args), self.second(second_args)
        self.checked = True
        if all(_equal(a, b) for a, b in zip(results, own)):
            return results
        self.together = False
        say_once(f"ops.torch: {self.first.problem.name} and {self.second.problem.name} launched together differ from "
                 "their own launches; they run one after the other instead")
        return own


def _equal(a, b) -> bool:
    """Bitwise equal results (NaNs included): a tensor, or a tuple of them."""
    if isinstance(a, tuple):
        return all(_equal(x, y) for x, y in zip(a, b))
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


# --- Kernels -------------------------------------------------------------------------------------------------


def buffer_view(hal_device, t: Tensor):
    """``t``'s memory as an IREE HalBufferView: ``torch.utils.dlpack.to_dlpack``, no copy, and none of
    ``__dlpack__``'s stream handling (for the synchronous runtime call: 0.5 us a tensor, against 8)."""
    return hal_device.from_dlpack_capsule(to_dlpack(t))


def aligned(tensors: list, alignment: int) -> list:
    """``tensors``, each at a storage offset that is not a multiple of ``alignment`` bytes replaced by a fresh copy
    (PyTorch's allocations are aligned; a view into a larger buffer need not be)."""
    return [t.clone() if t.data_ptr() % alignment else t for t in tensors]


def wrap(hal_device, t: Tensor):
    """``t``'s memory as an IREE DeviceArray (DLPack: no copy)."""
    return runtime.rt.DeviceArray(hal_device, hal_device.from_dlpack_capsule(t.detach().__dlpack__()))


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


def _batch_waits() -> bool:
    """Whether CPU calls wait under ``SCHED_BATCH``: the policy's choice, where the platform has it."""
    return policy.CPU_CALLS_SCHED_BATCH and hasattr(os, "SCHED_BATCH")


def batch_scheduled(call: Callable, *args):
    """``call(*args)`` with the calling thread under ``SCHED_BATCH`` where it was under ``SCHED_OTHER`` (Linux; an
    unprivileged thread may switch between the two, its nice value kept), then back: a batch thread woken from a
    wait does not preempt the running thread that woke it (``policy.CPU_CALLS_SCHED_BATCH``)."""
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


cpu_runtime_kernels = 0  # RuntimeKernels made for the CPU: until one is, no CPU call is queued (queued_calls)


class RuntimeKernel:
    """A module run through IREE's runtime on the tensors' own memory (DLPack); on a GPU, after PyTorch's current
    stream has finished its work (IREE's call is synchronous); on the CPU, after PyTorch's OpenMP pool is released,
    and under ``SCHED_BATCH``, where the policy says so."""

    def __init__(self, function, driver: str, views: Callable, gpu: bool):
        global cpu_runtime_kernels
        self.function, self.views, self.gpu = function, views, gpu
        cpu_runtime_kernels += not gpu
        self.device = runtime.get_device(driver)
        self.release = None if gpu or not policy.CPU_CALLS_RELEASE_OPENMP else openmp_release()
        self.batch = not gpu and _batch_waits()

    def __call__(self, inputs: list, outputs: list) -> None:
        views = [buffer_view(self.device, v) for v in self.views(aligned(inputs, CPU_ALIGNMENT) + outputs)]
        if self.gpu:
            torch.cuda.current_stream().synchronize()
        elif self.release is not None:
            self.release()
        if _queueing.depth and not self.gpu:
            self.function.invoke(views, queue=True)
            _queueing.kept.append(views)  # their tensors (an aligned copy among them) live until the block's wait
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
    """CPU kernel calls in the block are queued, each behind the one before, and return at once; the block's end
    waits for them (under ``SCHED_BATCH`` where the policy says so). The block must not read their destinations,
    and keeps their tensors alive."""
    _queueing.depth += 1
    try:
        yield
    finally:
        _queueing.depth -= 1
        if not _queueing.depth:
            try:
                runtime.finish(_batch_wait if _batch_waits() else None)
            finally:
                _queueing.kept.clear()


def _batch_wait(fence) -> None:
    batch_scheduled(fence.wait)


def _record_streams(tensors: list, device: torch.device, stream: int) -> None:
    """``record_stream`` for tensors a kernel on a non-default stream reads (not while capturing a graph)."""
    if stream != 0 and not torch.cuda.is_current_stream_capturing():
        current = torch.cuda.current_stream(device)
        for t in tensors:
            t.record_stream(current)


class StreamKernel:
    """A module run through IREE's runtime on PyTorch's current HIP stream (see the module docstring)."""

    def __init__(self, problem, device: torch.device, views: Callable):
        self.problem, self.device, self.index, self.views = problem, device, device.index, views
        self.uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", "") or "") or None
        self.functions: dict[int, object] = {}

    def __call__(self, inputs: list, outputs: list) -> None:
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        function = self.functions.get(stream)
        if function is None:
            function = self.functions[stream] = runtime.stream_function(self.problem, "hip", self.index, self.uuid, stream)
        arrays = [wrap(function.device, v) for v in self.views(inputs + outputs)]
        function(*arrays, fences=(runtime.rt.HalFence(0), runtime.rt.HalFence(0)))
        _record_streams(inputs, self.device, stream)


class LaunchedKernel:
    """A module's launch plan on PyTorch's current CUDA stream (see the module docstring)."""

    def __init__(self, kernels, plan, device: torch.device):
        self.kernels, self.plan, self.index = kernels, plan, device.index
        self.device = device
        self.slots = tuple((s.argument, s.transient, s.offset) for s in plan.slots)
        self.transients = plan.transients
        self.inputs = sum(1 for a in plan.arguments if not a.output)

    def __call__(self, inputs: list, outputs: list) -> None:
        inputs = aligned(inputs, ALIGNMENT)
        pointers = [t.data_ptr() for t in inputs] + [t.data_ptr() for t in outputs]
        transients = [torch.empty(n, dtype=torch.uint8, device=self.device) for n in self.transients]
        bases = [pointers[a] + offset if a is not None else transients[t].data_ptr() + offset
                 for a, t, offset in self.slots]
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        self.kernels(bases, stream)
        _record_streams(inputs, self.device, stream)


_launch_workspace = threading.local()


def launch_workspace(size: int) -> int:
    """The address of this thread's workspace for launched CPU kernels, at least ``size`` bytes: one mapping
    (``cpu_launch.Workspace``, in 2 MB pages where ``policy.CPU_WORKSPACE_HUGE_PAGES`` and the host allow), grown when a
    module needs more, reused by every later call (a launched call is over when it returns), so that it stays in the
    caches from one call to the next."""
    workspace = getattr(_launch_workspace, "workspace", None)
    if workspace is None or workspace.size < size:
        workspace = _launch_workspace.workspace = cpu_launch.Workspace(size, policy.CPU_WORKSPACE_HUGE_PAGES)
    return workspace.address


class CpuLaunchedKernel:
    """A module's launch plan on PyTorch's own OpenMP threads (``ops/launch/cpu.py``): the calling thread and the
    pool's workers run its dispatches in one parallel region, as PyTorch's own CPU kernels run; nothing is handed
    to IREE's workers, so PyTorch's pool is not released. Its transients live in this thread's workspace
    (``launch_workspace``), each at a 64-byte aligned offset."""

    def __init__(self, kernels, plan, device: torch.device):
        self.kernels = kernels
        starts = [0]
        for size in plan.transients:
            starts.append(starts[-1] + -(-size // CPU_ALIGNMENT) * CPU_ALIGNMENT)
        self.workspace_bytes = starts[-1]
        self.slots = tuple((s.argument, s.offset if s.argument is not None else starts[s.transient] + s.offset)
                           for s in plan.slots)

    def __call__(self, inputs: list, outputs: list) -> None:
        tensors = aligned(inputs, CPU_ALIGNMENT) + outputs  # held until the launch returns: an aligned copy among them
        self.kernels(self._bases(tensors, self.workspace_bytes), torch.get_num_threads())

    def _bases(self, tensors: list, workspace_bytes: int) -> list[int]:
        workspace = launch_workspace(workspace_bytes) if workspace_bytes else 0
        return [tensors[a].data_ptr() + offset if a is not None else workspace + offset for a, offset in self.slots]

    def then(self, second: "CpuLaunchedKernel", inputs: list, outputs: list, second_inputs: list,
             second_outputs: list) -> None:
        """This kernel on (inputs, outputs), then ``second`` on its own, in one parallel region. Their transients
        share the workspace: the second's run after the first's are done with."""
        tensors = aligned(inputs, CPU_ALIGNMENT) + outputs
        second_tensors = aligned(second_inputs, CPU_ALIGNMENT) + second_outputs
        workspace_bytes = max(self.workspace_bytes, second.workspace_bytes)
        self.kernels.then(second.kernels, self._bases(tensors, workspace_bytes),
                          second._bases(second_tensors, workspace_bytes), torch.get_num_threads())


# backend -> (the IREE driver its verdicts are recorded under, the kernel class, the launcher's name in messages)
_LAUNCHERS = {"cuda": ("cuda", LaunchedKernel, "CUDA"), "hip": ("hip", LaunchedKernel, "HIP"),
              "cpu": (targets.DEFAULT_DEVICE, CpuLaunchedKernel, "CPU")}


def launched(problem, device: torch.device, backend: str = "cuda"):
    """The launch-plan kernel of ``problem`` (``backend``: ``cuda``, ``hip`` where opted in, or ``cpu``: PyTorch's
    OpenMP threads), or None (said once) where it cannot be: the first form whose module has a plan and computes
    the known answer through the launcher (``ops.known_answer``). Every launcher (``ops/launch/{backend}.py``) has
    the same interface: ``unavailable()``, why this process cannot launch at all, and ``load(spec, path, data,
    device_index)``, a module's kernels and plan, or why it has none."""
    driver, kind, name = _LAUNCHERS[backend]
    try:
        launcher = importlib.import_module(f"ops.launch.{backend}")
    except ImportError as error:
        say_once(f"ops.torch: {name} kernels run through IREE's runtime: {error}")
        return None
    unavailable = launcher.unavailable()
    if unavailable is not None:  # said once for all problems
        say_once(f"ops.torch: {name} kernels run through IREE's runtime: {unavailable}")
        return None

    def load(spec, path, data):
        try:
            found = launcher.load(spec, path, data, device.index)
        except OSError as error:  # the driver's library is missing
            return f"the {backend} launcher cannot load it: {error}", None
        if isinstance(found, str):  # no plan: IREE's runtime serves it, and checks it there
            return found, None
        kernel = kind(*found, device)
        return kernel, lambda inputs, axes: run_known(kernel, problem, device, inputs, axes)

    gpu_name = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    gate = known_answer.Gate(problem, known_answer.device_identity(driver, gpu_name), f"{backend}-launch", load)
    compiler.load_first(policy.module_specs(problem, targets.target_for_device(driver)), gate)
    if isinstance(gate.served, str):
        say_once(f"ops.torch: {problem.name} runs through IREE's runtime: {gate.served}")
        return None
    return gate.served


def run_known(kernel, problem, device: torch.device, inputs: list, axes: tuple = ()) -> known_answer.Ran:
    """``kernel`` on ``inputs`` (arrays in the problem's layout) into NaN-filled (or -1) destinations, on
    ``device``; its results reduced there to the positions ``axes`` keeps (``known_answer.verify``), then brought
    to the host, with the whole results' unwritten positions counted there. Tensors are handed over as PyTorch holds them: a channels-last problem's arrays as
    (N, C, *spatial) views of their NHWC memory."""
    channels_last = problem.channels_last
    tensors = [to_torch(a, device, channels_last) for a in inputs]
    outputs = [to_torch(a, device, channels_last) for a in known_answer.poisoned(problem)]
    kernel(tensors, outputs)
    if device.type == "cuda":
        torch.cuda.current_stream(device).synchronize()
    else:
        runtime.finish()  # inside queued_calls(), the kernel's call was queued
    unwritten = sum(int(_unwritten(t).sum()) for t in outputs)  # counted where the results lie
    return known_answer.Ran([to_numpy(_gathered(t, channels_last, axes)) for t in outputs], unwritten)


def _unwritten(t: Tensor) -> Tensor:
    """``known_answer.unwritten`` on ``t``'s device: NaN or infinite, or a negative index."""
    return t < 0 if not t.is_floating_point() else ~torch.isfinite(t)


def to_torch(array, device: torch.device, channels_last: bool) -> Tensor:
    """``array`` as a fresh tensor on ``device`` (PyTorch's allocation); a channels-last problem's array as an
    (N, C, *spatial) view of its NHWC memory."""
    array = np.ascontiguousarray(array)
    if array.dtype.name == "bfloat16":
        t = torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(array)
    t = t.to(device, copy=True)  # PyTorch's allocation (aligned as its kernels and IREE's imports expect)
    return t.permute(0, t.dim() - 1, *range(1, t.dim() - 1)) if channels_last and t.dim() >= 3 else t


def _gathered(t: Tensor, channels_last: bool, axes: tuple) -> Tensor:
    """``t`` in the problem's layout, only the kept positions (gathered on its device)."""
    if channels_last and t.dim() >= 3:
        t = t.permute(0, *range(2, t.dim()), 1)
    for axis, kept in axes:
        t = t.index_select(axis % t.dim(), torch.as_tensor(kept, device=t.device))
    return t


def to_numpy(t: Tensor) -> np.ndarray:
    """``t`` on the host as a NumPy array (bfloat16 as the project's NumPy bfloat16)."""
    t = t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.uint16).numpy().view(dtypes.numpy_dtype("bfloat16"))
    return t.numpy()


def kernel_for(problem, device: torch.device, views: Callable):
    """The kernel that runs ``problem`` on tensors of ``device`` (see the module docstring)."""
    driver = driver_for(device)
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            f"ops.torch: {problem.op} meets a new problem ({problem.name}) while a CUDA graph is being captured; "
            "its module must be loaded first: run one eager step with the same shapes before capturing")
    target = targets.target_for_device(driver)
    backend = driver if target.gpu else "cpu"
    planned = policy.gpu_launcher(target) == "plan" if target.gpu else policy.cpu_launcher() == "plan"
    # a launcher's refusal is an internal change of path where IREE's runtime can take the problem: said (one
    # line) only once the runtime serves it; where the runtime refuses it too, its error is the caller's one warning
    kernel, refused = _planned(problem, device, backend, not target.gpu or target.external_stream) if planned \
        else (None, None)
    if kernel is not None:
        return kernel
    if target.external_stream:
        kernel = StreamKernel(problem, device, views)
    else:
        kernel = RuntimeKernel(runtime.function_for(problem, driver), driver, views, target.gpu)
    if refused is not None:
        say_once(f"ops.torch: {problem.op} ({problem.name}) runs through IREE's runtime: the "
                 f"{_LAUNCHERS[backend][2]} launcher's forms fail the known-answer check")
    return kernel


def _planned(problem, device: torch.device, backend: str, fallback: bool) -> tuple:
    """(``launched``'s kernel, None); where the launcher computes no form right and IREE's runtime has another path
    for the problem (``fallback``: the CPU, and a GPU target whose runtime takes the framework's stream), (None,
    the launcher's error), and the other path runs it (the HIP launcher is opt-in, and not yet run on an AMD GPU);
    else the error stands."""
    try:
        return launched(problem, device, backend), None
    except known_answer.WrongResultError as error:
        if not fallback:
            raise
        return None, error


def driver_for(device: torch.device) -> str:
    """The IREE driver that runs kernels on tensors of ``device``."""
    if device.type == "cpu":
        return targets.DEFAULT_DEVICE
    if device.type == "cuda":
        check(device.index == torch.cuda.current_device(),
              f"ops.torch: tensors on {device} are not on the current CUDA device (cuda:{torch.cuda.current_device()}), "
              "where this library's kernels run: use torch.cuda.set_device or torch.cuda.device")
        return "hip" if torch.version.hip else "cuda"
    raise ValueError(f"ops.torch: tensors on {device.type!r} are not supported (cpu and cuda are)")
