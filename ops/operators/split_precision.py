"""A float32 weight gradient as 16-bit products (``mlir/split_bf16x3.mlir``; ``problem.SPLIT_PRODUCTS``: bf16x3 or
bf16x6, bfloat16 parts, or f16x1, one scaled float16 part): the split and stacking around the 16-bit problem's own
module (``ConvBwdWeightProblem.computed_as``), which grouped_conv_bwd_weight renders."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import render as mlir
from ..dtypes import mlir_element_type
from ..problem import PART_DTYPES, SCALED_PRECISIONS, SPLIT_PRODUCTS, ConvBwdWeightProblem

# a scaled operand's largest magnitude: over the rows of its (rows, columns) view of its elements in order, then over
# the rows. The columns: the most that divide the elements, at most LARGEST_MAX_COLUMNS, in whole blocks of
# LARGEST_COLUMN_BLOCK (a subgroup of 32 threads reading 4 elements each), the rows in whole blocks of
# LARGEST_ROW_BLOCK (the rows' reduction: a subgroup of 32 reading 2 each)
LARGEST_MAX_COLUMNS = 8192
LARGEST_COLUMN_BLOCK = 128
LARGEST_ROW_BLOCK = 64


@dataclass(frozen=True)
class Parts:
    """What a split writes of each value: its parts ``which`` (0 hi, 1 mid, 2 lo), stacked, of MLIR type ``element``
    (``problem.PART_DTYPES``); with ``largest`` (f16x1: the rank-0 tensor of the value's largest magnitude,
    ``largest``), its one part is the value scaled by the power of two that puts that magnitude in [2^14, 2^15)."""

    which: tuple[int, ...]
    element: str
    largest: str | None = None

    def __len__(self) -> int:
        return len(self.which)


def operand_parts(precision: str, operand: int, v: str = "") -> Parts:
    """Which part (0 hi, 1 mid, 2 lo) of the ``operand``-th (0 or 1) operand, %``v``, each of ``precision``'s
    products takes: its stacked parts in order (bf16x3: the first's (hi, hi, mid), the second's (hi, mid, hi)); f16x1
    scales %``v`` by its largest magnitude, %``v``_largest."""
    which = tuple(product[operand] for product in SPLIT_PRODUCTS[precision])
    return Parts(which, mlir_element_type(PART_DTYPES[precision]),
                 f"%{v}_largest" if precision in SCALED_PRECISIONS else None)


def render(problem: ConvBwdWeightProblem, inner_module: str, transients: bool, copy=None) -> str:
    """The problem's module: its function splits x and grad_out (a transposing split tiled by ``copy``, the
    target's copy_config; scaled, each operand's largest magnitude first), calls the 16-bit problem's function (made
    private; rendered without the workspace argument, which ours takes where ``transients``) on the stacked parts,
    and stores grad_w in the problem's layout (scaled, times 1 / (s_x s_g))."""
    inner = problem.computed_as
    x_pad = problem.padding if inner.padding != problem.padding else None  # x's parts written zero-padded
    x_stride = problem.stride if inner.stride != problem.stride else None  # x's parts at s*o only
    x_parts, grad_out_parts = (operand_parts(problem.precision, i, v) for i, v in enumerate(("x", "grad_out")))
    element = x_parts.element
    return mlir.render(
        "split_bf16x3", function=problem.name, inner=inner.name, about=_about(problem, inner),
        inner_module=mlir.private(inner_module, inner.name),
        x_type=mlir.tensor(problem.input_shape, "f32"), grad_out_type=mlir.tensor(problem.output_shape, "f32"),
        grad_w_type=mlir.tensor(problem.weight_shape, "f32"),
        inner_grad_w_type=mlir.tensor(inner.weight_shape, "f32"),
        x3_type=mlir.tensor(inner.input_shape, element), grad_out3_type=mlir.tensor(inner.output_shape, element),
        split_x=largest("x", problem.input_shape, x_parts) + split(
            "x", problem.batch, problem.input_spatial, problem.groups * problem.in_channels, problem.channels_last,
            x_parts, inner.channels_last, copy, x_pad, x_stride),
        x3="%x3_padded" if x_pad else "%x3",
        split_grad_out=largest("grad_out", problem.output_shape, grad_out_parts) + split(
            "grad_out", problem.batch, problem.output_spatial, problem.groups * problem.out_channels,
            problem.channels_last, grad_out_parts, inner.channels_last, copy),
        store=_store(problem, inner, x_parts.largest is not None), transients=mlir.transients(transients),
    )


def _about(problem: ConvBwdWeightProblem, inner) -> str:
    """The module's comment: how its products compute."""
    scaled = problem.precision in SCALED_PRECISIONS
    return mlir.render("split_bf16x3.about_scaled" if scaled else "split_bf16x3.about_split", inner=inner.name)


def _store(problem: ConvBwdWeightProblem, inner, scaled: bool) -> str:
    """grad_w from the 16-bit problem's result, in the problem's weight order; scaled, times 1 / (s_x s_g)."""
    rank = problem.rank
    maps = dict(inner_grad_w_type=mlir.tensor(inner.weight_shape, "f32"),
                grad_w_type=mlir.tensor(problem.weight_shape, "f32"),
                store_read_map=mlir.affine_map(_dims(rank + 2), _dims(rank + 2)),
                store_write_map=mlir.affine_map(_dims(rank + 2), _weight_order(problem.channels_last, rank)
                                                if inner.channels_last else _dims(rank + 2)),
                store_iterators=mlir.iterators(["parallel"] * (rank + 2)))
    if not scaled:
        return mlir.render("split_bf16x3.store", **maps)
    return mlir.render("split_bf16x3.store_scaled", **maps, scalar_map=mlir.affine_map(_dims(rank + 2), []),
                       unscale=unscale("x", "grad_out"))


def unscale(a: str, b: str, value: str = "%value") -> str:
    """The lines of a store's body that make %unscaled, its ``value`` times 1 / (s_a s_b): the scales of operands
    %``a`` and %``b``, from their largest magnitudes read as %``a``_most and %``b``_most (f16x1)."""
    exponents = {f"{v}_exponent": mlir.render("split_bf16x3.exponent", p=name, most=f"{name}_most")
                 for v, name in (("a", a), ("b", b))}
    return mlir.render("split_bf16x3.unscale", a=a, b=b, value=value, **exponents)


def scale_operands(*names: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """For the operands ``names`` (f16x1's), their largest magnitudes' SSA names (rank-0 tensors, ``largest``) and
    the block arguments a store's body reads them as (``unscale``'s %v_most)."""
    return tuple(f"%{v}_largest" for v in names), tuple(f"%{v}_most: f32" for v in names)


def largest(v: str, shape: tuple, which: Parts) -> str:
    """Where ``which`` scales, %``v``_largest (the ``largest`` fragment, then a line break); else nothing. The
    view's rows are runs of %``v``'s elements in order (``largest_view``), reshaped (free)."""
    if which.largest is None:
        return ""
    elements = math.prod(shape)
    view = largest_view(elements)
    flat = mlir.render("common.collapse", result=f"%{v}_flat_view", source=f"%{v}",
                       reassociation=[list(range(len(shape)))], source_type=mlir.tensor(shape, "f32"),
                       result_type=mlir.tensor((elements,), "f32"))
    rows = mlir.render("common.expand", result=f"%{v}_view", source=f"%{v}_flat_view", reassociation=[[0, 1]],
                       shape=mlir.index_list(view), source_type=mlir.tensor((elements,), "f32"),
                       result_type=mlir.tensor(view, "f32"))
    return mlir.render("split_bf16x3.largest", v=v, view=mlir.indent(flat + "\n" + rows),
                       view_type=mlir.tensor(view, "f32"), rows_type=mlir.tensor(view[:1], "f32")) + "\n"


def largest_view(elements: int) -> tuple[int, int]:
    """The (rows, columns) view of an operand's ``elements`` over which its largest magnitude is reduced: the most
    columns, at most LARGEST_MAX_COLUMNS, that divide ``elements`` in whole LARGEST_COLUMN_BLOCKs, their rows in
    whole LARGEST_ROW_BLOCKs (where none do, the most columns that divide them). IREE's GPU reduction gives such a row
    a subgroup or more, its reads in runs, and the rows' reduction a subgroup. Columns of no whole block got one
    thread a row, each thread's reads a row apart (rows of an image's positions, 784 at 28x28; 7,056 columns of 1,024
    rows ran on 8 workgroups of 32 threads), and rows of no whole block one thread for their reduction (784 rows)."""
    divisors = [c for c in range(1, min(elements, LARGEST_MAX_COLUMNS) + 1) if elements % c == 0]
    blocks = [c for c in divisors if c % LARGEST_COLUMN_BLOCK == 0 and elements // c % LARGEST_ROW_BLOCK == 0]
    columns = max(blocks or divisors)
    return elements // columns, columns


def _dims(count: int) -> list[str]:
    return mlir.dims("d", count)


def _weight_order(channels_last: bool, rank: int) -> list[str]:
    """The problem's weight axes as dims of the channels-last order (k, f.., c): (k, f.., c) or (k, c, f..)."""
    k, taps, c = "d0", _dims(rank + 1)[1:], f"d{rank + 1}"
    return [k, *taps, c] if channels_last else [k, c, *taps]


def split(v: str, batch: int, spatial: tuple, channels: int, channels_last: bool, which: Parts,
          parts_channels_last: bool = True, copy=None, pad=None, stride: tuple | None = None) -> str:
    """The split fragment of %``v``, an activation (``batch``, *``spatial``, ``channels``) in its layout, into
    %``v``3: its bfloat16 parts stacked along the batch (stacked part j the part ``which[j]``: ``operand_parts``),
    channels-last or, where not ``parts_channels_last``, channels-first. The iteration is over the stacked parts'
    order, (j, n, *spatial, c) or (j, n, c, *spatial): from a layout to itself, an elementwise pass read and written
    in order; from channels-first to channels-last parts, a transposing pass (``split_as``'s ``copy`` tile). ``pad``
    ((low, high) per spatial axis): into %``v``3_padded, the parts zero-padded (``split_as``). ``stride``: the parts of
    %``v`` at its positions s*o only (a one-tap unpadded weight gradient's x), read where they lie."""
    rank = len(spatial)
    domain = _dims(rank + 3)
    n = domain[1]
    s, c = (domain[2:-1], domain[-1]) if parts_channels_last else (domain[3:], domain[2])
    in_shape = (batch, *spatial, channels) if channels_last else (batch, channels, *spatial)
    stride = stride or (1,) * rank
    at = [f"{d} * {k}" if k > 1 else d for d, k in zip(s, stride)]  # the parts' position o reads v at s*o
    spatial = tuple((size - 1) // k + 1 for size, k in zip(spatial, stride))
    read = [n, *at, c] if channels_last else [n, c, *at]
    stacked = len(which)
    parts = (stacked, batch, *spatial, channels) if parts_channels_last else (stacked, batch, channels, *spatial)
    return split_as(v, domain, read, in_shape, parts, 0, which, copy, s, pad)


def split_as(v: str, domain: list[str], read: list[str], in_shape: tuple, parts: tuple, part_dim: int,
             which: Parts, copy=None, spatial: list[str] = (), pad=None) -> str:
    """The split fragment of %``v`` (float32, ``in_shape``) into %``v``3: its bfloat16 parts, of ``parts``' shape
    (the iteration ``domain``'s order, the part axis j at ``part_dim``, part j the part ``which[j]``), read through
    ``read`` (an affine expression of the domain per axis of ``v``), j merged with the axis after it. One part
    (f16x1's) has no part axis: the pass writes the stacked shape itself, so that IREE keeps a transposing pass's
    tile (it drops a unit axis, and a tile set on the pass with it).

    An in-order split (``v`` read as the parts lie, j first) gets the ``split_tile`` of ``copy`` where it has one
    (``_in_order``); one that reads ``v`` at strided or flipped positions, its innermost dim in order, a tile of
    whole rows of that dim (``render.rows_attrs``). A transposing split (``v``'s innermost dim is not the parts')
    gets the ``transpose_tile`` of ``copy`` (the target's copy_config; ``render.transpose_attrs``) where it has one
    and reads ``v``'s innermost dim along one of the domain's (not a channels-first weight's flipped taps), its
    ``spatial`` dims (adjacent in ``read`` and ``domain``) merged into one around the pass: IREE merges them itself,
    and drops a configuration set on the pass when it does.

    ``pad`` ((low, high) zeros per ``spatial`` dim) gives %``v``3_padded instead, the stacked parts zero-padded
    (``_padded``)."""
    if len(which) == 1 and part_dim is not None:
        # one part: no part axis (part_dim None)
        domain, parts = domain[:part_dim] + domain[part_dim + 1:], parts[:part_dim] + parts[part_dim + 1:]
        part_dim = None
    if pad:
        return _padded(v, domain, read, in_shape, parts, part_dim, which, copy, spatial, pad)
    if part_dim in (0, None) and read == domain[0 if part_dim is None else 1:]:
        return _in_order(v, in_shape, parts, part_dim, which, copy)
    if read[-1] == domain[-1] and any("*" in axis for axis in read):  # at strided positions, rows in order
        return _split_pass(v, domain, read, in_shape, parts, part_dim, which, mlir.rows_attrs(parts, part_dim, copy))
    if read[-1] == domain[-1] or read[-1] not in domain or not (copy or {}).get("transpose_tile"):
        return _split_pass(v, domain, read, in_shape, parts, part_dim, which, "")
    if len(spatial) < 2:
        attrs = mlir.transpose_attrs(parts, domain.index(read[-1]), copy)
        return _split_pass(v, domain, read, in_shape, parts, part_dim, which, attrs)
    merged_domain, merged_parts, _ = _merged(domain, parts, spatial)
    merged_read, merged_in, in_groups = _merged(read, in_shape, spatial)
    attrs = mlir.transpose_attrs(merged_parts, merged_domain.index(merged_read[-1]), copy)
    if not attrs:
        return _split_pass(v, domain, read, in_shape, parts, part_dim, which, "")
    stacked = _stacked(parts, part_dim)
    stacked_dims = domain if part_dim is None else [d for d in domain if d != domain[part_dim + 1]]  # j's dim
    _, _, stacked_groups = _merged(stacked_dims, stacked, spatial)  # stands for (j, the next)
    merged_part_dim = None if part_dim is None else part_dim - (
        len(spatial) - 1 if domain.index(spatial[0]) < part_dim else 0)
    return _reshaped_pass(v, f"{v}_rows", in_shape, in_groups, stacked, stacked_groups, which.element, _split_pass(
        f"{v}_rows", merged_domain, merged_read, merged_in, merged_parts, merged_part_dim, which, attrs))


def _in_order(v: str, in_shape: tuple, parts: tuple, part_dim: int | None, which: Parts, copy) -> str:
    """The in-order split of %``v`` (its parts' axis first, or none, ``part_dim``): with the ``split_tile`` of
    ``copy`` (``render.split_attrs``), over %``v``'s elements as one dim, each thread writing all the parts of a run
    of them (read once: IREE's own tiling gives a thread one part, so each element is read three times), reshaped
    (free) around the pass; else as it lies. With no part axis (f16x1), the pass is a dispatch region of its own
    (``_kept``): IREE 3.13 would move the reshape after it through it (BubbleUpExpandShapesPass) and rebuild it
    without the tile, at 32 threads a workgroup and 4 elements a thread. A util.optimization_barrier there kept the
    tile, but the module ran slower (docs/perf/h200-weight-tiles-2d/exp49_in_order_f16x1.log)."""
    dims = _dims(len(parts))
    elements = math.prod(in_shape)
    lead = () if part_dim is None else parts[:1]
    attrs = mlir.split_attrs(lead, elements, copy)
    if not attrs:
        return _split_pass(v, dims, dims[len(lead):], in_shape, parts, part_dim, which, "")
    stacked = _stacked(parts, part_dim)
    flat = _dims(len(lead) + 1)
    split_pass = _split_pass(f"{v}_flat", flat, flat[-1:], (elements,), (*lead, elements), part_dim, which, attrs,
                             result=f"%{v}_flat3_tiled" if part_dim is None else None)
    if part_dim is None:
        split_pass = _kept(f"%{v}_flat3", f"%{v}_flat3_tiled", mlir.tensor((elements,), which.element), split_pass)
    return _reshaped_pass(v, f"{v}_flat", in_shape, [list(range(len(in_shape)))], stacked,
                          [list(range(len(stacked)))], which.element, split_pass)


def _kept(result: str, inner: str, result_type: str, split_pass: str) -> str:
    """``split_pass`` (its result ``inner``) in a ``flow.dispatch.region`` giving ``result``: IREE forms its dispatch
    as it stands, moving no reshape through it, so the pass keeps its tile."""
    return mlir.render("split_bf16x3.kept", result=result, inner=inner, result_type=result_type,
                       split_pass=mlir.indent(split_pass))


def _reshaped_pass(v: str, view: str, in_shape: tuple, in_groups: list, stacked: tuple, stacked_groups: list,
                   element: str, split_pass: str) -> str:
    """``split_pass`` over %``view``, %``v`` collapsed by ``in_groups`` (free), its stacked parts %``view``3 (of
    ``element``) expanded back by ``stacked_groups`` into %``v``3 of the ``stacked`` shape."""
    collapsed = _collapsed(in_shape, in_groups)
    collapse = mlir.render("common.collapse", result=f"%{view}", source=f"%{v}", reassociation=in_groups,
                           source_type=mlir.tensor(in_shape, "f32"), result_type=mlir.tensor(collapsed, "f32"))
    expand = mlir.render("common.expand", result=f"%{v}3", source=f"%{view}3", reassociation=stacked_groups,
                         shape=mlir.index_list(stacked),
                         source_type=mlir.tensor(_collapsed(stacked, stacked_groups), element),
                         result_type=mlir.tensor(stacked, element))
    return "\n".join([mlir.indent(collapse), split_pass, mlir.indent(expand)])


def _collapsed(shape: tuple, groups: list) -> tuple:
    return tuple(math.prod(shape[i] for i in group) for group in groups)


def _padded(v: str, domain: list[str], read: list[str], in_shape: tuple, parts: tuple, part_dim: int,
            which: Parts, copy, spatial: list[str], pad) -> str:
    """The split of %``v`` into %``v``3_padded, its stacked parts zero-padded by ``pad`` ((low, high) per ``spatial``
    dim). A transposing split from channels-first with a tile (``render.window_transpose_attrs``) writes its parts
    into the zero-filled padded tensor, over its dims as they lie (the store into the padded tensor keeps IREE from
    merging them): IREE writes it in place. Any other split is stacked, then padded (a copy dispatch of IREE's)."""
    axes = [domain.index(s) for s in spatial]
    low, high = [0] * len(parts), [0] * len(parts)
    for a, (before, after) in zip(axes, pad):
        low[a], high[a] = before, after
    padded = tuple(size + before + after for size, before, after in zip(parts, low, high))
    transposing = read[-1] != domain[-1] and read[-1] == spatial[-1]
    attrs = mlir.window_transpose_attrs(parts, axes, copy) if transposing else ""
    if attrs:
        return _split_pass(v, domain, read, in_shape, parts, part_dim, which, attrs, (low, padded))
    stacked_low, stacked_high = (_unstacked(pads, part_dim) for pads in (low, high))
    return "\n".join([split_as(v, domain, read, in_shape, parts, part_dim, which, copy, spatial), mlir.render(
        "split_bf16x3.pad_stacked", v=v, low=mlir.index_list(stacked_low), high=mlir.index_list(stacked_high),
        index_args=", ".join(f"%{v}_i{a}: index" for a in range(len(stacked_low))), element=which.element,
        source_type=mlir.tensor(_stacked(parts, part_dim), which.element),
        result_type=mlir.tensor(_stacked(padded, part_dim), which.element))])


def _unstacked(values: list, part_dim: int | None) -> list:
    """Per-dim ``values`` of the parts, as the stacked tensor's dims (j merged with the axis after it: unpadded)."""
    return values if part_dim is None else values[:part_dim + 1] + values[part_dim + 2:]


def _split_pass(v: str, domain: list[str], read: list[str], in_shape: tuple, parts: tuple, part_dim: int | None,
                which: Parts, attrs: str, padding=None, result: str | None = None) -> str:
    """The split fragment, its parts stacked into %``v``3, or written at ``padding`` ((low per dim, padded shape))
    into a zero-filled tensor and stacked into %``v``3_padded; with no part axis (``part_dim`` None), written there
    as they are (or into ``result``, where given)."""
    parts_type = mlir.tensor(parts, which.element)
    stacked = f"%{v}3" if padding is None else f"%{v}3_padded"
    result = result or (stacked if part_dim is None and padding is None else f"%{v}_parts")
    if padding is None:
        stack = _stack(f"%{v}_parts", parts, part_dim, which.element, stacked)
    else:
        low, padded = padding
        into = stacked if part_dim is None else f"%{v}_padded"
        stack = "\n".join(filter(None, [mlir.render(
            "split_bf16x3.stack_padded", v=v, parts_type=parts_type, element=which.element, padded=into,
            padded_type=mlir.tensor(padded, which.element), offsets=mlir.index_list(low),
            sizes=mlir.index_list(parts), strides=mlir.index_list([1] * len(parts))),
            _stack(into, padded, part_dim, which.element, stacked)]))
    maps = dict(v=v, result=result, parts_type=parts_type, in_type=mlir.tensor(in_shape, "f32"),
                read_map=mlir.affine_map(domain, read), write_map=mlir.affine_map(domain, domain),
                iterators=mlir.iterators(["parallel"] * len(domain)), attrs=attrs, stack=stack)
    if which.largest:  # f16x1: the one part, scaled
        return mlir.render("split_bf16x3.split_scaled", **maps, largest=which.largest,
                           scalar_map=mlir.affine_map(domain, []),
                           exponent=mlir.render("split_bf16x3.exponent", p="s", most="most"))
    maps.update(part_dim=part_dim, round_hi=mlir.render("split_bf16x3.round", p="hi", value="value"))
    parts_of = which.which
    if max(parts_of) < 2 and parts_of.count(1) == 1:  # bf16x3's (hi, hi, mid) or (hi, mid, hi): one part mid
        return mlir.render("split_bf16x3.split", **maps, lo_part=parts_of.index(1))
    return mlir.render("split_bf16x3.split_parts", **maps, codes=sum(part << 2 * j for j, part in enumerate(parts_of)),
                       round_mid=mlir.render("split_bf16x3.round", p="mid", value="rest"))


def _stack(source: str, parts: tuple, part_dim: int | None, element: str, stacked: str) -> str:
    """The parts ``source`` (of the ``parts`` shape) as one tensor ``stacked``, j merged with the axis after it;
    nothing where they have no part axis (``part_dim`` None: ``source`` is ``stacked``)."""
    if part_dim is None:
        return ""
    groups = [[a] for a in range(len(parts)) if a not in (part_dim, part_dim + 1)]
    groups.insert(part_dim, [part_dim, part_dim + 1])
    return mlir.indent(mlir.render(
        "common.collapse", result=stacked, source=source, reassociation=groups,
        source_type=mlir.tensor(parts, element), result_type=mlir.tensor(_stacked(parts, part_dim), element)))


def _stacked(parts: tuple, part_dim: int | None) -> tuple:
    if part_dim is None:
        return parts
    return (*parts[:part_dim], parts[part_dim] * parts[part_dim + 1], *parts[part_dim + 2:])


def _merged(dims: list[str], shape: tuple, names: list[str]) -> tuple[list[str], tuple, list]:
    """(``dims`` with ``names``, adjacent there, merged into the first, ``shape`` so merged, the reassociation)."""
    first = dims.index(names[0])
    last = first + len(names)
    assert dims[first:last] == list(names), (dims, names)
    groups = [[a] for a in range(first)] + [list(range(first, last))] + [[a] for a in range(last, len(dims))]
    return dims[:first + 1] + dims[last:], _collapsed(shape, groups), groups
