"""Launch plans: a static module's work as data, read once from IREE's HAL-level program.

Every module of this library has static shapes, so ``iree-compile --compile-to=hal`` shows its whole host
program as constants: one memoized command buffer of dispatches (constant workgroup counts, push constants,
bindings at constant offsets into a binding table), fills, copies and barriers; one binding table that maps
the module function's buffer arguments and its transient allocations into slots; and the serialized executable.
A plan records exactly that, so that a launcher can replay the module on a framework's stream with nothing but
the driver's launch call (``ops/launch/cuda.py``):

    slots[i]     = argument a (or transient t) + offset               (hal.device.queue.execute.indirect)
    dispatch     = kernel export e, grid (x, y, z), constants [u32...], bindings [(slot, offset, length)...]
    kernel args  = one pointer per binding: base(slot) + offset, then each constant as a u32
                   (IREE's CUDA and HIP HALs pack them so: stream_command_buffer.c)
    fill / copy  = byte ranges of slots

A CPU module (llvm-cpu, its executables embedded ELF images: ``ops/launch/elf.py``) that takes a transient
workspace (``iree.abi.transients``) builds its command buffer inline in the public function instead, binding
buffers directly: each argument's buffer and the workspace (of the constant size its reflection records) become
the slots, and the plan is the same (``ops/launch/cpu.py`` runs it on PyTorch's OpenMP threads).

Anything else in the program (a dynamic shape, a second queue submission, a host-side branch) is not a static
plan: ``extract`` raises ``UnsupportedModule`` naming it, and the caller keeps IREE's runtime for that module.
``EXTRACTOR_VERSION`` is part of every stored plan's name: a change to what is extracted makes a new one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import asdict, dataclass

from . import elf, flatbuffer

EXTRACTOR_VERSION = 1
# IREE's executable formats this reader knows: format -> (container magic, the ModuleDef image field's name)
FORMATS = {"cuda-nvptx-fb": (b"CDA1", "ptx"), "rocm-hsaco-fb": (b"HIP1", "hsaco")}
CPU_FORMATS = ("embedded-elf-x86_64",)  # the executable is the ELF image itself (``elf.load``)
_ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1, "i1": 1}


class UnsupportedModule(ValueError):
    """The module's HAL program is not one static command buffer this plan format can express."""


@dataclass(frozen=True)
class Argument:
    shape: tuple[int, ...]
    element_type: str
    nbytes: int
    output: bool  # an ``iree.abi.output`` destination


@dataclass(frozen=True)
class Slot:
    """A binding-table slot: ``argument`` (or ``transient``) index, and the byte range of it the slot covers."""

    argument: int | None
    transient: int | None
    offset: int
    length: int


@dataclass(frozen=True)
class Export:
    name: str
    block: tuple[int, int, int]
    shared_bytes: int  # dynamic shared memory per block (CUDA; HIP's kernels use static LDS: 0), local memory (CPU)
    constants: int  # 32-bit push constants
    bindings: int


@dataclass(frozen=True)
class Executable:
    name: str
    format: str
    sha256: str  # of the serialized container (header + FlatBuffer), as embedded in the module
    nbytes: int
    exports: tuple[Export, ...]
    offset: int = -1  # where the module embeds it (``locate``)


@dataclass(frozen=True)
class Dispatch:
    executable: int
    export: int
    grid: tuple[int, int, int]
    constants: tuple[int, ...]
    bindings: tuple[tuple[int, int, int], ...]  # (slot, offset, length)


@dataclass(frozen=True)
class Fill:
    slot: int
    offset: int
    length: int
    pattern: int
    pattern_bytes: int


@dataclass(frozen=True)
class Copy:
    source: int
    source_offset: int
    target: int
    target_offset: int
    length: int


_COMMANDS = {"dispatch": Dispatch, "fill": Fill, "copy": Copy}


@dataclass(frozen=True)
class Plan:
    function: str
    arguments: tuple[Argument, ...]
    transients: tuple[int, ...]  # byte sizes
    slots: tuple[Slot, ...]
    executables: tuple[Executable, ...]
    commands: tuple  # Dispatch | Fill | Copy, in order (one in-order stream: IREE's barriers hold by order)
    version: int = EXTRACTOR_VERSION

    @property
    def dispatches(self) -> list[Dispatch]:
        return [c for c in self.commands if isinstance(c, Dispatch)]

    def to_json(self) -> str:
        data = asdict(self)
        data["commands"] = [{"kind": kind_of(c), **asdict(c)} for c in self.commands]
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        data = json.loads(text)
        if data.get("version") != EXTRACTOR_VERSION:
            raise UnsupportedModule(f"launch plan version {data.get('version')} (this library reads {EXTRACTOR_VERSION})")
        executables = tuple(
            Executable(**{**e, "exports": tuple(Export(**{**x, "block": tuple(x["block"])}) for x in e["exports"])})
            for e in data["executables"])
        commands = tuple(_command(c) for c in data["commands"])
        return cls(data["function"], tuple(Argument(**{**a, "shape": tuple(a["shape"])}) for a in data["arguments"]),
                   tuple(data["transients"]), tuple(Slot(**s) for s in data["slots"]), executables, commands)


def kind_of(command) -> str:
    return next(kind for kind, type_ in _COMMANDS.items() if isinstance(command, type_))


def _command(data: dict):
    fields = {k: tuple(map(tuple, v)) if k == "bindings" else tuple(v) if isinstance(v, list) else v
              for k, v in data.items() if k != "kind"}
    return _COMMANDS[data["kind"]](**fields)


# --- Reading the HAL program -------------------------------------------------------------------------------

_CONSTANT = re.compile(r"(%[\w-]+) = arith\.constant (-?\d+) : \w+")
_BINARY = re.compile(r'hal\.executable private @([\w$.-]+) \{\s*hal\.executable\.binary public @([\w$.-]+) '
                     r'<format = "([^"]+)", data = dense<"0x([0-9A-Fa-f]+)">')
_PUBLIC = re.compile(r"^  util\.func public @([\w$.-]+?)(?<!_transients_size)\(", re.M)
_DECLARATION = re.compile(r'iree\.abi\.declaration = "(?:a)?sync func @[\w$.-]+\((.*?)\) ->')
_DECLARED_ARGUMENT = re.compile(r"%\w+: tensor<([^>]*)>( \{iree\.abi\.output = \d+ : index\})?")
_VIEW_BUFFER = re.compile(r"(%\w+) = hal\.buffer_view\.buffer<%arg(\d+) : !hal\.buffer_view>")
_ALLOCA = re.compile(r"(%\w+) = hal\.device\.queue\.alloca<.*: !hal\.buffer\{(%[\w-]+)\}")
_EXECUTE = re.compile(r"hal\.device\.queue\.execute\.indirect<.*?commands\((%[\w$.-]+)\) bindings\(\[(.*?)\]\)", re.S)
_TABLE_ENTRY = re.compile(r"\((%\w+) : !hal\.buffer\)\[(%[\w-]+), (%[\w-]+)\]")
_GLOBAL_LOAD = re.compile(r"(%[\w$.-]+) = util\.global\.load immutable (@[\w$.-]+) : !hal\.command_buffer")
_MEMOIZED = re.compile(r"%\w+ = util\.call (@[\w$.-]+)\(\) : \(\) -> !hal\.command_buffer\s*"
                       r"util\.global\.store %\w+, (@[\w$.-]+) : !hal\.command_buffer")
_LOOKUP = re.compile(r"(%\w+) = hal\.executable\.lookup\.function target\(%\w+ : !hal\.executable\) "
                     r"function\(@([\w$.-]+)::@[\w$.-]+::@([\w$.-]+)\) : i64")
_DISPATCH = re.compile(r"hal\.command_buffer\.dispatch<%\w+ : !hal\.command_buffer> target\(%\w+ : !hal\.executable\)"
                       r"\[(%\w+)\] workgroups\(\[(.*?)\]\)(?: constants\(\[(.*?)\]\))? bindings\(\[(.*?)\]\) "
                       r'flags\("None"\)', re.S)
_SLOT_ENTRY = re.compile(r"\((%[\w-]+) : (index|!hal\.buffer)\)\[(%[\w-]+), (%[\w-]+)\]")
_FILL = re.compile(r"hal\.command_buffer\.fill_buffer<%\w+ : !hal\.command_buffer> target\((%[\w-]+) : (?:index|!hal\.buffer)\)"
                   r"\[(%[\w-]+), (%[\w-]+)\] pattern\((%[\w-]+) : i(8|16|32)\)")
_COPY = re.compile(r"hal\.command_buffer\.copy_buffer<%\w+ : !hal\.command_buffer> source\((%[\w-]+) : (?:index|!hal\.buffer)\)"
                   r"\[(%[\w-]+)\] target\((%[\w-]+) : (?:index|!hal\.buffer)\)\[(%[\w-]+)\] length\((%[\w-]+)\)")
_TRANSIENTS = re.compile(r"iree\.abi\.transients\.size\.constant = (\d+) : index")
_BUFFER_ARGUMENTS = re.compile(r"%arg(\d+): !hal\.buffer\b")
_BUFFER_LENGTH = re.compile(r"(%[\w-]+) = hal\.buffer\.length<(%\w+) : !hal\.buffer> : index")
# what a static public function and its memoized command buffer may hold besides the ops read above
_PUBLIC_OPS = {"arith.constant", "util.null", "util.global.load", "hal.memory_type", "hal.buffer_usage",
               "hal.element_type", "hal.encoding_type", "hal.buffer_view.assert", "hal.buffer_view.buffer",
               "hal.device.allocator", "hal.buffer.assert", "hal.fence.create", "hal.device.queue.alloca",
               "hal.device.queue.execute.indirect", "hal.device.queue.dealloca", "hal.fence.await",
               "util.status.check_ok", "hal.buffer_view.create", "util.return"}
_APPLY_OPS = {"arith.constant", "util.global.load", "hal.command_buffer.create", "hal.executable.lookup.function",
              "hal.command_buffer.dispatch", "hal.command_buffer.execution_barrier", "hal.command_buffer.fill_buffer",
              "hal.command_buffer.copy_buffer", "hal.command_buffer.finalize", "util.return"}
# a public function that records its command buffer inline (a CPU module taking a transient workspace)
_INLINE_OPS = _PUBLIC_OPS | _APPLY_OPS | {"hal.buffer.length", "hal.device.queue.execute"}
_OP_NAME = re.compile(r"^\s*(?:%[\w$.:-]+(?:, %[\w$.:-]+)* = )?([a-z_]+\.[\w.]+)")


def _function_body(text: str, name: str) -> str:
    start = text.index(f"util.func public @{name}(") if f"util.func public @{name}(" in text else \
        text.index(f"util.func private @{name}(")
    end = text.index("\n  }\n", start)
    return text[start:end]


def _check_ops(body: str, allowed: set[str], where: str) -> None:
    for line in body.splitlines()[1:]:
        match = _OP_NAME.match(line)
        if match and match.group(1) not in allowed:
            raise UnsupportedModule(f"{where} holds {match.group(1)}, which a static launch plan does not express")


def _constants(body: str) -> dict[str, int]:
    return {name: int(value) for name, value in _CONSTANT.findall(body)}


def _value(constants: dict[str, int], name: str, what: str) -> int:
    if name not in constants:
        raise UnsupportedModule(f"{what} is {name}, not a constant: the module is not static")
    return constants[name]


def _arguments(body: str) -> tuple[Argument, ...]:
    declaration = _DECLARATION.search(body)
    if declaration is None:
        raise UnsupportedModule("the public function has no iree.abi.declaration")
    arguments = []
    for type_text, output in _DECLARED_ARGUMENT.findall(declaration.group(1)):
        *dims, element = type_text.split("x")
        if element not in _ELEMENT_BYTES or not all(d.isdigit() for d in dims):
            raise UnsupportedModule(f"argument tensor<{type_text}> is not a static tensor of a known element type")
        shape = tuple(int(d) for d in dims)
        count = 1
        for d in shape:
            count *= d
        arguments.append(Argument(shape, element, count * _ELEMENT_BYTES[element], bool(output)))
    return tuple(arguments)


def _executables(text: str) -> tuple[dict[str, int], tuple[Executable, ...], dict[str, bytes]]:
    """name -> index, the executables, and each one's serialized container."""
    found = _BINARY.findall(text)
    if not found:
        raise UnsupportedModule("the module holds no serialized executable")
    executables, containers = [], {}
    for name, _, format_, data in found:
        if format_ not in FORMATS and format_ not in CPU_FORMATS:
            raise UnsupportedModule(f"executable format {format_!r} (the launchers read {', '.join([*FORMATS, *CPU_FORMATS])})")
        container = bytes.fromhex(data)
        executables.append(Executable(name, format_, hashlib.sha256(container).hexdigest(), len(container),
                                      read_exports(container, format_)))
        containers[name] = container
    return {e.name: i for i, e in enumerate(executables)}, tuple(executables), containers


def read_exports(container: bytes, format_: str) -> tuple[Export, ...]:
    """The kernels of a serialized executable: name, block, dynamic shared memory, constants, bindings (a CPU
    executable's from its library, loaded into this process: ``elf.load``)."""
    if format_ in CPU_FORMATS:
        try:
            functions = elf.load(container).functions
        except elf.UnsupportedExecutable as error:
            raise UnsupportedModule(str(error)) from None
        return tuple(Export(f.name, f.workgroup_size, f.local_memory_bytes, f.constants, f.bindings) for f in functions)
    root = flatbuffer.executable_root(container, FORMATS[format_][0])
    return tuple(Export(e.bytes(1).decode(), tuple(e.struct(2, "<III")), e.scalar(3), e.scalar(4), e.vector_length(5))
                 for e in root.tables(0))


def read_images(container: bytes, format_: str) -> tuple[list[bytes], list[int]]:
    """The code images (PTX text or hsaco ELF) of a serialized executable, and each export's image index."""
    root = flatbuffer.executable_root(container, FORMATS[format_][0])
    return [m.bytes(0) for m in root.tables(1)], [e.scalar(0) for e in root.tables(0)]


def _slots(body: str, constants: dict[str, int], arguments: tuple[Argument, ...]) -> tuple[tuple[Slot, ...], tuple[int, ...], str]:
    """The binding table of the one queue submission, the transient sizes, and the command buffer's global."""
    views = {buffer: int(index) for buffer, index in _VIEW_BUFFER.findall(body)}
    allocas = _ALLOCA.findall(body)
    transients = {buffer: i for i, (buffer, _) in enumerate(allocas)}
    sizes = tuple(_value(constants, size, "a transient's size") for _, size in allocas)
    submissions = _EXECUTE.findall(body)
    if len(submissions) != 1:
        raise UnsupportedModule(f"the function submits {len(submissions)} command buffers (a plan holds one)")
    commands, table = submissions[0]
    slots = []
    for buffer, offset, length in _TABLE_ENTRY.findall(table):
        if buffer not in views and buffer not in transients:
            raise UnsupportedModule(f"binding-table entry {buffer} is neither an argument nor a transient")
        slots.append(Slot(views.get(buffer), transients.get(buffer), _value(constants, offset, "a slot's offset"),
                          _value(constants, length, "a slot's length")))
    loaded = dict(_GLOBAL_LOAD.findall(body))
    if commands not in loaded:
        raise UnsupportedModule("the submitted command buffer is not a memoized global")
    for slot in slots:
        limit = arguments[slot.argument].nbytes if slot.argument is not None else sizes[slot.transient]
        if slot.offset + slot.length > limit:
            raise UnsupportedModule(f"a slot reaches past its buffer ({slot})")
    return tuple(slots), sizes, loaded[commands]


def _slot_of(name: str, constants: dict[str, int], buffers: dict[str, int]) -> int:
    """A command's slot: a binding-table index (a constant), or a buffer bound directly (``buffers``: an inline
    command buffer's)."""
    return buffers[name] if name in buffers else _value(constants, name, "a binding's slot")


def _slot_bindings(text: str, constants: dict[str, int], slot_count: int,
                   buffers: dict[str, int]) -> tuple[tuple[int, int, int], ...]:
    bindings = []
    for slot, kind, offset, length in _SLOT_ENTRY.findall(text):
        if (kind == "index") == (slot in buffers):
            raise UnsupportedModule(f"a dispatch binds {slot} ({kind}), neither a binding-table slot nor a known buffer")
        index = _slot_of(slot, constants, buffers)
        if not 0 <= index < slot_count:
            raise UnsupportedModule(f"a dispatch binds slot {index} of {slot_count}")
        bindings.append((index, _value(constants, offset, "a binding's offset"), _value(constants, length, "a binding's length")))
    return tuple(bindings)


def _commands(apply_body: str, executables: dict[str, int], exports: tuple[Executable, ...], slot_count: int,
              buffers: dict[str, int] | None = None, known: dict[str, int] | None = None) -> tuple:
    """The command buffer's commands in order; ``buffers`` maps the buffers an inline command buffer binds directly
    to their slots, ``known`` gives values that are not constants in the text (the workspace's length)."""
    buffers = buffers or {}
    constants = {**_constants(apply_body), **(known or {})}
    functions = {fid: (executables[exe], export) for fid, exe, export in _LOOKUP.findall(apply_body)}
    found = []
    for match in _DISPATCH.finditer(apply_body):
        function, grid, pushed, bindings = match.groups()
        executable, export_name = functions[function]
        names = [e.name for e in exports[executable].exports]
        if export_name not in names:
            raise UnsupportedModule(f"dispatch of {export_name}, which the executable does not export")
        grid = tuple(_value(constants, g.strip(), "a workgroup count") for g in grid.split(","))
        pushed = tuple(_value(constants, c.strip(), "a push constant") & 0xFFFFFFFF
                       for c in (pushed or "").split(",") if c.strip())
        found.append((match.start(), Dispatch(executable, names.index(export_name), grid, pushed,
                                              _slot_bindings(bindings, constants, slot_count, buffers))))
    for match in _FILL.finditer(apply_body):
        slot, offset, length, pattern, bits = match.groups()
        found.append((match.start(), Fill(_slot_of(slot, constants, buffers), _value(constants, offset, "a fill's offset"),
                                          _value(constants, length, "a fill's length"),
                                          _value(constants, pattern, "a fill's pattern") & ((1 << int(bits)) - 1),
                                          int(bits) // 8)))
    for match in _COPY.finditer(apply_body):
        source, source_offset, target, target_offset, length = match.groups()
        found.append((match.start(), Copy(_slot_of(source, constants, buffers), _value(constants, source_offset, "a copy's offset"),
                                          _slot_of(target, constants, buffers), _value(constants, target_offset, "a copy's offset"),
                                          _value(constants, length, "a copy's length"))))
    counted = sum(apply_body.count(f"hal.command_buffer.{op}<") for op in ("dispatch", "fill_buffer", "copy_buffer"))
    if counted != len(found):
        raise UnsupportedModule(f"the command buffer holds {counted} commands, of which {len(found)} were read")
    return tuple(command for _, command in sorted(found, key=lambda item: item[0]))


def _inline(body: str, hal_text: str, function: str, arguments: tuple[Argument, ...], executable_index: dict[str, int],
            executables: tuple[Executable, ...]) -> tuple[tuple[Slot, ...], tuple[int, ...], tuple]:
    """The slots, transient sizes and commands of a public function that records its command buffer inline: each
    argument's buffer a slot, and the transient workspace argument (``iree.abi.transients``, its constant size from
    the reflection) the last, bound whole."""
    _check_ops(body, _INLINE_OPS, f"function {function}")
    if body.count("hal.command_buffer.create") != 1 or body.count("hal.device.queue.execute<") != 1:
        raise UnsupportedModule(f"function {function} records or submits more than one command buffer")
    buffers = {buffer: int(index) for buffer, index in _VIEW_BUFFER.findall(body)}
    slots = [Slot(index, None, 0, arguments[index].nbytes) for index in sorted(set(buffers.values()))]
    slot_of = {buffer: [s.argument for s in slots].index(index) for buffer, index in buffers.items()}
    known, transients = {}, ()
    workspace = [f"%arg{i}" for i in _BUFFER_ARGUMENTS.findall(body.split("\n", 1)[0])]
    if workspace:
        size = _TRANSIENTS.search(hal_text)
        if len(workspace) != 1 or size is None:
            raise UnsupportedModule(f"function {function} takes buffers other than one workspace of a constant size")
        transients = (int(size.group(1)),)
        slot_of[workspace[0]] = len(slots)
        slots.append(Slot(None, 0, 0, transients[0]))
        known = {length: transients[0] for length, buffer in _BUFFER_LENGTH.findall(body) if buffer == workspace[0]}
    return tuple(slots), transients, _commands(body, executable_index, executables, len(slots), slot_of, known)


def extract(hal_text: str) -> tuple[Plan, dict[str, bytes]]:
    """The launch plan of a module's HAL-level program (``iree-compile --compile-to=hal``), and each executable's
    serialized container (which the module embeds verbatim)."""
    names = _PUBLIC.findall(hal_text)
    if len(names) != 1:
        raise UnsupportedModule(f"the module exports {len(names)} functions (a plan holds one)")
    function = names[0]
    body = _function_body(hal_text, function)
    arguments = _arguments(body)
    executable_index, executables, containers = _executables(hal_text)
    if "hal.command_buffer.create" in body:
        slots, transients, commands = _inline(body, hal_text, function, arguments, executable_index, executables)
    else:
        _check_ops(body, _PUBLIC_OPS, f"function {function}")
        slots, transients, memoized = _slots(body, _constants(body), arguments)
        apply_name = dict((g, f) for f, g in _MEMOIZED.findall(hal_text)).get(memoized)
        if apply_name is None:
            raise UnsupportedModule("the command buffer is not built by a memoized function")
        apply_body = _function_body(hal_text, apply_name[1:])
        _check_ops(apply_body, _APPLY_OPS, f"command buffer {apply_name}")
        commands = _commands(apply_body, executable_index, executables, len(slots))
    for command in commands:
        if isinstance(command, Dispatch):
            export = executables[command.executable].exports[command.export]
            if (export.bindings, export.constants) != (len(command.bindings), len(command.constants)):
                raise UnsupportedModule(f"{export.name} takes {export.bindings} bindings and {export.constants} "
                                        f"constants, but is dispatched with {len(command.bindings)} and {len(command.constants)}")
    return Plan(function, arguments, transients, slots, executables, commands), containers


def locate(plan: Plan, containers: dict[str, bytes], module: bytes) -> Plan:
    """``plan`` with each executable's offset in the module's bytes, which must embed it verbatim."""
    executables = []
    for executable in plan.executables:
        offset = module.find(containers[executable.name])
        if offset < 0:
            raise UnsupportedModule(f"the module does not embed executable {executable.name} as the HAL program has it")
        executables.append(dataclasses.replace(executable, offset=offset))
    return dataclasses.replace(plan, executables=tuple(executables))


def kernel_arguments(dispatch: Dispatch) -> list[tuple[str, int, int]]:
    """How a dispatch's kernel arguments are packed, as IREE's CUDA and HIP HALs pack them: ``("pointer", slot,
    offset)`` for each binding (the slot's base + offset, 8 bytes), then ``("u32", value, 0)`` for each constant."""
    return ([("pointer", slot, offset) for slot, offset, _ in dispatch.bindings]
            + [("u32", value, 0) for value in dispatch.constants])
