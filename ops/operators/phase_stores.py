"""The stores of the stride-phase form: each phase's accumulator through the fused epilogue and the cast into
grad_in (strided), or into its slot of the phase-major tensor that one ``linalg.generic`` interleaves into grad_in;
what positions no phase reaches hold; and ``Fusion``, what a store fuses (``grouped_conv_bwd_data``'s D tensors and
epilogue; nothing for ``conv_bwd_data``). Fragments: ``mlir/conv_bwd_data.mlir``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .. import dtypes
from .. import render as mlir
from ..problem import ConvBwdDataProblem
from .phase_plan import fully_covered, interleaved_rows, phases


@dataclass(frozen=True)
class Operands:
    """Extra operands of a linalg.generic: SSA values, their types, block arguments, and each one's indexing map
    results (dim names of the generic's domain), with the lines that define the values."""

    values: tuple = ()
    types: tuple = ()
    block_args: tuple = ()
    indices: tuple = ()
    lines: str = ""


class Fusion:
    """What the stores fuse: nothing (``conv_bwd_data``). ``grouped_conv_bwd_data`` overrides each method."""

    epilogue = False  # whether the stores compute more than a cast (then unreached positions hold f(0, d..))

    def declarations(self) -> tuple[str, str, str]:
        """(type aliases, function arguments, function-level lines) of the fused tensors."""
        return "", "", ""

    def operands(self, index_of: dict, phase=None, index: int | None = None, d_read: str = "slice") -> Operands:
        """The fused tensors as operands of a store over dims ``index_of`` (role -> index expression): a phase's
        store (``phase``), or the initial grad_in (no phase)."""
        return Operands()

    def body(self, acc: str) -> tuple[list[str], str]:
        """(lines, f32 value): what the store computes from the accumulator value ``acc``."""
        return [], acc


def _strided_axes(problem: ConvBwdDataProblem) -> tuple[int, ...]:
    """The axes of stride > 1: those a phase-major tensor has a slot per residue of."""
    return tuple(a for a, s in enumerate(problem.stride) if s > 1)


@dataclass(frozen=True)
class Slots:
    """The phase-major tensor of the interleaved store: a slot per residue (i mod s) of each strided axis, each slot
    (N, rows.., G*C) channels-last. ``element``: the element type, or f32 when the interleave computes an epilogue
    (then the slots hold the accumulators, and the epilogue sees them unrounded)."""

    strided_axes: tuple[int, ...]
    shape: tuple[int, ...]
    element: str

    @classmethod
    def of(cls, problem: ConvBwdDataProblem, fusion: Fusion) -> "Slots":
        strided = _strided_axes(problem)
        shape = (*(problem.stride[a] for a in strided), problem.batch, *interleaved_rows(problem),
                 problem.groups * problem.in_channels)
        return cls(strided, shape, dtypes.ACCUMULATOR if fusion.epilogue else dtypes.mlir_element_type(problem.dtype))

    @property
    def strided(self) -> int:
        return len(self.strided_axes)

    @property
    def type(self) -> str:
        return mlir.tensor(self.shape, self.element)

    def slot_of(self, phase) -> list[int]:
        """A phase's slot: the residues of its grad_in positions on the strided axes."""
        return [phase[a].grad_in_offset for a in self.strided_axes]


@dataclass(frozen=True)
class PhaseMajor:
    """The channels-first phase-major tensor (``phase_plan.transposes``): a slot per residue of each strided axis, each
    slot (N, G*C, size/s..) in grad_in's own order, written whole by its phase; one transpose interleaves them."""

    problem: ConvBwdDataProblem

    @property
    def strided_axes(self) -> tuple[int, ...]:
        return _strided_axes(self.problem)

    @property
    def slot_shape(self) -> list[int]:
        p = self.problem
        return [p.batch, p.groups * p.in_channels, *(size // s for size, s in zip(p.input_spatial, p.stride))]

    @property
    def type(self) -> str:
        return mlir.tensor([*(self.problem.stride[a] for a in self.strided_axes), *self.slot_shape],
                           dtypes.mlir_element_type(self.problem.dtype))

    slot_of = Slots.slot_of  # the same residues

    def insert(self, phase) -> dict:
        """Where a phase's result goes: its slot, whole."""
        count = len(self.strided_axes) + len(self.slot_shape)
        return {"insert_offsets": mlir.index_list([*self.slot_of(phase), *([0] * len(self.slot_shape))]),
                "insert_sizes": mlir.index_list([1] * len(self.strided_axes) + self.slot_shape),
                "insert_strides": mlir.index_list([1] * count)}

    def finish(self, value: str) -> str:
        """grad_in from the slots: viewed as (N, G*C, .., rows, s, ..), it is the slots transposed."""
        p, strided = self.problem, self.strided_axes
        split, groups, permutation = [p.batch, p.groups * p.in_channels], [[0], [1]], [len(strided), len(strided) + 1]
        for a, s in enumerate(p.stride):
            groups.append(list(range(len(split), len(split) + (2 if s > 1 else 1))))
            split += [p.input_spatial[a] // s, s] if s > 1 else [p.input_spatial[a]]
            permutation += [len(strided) + 2 + a] + ([strided.index(a)] if s > 1 else [])
        split_type = mlir.tensor(split, dtypes.mlir_element_type(p.dtype))
        return mlir.render("conv_bwd_data.transpose_slots", slots=value, reassociation=str(groups),
                           split_shape=mlir.index_list(split), split_type=split_type,
                           permutation=mlir.index_list(permutation))


def empty_slots(problem: ConvBwdDataProblem, slots: Slots, phase_list) -> tuple[str, str]:
    """(lines, value): the phase-major tensor, zeros in the slots no phase writes (residues no tap reaches)."""
    written = {tuple(slots.slot_of(phase)) for phase in phase_list}
    empty = [list(r) for r in itertools.product(*(range(problem.stride[a]) for a in slots.strided_axes)) if r not in written]
    slot_shape = slots.shape[slots.strided:]
    texts, current = [], "%slots_0"
    for number, residues in enumerate(empty):
        texts.append(mlir.render(
            "conv_bwd_data.zero_slot", inserted=f"%slots_z{number}", into=current, slots_type=slots.type,
            slot_type=mlir.tensor(slot_shape, slots.element),
            offsets=mlir.index_list([*residues, *([0] * len(slot_shape))]),
            sizes=mlir.index_list([1] * slots.strided + list(slot_shape)), strides=mlir.index_list([1] * len(slots.shape)),
        ))
        current = f"%slots_z{number}"
    zero = "%zero" if slots.element == dtypes.ACCUMULATOR else "%zero_element"
    fill = mlir.render("conv_bwd_data.zero_slot_fill", zero=zero, element=slots.element,
                       slot_type=mlir.tensor(slot_shape, slots.element)) if empty else ""
    return mlir.render(
        "conv_bwd_data.slots", slots_type=slots.type,
        slots_description=", ".join(f"axis {a}: {problem.stride[a]} slots" for a in slots.strided_axes),
        zero_slots="\n".join([fill, *texts]) if empty else "  // every slot is some phase's",
    ), current


def interleave(problem: ConvBwdDataProblem, element: str, slots: Slots, value: str, fusion: Fusion, by_map: bool,
                copy: dict) -> str:
    """The interleave: grad_in position (.., i, ..) is row i floordiv s of slot i mod s on each strided axis,
    through the epilogue (when the slots hold accumulators) and the cast.

    ``by_map``: the slots are read through the generic's indexing map, tiled as the ``copy`` config says (IREE's
    GPU default there is 32 threads a workgroup, one element each, and need not divide the strides); else by
    ``tensor.extract``, which IREE collapses to one dim and tiles freely."""
    x = mlir.dims("i", problem.rank)
    domain = ["n", *x, "ch"]  # channels-last only (``interleaves``)
    fused = fusion.operands({"n": "n", "channel": "ch", **dict(enumerate(x))})
    if slots.element == dtypes.ACCUMULATOR:
        body, stored = store_body(fusion, element, "%acc")
    else:
        body, stored = "", "%acc"  # the phases cast already; no epilogue
    common = {
        "element": element, "slots": value, "slots_type": slots.type, "slot_element": slots.element,
        "iterators": mlir.iterators(["parallel"] * len(domain)), "store_body": body, "stored": stored,
    }
    if by_map:  # the slots through the indexing map, tiled by the copy config
        rows = [f"{x[a]} floordiv {s}" if s > 1 else x[a] for a, s in enumerate(problem.stride)]
        read = [*(f"{x[a]} mod {problem.stride[a]}" for a in slots.strided_axes), "n", *rows, "ch"]
        steps = [1, *problem.stride, 1]
        return mlir.render(
            "conv_bwd_data.interleave_map", **common,
            maps=", ".join([mlir.affine_map(domain, read), *(mlir.affine_map(domain, i) for i in fused.indices),
                            mlir.affine_map(domain, domain)]),
            copy_attrs=mlir.copy_attrs(problem.input_shape, copy, steps),
            d_operands="".join(f", {v}" for v in fused.values), d_types="".join(f", {t}" for t in fused.types),
            d_block_args="".join(f", {b}" for b in fused.block_args),
        )
    lines = [mlir.render("conv_bwd_data.gather_index", result=f"%{d}", dim=position) for position, d in enumerate(domain)]
    lines += [mlir.render("conv_bwd_data.interleave_row", axis=a, stride=problem.stride[a]) for a in slots.strided_axes]
    rows = [f"%row{a}" if s > 1 else f"%i{a}" for a, s in enumerate(problem.stride)]
    read = [*(f"%slot{a}" for a in slots.strided_axes), "%n", *rows, "%ch"]
    return mlir.render(
        "conv_bwd_data.interleave", **common,
        maps=", ".join([*(mlir.affine_map(domain, i) for i in fused.indices), mlir.affine_map(domain, domain)]),
        position="\n".join(lines), read=mlir.index_list(read),
        ins=f"ins({', '.join(fused.values)} : {', '.join(fused.types)}) " if fused.values else "",
        block_args="".join(f"{b}, " for b in fused.block_args),
    )


def store_body(fusion: Fusion, element: str, acc: str) -> tuple[str, str]:
    """(lines, stored value) of a store's body: the fused epilogue, then the cast to the stored dtype."""
    lines, value = fusion.body(acc)
    narrow, value = mlir.narrow(value, element, "%stored")
    return "\n".join([*lines, *([mlir.indent(narrow, 4)] if narrow else [])]), value


def store(index: int, phase, problem: ConvBwdDataProblem, element: str, acc_shape: list[int], acc_read: list[str],
           fusion: Fusion, into: str, d_read: str, slots: "Slots | PhaseMajor | None" = None) -> dict:
    """Epilogue and cast of one phase's accumulator (dims ``acc_read``), inserted with the phase's stride into grad_in;
    or, with ``slots`` (the interleaved store), cast to the slots' element and inserted into the phase's slot; or,
    channels-first with a ``PhaseMajor``, through the epilogue and the cast into the phase's slot, whole."""
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    rows = [p.rows for p in phase]
    m = mlir.dims("m", rank)
    if isinstance(slots, Slots):
        domain = ["n", *m, "g", "c"]
        store_shape = [problem.batch, *rows, groups, c]
        body, stored = store_body(Fusion(), slots.element, "%acc")
        return {
            "d_views": "", "acc_type": mlir.tensor(acc_shape, dtypes.ACCUMULATOR), "store_element": slots.element,
            "inserted": f"%slots_{index + 1}", "into": into, "into_type": slots.type,
            "store_type": mlir.tensor(store_shape, slots.element), "stored_type": mlir.tensor(slots.shape[slots.strided:], slots.element),
            "reassociation": str([[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]]),
            "store_maps": ", ".join([mlir.affine_map(domain, acc_read), mlir.affine_map(domain, domain)]),
            "store_iterators": mlir.iterators(["parallel"] * len(domain)),
            "d_operands": "", "d_types": "", "d_block_args": "", "store_body": body, "stored": stored,
            "insert_offsets": mlir.index_list([*slots.slot_of(phase), *([0] * (rank + 2))]),
            "insert_sizes": mlir.index_list([1] * slots.strided + list(slots.shape[slots.strided:])),
            "insert_strides": mlir.index_list([1] * len(slots.shape)),
        }
    domain, store_shape, reassociation, stored_shape = _store_shapes(problem, rows)
    inserted, into_type, insert = f"%grad_in_{index + 1}", "!grad_in", _strided_insert(problem, phase, stored_shape)
    if isinstance(slots, PhaseMajor):
        inserted, into_type, insert = f"%slots_{index + 1}", "!slots", slots.insert(phase)
    rows_of_d = {a: mlir.term(m[a], problem.stride[a], phase[a].grad_in_offset) if d_read == "map" else m[a] for a in range(rank)}
    fused = fusion.operands({"n": "n", "g": "g", "c": "c", **rows_of_d}, phase, index, d_read)
    maps = [mlir.affine_map(domain, acc_read), *(mlir.affine_map(domain, i) for i in fused.indices),
            mlir.affine_map(domain, domain)]
    body, stored = store_body(fusion, element, "%acc")
    return {
        "d_views": fused.lines, "inserted": inserted, "into_type": into_type, "store_element": element,
        "into": into, "acc_type": mlir.tensor(acc_shape, dtypes.ACCUMULATOR),
        "store_type": mlir.tensor(store_shape, element), "stored_type": mlir.tensor(stored_shape, element),
        "reassociation": str(reassociation), "store_maps": ", ".join(maps),
        "store_iterators": mlir.iterators(["parallel"] * len(domain)),
        "d_operands": "".join(f", {v}" for v in fused.values), "d_types": "".join(f", {t}" for t in fused.types),
        "d_block_args": "".join(f", {b}" for b in fused.block_args),
        "store_body": body, "stored": stored, **insert,
    }


def _store_shapes(problem: ConvBwdDataProblem, rows: list[int]) -> tuple[list, list, list, list]:
    """A phase store's (domain, its result's shape, the reassociation merging (G, C), the merged shape)."""
    rank, groups, c, m = problem.rank, problem.groups, problem.in_channels, mlir.dims("m", problem.rank)
    if problem.channels_last:
        return (["n", *m, "g", "c"], [problem.batch, *rows, groups, c],
                [[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]], [problem.batch, *rows, groups * c])
    return (["n", "g", "c", *m], [problem.batch, groups, c, *rows], [[0], [1, 2]] + [[i] for i in range(3, rank + 3)],
            [problem.batch, groups * c, *rows])


def _strided_insert(problem: ConvBwdDataProblem, phase, stored_shape: list[int]) -> dict:
    """Where a phase's result goes in grad_in: from its first position, with the stride."""
    spatial = [p.grad_in_offset for p in phase]
    offsets = [0, *spatial, 0] if problem.channels_last else [0, 0, *spatial]
    strides = [1, *problem.stride, 1] if problem.channels_last else [1, 1, *problem.stride]
    return {"insert_offsets": mlir.index_list(offsets), "insert_sizes": mlir.index_list(stored_shape),
            "insert_strides": mlir.index_list(strides)}


def initial_grad_in(problem: ConvBwdDataProblem, element: str, fusion: Fusion) -> tuple[str, str]:
    """What positions no phase writes hold: nothing to do if every position is reached; else 0, or f(0, d...)."""
    if fully_covered(problem) and phases(problem):
        return "  // every grad_in position is reached by exactly one phase: no initial value needed", "%dst"
    domain = mlir.dims("i", problem.rank + 2)
    spatial = domain[1:-1] if problem.channels_last else domain[2:]
    index_of = {"n": domain[0], "channel": domain[-1] if problem.channels_last else domain[1], **dict(enumerate(spatial))}
    if not fusion.epilogue:
        return mlir.render("conv_bwd_data.fill_zero", element=element), "%grad_in_0"
    fused = fusion.operands(index_of)
    body, stored = store_body(fusion, element, "%zero")
    return mlir.render(
        "conv_bwd_data.fill_epilogue", element=element,
        maps=", ".join([*(mlir.affine_map(domain, i) for i in fused.indices), mlir.affine_map(domain, domain)]),
        iterators=mlir.iterators(["parallel"] * len(domain)),
        ins=f"ins({', '.join(fused.values)} : {', '.join(fused.types)}) " if fused.values else "",
        block_args="".join(f"{b}, " for b in fused.block_args), store_body=body, stored=stored,
    ), "%grad_in_0"
