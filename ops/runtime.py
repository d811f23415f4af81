"""IREE's runtime: devices, loaded modules (``Function``), the transient workspace, queued calls' fences, and the
NumPy API's arrays as a host of the executor (``IreeHost``).

Which module serves a problem, and whether it computes the known answer, is ``ops.executor``'s work; this module
loads what it is given and calls it.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import threading
from typing import Callable

import numpy as np

import iree.runtime as rt

from . import compiler, dtypes, known_answer, targets
from .validation import check

_lock = threading.Lock()
_devices: dict[str, rt.HalDevice] = {}
_stream_devices: dict[tuple, rt.HalDevice] = {}
_instance: rt.VmInstance | None = None
stats = {"loads": 0}

_HAL_ELEMENT_TYPES = {
    "float32": rt.HalElementType.FLOAT_32,
    "float16": rt.HalElementType.FLOAT_16,
    "bfloat16": rt.HalElementType.BFLOAT_16,
    "int64": rt.HalElementType.SINT_64,
    "int32": rt.HalElementType.SINT_32,
}


def get_device(driver: str) -> rt.HalDevice:
    """The one HalDevice this process uses for ``driver`` (created on first use)."""
    with _lock:
        if driver not in _devices:
            try:
                _devices[driver] = rt.get_device(driver)
            except Exception as error:  # the runtime's own message says which driver is missing
                raise RuntimeError(f"IREE could not open device {driver!r}: {error}") from error
        return _devices[driver]


def driver_of(device: rt.HalDevice) -> str | None:
    return next((name for name, known in _devices.items() if known is device), None)


def resolve_device(op: str, arrays: list, device: str | None) -> str:
    """The driver a call runs on: ``device`` if given, else that of its DeviceArray inputs, else local-task."""
    on_device = [a for a in arrays if isinstance(a, rt.DeviceArray)]
    drivers = set()
    for array in on_device:
        driver = driver_of(array._device)
        check(
            driver is not None,
            f"{op}: a DeviceArray input lives on a device this package did not open; create inputs with "
            "ops.to_device(array, device=...) so the call can find its device",
        )
        drivers.add(driver)
    check(len(drivers) <= 1, f"{op}: the DeviceArray inputs live on different devices: {sorted(drivers)}")
    if device is not None:
        targets.target_for_device(device, op)  # checks the name
        check(
            not drivers or drivers == {device},
            f"{op}: device={device!r}, but the DeviceArray inputs live on {', '.join(sorted(drivers))}",
        )
        try:
            get_device(device)  # opened before anything compiles for it
        except RuntimeError as error:
            raise ValueError(f"{op}: device={device!r} cannot be used: {error}") from error
        return device
    return drivers.pop() if drivers else targets.DEFAULT_DEVICE


def to_device(array, device: str = targets.DEFAULT_DEVICE) -> rt.DeviceArray:
    """Copy a NumPy array to ``device`` once, for chaining calls without host round trips."""
    return rt.asdevicearray(get_device(device), np.ascontiguousarray(array))


def empty(shape, dtype: str, device: str) -> rt.DeviceArray:
    """An uninitialized device array (the destination of a call)."""
    hal_device = get_device(device)
    size = int(np.prod(shape)) * dtypes.numpy_dtype(dtype).itemsize
    buffer = hal_device.allocator.allocate_buffer(
        memory_type=rt.MemoryType.DEVICE_LOCAL,
        allowed_usage=rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING,
        allocation_size=max(size, 1),
    )
    view = rt.HalBufferView(buffer, list(shape), _HAL_ELEMENT_TYPES[dtype])
    return rt.DeviceArray(hal_device, view)


_workspaces = threading.local()


def workspace(driver: str, size: int) -> rt.HalBuffer:
    """This thread's transient workspace on ``driver``, at least ``size`` bytes: allocated once, grown when a module
    needs more, and reused by every later call (see ``mlir/common.mlir``'s ``transients``). A call on this thread
    starts after the one before it has finished (calls wait, or queue behind the last one:
    ``Function.invoke(queue=True)``), so one call's intermediates are dead when the next call starts."""
    buffers = _workspaces.__dict__.setdefault("buffers", {})
    buffer = buffers.get(driver)
    if buffer is None or buffer.byte_length() < size:
        finish()  # a queued call may still use the old one
        buffers.pop(driver, None)  # the old one is freed before the larger one is allocated
        buffer = get_device(driver).allocator.allocate_buffer(
            memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING,
            allocation_size=max(size, 64))
        buffers[driver] = buffer
    return buffer


def release_workspaces() -> None:
    """Free this thread's transient workspaces (the next call allocates its own again)."""
    finish()
    _workspaces.__dict__.pop("buffers", None)


# The fence of this thread's last call queued without a wait (``Function.invoke(queue=True)``), until it is waited for.
_queued = threading.local()


def _queued_on(device: rt.HalDevice) -> rt.HalFence:
    """The fence a call on ``device`` waits for: this thread's last queued call's (waited for here first if it is on
    another device), or an empty one."""
    fence = getattr(_queued, "fence", None)
    if fence is None:
        return rt.HalFence(0)
    if _queued.device is not device:
        finish()
        return rt.HalFence(0)
    return fence


def _next_fence(device: rt.HalDevice) -> rt.HalFence:
    """A fence at the next value of this thread's timeline semaphore on ``device``. A thread's calls finish in the
    order it makes them (each waits for, or queues behind, the one before), so its timeline's values are reached in
    order; one timeline shared by threads calling at once would be signalled out of order, which IREE refuses."""
    timelines = _queued.__dict__.setdefault("timelines", [])  # [device, semaphore, last value], per device
    entry = next((t for t in timelines if t[0] is device), None)
    if entry is None:
        entry = [device, device.create_semaphore(0), 0]
        timelines.append(entry)
    entry[2] += 1
    return rt.HalFence.create_at(entry[1], entry[2])


def finish(wait=None) -> None:
    """Wait until this thread's queued calls are done (``wait(fence)`` waits, where given: the caller's way of
    waiting, e.g. under another scheduling policy); a failure in one of them is raised here."""
    fence = getattr(_queued, "fence", None)
    if fence is not None:
        _queued.fence = None
        try:
            (wait or rt.HalFence.wait)(fence)
        except Exception:
            _queued.__dict__.pop("timelines", None)  # a failed semaphore stays failed: later calls take new ones
            raise


class Function:
    """A loaded module function, called with its arrays (NumPy or DeviceArray: the inputs, then the destinations);
    returns the destinations, which the module has written. A function that takes a transient workspace
    (``iree.abi.transients`` in its reflection) gets this thread's, sized from the reflection.

    A module compiled with ``--iree-execution-model=async-external`` (``iree.abi.model = coarse-fences``: ROCm's
    and the CPU's, see ``targets``) takes a wait and a signal fence after its arrays. Called plainly, it waits for
    this thread's queued calls (``finish``) and returns once its signal fence is reached, as a synchronous
    module's would; ``invoke(queue=True)`` returns at once instead (``ops/torch/calls.py``: a layer's two gradient
    calls on the CPU, one wait). Called with ``fences=(wait, signal)`` (empty ``HalFence(0)``s on a device created
    on a framework's stream, where stream order does the rest), it returns without waiting."""

    def __init__(self, context: rt.SystemContext, vm_function: rt.VmFunction, driver: str, device: rt.HalDevice):
        self._system_context = context  # keeps the module and its context alive
        self._context, self._function, self.driver = context.vm_context, vm_function, driver
        self.device = self._device = device
        reflection = vm_function.reflection
        self.transient_bytes = None
        if "iree.abi.transients.size" in reflection:
            size = reflection.get("iree.abi.transients.size.constant")
            if size is None:  # every problem's shapes are static, so IREE states the size
                raise RuntimeError(f"{vm_function.name}: the module does not state a constant transient size")
            self.transient_bytes = int(size)
        self.fenced = reflection.get("iree.abi.model") == "coarse-fences"

    def __call__(self, *arrays, fences: tuple | None = None):
        arrays = [a if isinstance(a, rt.DeviceArray) else rt.asdevicearray(self._device, np.ascontiguousarray(a))
                  for a in arrays]
        self.invoke([array._buffer_view for array in arrays], fences)
        return arrays

    def invoke(self, buffer_views: list, fences: tuple | None = None, queue: bool = False) -> None:
        """The call on HalBufferViews (the inputs, then the destinations): what ``__call__`` does after wrapping
        its arrays, for callers that hold buffer views already (``ops/torch/calls.py``: a tensor's memory).

        Without ``fences``, a call starts after this thread's queued calls (its wait fence is the last one's
        signal) and returns once it is done; with ``queue`` (a fenced module), it returns at once, and the next
        call or ``finish()`` waits for it. The caller keeps its arrays' memory alive until then."""
        arguments = rt.VmVariantList(len(buffer_views) + 3)
        for view in buffer_views:
            arguments.push_ref(view)
        if self.transient_bytes is not None:
            arguments.push_ref(workspace(self.driver, self.transient_bytes))
        if not self.fenced:
            finish()
            self._context.invoke(self._function, arguments, rt.VmVariantList(2))
            return
        wait, signal = fences or (_queued_on(self._device), _next_fence(self._device))
        arguments.push_ref(wait)
        arguments.push_ref(signal)
        try:
            self._context.invoke(self._function, arguments, rt.VmVariantList(2))
        except Exception:
            if fences is None:  # the queued call it waits on (perhaps why it failed): waited for, and forgotten
                with contextlib.suppress(Exception):
                    finish()
            raise
        if fences is None:
            _queued.fence, _queued.device = signal, self._device
            if not queue:
                finish()


def load_specs(specs: list[compiler.ModuleSpec], driver: str) -> Function:
    """The entry point of the first of ``specs`` that loads (``compiler.load_first``) on ``driver``'s device, with no
    known-answer check: a benchmark's own module, which checks its results itself. Problems run through
    ``ops.executor``, which checks them."""
    spec, path, data = compiler.load_first(specs)
    return loaded_function(spec, data, driver, get_device(driver))


def loaded_function(spec: compiler.ModuleSpec, data: bytes, driver: str, hal_device: rt.HalDevice) -> Function:
    global _instance
    with _lock:
        if _instance is None:
            _instance = rt.VmInstance()
        module = rt.VmModule.copy_buffer(_instance, data)  # read, never opened for writing: read-only files load
        context = rt.SystemContext(vm_modules=[module], config=rt.Config(device=hal_device))
        stats["loads"] += 1
    return Function(context, module.lookup_function(spec.name), driver, hal_device)


def device_identity(driver: str) -> str:
    """What a known-answer verdict on ``driver``'s device is recorded under (``known_answer.device_identity``; a
    GPU's name is that of the driver's first device, the one ``get_device`` opens)."""
    if targets.DRIVER_BACKEND.get(driver) == "llvm-cpu":
        return known_answer.device_identity(driver)
    infos = rt.get_driver(driver).query_available_devices()
    return known_answer.device_identity(driver, infos[0].get("name", "") if infos else "")


def stream_device(driver: str, index: int, uuid: str | None, stream: int) -> rt.HalDevice:
    """A HalDevice whose queue is a framework's GPU stream (IREE's HIP HAL: ``hip_external_stream``), one per
    device and stream: ``index`` (or the device whose path holds ``uuid``) of ``driver``'s devices."""
    key = (driver, index, stream)
    with _lock:
        if key not in _stream_devices:
            hal_driver = rt.get_driver(driver)
            infos = hal_driver.query_available_devices()
            info = next((i for i in infos if uuid and uuid in str(i.get("path", ""))), None) or infos[index]
            _stream_devices[key] = hal_driver.create_device(info, params={"hip_external_stream": str(stream)})
        return _stream_devices[key]


_holders: list[Callable[[], None]] = []


def release_at_exit(forget: Callable[[], None]) -> None:
    """Have ``forget`` (the clearing of a cache that holds this module's objects, such as ``ops.torch``'s ready
    calls) run at the interpreter's exit, before this module lets go of its own (``_release``)."""
    _holders.append(forget)


@atexit.register
def _release() -> None:
    """IREE's runtime objects let go while the interpreter still runs: the caches that hold functions, then this
    thread's queued calls, workspaces and timelines, the functions (their contexts and modules), the devices, the
    VM instance. Objects still alive when the interpreter ends (held by an object PyTorch's operator library
    keeps, which is never freed) are reported by nanobind, a hundred lines and more of "leaked" at every exit."""
    global _instance
    for forget in _holders:
        forget()
    with contextlib.suppress(Exception):
        finish()
    _workspaces.__dict__.clear()
    _queued.__dict__.clear()
    _stream_devices.clear()
    _devices.clear()
    _instance = None
    gc.collect()


class IreeHost:
    """IREE DeviceArrays on ``driver``'s device: the NumPy API's host for the executor (``ops.executor``'s docstring
    says what a host offers). It launches nothing itself: every call runs through IREE's runtime."""

    launches = False
    queues = False
    name = "ops"

    def __init__(self, driver: str):
        self.driver, self.key = driver, ("iree", driver)

    def hal_device(self) -> rt.HalDevice:
        return get_device(self.driver)

    @staticmethod
    def views(hal_device, inputs: list, outputs: list, channels_last: bool) -> list:
        return [a._buffer_view for a in inputs] + [a._buffer_view for a in outputs]

    def before_runtime(self) -> None:
        pass  # a synchronous call after this thread's queued ones (Function.invoke)

    def put(self, array: np.ndarray, channels_last: bool) -> rt.DeviceArray:
        return rt.asdevicearray(self.hal_device(), array)

    @staticmethod
    def wait() -> None:
        finish()

    @staticmethod
    def fetch(outputs: list, channels_last: bool, axes: tuple) -> known_answer.Ran:
        # copies: to_host() maps the device buffer, which is freed with the DeviceArray (a view would dangle)
        return known_answer.gathered([np.array(r.to_host(), copy=True) for r in outputs], axes)
