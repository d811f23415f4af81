"""N-D convolution backward-data (CK example ``17_convnd_bwd_data``).

``grad_in = conv_bwd_data(grad_out, weight, input_shape=...)`` is the gradient of PyTorch's
``conv{1,2,3}d(input, weight, stride, padding, dilation)`` with respect to ``input``. The MLIR form is
``mlir/conv_bwd_data.mlir`` with ``mlir/conv_bwd_data_phase.mlir``: one stride-1 convolution per stride phase
(a named op for one group, ``mlir/conv_bwd_data_grouped.mlir`` for several), each storing its own positions of
grad_in through the epilogue (see the template's header). The grouped operator with fused "D" tensors
(``grouped_conv_bwd_data``) renders through this module too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .. import dtypes, epilogue, geometry, render, runtime
from .. import reference as reference_ops
from ..problem import (
    LAYOUTS, ConvProblem, array_shape_dtype, conv_problem, in_layout, join_activation,
)
from ..validation import check, padding_pairs, positive_int_tuple

_CONV_OPS = {1: "conv_1d_nwc_wcf", 2: "conv_2d_nhwc_hwcf", 3: "conv_3d_ndhwc_dhwcf"}


def normalize(grad_out, weight, *, input_shape, stride, padding, dilation, layout, groups=1, op="conv_bwd_data") -> ConvProblem:
    """Check every argument and build the problem, before anything is compiled."""
    out_shape, out_dtype = array_shape_dtype(op, "grad_out", grad_out)
    weight_shape, weight_dtype = array_shape_dtype(op, "weight", weight)
    problem = conv_problem(
        op,
        layout=layout,
        dtype=out_dtype,
        input_shape=input_shape,
        output_shape=out_shape,
        output_name="grad_out",
        weight_shape=weight_shape,
        groups=groups,
        stride=stride,
        padding=padding,
        dilation=dilation,
    )
    check(
        weight_dtype == out_dtype,
        f"{op}: grad_out and weight must have the same dtype, but got {out_dtype} and {weight_dtype}",
    )
    return problem


def phases(problem: ConvProblem) -> list[tuple[geometry.PhaseAxis, ...]]:
    """The stride phases with at least one tap on every axis (the cartesian product of the axes' phases)."""
    per_axis = [
        geometry.bwd_data_phases(
            problem.input_spatial[a], problem.output_spatial[a], problem.filter_spatial[a],
            problem.stride[a], problem.dilation[a], problem.padding[a][0],
        )
        for a in range(problem.rank)
    ]
    return list(itertools.product(*per_axis))


def _channels_last_perm(rank: int) -> list[int]:
    """Permutation taking (N, C, *spatial) to (N, *spatial, C)."""
    return [0, *range(2, rank + 2), 1]


def fully_covered(problem: ConvProblem) -> bool:
    """Whether the phases together reach every input position (then no position needs an initial value)."""
    return all(
        sum(p.rows for p in geometry.bwd_data_phases(
            problem.input_spatial[a], problem.output_spatial[a], problem.filter_spatial[a],
            problem.stride[a], problem.dilation[a], problem.padding[a][0],
        )) == problem.input_spatial[a]
        for a in range(problem.rank)
    )


def _grad_out_window(index: int, phase: tuple[geometry.PhaseAxis, ...], problem: ConvProblem, element: str) -> tuple[str, str, list[int]]:
    """Crop and zero-pad grad_out (channels-last) to the window phase ``index`` convolves: (lines, value, shape)."""
    n, k = problem.batch, problem.groups * problem.out_channels
    crop_lo = [max(0, -p.grad_out_pad[0]) for p in phase]
    crop_hi = [max(0, -p.grad_out_pad[1]) for p in phase]
    pad_lo = [max(0, p.grad_out_pad[0]) for p in phase]
    pad_hi = [max(0, p.grad_out_pad[1]) + p.zero_pad for p in phase]
    cropped = [o - lo - hi for o, lo, hi in zip(problem.output_spatial, crop_lo, crop_hi)]
    padded = [c + lo + hi for c, lo, hi in zip(cropped, pad_lo, pad_hi)]
    lines = []
    value = "%grad_out" if problem.channels_last else "%grad_out_cl"
    if any(crop_lo) or any(crop_hi):
        cropped_type = render.tensor([n, *cropped, k], element)
        lines.append(
            f"  %go_{index}_cropped = tensor.extract_slice {value}[0, {render.index_list(crop_lo)}, 0] "
            f"[{n}, {render.index_list(cropped)}, {k}] [{render.index_list([1] * (problem.rank + 2))}] "
            f": !grad_out_cl to {cropped_type}"
        )
        value, value_type = f"%go_{index}_cropped", cropped_type
    else:
        value_type = "!grad_out_cl"  # the same type as !grad_out for channels-last layouts
    if any(pad_lo) or any(pad_hi):
        index_args = ", ".join(f"%i{a}: index" for a in range(problem.rank + 2))
        lines += [
            f"  %go_{index} = tensor.pad {value} low[0, {render.index_list(pad_lo)}, 0] high[0, {render.index_list(pad_hi)}, 0] {{",
            f"  ^bb0({index_args}):",
            f"    tensor.yield %zero_element : {element}",
            f"  }} : {value_type} to {render.tensor([n, *padded, k], element)}",
        ]
        value = f"%go_{index}"
    return "\n".join(lines), value, [n, *padded, k]


def _weight_gather(index: int, phase, problem: ConvProblem, gather: bool) -> tuple[dict, list[int]]:
    """The phase's flipped sub-filter from the weight: (U.., K, C), or (G, U.., K, C) when grouped.

    ``gather``: by index arithmetic in the body (llvm-cpu; handles zero taps); else through an indexing map
    with a negative coefficient (the GPU targets).
    """
    rank, k, c, groups = problem.rank, problem.out_channels, problem.in_channels, problem.groups
    element = dtypes.mlir_element_type(problem.dtype)
    grouped = groups > 1
    taps = [p.filter_taps for p in phase]
    shape = [groups, *taps, k, c] if grouped else [*taps, k, c]
    dims = render.dims("d", len(shape))
    common = {
        "index": index, "element": element,
        "phase_filter_type": render.tensor(shape, element),
        "phase_filter_iterators": render.iterators(["parallel"] * len(shape)),
        # grouped: read the (G, K, ...) view of the weight (!weight_groups), so no index needs g*K + k
        "weight_view": "%weight_groups" if grouped else "%weight",
        "weight_view_type": "!weight_groups" if grouped else "!weight",
    }
    if not gather:
        u = dims[1:1 + rank] if grouped else dims[:rank]
        taps_read = [f"{p.flipped_first_tap} - {u[a]} * {p.tap_step}" for a, p in enumerate(phase)]
        rows = [dims[0], dims[-2]] if grouped else [dims[-2]]
        read = [*rows, *taps_read, dims[-1]] if problem.channels_last else [*rows, dims[-1], *taps_read]
        return {"phase_filter_type": common["phase_filter_type"], "phase_filter": render.render("conv_bwd_data_filter_flip", **common,
                                              weight_map=render.affine_map(dims, read),
                                              phase_filter_map=render.affine_map(dims, dims))}, shape
    first = 1 if grouped else 0
    lines = ["    %g = linalg.index 0 : index"] if grouped else []
    zero_tap_checks = []
    for a, p in enumerate(phase):
        lines.append(f"    %u{a} = linalg.index {first + a} : index")
        u_value = f"%u{a}"
        if p.zero_taps:
            # u >= taps are zero taps: read a real tap (u clamped to 0) and select zero for them
            lines.append(f"    %real_taps{a} = arith.constant {p.taps} : index")
            lines.append(f"    %real{a} = arith.cmpi ult, %u{a}, %real_taps{a} : index")
            lines.append(f"    %u{a}_clamped = arith.select %real{a}, %u{a}, %c0_index : index")
            u_value = f"%u{a}_clamped"
            zero_tap_checks.append(f"%real{a}")
        # u = taps-1-t reads tap f = first_tap + tap_step*t = flipped_first_tap - tap_step*u
        lines.append(f"    %f{a} = affine.apply affine_map<(u) -> ({p.flipped_first_tap} - u * {p.tap_step})>({u_value})")
    if zero_tap_checks:
        lines.insert(0, "    %c0_index = arith.constant 0 : index")
    lines.append(f"    %k = linalg.index {first + rank} : index")
    lines.append(f"    %c = linalg.index {first + rank + 1} : index")
    row_values = ["%g", "%k"] if grouped else ["%k"]
    filter_taps = [f"%f{a}" for a in range(rank)]
    weight_indices = [*row_values, *filter_taps, "%c"] if problem.channels_last else [*row_values, "%c", *filter_taps]
    yield_value, select = "%tap", ""
    if zero_tap_checks:
        valid = zero_tap_checks[0]
        for position, check_value in enumerate(zero_tap_checks[1:]):
            lines.append(f"    %all_real{position} = arith.andi {valid}, {check_value} : i1")
            valid = f"%all_real{position}"
        yield_value = "%tap_or_zero"
        select = f"    %tap_or_zero = arith.select {valid}, %tap, %zero_element : {element}"
    return {"phase_filter_type": common["phase_filter_type"], "phase_filter": render.render(
        "conv_bwd_data_filter_gather", **common,
        phase_filter_map=render.affine_map(dims, dims), tap_indices="\n".join(lines),
        weight_indices=render.index_list(weight_indices), zero_tap_select=select, tap_value=yield_value,
    )}, shape


def _convolution(index: int, phase, problem: ConvProblem, element: str, window_value: str, window_shape: list[int],
                 filter_shape: list[int], config: str | None) -> tuple[str, list[int]]:
    """The phase's stride-1 convolution into a zeroed f32 accumulator: a named op, or a grouped linalg.generic."""
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    rows = [p.rows for p in phase]
    attributes = f", compilation_info = {config}" if config else ""
    if groups == 1:
        acc_shape = [problem.batch, *rows, c]
        return render.render(
            "conv_bwd_data_named",
            index=index, conv_op=_CONV_OPS[rank], window=window_value,
            window_type=render.tensor(window_shape, element), filter_type=render.tensor(filter_shape, element),
            acc_type=render.tensor(acc_shape, dtypes.ACCUMULATOR),
            sub_dilations=render.i64_array([p.sub_dilation for p in phase]), unit_strides=render.i64_array([1] * rank),
            dispatch_config=attributes,
        ), acc_shape
    k = problem.out_channels
    acc_shape = [problem.batch, *rows, groups, c]
    grouped_window = [*window_shape[:-1], groups, k]
    m, u = render.dims("m", rank), render.dims("u", rank)
    domain = ["n", *m, "g", "c", *u, "k"]
    window_index = ["n", *(f"{m[a]} + {u[a]} * {p.sub_dilation}" for a, p in enumerate(phase)), "g", "k"]
    reassociation = [[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]]
    widen_x, x = dtypes.widen("%x", element, "%x_f32")
    widen_w, w = dtypes.widen("%w", element, "%w_f32")
    body = [render.indent(line, 4) for line in (widen_x, widen_w) if line]
    return render.render(
        "conv_bwd_data_grouped",
        index=index, element=element, window=window_value,
        window_type=render.tensor(window_shape, element), grouped_window_type=render.tensor(grouped_window, element),
        reassociation=str(reassociation), grouped_window_shape=render.index_list(grouped_window),
        filter_type=render.tensor(filter_shape, element), acc_type=render.tensor(acc_shape, dtypes.ACCUMULATOR),
        window_map=render.affine_map(domain, window_index),
        filter_map=render.affine_map(domain, ["g", *u, "k", "c"]),
        acc_map=render.affine_map(domain, ["n", *m, "g", "c"]),
        iterators=render.iterators(["parallel"] * (rank + 3) + ["reduction"] * (rank + 1)),
        extend="\n".join(body), x=x, w=w,
        dispatch_config=f" attrs = {{compilation_info = {config}}}" if config else "",
    ), acc_shape


@dataclass(frozen=True)
class _DView:
    """A D tensor with its broadcast dims collapsed away, and its channel dim split into (G, C) if it has one.

    ``roles`` name each dim of the split view: "n", "g", "c", or the spatial axis number.
    """

    lines: str
    kept: str          # value with broadcast dims collapsed (grad_in's dims, the ones D really has)
    kept_type: str
    kept_roles: list
    split: str         # ``kept`` with the channel dim as (G, C)
    split_type: str
    split_shape: list
    roles: list


def _d_view(j: int, problem: ConvProblem) -> _DView:
    shape, element = problem.d_shapes[j], dtypes.mlir_element_type(problem.d_dtypes[j])
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    grad_in_roles = ["n", *range(rank), "channel"] if problem.channels_last else ["n", "channel", *range(rank)]
    aligned = grad_in_roles[len(grad_in_roles) - len(shape):]
    kept = [(role, size) for role, size in zip(aligned, shape) if size != 1]
    kept_shape = [size for _, size in kept]
    lines = []
    value, value_type = f"%d{j}", f"!d{j}"
    if len(kept) != len(shape):
        # group each broadcast (size-1) dim with the next kept dim, trailing ones with the last
        groups_of_dims, pending = [], []
        for position, size in enumerate(shape):
            pending.append(position)
            if size != 1:
                groups_of_dims.append(pending)
                pending = []
        if pending and groups_of_dims:
            groups_of_dims[-1] += pending
        kept_type = render.tensor(kept_shape, element)
        lines.append(f"  %d{j}_kept = tensor.collapse_shape %d{j} {groups_of_dims} : !d{j} into {kept_type}")
        value, value_type = f"%d{j}_kept", kept_type
    kept_roles = [role for role, _ in kept]
    split, split_type, split_shape, roles = value, value_type, kept_shape, kept_roles
    if "channel" in kept_roles:
        at = kept_roles.index("channel")
        split_shape = kept_shape[:at] + [groups, c] + kept_shape[at + 1:]
        roles = kept_roles[:at] + ["g", "c"] + kept_roles[at + 1:]
        reassociation = [[i] for i in range(at)] + [[at, at + 1]] + [[i + 1] for i in range(at + 1, len(kept_shape))]
        split, split_type = f"%d{j}_split", render.tensor(split_shape, element)
        lines.append(
            f"  %d{j}_split = tensor.expand_shape {value} {reassociation} output_shape [{render.index_list(split_shape)}] "
            f": {value_type} into {split_type}"
        )
    return _DView("\n".join(lines), value, value_type, kept_roles, split, split_type, split_shape, roles)


def _d_inputs(problem: ConvProblem, views: list, phase=None, index: int | None = None,
              d_read: str = "slice") -> tuple[str, str, str, list[list], str]:
    """(operands, types, block arguments, each one's dim roles, slicing lines) of the D tensors in a store.

    Without ``phase``: the views as grad_in has them. With ``phase``, the views with the channel dim as (G, C),
    read at the phase's rows either by a strided slice (``d_read="slice"``: a view, and every indexing map stays
    a projected permutation) or by the store's indexing map (``"map"``: spatial roles become ``s*m + offset``,
    see ``form_alternatives``).
    """
    operands, types, block, role_lists, lines = "", "", "", [], []
    for j, view in enumerate(views):
        element = dtypes.mlir_element_type(problem.d_dtypes[j])
        if phase is None:
            value, value_type, roles = view.kept, view.kept_type, view.kept_roles
        elif d_read == "map" or not any(isinstance(r, int) for r in view.roles):
            value, value_type, roles = view.split, view.split_type, view.roles
        else:
            roles = view.roles
            offsets = [phase[r].grad_in_offset if isinstance(r, int) else 0 for r in roles]
            sizes = [phase[r].rows if isinstance(r, int) else size for r, size in zip(roles, view.split_shape)]
            strides = [problem.stride[r] if isinstance(r, int) else 1 for r in roles]
            value, value_type = f"%d{j}_phase_{index}", render.tensor(sizes, element)
            lines.append(
                f"  {value} = tensor.extract_slice {view.split}[{render.index_list(offsets)}] [{render.index_list(sizes)}] "
                f"[{render.index_list(strides)}] : {view.split_type} to {value_type}"
            )
        operands += f", {value}"
        types += f", {value_type}"
        block += f", %d{j}_value: {element}"
        role_lists.append(roles)
    return operands, types, block, role_lists, "\n".join(lines)


def _term(dim: str, coefficient: int, offset: int) -> str:
    """``dim * coefficient + offset`` as MLIR prints it (no ``* 1``, no ``+ 0``)."""
    text = dim if coefficient == 1 else f"{dim} * {coefficient}"
    return text if offset == 0 else f"{text} + {offset}"


def _store_body(problem: ConvProblem, epilogue_root, element: str, acc_value: str) -> str:
    """Body lines of a store: D values to f32, the epilogue, the cast to the stored dtype, the yield."""
    lines = []
    operands = {"acc": acc_value}
    for j, d_dtype in enumerate(problem.d_dtypes):
        d_element = dtypes.mlir_element_type(d_dtype)
        widen, operands[f"d{j}"] = dtypes.widen(f"%d{j}_value", d_element, f"%d{j}_f32")
        if widen:
            lines.append(render.indent(widen, 4))
    for position, name in enumerate(problem.epilogue_params):
        lines.append(f"    %param_index_{position} = arith.constant {position} : index")
        lines.append(f"    %param_{name} = tensor.extract %params[%param_index_{position}] : !params")
        operands[name] = f"%param_{name}"
    value = acc_value
    if epilogue_root is not None:
        body, value = epilogue.emit(epilogue_root, operands)
        lines += ["    " + line for line in body]
    narrow, value = dtypes.narrow(value, element, "%stored")
    if narrow:
        lines.append(render.indent(narrow, 4))
    lines.append(f"    linalg.yield {value} : {element}")
    return "\n".join(lines)


def _store(index: int, phase, problem: ConvProblem, element: str, acc_shape: list[int], epilogue_root, into: str, views: list,
           d_read: str) -> dict:
    """Epilogue and cast of one phase's accumulator, inserted with the phase's stride into grad_in."""
    rank, groups, c = problem.rank, problem.groups, problem.in_channels
    rows = [p.rows for p in phase]
    m = render.dims("m", rank)
    acc_read = ["n", *m, "c"] if groups == 1 else ["n", *m, "g", "c"]
    if problem.channels_last:
        domain = ["n", *m, "g", "c"]
        store_shape = [problem.batch, *rows, groups, c]
        reassociation = [[i] for i in range(rank + 1)] + [[rank + 1, rank + 2]]
        stored_shape = [problem.batch, *rows, groups * c]
        offsets = [0, *(p.grad_in_offset for p in phase), 0]
        strides = [1, *problem.stride, 1]
    else:
        domain = ["n", "g", "c", *m]
        store_shape = [problem.batch, groups, c, *rows]
        reassociation = [[0], [1, 2]] + [[i] for i in range(3, rank + 3)]
        stored_shape = [problem.batch, groups * c, *rows]
        offsets = [0, 0, *(p.grad_in_offset for p in phase)]
        strides = [1, 1, *problem.stride]
    rows_of_d = {a: _term(m[a], problem.stride[a], phase[a].grad_in_offset) if d_read == "map" else m[a] for a in range(rank)}
    role_index = {"n": "n", "g": "g", "c": "c", **rows_of_d}
    d_operands, d_types, d_block, d_roles, d_lines = _d_inputs(problem, views, phase, index, d_read)
    d_maps = [render.affine_map(domain, [role_index[r] for r in roles]) for roles in d_roles]
    maps = [render.affine_map(domain, acc_read), *d_maps, render.affine_map(domain, domain)]
    return {
        "d_views": d_lines,
        "next": index + 1, "into": into, "acc_type": render.tensor(acc_shape, dtypes.ACCUMULATOR),
        "store_type": render.tensor(store_shape, element), "stored_type": render.tensor(stored_shape, element),
        "reassociation": str(reassociation), "store_maps": ", ".join(maps),
        "store_iterators": render.iterators(["parallel"] * len(domain)),
        "d_operands": d_operands, "d_types": d_types, "d_block_args": d_block,
        "store_body": _store_body(problem, epilogue_root, element, "%acc"),
        "insert_offsets": render.index_list(offsets), "insert_sizes": render.index_list(stored_shape),
        "insert_strides": render.index_list(strides),
    }


def _initial_grad_in(problem: ConvProblem, element: str, epilogue_root, views: list) -> tuple[str, str]:
    """What positions no phase writes hold: nothing to do if every position is reached; else 0, or f(0, d...)."""
    if fully_covered(problem) and phases(problem):
        return "  // every grad_in position is reached by exactly one phase: no initial value needed", "%dst"
    if epilogue_root is None:
        return "  %grad_in_0 = linalg.fill ins(%zero_element : " + element + ") outs(%dst : !grad_in) -> !grad_in", "%grad_in_0"
    domain = render.dims("i", problem.rank + 2)
    spatial = domain[1:-1] if problem.channels_last else domain[2:]
    role_index = {"n": domain[0], "channel": domain[-1] if problem.channels_last else domain[1], **dict(enumerate(spatial))}
    d_operands, d_types, d_block, d_roles, _ = _d_inputs(problem, views)
    d_maps = [render.affine_map(domain, [role_index[r] for r in roles]) for roles in d_roles]
    lines = [
        "  // positions no phase reaches: the epilogue of a zero accumulator",
        f"  %grad_in_0 = linalg.generic {{indexing_maps = [{', '.join([*d_maps, render.affine_map(domain, domain)])}], "
        f"iterator_types = {render.iterators(['parallel'] * len(domain))}}}",
        f"      ins({d_operands.lstrip(', ')} : {d_types.lstrip(', ')}) outs(%dst : !grad_in) {{",
        f"  ^bb0({d_block.lstrip(', ')}, %unused: {element}):",
        _store_body(problem, epilogue_root, element, "%zero"),
        "  } -> !grad_in",
    ]
    return "\n".join(lines), "%grad_in_0"


def _weight_groups_type(problem: ConvProblem) -> str:
    shape = list(problem.weight_shape)
    return render.tensor([problem.groups, problem.out_channels, *shape[1:]], dtypes.mlir_element_type(problem.dtype))


def _weight_groups_view(problem: ConvProblem) -> str:
    """For grouped problems, the weight as (G, K, *filter, C) (or (G, K, C, *filter)): a free reshape."""
    if problem.groups == 1:
        return "  // one group: the phases read the weight as it is"
    shape = list(problem.weight_shape)
    reassociation = [[0, 1]] + [[i + 1] for i in range(1, len(shape))]
    view_shape = [problem.groups, problem.out_channels, *shape[1:]]
    return (f"  %weight_groups = tensor.expand_shape %weight {reassociation} output_shape [{render.index_list(view_shape)}] "
            f": !weight into !weight_groups")


def phases_for_target(problem: ConvProblem, target=None) -> list[tuple[geometry.PhaseAxis, ...]]:
    """The phases as the target compiles them best: on llvm-cpu, a one-tap axis of a phase whose other axes
    have several taps gets one zero tap (see PhaseAxis.with_zero_taps); GPUs take the phases as they are."""
    result = phases(problem)
    if target is None or target.backend != "llvm-cpu":
        return result
    return [
        tuple(p.with_zero_taps(1) if p.taps == 1 and any(q.taps > 1 for q in phase) else p for p in phase)
        for phase in result
    ]


def form_alternatives(problem: ConvProblem, target=None) -> list[dict]:
    """The forms to compile for ``target``, in order: when one fails to compile, the next is used (ops.tuning).

    ``weight_flip``: the taps are flipped by a gather (index arithmetic) or by an indexing map with a negative
    coefficient. IREE 3.13 fails each on some shapes of the GPU targets: NVPTX cannot select the gather's
    vectorized index arithmetic ("Cannot select v2i16 umul_lohi", 3x3 float16 layers), and the map's tiled
    operands fail linalg's shape check when a sub-filter is small ("inferred input/output operand ... to be
    greater than or equal to 2"). So the GPU targets try the gather, then the map; llvm-cpu takes only the
    gather (its tiling cannot take a negative coefficient).

    ``d_read``: a phase's store reads its rows of a D tensor by a strided slice or through its indexing map
    (``s*m + offset``). IREE 3.13's CUDA backend mis-indexed the slice on a small shape (docs/perf/h100-sweep),
    so the GPUs read through the map (slices last, should that not compile); llvm-cpu, whose dispatch formation
    rejects the map on some small grouped shapes, takes the slice.
    """
    if target is None or target.backend != "llvm-cpu":
        flips = [{"weight_flip": "gather"}, {"weight_flip": "map"}]
        return [{**flip, "d_read": read} for read in ("map", "slice") for flip in flips]
    return [{"weight_flip": "gather", "d_read": "slice"}]


def render_mlir(problem: ConvProblem, configs: dict[int, str] | None = None, target=None, weight_flip: str | None = None,
                d_read: str | None = None) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, weight, d0.., params, dst).

    ``configs`` maps a phase index to an IREE ``#iree_codegen.compilation_info`` for that phase's convolution
    (a tuned dispatch configuration); phases without one get IREE's defaults. ``target`` (an ops.targets.Target)
    lets the phases take the form that target compiles best (``phases_for_target``). ``weight_flip``: how each
    phase's taps are flipped, ``"gather"`` (index arithmetic; every target) or ``"map"`` (an indexing map with a
    negative coefficient; not llvm-cpu); ``d_read``: how a phase's store reads its rows of a D tensor, ``"slice"``
    or ``"map"``; both by default the target's first choice (``form_alternatives``).
    """
    element = dtypes.mlir_element_type(problem.dtype)
    rank = problem.rank
    cpu = target is not None and target.backend == "llvm-cpu"
    form = form_alternatives(problem, target)[0]  # what is not asked for
    flip, d_read = weight_flip or form["weight_flip"], d_read or form["d_read"]
    epilogue_root = epilogue.parse_canonical(problem.epilogue) if problem.epilogue else None
    grad_out_cl_shape = [problem.batch, *problem.output_spatial, problem.groups * problem.out_channels]
    if problem.channels_last:
        to_channels_last = "  // grad_out is channels-last already"
    else:
        to_channels_last = (
            "  %grad_out_cl_empty = tensor.empty() : !grad_out_cl\n"
            f"  %grad_out_cl = linalg.transpose ins(%grad_out : !grad_out) outs(%grad_out_cl_empty : !grad_out_cl) "
            f"permutation = [{render.index_list(_channels_last_perm(rank))}]"
        )
    views = [_d_view(j, problem) for j in range(len(problem.d_shapes))]
    init, current = _initial_grad_in(problem, element, epilogue_root, views)
    phase_texts = []
    for index, phase in enumerate(phases_for_target(problem, target)):
        weight_values, filter_shape = _weight_gather(index, phase, problem, gather=cpu or flip != "map")
        window_text, window_value, window_shape = _grad_out_window(index, phase, problem, element)
        conv_text, acc_shape = _convolution(index, phase, problem, element, window_value, window_shape, filter_shape, (configs or {}).get(index))
        store_values = _store(index, phase, problem, element, acc_shape, epilogue_root, current, views, d_read)
        current = f"%grad_in_{index + 1}"
        phase_texts.append(render.render(
            "conv_bwd_data_phase", index=index, element=element,
            tap_description=", ".join(
                f"{p.first_tap} + {p.tap_step}*t (t < {p.taps})" + (f" and {p.zero_taps} zero tap(s)" if p.zero_taps else "")
                for p in phase
            ),
            rows_description=", ".join(f"{p.grad_in_offset} + {s}*m (m < {p.rows})" for p, s in zip(phase, problem.stride)),
            grad_out_window=window_text, convolution=conv_text, **weight_values, **store_values,
        ))
    d_aliases = "".join(
        f"!d{j} = {render.tensor(shape, dtypes.mlir_element_type(t))}\n" for j, (shape, t) in enumerate(zip(problem.d_shapes, problem.d_dtypes))
    )
    params = problem.epilogue_params
    return render.render(
        "conv_bwd_data",
        rank=rank, layout=problem.layout, element=element, problem_name=problem.name, function=problem.name,
        groups=problem.groups, epilogue=problem.epilogue or "none (grad_in = acc)",
        grad_out_type=render.tensor(problem.output_shape, element),
        weight_type=render.tensor(problem.weight_shape, element),
        grad_in_type=render.tensor(problem.input_shape, element),
        grad_out_cl_type=render.tensor(grad_out_cl_shape, element),
        extra_aliases=d_aliases + (f"!params = tensor<{len(params)}xf32>\n" if params else "")
        + (f"!weight_groups = {_weight_groups_type(problem)}\n" if problem.groups > 1 else ""),
        extra_arguments="".join(f", %d{j}: !d{j}" for j in range(len(problem.d_shapes))) + (", %params: !params" if params else ""),
        grad_out_to_channels_last=to_channels_last,
        weight_view=_weight_groups_view(problem),
        d_views="\n".join(v.lines for v in views if v.lines),
        initial=init,
        phases="\n".join(phase_texts),
        result=current,
    )


def conv_bwd_data(grad_out, weight, *, input_shape, stride=1, padding=0, dilation=1, layout="NHWC", device=None, out=None):
    """Gradient of an N-D convolution with respect to its input.

    grad_out: ``(N, *out_spatial, K)`` for channels-last layouts (``NWC``, ``NHWC``, ``NDHWC``) or
    ``(N, K, *out_spatial)`` for PyTorch's (``NCW``, ``NCHW``, ``NCDHW``); weight: ``(K, *filter, C)``
    channels-last (CK's KYXC) or ``(K, C, *filter)`` channels-first (PyTorch's). ``input_shape`` is the
    forward input's full shape in the same layout. ``stride``/``dilation``: an int or one per spatial dim;
    ``padding``: an int, one per dim, or one ``(low, high)`` pair per dim.

    NumPy arrays in give a NumPy array out; IREE DeviceArrays in give a DeviceArray out (no host copy).
    ``device`` is an IREE driver name (``local-task`` by default; ``hip``, ``cuda``). ``out``, optional,
    is a DeviceArray of grad_in's shape and dtype that receives the result.
    """
    problem = normalize(grad_out, weight, input_shape=input_shape, stride=stride, padding=padding, dilation=dilation, layout=layout)
    return runtime.run(
        problem, render_mlir, [grad_out, weight],
        results=[(problem.input_shape, problem.dtype)], device=device, out=out,
    )


# --- Problem construction, inputs and reference for the command line and the benchmarks ---------------


def problem_from_params(*, batch, in_channels, out_channels, input_spatial, filter_spatial, stride=1, padding=0,
                        dilation=1, layout="NHWC", dtype="float16", groups=1) -> ConvProblem:
    """A problem from CK-style parameters (no arrays needed), checked like a call's arguments.

    ``in_channels`` (C) and ``out_channels`` (K) are per group, as in CK.
    """
    rank = len(input_spatial)
    channels_last = LAYOUTS.get(layout, (rank, True))[1]  # conv_problem reports a bad layout
    strides = positive_int_tuple("conv_bwd_data", "stride", stride, rank)
    dilations = positive_int_tuple("conv_bwd_data", "dilation", dilation, rank)
    pads = padding_pairs("conv_bwd_data", padding, rank)
    output_spatial = tuple(
        geometry.conv_output_size(input_spatial[a], filter_spatial[a], strides[a], dilations[a], *pads[a])
        for a in range(rank)
    )
    k_total = groups * out_channels
    weight = (k_total, *filter_spatial, in_channels) if channels_last else (k_total, in_channels, *filter_spatial)
    return conv_problem(
        "conv_bwd_data", layout=layout, dtype=dtype,
        input_shape=join_activation(batch, tuple(input_spatial), groups * in_channels, channels_last),
        output_shape=join_activation(batch, output_spatial, k_total, channels_last), output_name="grad_out",
        weight_shape=weight, groups=groups, stride=strides, padding=pads, dilation=dilations,
    )


def random_inputs(problem: ConvProblem, rng) -> list:
    numpy_dtype = dtypes.numpy_dtype(problem.dtype)
    return [
        rng.standard_normal(problem.output_shape, dtype="float32").astype(numpy_dtype),
        rng.standard_normal(problem.weight_shape, dtype="float32").astype(numpy_dtype),
    ]


def reference(problem: ConvProblem, inputs):
    """float64 grad_in from the direct definition, in the problem's layout."""
    return in_layout(problem.channels_last, lambda grad_out, weight: reference_ops.conv_bwd_data(
        grad_out, weight, problem.input_spatial, problem.stride, problem.dilation, problem.padding, problem.groups
    ), *inputs)


def call(problem: ConvProblem, inputs, device=None, out=None):
    grad_out, weight = inputs
    return conv_bwd_data(
        grad_out, weight, input_shape=problem.input_shape, stride=problem.stride, padding=problem.padding,
        dilation=problem.dilation, layout=problem.layout, device=device, out=out,
    )
