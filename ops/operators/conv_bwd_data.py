"""N-D convolution backward-data (CK example ``17_convnd_bwd_data``).

``grad_in = conv_bwd_data(grad_out, weight, input_shape=...)`` is the gradient of PyTorch's
``conv{1,2,3}d(input, weight, stride, padding, dilation)`` with respect to ``input``. The MLIR form is
``mlir/conv_bwd_data.mlir``: one stride-1 named convolution per stride phase (see the template's header).
"""

from __future__ import annotations

import itertools

from .. import dtypes, geometry, render, runtime
from .. import reference as reference_ops
from ..problem import (
    LAYOUTS, ConvProblem, array_shape_dtype, channels_first, channels_last, conv_problem, join_activation,
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


def _grad_out_window(index: int, phase: tuple[geometry.PhaseAxis, ...], problem: ConvProblem, element: str) -> tuple[str, str, list[int]]:
    """Crop and zero-pad grad_out (channels-last) to the window phase ``index`` convolves: (lines, value, shape)."""
    n, k = problem.batch, problem.groups * problem.out_channels
    crop_lo = [max(0, -p.grad_out_pad[0]) for p in phase]
    crop_hi = [max(0, -p.grad_out_pad[1]) for p in phase]
    pad_lo = [max(0, p.grad_out_pad[0]) for p in phase]
    pad_hi = [max(0, p.grad_out_pad[1]) for p in phase]
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


def _render_phase(index: int, phase: tuple[geometry.PhaseAxis, ...], problem: ConvProblem, element: str, config: str | None) -> str:
    rank, k, c = problem.rank, problem.out_channels, problem.in_channels
    taps = [p.taps for p in phase]
    filter_dims = render.dims("d", rank + 2)
    tap_lines = []
    for a, p in enumerate(phase):
        tap_lines.append(f"    %u{a} = linalg.index {a} : index")
        # u = taps-1-t reads tap f = first_tap + tap_step*t = flipped_first_tap - tap_step*u
        tap_lines.append(
            f"    %f{a} = affine.apply affine_map<(u) -> ({p.flipped_first_tap} - u * {p.tap_step})>(%u{a})"
        )
    tap_lines.append(f"    %k = linalg.index {rank} : index")
    tap_lines.append(f"    %c = linalg.index {rank + 1} : index")
    filter_taps = [f"%f{a}" for a in range(rank)]
    weight_indices = ["%k", *filter_taps, "%c"] if problem.channels_last else ["%k", "%c", *filter_taps]
    window, window_value, window_shape = _grad_out_window(index, phase, problem, element)
    rows = [p.rows for p in phase]
    return render.render(
        "conv_bwd_data_phase",
        index=index,
        next=index + 1,
        element=element,
        tap_description=", ".join(f"{p.first_tap} + {p.tap_step}*t (t < {p.taps})" for p in phase),
        rows_description=", ".join(
            f"{p.grad_in_offset} + {s}*m (m < {p.rows})" for p, s in zip(phase, problem.stride)
        ),
        phase_filter_type=render.tensor([*taps, k, c], element),
        phase_filter_map=render.affine_map(filter_dims, filter_dims),
        phase_filter_iterators=render.iterators(["parallel"] * (rank + 2)),
        tap_indices="\n".join(tap_lines),
        weight_indices=render.index_list(weight_indices),
        grad_out_window=window,
        grad_out_window_value=window_value,
        phase_in_type=render.tensor(window_shape, element),
        phase_out_type=render.tensor([problem.batch, *rows, c], dtypes.ACCUMULATOR),
        conv_op=_CONV_OPS[rank],
        sub_dilations=render.i64_array([p.sub_dilation for p in phase]),
        unit_strides=render.i64_array([1] * rank),
        dispatch_config=f", compilation_info = {config}" if config else "",
        insert_offsets=render.index_list([0, *(p.grad_in_offset for p in phase), 0]),
        insert_sizes=render.index_list([problem.batch, *rows, c]),
        insert_strides=render.index_list([1, *problem.stride, 1]),
    )


def render_mlir(problem: ConvProblem, configs: dict[int, str] | None = None) -> str:
    """The problem's module: one function, ``problem.name``, taking (grad_out, weight, dst).

    ``configs`` maps a phase index to an IREE ``#iree_codegen.compilation_info`` for that phase's convolution
    (a tuned dispatch configuration); phases without one get IREE's defaults.
    """
    element = dtypes.mlir_element_type(problem.dtype)
    rank = problem.rank
    c = problem.in_channels
    grad_out_cl_shape = [problem.batch, *problem.output_spatial, problem.out_channels]
    acc_shape = [problem.batch, *problem.input_spatial, c]
    domain = render.dims("d", rank + 2)
    perm = _channels_last_perm(rank)
    if problem.channels_last:
        to_channels_last = "  // grad_out is channels-last already"
        store_acc_map = render.affine_map(domain, domain)
    else:
        to_channels_last = (
            "  %grad_out_cl_empty = tensor.empty() : !grad_out_cl\n"
            f"  %grad_out_cl = linalg.transpose ins(%grad_out : !grad_out) outs(%grad_out_cl_empty : !grad_out_cl) "
            f"permutation = [{render.index_list(perm)}]"
        )
        # the store iterates over grad_in (N, C, *spatial) and reads acc (N, *spatial, C)
        store_acc_map = render.affine_map(domain, [domain[0], *domain[2:], domain[1]])
    cast = dtypes.store_cast("%a", element)
    store_body = f"    %v = {cast}\n    linalg.yield %v : {element}" if cast else f"    linalg.yield %a : {element}"
    phase_list = phases(problem)
    return render.render(
        "conv_bwd_data",
        rank=rank,
        layout=problem.layout,
        element=element,
        problem_name=problem.name,
        function=problem.name,
        grad_out_type=render.tensor(problem.output_shape, element),
        weight_type=render.tensor(problem.weight_shape, element),
        grad_in_type=render.tensor(problem.input_shape, element),
        grad_out_cl_type=render.tensor(grad_out_cl_shape, element),
        acc_type=render.tensor(acc_shape, dtypes.ACCUMULATOR),
        grad_out_to_channels_last=to_channels_last,
        phases="\n".join(_render_phase(i, p, problem, element, (configs or {}).get(i)) for i, p in enumerate(phase_list)),
        phase_count=len(phase_list),
        store_acc_map=store_acc_map,
        store_dst_map=render.affine_map(domain, domain),
        store_iterators=render.iterators(["parallel"] * (rank + 2)),
        store_body=store_body,
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
                        dilation=1, layout="NHWC", dtype="float16") -> ConvProblem:
    """A problem from CK-style parameters (no arrays needed), checked like a call's arguments."""
    rank = len(input_spatial)
    channels_last = LAYOUTS.get(layout, (rank, True))[1]  # conv_problem reports a bad layout
    strides = positive_int_tuple("conv_bwd_data", "stride", stride, rank)
    dilations = positive_int_tuple("conv_bwd_data", "dilation", dilation, rank)
    pads = padding_pairs("conv_bwd_data", padding, rank)
    output_spatial = tuple(
        geometry.conv_output_size(input_spatial[a], filter_spatial[a], strides[a], dilations[a], *pads[a])
        for a in range(rank)
    )
    weight = (out_channels, *filter_spatial, in_channels) if channels_last else (out_channels, in_channels, *filter_spatial)
    return conv_problem(
        "conv_bwd_data", layout=layout, dtype=dtype,
        input_shape=join_activation(batch, tuple(input_spatial), in_channels, channels_last),
        output_shape=join_activation(batch, output_spatial, out_channels, channels_last), output_name="grad_out",
        weight_shape=weight, stride=strides, padding=pads, dilation=dilations,
    )


def random_inputs(problem: ConvProblem, rng) -> list:
    numpy_dtype = dtypes.numpy_dtype(problem.dtype)
    return [
        rng.standard_normal(problem.output_shape, dtype="float32").astype(numpy_dtype),
        rng.standard_normal(problem.weight_shape, dtype="float32").astype(numpy_dtype),
    ]


def reference(problem: ConvProblem, inputs) -> "np.ndarray":
    """float64 grad_in from the direct definition, in the problem's layout."""
    grad_out, weight = inputs
    if not problem.channels_last:
        grad_out, weight = channels_last(grad_out), channels_last(weight)
    result = reference_ops.conv_bwd_data(
        grad_out, weight, problem.input_spatial, problem.stride, problem.dilation, problem.padding, problem.groups
    )
    return result if problem.channels_last else channels_first(result)


def call(problem: ConvProblem, inputs, device=None, out=None):
    grad_out, weight = inputs
    return conv_bwd_data(
        grad_out, weight, input_shape=problem.input_shape, stride=problem.stride, padding=problem.padding,
        dilation=problem.dilation, layout=problem.layout, device=device, out=out,
    )
