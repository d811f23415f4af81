"""Frozen problem objects: every parameter of one operator call, normalized and checked once.

Internal code (rendering, naming, caching, references, benchmarks) takes only these objects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import dtypes, geometry
from .validation import check, check_type, padding_pairs, positive_int_tuple, shape_tuple

# layout -> (spatial rank, channels last?)
LAYOUTS = {
    "NWC": (1, True),
    "NHWC": (2, True),
    "NDHWC": (3, True),
    "NCW": (1, False),
    "NCHW": (2, False),
    "NCDHW": (3, False),
}


def layouts_of_rank(rank: int) -> list[str]:
    return [name for name, (r, _) in LAYOUTS.items() if r == rank]


def array_shape_dtype(op: str, name: str, array) -> tuple[tuple[int, ...], str]:
    """Shape and canonical dtype name of a NumPy array or IREE DeviceArray, or a TypeError naming the parameter."""
    shape, dtype = getattr(array, "shape", None), getattr(array, "dtype", None)
    check_type(
        shape is not None and dtype is not None,
        f"{op}: {name} must be a NumPy array or an IREE DeviceArray, but got {type(array).__name__}",
    )
    return tuple(int(s) for s in shape), dtypes.dtype_name(dtype)


def check_dtype(op: str, name: str, dtype: str) -> None:
    check_type(
        dtype in dtypes.SUPPORTED,
        f"{op}: {name} has dtype {dtype}, but only {', '.join(dtypes.SUPPORTED)} are supported",
    )


def check_layout(op: str, layout, array_rank: int, array_name: str) -> tuple[int, bool]:
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


def split_activation(shape: tuple[int, ...], channels_last: bool) -> tuple[int, tuple[int, ...], int]:
    """(batch, spatial, channels) of an activation-shaped tuple in the given layout."""
    if channels_last:
        return shape[0], shape[1:-1], shape[-1]
    return shape[0], shape[2:], shape[1]


def join_activation(batch: int, spatial: tuple[int, ...], channels: int, channels_last: bool) -> tuple[int, ...]:
    return (batch, *spatial, channels) if channels_last else (batch, channels, *spatial)


@dataclass(frozen=True)
class ConvProblem:
    """One convolution-family backward problem (CK's conv parameters, PyTorch's layouts).

    Channels are per group: the tensors hold ``groups * in_channels`` input channels and
    ``groups * out_channels`` output channels; the weight is ``(groups*out_channels, *filter, in_channels)``
    channels-last or ``(groups*out_channels, in_channels, *filter)`` channels-first.
    """

    op: str
    layout: str
    dtype: str
    batch: int
    groups: int
    in_channels: int
    out_channels: int
    input_spatial: tuple[int, ...]
    output_spatial: tuple[int, ...]
    filter_spatial: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]

    @property
    def rank(self) -> int:
        return len(self.input_spatial)

    @property
    def channels_last(self) -> bool:
        return LAYOUTS[self.layout][1]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return join_activation(self.batch, self.input_spatial, self.groups * self.in_channels, self.channels_last)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return join_activation(self.batch, self.output_spatial, self.groups * self.out_channels, self.channels_last)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        k = self.groups * self.out_channels
        if self.channels_last:
            return (k, *self.filter_spatial, self.in_channels)
        return (k, self.in_channels, *self.filter_spatial)

    @property
    def flops(self) -> int:
        """Multiply-adds of the forward convolution, times two (what CK and cuDNN report)."""
        return (
            2 * self.batch * self.groups * self.out_channels * self.in_channels
            * math.prod(self.output_spatial) * math.prod(self.filter_spatial)
        )

    @property
    def name(self) -> str:
        """Readable, deterministic, and covering every parameter: the module's function and file name."""
        dims = lambda values: "x".join(str(v) for v in values)  # noqa: E731
        pads = "x".join(f"{lo}_{hi}" for lo, hi in self.padding)
        return (
            f"{self.op}_{self.rank}d_{self.layout.lower()}_{self.dtype}_n{self.batch}_g{self.groups}"
            f"_c{self.in_channels}_k{self.out_channels}_i{dims(self.input_spatial)}_f{dims(self.filter_spatial)}"
            f"_s{dims(self.stride)}_d{dims(self.dilation)}_p{pads}"
        )


def conv_problem(
    op: str,
    *,
    layout,
    dtype: str,
    input_shape,
    output_shape: tuple[int, ...],
    output_name: str,
    weight_shape: tuple[int, ...] | None,
    filter_spatial=None,
    groups: int = 1,
    stride=1,
    padding=0,
    dilation=1,
) -> ConvProblem:
    """Check and normalize the parameters of a convolution-family call into a ConvProblem.

    ``output_shape`` is grad_out's shape; the forward input's shape comes from ``input_shape`` and the
    filter from ``weight_shape`` (backward-data) or ``filter_spatial`` (backward-weight).
    """
    rank, channels_last = check_layout(op, layout, len(output_shape), output_name)
    input_shape = shape_tuple(op, "input_shape", input_shape)
    check(
        len(input_shape) == rank + 2,
        f"{op}: input_shape must have {rank + 2} entries for layout {layout!r}, but got {input_shape!r}",
    )
    check_type(isinstance(groups, int) and not isinstance(groups, bool), f"{op}: groups must be an int, but got {groups!r}")
    check(groups >= 1, f"{op}: groups must be positive, but got {groups}")
    stride = positive_int_tuple(op, "stride", stride, rank)
    dilation = positive_int_tuple(op, "dilation", dilation, rank)
    padding = padding_pairs(op, padding, rank)

    batch, input_spatial, input_channels = split_activation(input_shape, channels_last)
    out_batch, output_spatial, output_channels = split_activation(output_shape, channels_last)
    check(
        out_batch == batch,
        f"{op}: {output_name} has batch {out_batch}, but input_shape has batch {batch}",
    )
    check(
        input_channels % groups == 0,
        f"{op}: groups={groups} must divide the input channels, but {groups} does not divide {input_channels}",
    )
    check(
        output_channels % groups == 0,
        f"{op}: groups={groups} must divide {output_name}'s channels, but {groups} does not divide {output_channels}",
    )
    in_channels = input_channels // groups

    if weight_shape is not None:
        check(
            len(weight_shape) == rank + 2,
            f"{op}: weight must have rank {rank + 2} for layout {layout!r}, but has shape {weight_shape!r}",
        )
        weight_k = weight_shape[0]
        weight_c = weight_shape[-1] if channels_last else weight_shape[1]
        filter_spatial = tuple(weight_shape[1:-1] if channels_last else weight_shape[2:])
        check(
            weight_k == output_channels,
            f"{op}: weight has {weight_k} output channels (dim 0), but {output_name} has {output_channels} channels",
        )
        check(
            weight_c == in_channels,
            f"{op}: weight has {weight_c} input channels per group, but input_shape has {input_channels} channels "
            f"in {groups} group(s), i.e. {in_channels} per group",
        )
    else:
        filter_spatial = positive_int_tuple(op, "kernel_size", filter_spatial, rank)

    expected = tuple(
        geometry.conv_output_size(input_spatial[a], filter_spatial[a], stride[a], dilation[a], *padding[a])
        for a in range(rank)
    )
    check(
        all(e >= 1 for e in expected),
        f"{op}: the dilated filter {filter_spatial!r} (dilation {dilation!r}) does not fit the padded input "
        f"{input_spatial!r} with padding {padding!r}",
    )
    check(
        tuple(output_spatial) == expected,
        f"{op}: {output_name} has spatial size {tuple(output_spatial)!r}, but input_shape {input_shape!r} with "
        f"filter {filter_spatial!r}, stride {stride!r}, padding {padding!r} and dilation {dilation!r} gives {expected!r}",
    )
    check_dtype(op, output_name, dtype)
    return ConvProblem(
        op=op,
        layout=layout,
        dtype=dtype,
        batch=batch,
        groups=groups,
        in_channels=in_channels,
        out_channels=output_channels // groups,
        input_spatial=tuple(input_spatial),
        output_spatial=tuple(output_spatial),
        filter_spatial=tuple(filter_spatial),
        stride=stride,
        dilation=dilation,
        padding=padding,
    )


def channels_last(array):
    """(N, C, *spatial) -> (N, *spatial, C); also (K, C, *filter) -> (K, *filter, C) for weights."""
    import numpy as np

    return np.moveaxis(np.asarray(array), 1, -1)


def channels_first(array):
    """(N, *spatial, C) -> (N, C, *spatial); the inverse of channels_last."""
    import numpy as np

    return np.moveaxis(np.asarray(array), -1, 1)
