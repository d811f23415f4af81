"""Frozen problem objects: every parameter of one operator call, normalized and checked once.

Internal code (rendering, naming, caching, references, benchmarks) takes only these objects; they are built and
checked by ``ops.problem_checks``, and their activation layouts are ``ops.layouts``'.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace

from . import epilogue as epilogues
from . import geometry
from .layouts import LAYOUTS, join_activation, layouts_of_rank


def _dims(values) -> str:
    """Sizes joined for a name: (3, 2) -> "3x2"."""
    return "x".join(str(v) for v in values)


def _same(values) -> str:
    """Sizes for a message, one number where all are equal: (2, 2) -> "2", (2, 1) -> "2x1"."""
    return str(values[0]) if len(set(values)) == 1 else _dims(values)


def _windows(stride, dilation, padding) -> str:
    """A window's stride, dilation and padding for a message, each only where it is not the default (1, 1, 0):
    ``" s2 p1"``, ``" d2x1 p1_0x0_1"``."""
    pads = "" if all(lo == hi for lo, hi in padding) else "x".join(f"{lo}_{hi}" for lo, hi in padding)
    parts = [f"s{_same(stride)}" if set(stride) != {1} else "", f"d{_same(dilation)}" if set(dilation) != {1} else "",
             f"p{pads or _same([lo for lo, _ in padding])}" if any(map(any, padding)) else ""]
    return "".join(f" {part}" for part in parts if part)


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
        """The number of spatial dims."""
        return len(self.input_spatial)

    @property
    def channels_last(self) -> bool:
        """Whether the layout holds channels in the last dim."""
        return LAYOUTS[self.layout][1]

    @property
    def strided(self) -> bool:
        """Whether some spatial axis has a stride above 1."""
        return any(s > 1 for s in self.stride)

    @property
    def padded(self) -> bool:
        """Whether some spatial axis is zero-padded (at either end)."""
        return any(lo or hi for lo, hi in self.padding)

    @property
    def name(self) -> str:
        """Readable, deterministic, and covering every parameter: the module's function and file name."""
        windows = f"_s{_dims(self.stride)}_d{_dims(self.dilation)}_p{'x'.join(f'{lo}_{hi}' for lo, hi in self.padding)}"
        return f"{self.op}_{self._name_sizes()}{windows}{self._name_suffix()}"

    def _name_sizes(self) -> str:
        raise NotImplementedError

    def params(self) -> dict:
        """The named-problem parameters that build this problem again: the operator's ``problem_from_params``
        (``module.problem_from_params(**p.params()) == p``), what a manifest entry holds. Each family adds its own."""
        return {"batch": self.batch, "input_spatial": self.input_spatial, "stride": self.stride,
                "padding": self.padding, "dilation": self.dilation, "layout": self.layout, "dtype": self.dtype}

    def _name_suffix(self) -> str:
        return ""

    @property
    def computed_as(self) -> "WindowProblem":
        """The problem whose module this one's wraps (its forms and lowering are chosen for it): itself."""
        return self

    @property
    def term_roundoff(self) -> float:
        """The relative error each term of a sum may carry beyond the accumulator's rounding: none."""
        return 0.0

    @property
    def summary(self) -> str:
        """A short description for messages: the operator, its sizes, and its stride, dilation and padding where
        not the default (``name`` is the complete one), e.g. ``conv_bwd_data nchw float32 n64 c64->k64 8x8 f3x3 s2
        p1`` (the layout says the rank)."""
        return f"{self.op} {self._summary_sizes()}{_windows(self.stride, self.dilation, self.padding)}"

    def _summary_sizes(self) -> str:
        raise NotImplementedError


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
    def one_tap_unpadded(self) -> bool:
        """Whether the filter has one tap and there is no padding: each output position reads x at s*o only, and the
        convolution's gradients are GEMMs (the gemm forms: ``weight_gemm``, ``data_gemm``)."""
        return math.prod(self.filter_spatial) == 1 and not self.padded

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

    def _summary_sizes(self) -> str:
        groups = f" g{self.groups}" if self.groups > 1 else ""  # channels are per group, as in the name
        return (f"{self.layout.lower()} {self.dtype} n{self.batch}{groups} c{self.in_channels}"
                f"->k{self.out_channels} {_dims(self.input_spatial)} f{_dims(self.filter_spatial)}")

    # the precision of a float32 problem's products (``PRECISIONS``): a field of the problems that can be split
    # (both backward operators'), float32 for the others
    precision = "float32"

    def params(self) -> dict:
        """Channels per group, as CK's parameters (and ``problem_from_params``) take them; split, the precision."""
        split = {"precision": self.precision} if self.precision != "float32" else {}
        return {**super().params(), "in_channels": self.in_channels, "out_channels": self.out_channels,
                "filter_spatial": self.filter_spatial, "groups": self.groups, **split}

    @property
    def is_split(self) -> bool:
        """Whether the problem's float32 products are computed as bfloat16 ones (``SPLIT_PRODUCTS``)."""
        return self.precision in SPLIT_PRODUCTS

    @property
    def split_products(self) -> int:
        """How many bfloat16 products make each float32 one (``SPLIT_PRODUCTS``; 1 unsplit): the parts stacked."""
        return len(SPLIT_PRODUCTS[self.precision]) if self.is_split else 1

    @property
    def parts_dtype(self) -> str:
        """The dtype of a split problem's parts (``PART_DTYPES``), its products' inputs."""
        return PART_DTYPES[self.precision]

    @property
    def term_roundoff(self) -> float:
        """A split product's error beyond float32's (``SPLIT_ROUNDOFF``): none unsplit."""
        return SPLIT_ROUNDOFF.get(self.precision, 0.0)

    def _name_suffix(self) -> str:
        return f"_split_{self.precision}" if self.is_split else ""

    @property
    def summary(self) -> str:
        return super().summary + (f" as {self.precision}" if self.precision != "float32" else "")


@dataclass(frozen=True)
class ConvBwdDataProblem(ConvProblem):
    """Backward-data (``conv_bwd_data``, ``grouped_conv_bwd_data``): the convolution, the fused epilogue
    ``grad_in = f(acc, d0, d1, ...)`` with its D tensors (none for ``conv_bwd_data``), and for float32 the
    precision of its products (``"bf16x3"``: ``conv_bwd_data``'s one-tap problems, ``ops/operators/data_gemm.py``)."""

    epilogue: epilogues.Epilogue | None = None  # parsed once, see ops/epilogue.py
    d_shapes: tuple[tuple[int, ...], ...] = ()
    d_dtypes: tuple[str, ...] = ()
    precision: str = "float32"

    @property
    def epilogue_params(self) -> tuple[str, ...]:
        """The epilogue's parameter names, in the order of the module's parameter vector."""
        return self.epilogue.param_names if self.epilogue else ()

    def params(self) -> dict:
        """With an epilogue, its text and each D tensor's kind: ``"full"`` (grad_in's shape) or ``"channel"``."""
        if self.epilogue is None:
            return super().params()
        d_kinds = tuple("full" if shape == self.input_shape else "channel" for shape in self.d_shapes)
        return {**super().params(), "epilogue": self.epilogue.text, "d_kinds": d_kinds}

    def _name_suffix(self) -> str:
        if self.epilogue is None:
            return super()._name_suffix()
        # the expression and the D shapes are not identifier-safe: a digest of them keeps the name readable
        digest = repr((self.epilogue.text, self.epilogue_params, self.d_shapes, self.d_dtypes)).encode()
        return f"_e{len(self.d_shapes)}_{hashlib.sha256(digest).hexdigest()[:10]}"

    @property
    def summary(self) -> str:
        if self.epilogue is None:
            return super().summary
        text = self.epilogue.text.replace(" ", "")
        return f"{super().summary} epilogue {text if len(text) <= 24 else text[:21] + '...'}"


# A split precision's bfloat16 products (mlir/split_bf16x3.mlir, data_gemm.mlir): each the (first operand's, second
# operand's) parts multiplied, part 0 a float32 value's hi = bf16(v), 1 its mid = bf16(v - hi), 2 its lo =
# bf16(v - hi - mid). bf16x3 (hi and mid, within about 2^-17 |v|) drops mid*mid: each product within about 2^-16 of
# its magnitude, under TF32's 2^-11. bf16x6 (three parts, within about 2^-26 |v|) drops only mid*lo, lo*mid and
# lo*lo: within about 2^-25, under float32's own rounding (2^-24), so it computes float32 products
# (``precision.weight_gradient_precision``).
# f16x1 is no split: one float16 product of each operand scaled by a
# power of two that puts its largest magnitude in [2^14, 2^15) (split_bf16x3.mlir's scaled fragment), so that each
# value keeps float16's 11 significant bits, TF32's, down to 2^-28 of the largest, and an error under 2^-39 of the
# largest below: each product within about 2^-10 of its magnitude, as TF32's.
SPLIT_PRODUCTS = {"bf16x3": ((0, 0), (0, 1), (1, 0)),
                  "bf16x6": ((1, 1), (0, 2), (2, 0), (0, 1), (1, 0), (0, 0)),
                  "f16x1": ((0, 0),)}
# the precisions whose one part is each value scaled (split_precision.Parts)
SCALED_PRECISIONS = ("f16x1",)
# the dtype of a split precision's parts: the dtype of the problem its module wraps (``computed_as``)
PART_DTYPES = {"bf16x3": "bfloat16", "bf16x6": "bfloat16", "f16x1": "float16"}
# each split product's error, doubled: the known-answer check's allowance beyond float32's (known_answer.tolerance)
SPLIT_ROUNDOFF = {"bf16x3": 2.0 ** -15, "bf16x6": 2.0 ** -24, "f16x1": 2.0 ** -9}
# the precisions of a float32 problem's products: float32, or a split one
PRECISIONS = ("float32", *SPLIT_PRODUCTS)


@dataclass(frozen=True)
class ConvBwdWeightProblem(ConvProblem):
    """Backward-weight: the convolution, grad_w's dtype (the inputs', or float32), and for float32 the precision of
    its products (``"bf16x3"``: each a sum of three bfloat16 products, within about 2^-16 of its magnitude)."""

    out_dtype: str
    precision: str = "float32"

    def params(self) -> dict:
        return {**super().params(), "out_dtype": self.out_dtype}

    def _name_suffix(self) -> str:
        return (f"_out_{self.out_dtype}" if self.out_dtype != self.dtype else "") + super()._name_suffix()

    @property
    def computed_as(self) -> "ConvBwdWeightProblem":
        """A split problem's module wraps the 16-bit problem (``PART_DTYPES``) of its products times the batch with a
        float32 grad_w: channels-last, or in the problem's own layout where that is a GEMM of its images as they lie
        (``gemm_rows``); any other problem's is its own. Split from channels-first into channels-last parts, one
        group at stride 1, x's parts are written zero-padded (in place: ``split_precision``), and the 16-bit problem
        is the same gradient of that padded x with no padding: stride 1 reads the padded x whole. On an H100, IREE
        3.13 compiled two others wrong so (the check refused them): r3d_18's 3x3x3 stride-2 layer, whose padded x's
        end is left unread, and ResNeXt-50's grouped 7x7 layer (g32, 32 channels a group); 2-D strided ones fuse
        their padding instead (policy's rule). A channels-last strided one-tap unpadded problem reads x at s*o only:
        its 16-bit problem is the stride-1 gradient of x's parts split at those positions alone."""
        if not self.is_split:
            return self
        layout = self.layout if self.gemm_rows else layouts_of_rank(self.rank)[0]  # [0]: the channels-last one
        inner = replace(self, dtype=self.parts_dtype, out_dtype="float32",
                        batch=self.split_products * self.batch, precision="float32", layout=layout)
        if self.channels_last and self.strided and self.one_tap_unpadded:
            return replace(inner, input_spatial=self.output_spatial, stride=(1,) * self.rank)
        if layout == self.layout or self.strided or self.groups > 1:
            return inner
        return replace(inner, input_spatial=tuple(size + lo + hi for size, (lo, hi) in zip(self.input_spatial,
                                                                                             self.padding)),
                       padding=((0, 0),) * self.rank)

    @property
    def gemm_rows(self) -> bool:
        """Whether the problem is a GEMM of its images' rows as they lie in any layout: one tap, no padding, and
        channels-first, each image's output positions in whole GEMM_BLOCKs (the GEMM's reduction runs along them)."""
        return self.one_tap_unpadded and (self.channels_last or math.prod(self.output_spatial) % GEMM_BLOCK == 0)

    @property
    def summary(self) -> str:
        return super().summary + (f" out {self.out_dtype}" if self.out_dtype != self.dtype else "")


# IREE 3.13's matrix pipelines pad a reduction to their K tile by reading on past it (into the next chunk, channel
# or the end of the buffer: docs/perf/h200-gemm): a GEMM's reduction must come in whole blocks of this many.
# Padding channels-first positions with zeros ourselves cost more than it saved (docs/perf/h100-split-nchw).
GEMM_BLOCK = 32


# --- Pooling --------------------------------------------------------------------------------------------

# the dtypes max pooling's indices may have: PyTorch's int64, or int32
POOL_INDEX_DTYPES = ("int64", "int32")


@dataclass(frozen=True)
class PoolProblem(WindowProblem):
    """A pooling window (PyTorch's max_pool2d / avg_pool3d parameters, CK's window dilation), the geometry of the
    pooling operators' problems. ``output_spatial`` follows PyTorch's rules (ceil_mode included).
    ``input_activation``: ``"relu"`` where the pooled input is a ReLU's output, the ReLU inside the kernel (the
    forward applies it to each tap it reads, a backward applies its backward); its name ends in ``_relu``."""

    channels: int
    kernel_size: tuple[int, ...]
    ceil_mode: bool
    input_activation: str | None = field(default=None, kw_only=True)

    @property
    def name(self) -> str:
        return super().name + ("_relu" if self.input_activation else "")

    def params(self) -> dict:
        fused = {"input_activation": self.input_activation} if self.input_activation else {}
        return {**super().params(), "channels": self.channels, "kernel_size": self.kernel_size,
                "ceil_mode": self.ceil_mode, **fused}

    @property
    def summary(self) -> str:
        return super().summary + (" relu" if self.input_activation else "")

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
            for k, s, d, o in zip(self.kernel_size, self.stride, self.dilation, self.output_spatial)
        )

    @property
    def overlapping(self) -> bool:
        """Whether some input position is in more than one window."""
        return any(j > 1 for j in self.candidates)

    def _name_sizes(self) -> str:
        return (
            f"{self.layout.lower()}_{self.dtype}_n{self.batch}_c{self.channels}_i{_dims(self.input_spatial)}"
            f"_o{_dims(self.output_spatial)}_k{_dims(self.kernel_size)}"
        )

    def _summary_sizes(self) -> str:
        return (f"{self.layout.lower()} {self.dtype} n{self.batch} c{self.channels} {_dims(self.input_spatial)}"
                f" k{_dims(self.kernel_size)}")

    def _name_suffix(self) -> str:
        return "_ceil" if self.ceil_mode else ""


@dataclass(frozen=True)
class AvgPoolProblem(PoolProblem):
    """Average pooling: the window, and PyTorch's divisor rules."""

    count_include_pad: bool
    divisor_override: int | None

    def params(self) -> dict:
        return {**super().params(), "count_include_pad": self.count_include_pad,
                "divisor_override": self.divisor_override}

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

    def params(self) -> dict:
        index = {"index_dtype": self.index_dtype} if self.index_dtype else {}
        return {**super().params(), "source": self.source, **index}

    def _name_suffix(self) -> str:
        return f"{super()._name_suffix()}_from_{self.source}" + (f"_{self.index_dtype}" if self.index_dtype else "")

    @property
    def summary(self) -> str:
        return f"{super().summary} from {self.source}"
