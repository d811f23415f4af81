"""IREE's CPU executables in this process: an llvm-cpu module's embedded ELF (``embedded-elf-x86_64``), loaded
from memory with the system's dynamic loader, and its exported dispatch functions.

The ELF is a freestanding shared object that exports ``iree_hal_executable_library_query``. Called with the
library version IREE 3.13 emits (6), that returns the library's tables. This module reads the export table: each
dispatch function's address, name and attributes (workgroup local memory, push constants, bindings). Its layout
is read off what IREE 3.13 emits, not off a header of that release:

    library   { header*, imports {u32 count, symbols*}, exports {u32 count, ptrs*, attrs*, params*, occupancy*,
                names*, tags*, parameter_names*, source_locations*, stage_locations*}, constants {u32}, sources }
    attrs     { u64 flags, u16 local_memory_pages, u8 constant_count, u8 binding_count, u32 workgroup_size_x,
                u32 workgroup_size_y, u16 workgroup_size_z, u16 reserved, u64 reserved[5] }

A library that imports functions, or answers another version, is refused (``UnsupportedExecutable``): its
module runs through IREE's runtime. Each ELF is loaded once per process (by its SHA-256), through an anonymous
memory file (``memfd_create``) kept open while the process runs: nothing is written to disk.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass

LIBRARY_VERSION = 6  # IREE 3.13's executable library version (its query answers no other)
LOCAL_MEMORY_PAGE_BYTES = 4096


class UnsupportedExecutable(ValueError):
    """The executable cannot be loaded and called here (its reason names why)."""


class _Attrs(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("local_memory_pages", ctypes.c_uint16), ("constant_count", ctypes.c_uint8),
                ("binding_count", ctypes.c_uint8), ("workgroup_size_x", ctypes.c_uint32),
                ("workgroup_size_y", ctypes.c_uint32), ("workgroup_size_z", ctypes.c_uint16),
                ("reserved", ctypes.c_uint16), ("reserved_tail", ctypes.c_uint64 * 5)]


class _Exports(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint32), ("ptrs", ctypes.POINTER(ctypes.c_void_p)), ("attrs", ctypes.POINTER(_Attrs)),
                ("params", ctypes.c_void_p), ("occupancy", ctypes.c_void_p), ("names", ctypes.POINTER(ctypes.c_char_p)),
                ("tags", ctypes.c_void_p), ("parameter_names", ctypes.c_void_p), ("source_locations", ctypes.c_void_p),
                ("stage_locations", ctypes.c_void_p)]


class _Imports(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint32), ("symbols", ctypes.c_void_p)]


class _Library(ctypes.Structure):
    _fields_ = [("header", ctypes.c_void_p), ("imports", _Imports), ("exports", _Exports)]


# The environment every dispatch gets: no specialization constants, no imports, no processor data (IREE's runtime
# fills the processor's feature bits; the executables are compiled for this host and do not branch on them).
ENVIRONMENT = (ctypes.c_uint64 * 16)()


@dataclass(frozen=True)
class Function:
    """One exported dispatch function: its address, and what a dispatch of it needs."""

    name: str
    address: int
    local_memory_bytes: int
    constants: int
    bindings: int
    workgroup_size: tuple[int, int, int]


@dataclass(frozen=True)
class Executable:
    functions: tuple[Function, ...]
    handle: object  # the loaded library (kept alive with this)

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise UnsupportedExecutable(f"the executable exports no function {name}")


_loaded: dict[str, Executable] = {}
_lock = threading.Lock()


def load(elf: bytes) -> Executable:
    """The executable whose ELF image is ``elf``, loaded into this process (once)."""
    key = hashlib.sha256(elf).hexdigest()
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load(elf)
        return _loaded[key]


def _load(elf: bytes) -> Executable:
    if not hasattr(os, "memfd_create") or elf[:4] != b"\x7fELF":
        raise UnsupportedExecutable("loading an executable from memory needs Linux's memfd_create and an ELF image")
    # the file stays open: the loader knows a library by its path, and a closed descriptor's number (the path's
    # last part) is handed out again, so that the next executable's path would name this one
    fd = os.memfd_create("iree-executable")
    os.write(fd, elf)
    try:
        handle = ctypes.CDLL(f"/proc/self/fd/{fd}")
    except OSError as error:
        os.close(fd)
        raise UnsupportedExecutable(f"the system's loader refused the executable: {error}") from None
    query = handle.iree_hal_executable_library_query
    query.restype, query.argtypes = ctypes.POINTER(_Library), [ctypes.c_uint32, ctypes.c_void_p]
    library = query(LIBRARY_VERSION, ctypes.addressof(ENVIRONMENT))
    if not library:
        raise UnsupportedExecutable(f"the executable answers no library of version {LIBRARY_VERSION}")
    library = library.contents
    if library.imports.count:
        raise UnsupportedExecutable(f"the executable imports {library.imports.count} functions")
    exports = library.exports
    if exports.count and not exports.names:
        raise UnsupportedExecutable("the executable's export table has no names")
    functions = []
    for i in range(exports.count):
        attrs = exports.attrs[i] if exports.attrs else _Attrs(workgroup_size_x=1, workgroup_size_y=1, workgroup_size_z=1)
        functions.append(Function(exports.names[i].decode(), exports.ptrs[i],
                                  attrs.local_memory_pages * LOCAL_MEMORY_PAGE_BYTES, attrs.constant_count,
                                  attrs.binding_count,
                                  (attrs.workgroup_size_x, attrs.workgroup_size_y, attrs.workgroup_size_z)))
    return Executable(tuple(functions), handle)
