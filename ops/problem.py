"""Frozen problem objects: every parameter of one operator call, normalized and checked once.

Internal code (rendering, naming, caching, references, benchmarks) takes only these objects.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from . import dtypes, geometry
from .validation import MAX_EXTENT, activation_shape, check, check_type, padding_pairs, positive_int_tuple

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
    check_type(
        not isinstance(dtype, np.dtype) or dtype.isnative,
        f"{op}: {name} has dtype {dtype.str} in a byte order not this machine's; convert it first, e.g. "
        f"{name}.astype({name}.dtype.newbyteorder('='))",
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
    out_dtype: str | None = None  # the result's dtype where it differs from dtype (backward-weight); None: dtype
    # backward-data's fused epilogue: grad_in = f(acc, d0, d1, ...), see ops/epilogue.py
    epilogue: str | None = None  # canonical expression text
    epilogue_params: tuple[str, ...] = ()  # parameter names, in the order of the params argument
    d_shapes: tuple[tuple[int, ...], ...] = ()
    d_dtypes: tuple[str, ...] = ()

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
        name = (
            f"{self.op}_{self.rank}d_{self.layout.lower()}_{self.dtype}_n{self.batch}_g{self.groups}"
            f"_c{self.in_channels}_k{self.out_channels}_i{dims(self.input_spatial)}_f{dims(self.filter_spatial)}"
            f"_s{dims(self.stride)}_d{dims(self.dilation)}_p{pads}"
        )
        if self.out_dtype is not None and self.out_dtype != self.dtype:
            name += f"_out_{self.out_dtype}"
        if self.epilogue is not None:
            # the expression and the D shapes are not identifier-safe: a digest of them keeps the name readable
            epilogue = repr((self.epilogue, self.epilogue_params, self.d_shapes, self.d_dtypes)).encode()
            name += f"_e{len(self.d_shapes)}_{hashlib.sha256(epilogue).hexdigest()[:10]}"
        return name


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
    input_shape = activation_shape(op, "input_shape", input_shape)
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
    filter_name = "filter" if weight_shape is not None else "kernel_size"

    expected = tuple(
        geometry.conv_output_size(input_spatial[a], filter_spatial[a], stride[a], dilation[a], *padding[a])
        for a in range(rank)
    )
    check(
        all(e >= 1 for e in expected),
        f"{op}: the dilated {filter_name} {filter_spatial!r} (dilation {dilation!r}) does not fit the padded input "
        f"{input_spatial!r} with padding {padding!r}",
    )
    check(
        tuple(output_spatial) == expected,
        f"{op}: {output_name} has spatial size {tuple(output_spatial)!r}, but input_shape {input_shape!r} with "
        f"{filter_name} {filter_spatial!r}, stride {stride!r}, padding {padding!r} and dilation {dilation!r} gives {expected!r}",
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


def in_layout(channels_last_layout: bool, function, *arrays):
    """Apply a channels-last ``function`` to channels-first ``arrays`` too: convert in, call, convert back."""
    if channels_last_layout:
        return function(*arrays)
    return channels_first(function(*(channels_last(a) for a in arrays)))


def channels_first(array):
    """(N, *spatial, C) -> (N, C, *spatial); the inverse of channels_last."""
    import numpy as np

    return np.moveaxis(np.asarray(array), -1, 1)


# --- Pooling --------------------------------------------------------------------------------------------

POOL_INDEX_DTYPES = ("int64", "int32")
POOL_SOURCES = ("indices", "x")  # where maxpool2d_bwd finds each window's argmax


@dataclass(frozen=True)
class PoolProblem:
    """One pooling problem (PyTorch's max_pool2d / avg_pool3d parameters, CK's window dilation).

    ``output_spatial`` follows PyTorch's rules (ceil_mode included). Fields that do not apply to an
    operator keep their defaults: ``count_include_pad``/``divisor_override`` for max pooling,
    ``source``/``index_dtype`` for average pooling.
    """

    op: str
    layout: str
    dtype: str
    batch: int
    channels: int
    input_spatial: tuple[int, ...]
    output_spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    ceil_mode: bool = False
    count_include_pad: bool = True
    divisor_override: int | None = None
    source: str = ""  # maxpool2d_bwd: "indices" (from the forward) or "x" (argmax recomputed)
    index_dtype: str = ""  # max pooling: dtype of the indices (int64, or int32 given to maxpool2d_bwd)

    @property
    def rank(self) -> int:
        return len(self.input_spatial)

    @property
    def channels_last(self) -> bool:
        return LAYOUTS[self.layout][1]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return join_activation(self.batch, self.input_spatial, self.channels, self.channels_last)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return join_activation(self.batch, self.output_spatial, self.channels, self.channels_last)

    @property
    def candidates(self) -> tuple[int, ...]:
        """Per axis, the most windows holding one input position (1: the windows never overlap, or there is one)."""
        return tuple(
            1 if o == 1 else geometry.pool_candidates(k, s, d)
            for k, s, d, o in zip(self.kernel, self.stride, self.dilation, self.output_spatial)
        )

    @property
    def overlapping(self) -> bool:
        return any(j > 1 for j in self.candidates)

    @property
    def name(self) -> str:
        """Readable, deterministic, and covering every parameter: the module's function and file name."""
        dims = lambda values: "x".join(str(v) for v in values)  # noqa: E731
        pads = "x".join(f"{lo}_{hi}" for lo, hi in self.padding)
        name = (
            f"{self.op}_{self.layout.lower()}_{self.dtype}_n{self.batch}_c{self.channels}_i{dims(self.input_spatial)}"
            f"_o{dims(self.output_spatial)}_k{dims(self.kernel)}_s{dims(self.stride)}_d{dims(self.dilation)}_p{pads}"
        )
        if self.ceil_mode:
            name += "_ceil"
        if not self.count_include_pad:
            name += "_nopadcount"
        if self.divisor_override is not None:
            name += f"_div{self.divisor_override}".replace("-", "m")
        if self.source:
            name += f"_from_{self.source}"
        if self.index_dtype:
            name += f"_{self.index_dtype}"
        return name


def pool_problem(
    op: str,
    *,
    rank: int,
    layout,
    dtype: str,
    input_shape,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    output_shape: tuple[int, ...] | None = None,
    output_name: str = "grad_out",
    input_name: str = "input_shape",
    count_include_pad=True,
    divisor_override=None,
    source: str = "",
    index_dtype: str = "",
) -> PoolProblem:
    """Check and normalize the parameters of a pooling call into a PoolProblem (PyTorch's checks).

    ``input_shape`` is the forward input's shape; ``output_shape``, when given, is the array holding
    one value per window (grad_out), checked against the window count PyTorch computes. ``input_name``
    names what ``input_shape`` came from in messages (``x`` for the forward).
    """
    layouts = layouts_of_rank(rank)
    check_type(isinstance(layout, str), f"{op}: layout must be a string such as {layouts[0]!r}, but got {layout!r}")
    check(layout in layouts, f"{op}: layout must be one of {', '.join(layouts)}, but got {layout!r}")
    channels_last = LAYOUTS[layout][1]
    input_shape = activation_shape(op, input_name, input_shape)
    check(
        len(input_shape) == rank + 2,
        f"{op}: {input_name} must have {rank + 2} entries for layout {layout!r}, but got {input_shape!r}",
    )
    kernel = positive_int_tuple(op, "kernel_size", kernel_size, rank)
    stride = kernel if stride is None else positive_int_tuple(op, "stride", stride, rank)
    dilation = positive_int_tuple(op, "dilation", dilation, rank)
    padding = padding_pairs(op, padding, rank)
    check_type(isinstance(ceil_mode, bool), f"{op}: ceil_mode must be a bool, but got {ceil_mode!r}")
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
    half = tuple(k // 2 for k in kernel)
    check(
        all(lo <= h and hi <= h for (lo, hi), h in zip(padding, half)),
        f"{op}: padding must be at most half the window (kernel_size // 2 = {half!r}), but got padding {padding!r} "
        f"for kernel_size {kernel!r}",
    )

    batch, input_spatial, channels = split_activation(input_shape, channels_last)
    expected = tuple(
        geometry.pool_output_size(input_spatial[a], kernel[a], stride[a], dilation[a], *padding[a], ceil_mode)
        for a in range(rank)
    )
    check(
        all(e >= 1 for e in expected),
        f"{op}: the window {kernel!r} (dilation {dilation!r}) does not fit the padded input {tuple(input_spatial)!r} "
        f"with padding {padding!r}: the output size would be {expected!r}",
    )
    for a in range(rank):
        counts = geometry.pool_tap_counts(input_spatial[a], expected[a], kernel[a], stride[a], dilation[a], *padding[a], False)
        empty = [o for o, count in enumerate(counts) if count == 0]
        check(
            not empty,
            f"{op}: window {empty[0] if empty else 0} of spatial dim {a} holds no input position (all its dilated "
            f"taps fall in the padding): kernel_size {kernel!r}, dilation {dilation!r}, padding {padding!r}, "
            f"input {tuple(input_spatial)!r}",
        )
    if output_shape is not None:
        check(
            len(output_shape) == rank + 2,
            f"{op}: {output_name} must be {rank + 2}-D for layout {layout!r}, but has shape {tuple(output_shape)!r}",
        )
        out_batch, output_spatial, out_channels = split_activation(tuple(output_shape), channels_last)
        check(
            (out_batch, out_channels) == (batch, channels),
            f"{op}: {output_name} has batch {out_batch} and {out_channels} channels, but input_shape {input_shape!r} "
            f"has batch {batch} and {channels} channels",
        )
        check(
            tuple(output_spatial) == expected,
            f"{op}: {output_name} has spatial size {tuple(output_spatial)!r}, but input_shape {input_shape!r} with "
            f"kernel_size {kernel!r}, stride {stride!r}, padding {padding!r}, dilation {dilation!r} and "
            f"ceil_mode={ceil_mode} gives {expected!r}",
        )
    check_dtype(op, output_name, dtype)
    check(source in ("", *POOL_SOURCES), f"{op}: source must be one of {', '.join(POOL_SOURCES)}, but got {source!r}")
    check_type(
        index_dtype in ("", *POOL_INDEX_DTYPES),
        f"{op}: indices must be {' or '.join(POOL_INDEX_DTYPES)}, but got {index_dtype}",
    )
    return PoolProblem(
        op=op,
        layout=layout,
        dtype=dtype,
        batch=batch,
        channels=channels,
        input_spatial=tuple(input_spatial),
        output_spatial=expected,
        kernel=kernel,
        stride=stride,
        dilation=dilation,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
        source=source,
        index_dtype=index_dtype,
    )
