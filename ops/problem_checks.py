"""Building problems: every argument of a call (or of a problem from parameters) checked, normalized and made
into one of the frozen problems of ``ops.problem``.

Every failure is a ``ValueError`` (or ``TypeError``) whose message names the operator and the parameter.
Convolutions (``conv_problem`` from a call's arrays, ``conv_problem_from_params`` from sizes) and pooling
(``pool_problem``) check their own windows, then share one tail (``_window_problem``): the output's spatial size
against the one the window gives, the dtype, and the problem.
"""

from __future__ import annotations

import numpy as np

from . import dtypes, geometry
from .layouts import LAYOUTS, layouts_of_rank, split_activation
from .validation import MAX_EXTENT, activation_shape, check, check_type, padding_pairs, positive_int_tuple


# --- Arrays, dtypes and layouts -------------------------------------------------------------------------------


def array_shape_dtype(op: str, name: str, array) -> tuple[tuple[int, ...], str]:
    """Shape and canonical dtype name of a NumPy array or IREE DeviceArray, or a TypeError naming the parameter."""
    shape, dtype = getattr(array, "shape", None), getattr(array, "dtype", None)
    if type(array).__module__.partition(".")[0] == "torch":
        raise TypeError(
            f"{op}: {name} is a {type(array).__module__}.{type(array).__name__}; this API takes NumPy arrays or IREE "
            "DeviceArrays. For PyTorch tensors use ops.torch (conv1d/2d/3d, max_pool2d, avg_pool3d and the nn "
            f"modules, whose backward runs these kernels inside autograd), or pass {name}.numpy()")
    check_type(
        shape is not None and dtype is not None,
        f"{op}: {name} must be a NumPy array or an IREE DeviceArray, but got {type(array).__name__}",
    )
    if isinstance(dtype, np.dtype) and not dtype.isnative:
        raise TypeError(f"{op}: {name} has dtype {dtype.str} in a byte order not this machine's; convert it first, "
                        f"e.g. {name}.astype({name}.dtype.newbyteorder('='))")
    return tuple(int(s) for s in shape), dtypes.dtype_name(dtype)


def check_dtype(op: str, name: str, dtype: str) -> None:
    """``name``'s dtype is one the operators support (a TypeError otherwise)."""
    check_type(
        dtype in dtypes.SUPPORTED,
        f"{op}: {name} has dtype {dtype}, but only {', '.join(dtypes.SUPPORTED)} are supported",
    )


def check_layout(op: str, layout, array_rank: int, array_name: str) -> tuple[int, bool]:
    """(spatial rank, channels last?) of ``layout``, checked against the rank of the array ``array_name``."""
    check_type(isinstance(layout, str), f"{op}: layout must be a string such as 'NHWC', but got {layout!r}")
    check(layout in LAYOUTS, f"{op}: layout must be one of {', '.join(LAYOUTS)}, but got {layout!r}")
    rank, channels_last = LAYOUTS[layout]
    check(
        array_rank - 2 in (1, 2, 3),
        f"{op}: {array_name} must be 3-D, 4-D or 5-D (1, 2 or 3 spatial dims), but got rank {array_rank}",
    )
    check(
        array_rank == rank + 2,
        f"{op}: layout {layout!r} is for {rank + 2}-D arrays, but {array_name} has rank {array_rank}; "
        f"use one of {', '.join(layouts_of_rank(array_rank - 2))}",
    )
    return rank, channels_last


# --- What convolutions and pooling share ----------------------------------------------------------------------


def _input_shape(op: str, name: str, shape, rank: int, layout: str) -> tuple[int, ...]:
    """The forward input's shape (``name`` in messages), checked: ``rank + 2`` sizes."""
    shape = activation_shape(op, name, shape)
    check(
        len(shape) == rank + 2,
        f"{op}: {name} must have {rank + 2} entries for layout {layout!r}, but got {shape!r}",
    )
    return shape


def _window_steps(op: str, rank: int, stride, dilation, padding) -> tuple[tuple[int, ...], tuple[int, ...], tuple]:
    """(stride, dilation, padding) per spatial dim: positive strides and dilations, one (low, high) pair each."""
    stride = positive_int_tuple(op, "stride", stride, rank)
    dilation = positive_int_tuple(op, "dilation", dilation, rank)
    return stride, dilation, padding_pairs(op, padding, rank)


def _window_problem(problem_type: type, op: str, *, output_name: str, output_spatial, expected: tuple[int, ...],
                    windows: str, input_shape: tuple[int, ...], dtype: str, **fields):
    """The tail every problem's construction shares: ``output_name``'s spatial size (None: not given) is the
    ``expected`` one (``windows`` says, for the message, what gives it), the dtype is supported, and the problem
    of ``problem_type`` holds ``expected`` as its output size and every other field."""
    if output_spatial is not None:
        check(
            tuple(output_spatial) == expected,
            f"{op}: {output_name} has spatial size {tuple(output_spatial)!r}, but input_shape {input_shape!r} with "
            f"{windows} gives {expected!r}",
        )
    check_dtype(op, output_name, dtype)
    return problem_type(op=op, dtype=dtype, output_spatial=expected, **fields)


# --- Convolutions ---------------------------------------------------------------------------------------------


def _conv_arguments(op: str, layout: str, rank: int, input_shape, groups, stride, dilation, padding):
    """(input shape, stride, dilation, padding) of a convolution, checked, after ``groups`` is."""
    input_shape = _input_shape(op, "input_shape", input_shape, rank, layout)
    check_type(isinstance(groups, int) and not isinstance(groups, bool), f"{op}: groups must be an int, but got {groups!r}")
    check(groups >= 1, f"{op}: groups must be positive, but got {groups}")
    return (input_shape, *_window_steps(op, rank, stride, dilation, padding))


def _channels_per_group(op: str, groups: int, input_channels: int, output_channels: int) -> int:
    """The input channels per group; ``groups`` divides both the input's and grad_out's channels."""
    check(
        input_channels % groups == 0,
        f"{op}: groups={groups} must divide the input channels, but {groups} does not divide {input_channels}",
    )
    check(
        output_channels % groups == 0,
        f"{op}: groups={groups} must divide grad_out's channels, but {groups} does not divide {output_channels}",
    )
    return input_channels // groups


def _filter_of_weight(op: str, layout: str, weight_shape: tuple[int, ...], channels_last: bool, groups: int,
                      input_channels: int, output_channels: int) -> tuple[int, ...]:
    """The filter's spatial size, from a weight whose rank and channels are checked against the activations'."""
    rank = LAYOUTS[layout][0]
    check(
        len(weight_shape) == rank + 2,
        f"{op}: weight must have rank {rank + 2} for layout {layout!r}, but has shape {weight_shape!r}",
    )
    in_channels = input_channels // groups
    weight_k = weight_shape[0]
    weight_c = weight_shape[-1] if channels_last else weight_shape[1]
    check(
        weight_k == output_channels,
        f"{op}: weight has {weight_k} output channels (dim 0), but grad_out has {output_channels} channels",
    )
    check(
        weight_c == in_channels,
        f"{op}: weight has {weight_c} input channels per group, but input_shape has {input_channels} channels "
        f"in {groups} group(s), i.e. {in_channels} per group",
    )
    return tuple(weight_shape[1:-1] if channels_last else weight_shape[2:])


def _conv_output_spatial(op: str, filter_name: str, input_spatial, filter_spatial, stride, dilation,
                         padding) -> tuple[int, ...]:
    """grad_out's spatial size the convolution gives, checked to be at least 1 on every axis."""
    expected = tuple(
        geometry.conv_output_size(input_spatial[a], filter_spatial[a], stride[a], dilation[a], *padding[a])
        for a in range(len(input_spatial))
    )
    check(
        all(e >= 1 for e in expected),
        f"{op}: the dilated {filter_name} {filter_spatial!r} (dilation {dilation!r}) does not fit the padded input "
        f"{input_spatial!r} with padding {padding!r}",
    )
    return expected


def _conv_window_problem(problem_type: type, op: str, *, filter_name: str, filter_spatial: tuple[int, ...],
                         groups: int, in_channels: int, output_channels: int, input_spatial, stride, dilation,
                         padding, **fields):
    """The convolution's problem through the shared tail: grad_out's size the window gives, the filter, the
    channels per group (``fields`` pass on: grad_out's given spatial size, input_shape, dtype and the rest)."""
    expected = _conv_output_spatial(op, filter_name, input_spatial, filter_spatial, stride, dilation, padding)
    windows = f"{filter_name} {filter_spatial!r}, stride {stride!r}, padding {padding!r} and dilation {dilation!r}"
    return _window_problem(
        problem_type, op, output_name="grad_out", expected=expected, windows=windows, groups=groups,
        in_channels=in_channels, out_channels=output_channels // groups, input_spatial=tuple(input_spatial),
        filter_spatial=tuple(filter_spatial), stride=stride, dilation=dilation, padding=padding, **fields,
    )


def conv_problem(problem_type: type, op: str, *, layout, dtype: str, input_shape, output_shape: tuple[int, ...],
                 weight_shape: tuple[int, ...] | None = None, filter_spatial=None, groups: int = 1, stride=1,
                 padding=0, dilation=1, **fields):
    """A convolution-family call's arguments, checked and normalized into ``problem_type`` (with ``fields``).

    ``output_shape`` is grad_out's shape and ``input_shape`` the forward input's; the filter comes from
    ``weight_shape`` (backward-data) or ``filter_spatial`` (backward-weight).
    """
    rank, channels_last = check_layout(op, layout, len(output_shape), "grad_out")
    input_shape, stride, dilation, padding = _conv_arguments(op, layout, rank, input_shape, groups, stride, dilation,
                                                             padding)
    batch, input_spatial, input_channels = split_activation(input_shape, channels_last)
    out_batch, output_spatial, output_channels = split_activation(output_shape, channels_last)
    check(out_batch == batch, f"{op}: grad_out has batch {out_batch}, but input_shape has batch {batch}")
    in_channels = _channels_per_group(op, groups, input_channels, output_channels)
    if weight_shape is None:
        filter_name, filter_spatial = "filter_spatial", positive_int_tuple(op, "filter_spatial", filter_spatial, rank)
    else:
        filter_name = "filter"
        filter_spatial = _filter_of_weight(op, layout, weight_shape, channels_last, groups, input_channels,
                                           output_channels)
    return _conv_window_problem(
        problem_type, op, filter_name=filter_name, filter_spatial=filter_spatial, groups=groups,
        in_channels=in_channels, output_channels=output_channels, output_spatial=output_spatial,
        input_shape=input_shape, layout=layout, dtype=dtype, batch=batch, input_spatial=input_spatial,
        stride=stride, dilation=dilation, padding=padding, **fields,
    )


def conv_problem_from_params(problem_type: type, op: str, *, layout, dtype: str, input_shape, output_channels: int,
                             filter_spatial, groups: int = 1, stride=1, padding=0, dilation=1, **fields):
    """A convolution-family problem from sizes (no arrays), checked like a call's arguments, into
    ``problem_type`` (with ``fields``): grad_out has ``output_channels`` channels and the size the window gives."""
    rank, channels_last = check_layout(op, layout, len(input_shape), "grad_out")
    input_shape, stride, dilation, padding = _conv_arguments(op, layout, rank, input_shape, groups, stride, dilation,
                                                             padding)
    batch, input_spatial, input_channels = split_activation(input_shape, channels_last)
    in_channels = _channels_per_group(op, groups, input_channels, output_channels)
    filter_spatial = positive_int_tuple(op, "filter_spatial", filter_spatial, rank)
    return _conv_window_problem(
        problem_type, op, filter_name="filter_spatial", filter_spatial=filter_spatial, groups=groups,
        in_channels=in_channels, output_channels=output_channels, output_spatial=None, input_shape=input_shape,
        layout=layout, dtype=dtype, batch=batch, input_spatial=input_spatial, stride=stride, dilation=dilation,
        padding=padding, **fields,
    )


# --- Pooling --------------------------------------------------------------------------------------------------


def _pool_layout(op: str, layout, rank: int) -> bool:
    """Whether ``layout``, checked to be one of the ``rank``-D pooling layouts, is channels-last."""
    layouts = layouts_of_rank(rank)
    check_type(isinstance(layout, str), f"{op}: layout must be a string such as {layouts[0]!r}, but got {layout!r}")
    check(layout in layouts, f"{op}: layout must be one of {', '.join(layouts)}, but got {layout!r}")
    return LAYOUTS[layout][1]


def _pool_window(op: str, rank: int, kernel_size, stride, dilation, padding, ceil_mode):
    """(kernel_size, stride, dilation, padding) of a pooling window, checked as PyTorch does (stride: the
    kernel_size when None; padding at most half the window), after ``ceil_mode`` is."""
    kernel_size = positive_int_tuple(op, "kernel_size", kernel_size, rank)
    stride, dilation, padding = _window_steps(op, rank, kernel_size if stride is None else stride, dilation, padding)
    check_type(isinstance(ceil_mode, bool), f"{op}: ceil_mode must be a bool, but got {ceil_mode!r}")
    half = tuple(k // 2 for k in kernel_size)
    check(
        all(lo <= h and hi <= h for (lo, hi), h in zip(padding, half)),
        f"{op}: padding must be at most half the window (kernel_size // 2 = {half!r}), but got padding {padding!r} "
        f"for kernel_size {kernel_size!r}",
    )
    return kernel_size, stride, dilation, padding


def _pool_output_spatial(op: str, input_spatial, kernel_size, stride, dilation, padding, ceil_mode) -> tuple[int, ...]:
    """The window count per axis PyTorch computes, checked: at least one window, and no window all padding."""
    rank = len(input_spatial)
    expected = tuple(
        geometry.pool_output_size(input_spatial[a], kernel_size[a], stride[a], dilation[a], *padding[a], ceil_mode)
        for a in range(rank)
    )
    check(
        all(e >= 1 for e in expected),
        f"{op}: the window {kernel_size!r} (dilation {dilation!r}) does not fit the padded input "
        f"{tuple(input_spatial)!r} with padding {padding!r}: the output size would be {expected!r}",
    )
    for a in range(rank):
        counts = geometry.pool_tap_counts(
            input_spatial[a], expected[a], kernel_size[a], stride[a], dilation[a], *padding[a], False)
        empty = [o for o, count in enumerate(counts) if count == 0]
        check(
            not empty,
            f"{op}: window {empty[0] if empty else 0} of spatial dim {a} holds no input position (all its dilated "
            f"taps fall in the padding): kernel_size {kernel_size!r}, dilation {dilation!r}, padding {padding!r}, "
            f"input {tuple(input_spatial)!r}",
        )
    return expected


def _pool_output(op: str, output_name: str, output_shape, layout: str, input_shape: tuple[int, ...]) -> tuple:
    """The spatial size of ``output_shape`` (one value per window), its rank, batch and channels checked against
    the input's."""
    rank, channels_last = LAYOUTS[layout]
    check(
        len(output_shape) == rank + 2,
        f"{op}: {output_name} must be {rank + 2}-D for layout {layout!r}, but has shape {tuple(output_shape)!r}",
    )
    batch, _, channels = split_activation(input_shape, channels_last)
    out_batch, output_spatial, out_channels = split_activation(tuple(output_shape), channels_last)
    check(
        (out_batch, out_channels) == (batch, channels),
        f"{op}: {output_name} has batch {out_batch} and {out_channels} channels, but input_shape {input_shape!r} "
        f"has batch {batch} and {channels} channels",
    )
    return output_spatial


def pool_problem(problem_type: type, op: str, *, rank: int, layout, dtype: str, input_shape, kernel_size,
                 stride=None, padding=0, dilation=1, ceil_mode=False, output_shape: tuple[int, ...] | None = None,
                 output_name: str = "grad_out", input_name: str = "input_shape", **fields):
    """Check and normalize the parameters of a pooling call into ``problem_type`` with ``fields`` (PyTorch's checks).

    ``input_shape`` is the forward input's shape; ``output_shape``, when given, is the array holding
    one value per window (grad_out), checked against the window count PyTorch computes. ``input_name``
    names what ``input_shape`` came from in messages (``x`` for the forward).
    """
    channels_last = _pool_layout(op, layout, rank)
    input_shape = _input_shape(op, input_name, input_shape, rank, layout)
    kernel_size, stride, dilation, padding = _pool_window(op, rank, kernel_size, stride, dilation, padding, ceil_mode)
    batch, input_spatial, channels = split_activation(input_shape, channels_last)
    expected = _pool_output_spatial(op, input_spatial, kernel_size, stride, dilation, padding, ceil_mode)
    output_spatial = None if output_shape is None else _pool_output(op, output_name, output_shape, layout, input_shape)
    windows = (f"kernel_size {kernel_size!r}, stride {stride!r}, padding {padding!r}, dilation {dilation!r} and "
               f"ceil_mode={ceil_mode}")
    return _window_problem(
        problem_type, op, output_name=output_name, output_spatial=output_spatial, expected=expected, windows=windows,
        input_shape=input_shape, layout=layout, dtype=dtype, batch=batch, channels=channels,
        input_spatial=tuple(input_spatial), kernel_size=kernel_size, stride=stride, dilation=dilation,
        padding=padding, ceil_mode=ceil_mode, **fields,
    )


def avg_pool_fields(op: str, count_include_pad, divisor_override) -> dict:
    """Average pooling's own parameters, checked: count_include_pad and divisor_override."""
    check_type(isinstance(count_include_pad, bool), f"{op}: count_include_pad must be a bool, but got {count_include_pad!r}")
    check_type(
        divisor_override is None or (isinstance(divisor_override, int) and not isinstance(divisor_override, bool)),
        f"{op}: divisor_override must be None or an int, but got {divisor_override!r}",
    )
    check(divisor_override != 0, f"{op}: divisor_override must not be zero")
    check(
        divisor_override is None or abs(divisor_override) <= MAX_EXTENT,
        f"{op}: divisor_override must be at most {MAX_EXTENT} in size, but got {divisor_override!r}",
    )
    return {"count_include_pad": count_include_pad, "divisor_override": divisor_override}
