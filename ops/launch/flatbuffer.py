"""The few reads of IREE's GPU executable containers a launcher needs: a FlatBuffers table reader and an ELF
symbol table reader. No dependency: both formats are small and stable.

IREE serializes a GPU executable as a 64-byte header (magic, version 0, content size) followed by a FlatBuffer
(``runtime/src/iree/schemas/cuda_executable_def.fbs``, file identifier ``CDA1``; ``hip_executable_def.fbs``,
``HIP1``)::

    table ExportDef { module_ordinal:uint32; kernel_name:string; block_dims:BlockDims;
                      block_shared_memory_size:uint32; constant_count:uint32; binding_flags:[uint64]; ... }
    table ModuleDef { ptx_image:string; }            // hsaco_image for HIP
    table ExecutableDef { exports:[ExportDef]; modules:[ModuleDef]; ... }
"""

from __future__ import annotations

import struct

HEADER_BYTES = 64


class Table:
    """One FlatBuffers table at ``position`` of ``data``; fields are read by their declaration index."""

    def __init__(self, data: bytes, position: int):
        self.data, self.position = data, position
        self.vtable = position - struct.unpack_from("<i", data, position)[0]
        self.vtable_bytes = struct.unpack_from("<H", data, self.vtable)[0]

    def _field(self, index: int) -> int | None:
        slot = 4 + 2 * index
        if slot >= self.vtable_bytes:
            return None
        offset = struct.unpack_from("<H", self.data, self.vtable + slot)[0]
        return self.position + offset if offset else None

    def scalar(self, index: int, fmt: str = "<I", default=0):
        at = self._field(index)
        return default if at is None else struct.unpack_from(fmt, self.data, at)[0]

    def struct(self, index: int, fmt: str):
        at = self._field(index)
        return None if at is None else struct.unpack_from(fmt, self.data, at)

    def _target(self, index: int) -> int | None:
        at = self._field(index)
        return None if at is None else at + struct.unpack_from("<I", self.data, at)[0]

    def bytes(self, index: int) -> bytes | None:
        at = self._target(index)
        if at is None:
            return None
        length = struct.unpack_from("<I", self.data, at)[0]
        return self.data[at + 4: at + 4 + length]

    def vector_length(self, index: int) -> int:
        at = self._target(index)
        return 0 if at is None else struct.unpack_from("<I", self.data, at)[0]

    def tables(self, index: int) -> list["Table"]:
        at = self._target(index)
        if at is None:
            return []
        count = struct.unpack_from("<I", self.data, at)[0]
        elements = [at + 4 + 4 * i for i in range(count)]
        return [Table(self.data, e + struct.unpack_from("<I", self.data, e)[0]) for e in elements]


def executable_root(container: bytes, magic: bytes) -> Table:
    """The ExecutableDef of an IREE GPU executable container (header, then the FlatBuffer)."""
    if container[:4] != magic:
        raise ValueError(f"not an IREE executable of this format: magic {container[:4]!r}, expected {magic!r}")
    version, content = struct.unpack_from("<IQ", container, 4)
    if version != 0:
        raise ValueError(f"IREE executable header version {version} (this reader knows 0)")
    buffer = container[HEADER_BYTES: HEADER_BYTES + content]
    return Table(buffer, struct.unpack_from("<I", buffer, 0)[0])


def elf_symbols(image: bytes) -> dict[str, tuple[int, int, int]]:
    """An ELF64 little-endian image's symbols: name -> (value, size, section index) (hsaco code objects)."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        raise ValueError("not a little-endian ELF64 image")
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize) for i in range(shnum)]
    symbols = {}
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab_offset = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name_at, _, _, section, value, symbol_size = struct.unpack_from("<IBBHQQ", image, at)
            end = image.index(b"\0", strtab_offset + name_at)
            symbols[image[strtab_offset + name_at: end].decode()] = (value, symbol_size, section)
    return symbols
