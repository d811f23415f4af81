"""Frozen problem objects: every parameter of one operator call, normalized and checked once.

Internal code (rendering, naming, caching, references, benchmarks) takes only these objects.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from . import dtypes, geometry
from . import epilogue as epilogues
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


def activation_from_params(batch: int, spatial, channels: int, layout) -> tuple[int, ...]:
    """An activation's shape from its sizes, in ``layout`` (an unknown layout is reported by the problem's checks)."""
    return join_activation(batch, tuple(spatial), channels, LAYOUTS.get(layout, (0, True))[1])


def join_activation(batch: int, spatial: tuple[int, ...], channels: int, channels_last: bool) -> tuple[int, ...]:
    return (batch, *spatial, channels) if channels_last else (batch, channels, *spatial)


def _dims(values) -> str:
    return "x".join(str(v) for v in values)


@dataclass(frozen=True)
class WindowProblem:
    """What every problem here shares: an activation in a layout, and windows over its spatial dims (the forward's
    ``s*o + d*f = i + p_lo`` per axis). The operator families below add their own fields."""

    op: str
    layout: str
    dtype: str
    batch: int
    input_spatial: tuple[int, ...]
    output_spatial: tuple[int, ...]
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
    def name(self) -> str:
        """Readable, deterministic, and covering every parameter: the module's function and file name."""
        windows = f"_s{_dims(self.stride)}_d{_dims(self.dilation)}_p{'x'.join(f'{lo}_{hi}' for lo, hi in self.padding)}"
        return f"{self.op}_{self._name_sizes()}{windows}{self._name_suffix()}"

    def _name_sizes(self) -> str:
        raise NotImplementedError

    def _name_suffix(self) -> str:
        return ""


@dataclass(frozen=True)
class ConvProblem(WindowProblem):
    """A convolution (CK's conv parameters, PyTorch's layouts), the geometry of the convolution operators' problems.

    Channels are per group: the tensors hold ``groups * in_channels`` input channels and
    ``groups * out_channels`` output channels; the weight is ``(groups*out_channels, *filter, in_channels)``
    channels-last or ``(groups*out_channels, in_channels, *filter)`` channels-first.
    """

    groups: int
    in_channels: int
    out_channels: int
    filter_spatial: tuple[int, ...]

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
    def kind(self) -> str:
        """The class the tuning tables' rules name (``kinds``): ``"depthwise"`` (several groups of one channel in
        and out), ``"grouped"`` (several groups) or ``"dense"`` (one group)."""
        if self.groups == 1:
            return "dense"
        return "depthwise" if self.in_channels == self.out_channels == 1 else "grouped"

    @property
    def flops(self) -> int:
        """Multiply-adds of the forward convolution, times two (what CK and cuDNN report)."""
        return (
            2 * self.batch * self.groups * self.out_channels * self.in_channels
            * math.prod(self.output_spatial) * math.prod(self.filter_spatial)
        )

    def _name_sizes(self) -> str:
        return (
            f"{self.rank}d_{self.layout.lower()}_{self.dtype}_n{self.batch}_g{self.groups}_c{self.in_channels}"
            f"_k{self.out_channels}_i{_dims(self.input_spatial)}_f{_dims(self.filter_spatial)}"
        )


@dataclass(frozen=True)
class ConvBwdDataProblem(ConvProblem):
    """Backward-data (``conv_bwd_data``, ``grouped_conv_bwd_data``): the convolution, and the fused epilogue
    ``grad_in = f(acc, d0, d1, ...)`` with its D tensors (none for ``conv_bwd_data``)."""

    epilogue: epilogues.Epilogue | None = None  # parsed once, see ops/epilogue.py
    d_shapes: tuple[tuple[int, ...], ...] = ()
    d_dtypes: tuple[str, ...] = ()

    @property
    def epilogue_params(self) -> tuple[str, ...]:
        """The epilogue's parameter names, in the order of the module's parameter vector."""
        return self.epilogue.param_names if self.epilogue else ()

    def _name_suffix(self) -> str:
        if self.epilogue is None:
            return ""
        # the expression and the D shapes are not identifier-safe: a digest of them keeps the name readable
        digest = repr((self.epilogue.text, self.epilogue_params, self.d_shapes, self.d_dtypes)).encode()
        return f"_e{len(self.d_shapes)}_{hashlib.sha256(digest).hexdigest()[:10]}"


@dataclass(frozen=True)
class ConvBwdWeightProblem(ConvProblem):
    """Backward-weight: the convolution, and grad_w's dtype (the inputs', or float32)."""

    out_dtype: str

    def _name_suffix(self) -> str:
        return f"_out_{self.out_dtype}" if self.out_dtype != self.dtype else ""


def conv_problem(
    problem_type: type,
    op: str,
    *,
    layout,
    dtype: str,
    input_shape,
    output_shape: tuple[int, ...] | None,
    output_name: str = "grad_out",
    weight_shape: tuple[int, ...] | None = None,
    filter_spatial=None,
    output_channels: int | None = None,
    groups: int = 1,
    stride=1,
    padding=0,
    dilation=1,
    **fields,
):
    """Check and normalize the parameters of a convolution-family call into ``problem_type`` (with ``fields``).

    ``output_shape`` is grad_out's shape (None: the one the parameters give, with ``output_channels``); the
    forward input's shape comes from ``input_shape`` and the filter from ``weight_shape`` (backward-data) or
    ``filter_spatial`` (backward-weight, and problems built from parameters).
    """
    given = output_shape is not None
    rank, channels_last = check_layout(op, layout, len(output_shape if given else input_shape), output_name)
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
    if given:
        out_batch, output_spatial, output_channels = split_activation(output_shape, channels_last)
    else:  # a problem from parameters: grad_out is what they give
        out_batch, output_spatial = batch, None
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
    output_spatial = expected if output_spatial is None else output_spatial
    check(
        tuple(output_spatial) == expected,
        f"{op}: {output_name} has spatial size {tuple(output_spatial)!r}, but input_shape {input_shape!r} with "
        f"{filter_name} {filter_spatial!r}, stride {stride!r}, padding {padding!r} and dilation {dilation!r} gives {expected!r}",
    )
    check_dtype(op, output_name, dtype)
    return problem_type(
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
        **fields,
    )


def channels_last(array):
    """(N, C, *spatial) -> (N, *spatial, C); also (K, C, *filter) -> (K, *filter, C) for weights."""
    import numpy as np

    return np.moveaxis(np.asarray(array), 1, -1)


def in_layout(channels_last_layout: bool, function, *arrays):
    """Apply a channels-last ``function`` to channels-first ``arrays`` too: convert in, call, convert back (each
    result, when it returns a tuple). The one home of layout conversion."""
    if channels_last_layout:
        return function(*arrays)
    result = function(*(channels_last(a) for a in arrays))
    return tuple(channels_first(r) for r in result) if isinstance(result, tuple) else channels_first(result)


def channels_first(array):
    """(N, *spatial, C) -> (N, C, *spatial); the inverse of channels_last."""
    import numpy as np

    return np.moveaxis(np.asarray(array), -1, 1)


# --- Pooling --------------------------------------------------------------------------------------------

POOL_INDEX_DTYPES = ("int64", "int32")


@dataclass(frozen=True)
class PoolProblem(WindowProblem):
    """A pooling window (PyTorch's max_pool2d / avg_pool3d parameters, CK's window dilation), the geometry of the
    pooling operators' problems. ``output_spatial`` follows PyTorch's rules (ceil_mode included)."""

    channels: int
    kernel: tuple[int, ...]
    ceil_mode: bool

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

    def _name_sizes(self) -> str:
        return (
            f"{self.layout.lower()}_{self.dtype}_n{self.batch}_c{self.channels}_i{_dims(self.input_spatial)}"
            f"_o{_dims(self.output_spatial)}_k{_dims(self.kernel)}"
        )

    def _name_suffix(self) -> str:
        return "_ceil" if self.ceil_mode else ""


@dataclass(frozen=True)
class AvgPoolProblem(PoolProblem):
    """Average pooling: the window, and PyTorch's divisor rules."""

    count_include_pad: bool
    divisor_override: int | None

    def _name_suffix(self) -> str:
        suffix = super()._name_suffix() + ("" if self.count_include_pad else "_nopadcount")
        if self.divisor_override is not None:
            suffix += f"_div{self.divisor_override}".replace("-", "m")
        return suffix


@dataclass(frozen=True)
class MaxPoolProblem(PoolProblem):
    """Max pooling's forward: the window, and the indices' dtype (int64, PyTorch's)."""

    index_dtype: str

    def _name_suffix(self) -> str:
        return f"{super()._name_suffix()}_{self.index_dtype}"


@dataclass(frozen=True)
class MaxPoolBwdProblem(PoolProblem):
    """Max pooling's backward: the window, and where each window's argmax comes from: the forward's ``indices``
    (of ``index_dtype``, int64 or int32) or ``x`` (recomputed; no index dtype)."""

    source: str
    index_dtype: str | None

    def _name_suffix(self) -> str:
        return f"{super()._name_suffix()}_from_{self.source}" + (f"_{self.index_dtype}" if self.index_dtype else "")


def pool_problem(
    problem_type: type,
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
    **fields,
):
    """Check and normalize the parameters of a pooling call into ``problem_type`` with ``fields`` (PyTorch's checks).

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
    return problem_type(
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
        **fields,
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
