"""A launch plan's kernels on a CUDA stream, through NVIDIA's driver bindings (``cuda-bindings``: the ``cuda``
extra).

``Kernels`` loads a plan's PTX once into a device's primary context (the one PyTorch uses) and prepares, per
dispatch, the kernel's argument block: one 8-byte slot per binding, then each push constant, as IREE's CUDA HAL
packs them (``runtime/src/iree/hal/drivers/cuda/stream_command_buffer.c``). A call writes only the pointers
(each slot's base + the binding's offset) and issues the commands, in order, on the given stream: dispatches
with ``cuLaunchKernel`` (grid, the kernel's block from the executable, its dynamic shared memory), fills with
``cuMemsetD*Async``, copies with ``cuMemcpyDtoDAsync``. IREE's barriers between commands hold by stream order.
Nothing waits, allocates or synchronizes, so calls are capturable in CUDA graphs.
"""

from __future__ import annotations

import ctypes
import threading

from . import plan as launch_plan
from .store import plan_of
from .blocks import ArgumentBlock

try:
    from cuda.bindings import driver as cu
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError("ops: launching on PyTorch's CUDA stream needs NVIDIA's driver bindings: "
                      'pip install -e ".[cuda]" (cuda-bindings)') from error

_DYNAMIC_SHARED_DEFAULT = 48 * 1024  # above this a kernel must opt in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
_current = threading.local()


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


def _check(call: str, result):
    error, *values = result
    if error != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(error)
        raise CudaError(f"{call} failed: {name.decode() if name else error}")
    return values[0] if len(values) == 1 else values


def driver_version() -> str:
    """The CUDA driver's version (what a known-answer verdict on this driver is recorded under)."""
    error, version = cu.cuDriverGetVersion()
    return str(version)


def make_current(device_index: int) -> None:
    """Make ``device_index``'s primary context (PyTorch's) current on this thread, once per thread and device.
    Autograd runs CUDA backward passes on its own worker threads, where it may not be yet."""
    done = _current.__dict__.setdefault("devices", set())
    if device_index in done:
        return
    _check("cuInit", cu.cuInit(0))
    device = _check("cuDeviceGet", cu.cuDeviceGet(device_index))
    context = _check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(device))
    if int(_check("cuCtxGetCurrent", cu.cuCtxGetCurrent())) != int(context):
        _check("cuCtxSetCurrent", cu.cuCtxSetCurrent(context))
    done.add(device_index)


class Kernels:
    """A plan's kernels, loaded into the current context of one device (``make_current`` first)."""

    def __init__(self, plan: launch_plan.Plan, containers: list[bytes], device_index: int):
        make_current(device_index)
        self.plan, self.device_index = plan, device_index
        self._modules = []
        functions = []
        for executable, container in zip(plan.executables, containers):
            images, image_of = launch_plan.read_images(container, executable.format)
            modules = [_check("cuModuleLoadData", cu.cuModuleLoadData(image + b"\0")) for image in images]
            self._modules += modules
            exported = []
            for export, image in zip(executable.exports, image_of):
                function = _check("cuModuleGetFunction", cu.cuModuleGetFunction(modules[image], export.name.encode()))
                if export.shared_bytes > _DYNAMIC_SHARED_DEFAULT:
                    _check("cuFuncSetAttribute", cu.cuFuncSetAttribute(
                        function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        export.shared_bytes))
                exported.append(function)
            functions.append(exported)
        self._steps = []
        for command in plan.commands:
            if isinstance(command, launch_plan.Dispatch):
                export = plan.executables[command.executable].exports[command.export]
                self._steps.append(ArgumentBlock(functions[command.executable][command.export], export, command))
            else:
                self._steps.append(command)

    def __call__(self, bases: list[int], stream: int) -> None:
        """Issue every command on ``stream`` (a CUstream handle as an int), slot ``i`` at device address
        ``bases[i]``."""
        handle = cu.CUstream(stream)
        for step in self._steps:
            if type(step) is ArgumentBlock:
                step.write(bases)
                gx, gy, gz, bx, by, bz, shared = step.shape
                error, = cu.cuLaunchKernel(step.function, gx, gy, gz, bx, by, bz, shared, handle,
                                           ctypes.addressof(step.addresses), 0)
                if error != cu.CUresult.CUDA_SUCCESS:
                    _check("cuLaunchKernel", (error,))
            elif type(step) is launch_plan.Fill:
                _fill(step, bases, handle)
            else:
                _check("cuMemcpyDtoDAsync", cu.cuMemcpyDtoDAsync(
                    bases[step.target] + step.target_offset, bases[step.source] + step.source_offset, step.length, handle))


def _fill(fill: launch_plan.Fill, bases: list[int], stream) -> None:
    address = bases[fill.slot] + fill.offset
    count = fill.length // fill.pattern_bytes
    memset = {1: cu.cuMemsetD8Async, 2: cu.cuMemsetD16Async, 4: cu.cuMemsetD32Async}[fill.pattern_bytes]
    _check(memset.__name__, memset(address, fill.pattern, count, stream))


def unavailable() -> None:
    """Why this process cannot launch CUDA plans: once this module imports (NVIDIA's driver bindings), nothing."""
    return None


def load(spec, path, data: bytes, device_index: int) -> "tuple[Kernels, launch_plan.Plan] | str":
    """The kernels of ``spec``'s stored module at ``path`` (its verified bytes ``data``) on CUDA device
    ``device_index``, and their plan; or why the module has none."""
    planned = plan_of(spec, path, data)
    if isinstance(planned, str):
        return planned
    return Kernels(planned[0], planned[1], device_index), planned[0]
