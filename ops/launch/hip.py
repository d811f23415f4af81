"""A launch plan's kernels on a HIP stream, through AMD's HIP runtime (``libamdhip64``, by ctypes): opt-in on ROCm
(``OPS_ROCM_LAUNCHER=plan``; the default there is IREE's runtime on PyTorch's stream, ``ops/torch/calls.py``).

**Not run on an AMD GPU**: none is reachable where this was written. It is ``ops/launch/cuda.py`` with HIP's names
(``hipModuleLoadData`` of each hsaco, ``hipModuleGetFunction``, ``hipModuleLaunchKernel`` with the argument block
IREE's HIP HAL packs, ``hipMemsetD*Async``, ``hipMemcpyDtoDAsync``), and the tests drive it against a stand-in
library that records every call. ctypes rather than ``hip-python``: the C signatures are HIP's documented ones,
and on CUDA ctypes launches cost 5.3 µs against the bindings' 4.2 (docs/PERFORMANCE.md, "Launch path").
A module it serves is checked on its first use like any other (``ops.known_answer``).
"""

from __future__ import annotations

import ctypes
import functools
import os

from . import plan as launch_plan
from .store import plan_of
from .blocks import ArgumentBlock

_HANDLE = ctypes.c_void_p


class HipError(RuntimeError):
    """A HIP runtime call failed; the message names the call and HIP's error."""


@functools.lru_cache(maxsize=None)
def library():
    """AMD's HIP runtime (``$OPS_HIP_LIBRARY``, default ``libamdhip64.so``) with the signatures used here."""
    hip = ctypes.CDLL(os.environ.get("OPS_HIP_LIBRARY", "libamdhip64.so"))
    u32, size, stream = ctypes.c_uint, ctypes.c_size_t, _HANDLE
    signatures = {
        "hipSetDevice": [ctypes.c_int],
        "hipModuleLoadData": [ctypes.POINTER(_HANDLE), ctypes.c_void_p],
        "hipModuleGetFunction": [ctypes.POINTER(_HANDLE), _HANDLE, ctypes.c_char_p],
        "hipModuleLaunchKernel": [_HANDLE, u32, u32, u32, u32, u32, u32, u32, stream, ctypes.c_void_p, ctypes.c_void_p],
        "hipMemsetD8Async": [ctypes.c_void_p, ctypes.c_ubyte, size, stream],
        "hipMemsetD16Async": [ctypes.c_void_p, ctypes.c_ushort, size, stream],
        "hipMemsetD32Async": [ctypes.c_void_p, ctypes.c_uint, size, stream],
        "hipMemcpyDtoDAsync": [ctypes.c_void_p, ctypes.c_void_p, size, stream],
    }
    for name, arguments in signatures.items():
        function = getattr(hip, name)
        function.argtypes, function.restype = arguments, ctypes.c_int
    hip.hipGetErrorName.argtypes, hip.hipGetErrorName.restype = [ctypes.c_int], ctypes.c_char_p
    return hip


def driver_version() -> str:
    """The HIP driver's version (what a known-answer verdict on this driver is recorded under)."""
    version = ctypes.c_int()
    library().hipDriverGetVersion(ctypes.byref(version))
    return str(version.value)


def _check(hip, call: str, error: int) -> None:
    if error != 0:
        name = hip.hipGetErrorName(error)
        raise HipError(f"{call} failed: {name.decode() if name else error}")


class Kernels:
    """A plan's kernels, loaded on HIP device ``device_index`` (``hip``: the runtime library, or a stand-in)."""

    def __init__(self, plan: launch_plan.Plan, containers: list[bytes], device_index: int, hip=None):
        self.hip = hip = hip or library()
        self.plan, self.device_index = plan, device_index
        _check(hip, "hipSetDevice", hip.hipSetDevice(device_index))
        self._images, functions = [], []
        for executable, container in zip(plan.executables, containers):
            images, image_of = launch_plan.read_images(container, executable.format)
            self._images += images  # kept alive: the runtime may read the image after loading it
            modules = []
            for image in images:
                module = _HANDLE()
                _check(hip, "hipModuleLoadData", hip.hipModuleLoadData(ctypes.byref(module), image))
                modules.append(module)
            exported = []
            for export, image in zip(executable.exports, image_of):
                function = _HANDLE()
                _check(hip, "hipModuleGetFunction",
                       hip.hipModuleGetFunction(ctypes.byref(function), modules[image], export.name.encode()))
                exported.append(function)
            functions.append(exported)
        self._steps = [ArgumentBlock(functions[c.executable][c.export], plan.executables[c.executable].exports[c.export], c)
                       if isinstance(c, launch_plan.Dispatch) else c for c in plan.commands]

    def __call__(self, bases: list[int], stream: int) -> None:
        """Issue every command on ``stream`` (a hipStream_t as an int), slot ``i`` at device address ``bases[i]``."""
        hip, handle = self.hip, _HANDLE(stream or None)
        for step in self._steps:
            if type(step) is ArgumentBlock:
                step.write(bases)
                error = hip.hipModuleLaunchKernel(step.function, *step.shape, handle, ctypes.addressof(step.addresses), None)
                _check(hip, "hipModuleLaunchKernel", error)
            elif type(step) is launch_plan.Fill:
                memset = {1: hip.hipMemsetD8Async, 2: hip.hipMemsetD16Async, 4: hip.hipMemsetD32Async}[step.pattern_bytes]
                _check(hip, "hipMemsetD*Async", memset(bases[step.slot] + step.offset, step.pattern,
                                                       step.length // step.pattern_bytes, handle))
            else:
                _check(hip, "hipMemcpyDtoDAsync", hip.hipMemcpyDtoDAsync(
                    bases[step.target] + step.target_offset, bases[step.source] + step.source_offset, step.length, handle))


def unavailable() -> None:
    """Why this process cannot launch HIP plans: nothing before a module loads (AMD's runtime is opened then: a
    missing library is that load's error)."""
    return None


def load(spec, path, data: bytes, device_index: int, hip=None) -> "tuple[Kernels, launch_plan.Plan] | str":
    """The kernels of ``spec``'s stored module at ``path`` (its verified bytes ``data``) on HIP device
    ``device_index``, and their plan; or why the module has none."""
    planned = plan_of(spec, path, data)
    if isinstance(planned, str):
        return planned
    return Kernels(planned[0], planned[1], device_index, hip), planned[0]
