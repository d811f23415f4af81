"""A dispatch's kernel-argument block, prepared once (ctypes): one 8-byte slot per binding, then each push
constant, as IREE's CUDA and HIP HALs pack them (``plan.kernel_arguments``). A call writes only the pointers."""

from __future__ import annotations

import ctypes

from . import plan as launch_plan


class ArgumentBlock:
    """One dispatch: its function, launch shape (grid, block, dynamic shared memory) and its argument block, of which
    only the pointers change from call to call (``write``)."""

    __slots__ = ("function", "shape", "values", "addresses", "pointers")

    def __init__(self, function, export: launch_plan.Export, dispatch: launch_plan.Dispatch):
        packed = launch_plan.kernel_arguments(dispatch)
        self.function = function
        self.shape = (*dispatch.grid, *export.block, export.shared_bytes)
        self.values = (ctypes.c_uint64 * max(len(packed), 1))()
        for index, (kind, value, _) in enumerate(packed):
            if kind == "u32":
                self.values[index] = value  # little-endian: the kernel reads the low 4 bytes
        self.addresses = (ctypes.c_void_p * max(len(packed), 1))(
            *(ctypes.addressof(self.values) + 8 * i for i in range(max(len(packed), 1))))
        self.pointers = tuple((index, value, offset) for index, (kind, value, offset) in enumerate(packed)
                              if kind == "pointer")

    def write(self, bases: list[int]) -> None:
        values = self.values
        for index, slot, offset in self.pointers:
            values[index] = bases[slot] + offset
