"""A kernel call's plan: its tensors in the layout the kernel takes, its destinations, its frozen problem.

One generic plan serves every kernel op (``plan(name, *arguments)``); what differs between them is small data,
one ``Kind`` each in ``KINDS``: the op's schema (its tensors first, then its parameters), the destinations'
sizes (PyTorch's shapes, which the fake implementation returns before any problem exists), and how the
operator's ``normalize`` is called. The operator is the registry's (``ops.registry``: the entry whose ``torch``
names the kernel op). The plan:

    tensors -> one layout for all (one tensor's, ``Kind.layout_from``: channels-last or channels-first), one
            ``contiguous()``
            -> the kernel's views (NHWC/NDHWC permuted views of channels-last tensors, no copy)
            -> the destinations (allocated by PyTorch, in that layout) and their views
            -> the problem: the operator's ``normalize`` of the views' shapes and dtypes and the parameters

The problem is built lazily (``Plan.problem``): a fake implementation traced with symbolic shapes (``opcheck``,
dynamic ``torch.compile``) has no hashable shapes to build it from. It is built once per call signature where a
kernel runs (``ops/torch/kernels.py``, which checks the destinations against the operator's ``results``), or
where ``precompile`` records it, through one ``lru_cache`` keyed by the kernel op, the arrays and parameters.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType
from typing import Callable, List, NamedTuple

import numpy as np
import torch
from torch import Tensor

from .. import dtypes, geometry, registry
from ..precision import data_gradient_precision, weight_gradient_precision

TORCH_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
                torch.int64: "int64", torch.int32: "int32"}
KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# ReLU's backward as PyTorch computes it (threshold_backward on the ReLU's output: 0 where out <= 0, else the
# gradient), fused into grouped_conv_bwd_data's epilogue with d0 = the ReLU's output (avgpool3d_bwd takes the
# ReLU's input as its relu_output, <= 0 at the same positions; maxpool2d_bwd the pooled output, which is the ReLU's
# output at each argmax). A NaN
# activation passes the gradient through, as in PyTorch (the named "relu_grad", ``where(d0 > 0, acc, 0)``, would
# zero it).
RELU_BACKWARD = "where(d0 <= 0, 0, acc)"


# --- Layouts ---------------------------------------------------------------------------------------------


class Array(NamedTuple):
    """What an operator's normalization reads of an array: its shape and dtype (of a tensor in IREE's layout)."""

    shape: tuple
    dtype: np.dtype


_CHANNELS_LAST = {2: torch.channels_last, 3: torch.channels_last_3d}


def memory_format(rank: int):
    """The channels-last memory format of ``rank`` spatial dimensions (None for 1)."""
    return _CHANNELS_LAST.get(rank)


def is_channels_last(t: Tensor) -> bool:
    """Whether ``t`` (N, C, *spatial) is stored channels-last (and not also plainly contiguous)."""
    channels_last = memory_format(t.dim() - 2)
    return channels_last is not None and not t.is_contiguous() and t.is_contiguous(memory_format=channels_last)


def conform(t: Tensor, channels_last: bool) -> Tensor:
    """``t`` in the layout the kernel reads: unchanged when it already is, else one ``contiguous()``."""
    if channels_last:
        return t.contiguous(memory_format=memory_format(t.dim() - 2))
    return t.contiguous()


def kernel_view(t: Tensor, channels_last: bool) -> Tensor:
    """The (N, *spatial, C) view of a channels-last tensor (no copy); a channels-first tensor as it is."""
    return t.permute(0, *range(2, t.dim()), 1) if channels_last else t


def empty(shape, like: Tensor, channels_last: bool, dtype=None) -> Tensor:
    """A destination of ``shape`` (PyTorch's) on ``like``'s device, in its dtype unless ``dtype``, in the layout."""
    layout = memory_format(len(shape) - 2) if channels_last else torch.contiguous_format
    return torch.empty(tuple(shape), dtype=dtype or like.dtype, device=like.device, memory_format=layout)


def _layout_name(rank: int, channels_last: bool) -> str:
    return {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}[rank][channels_last]


def pairs(flat) -> tuple:
    """(low, high) padding pairs of a flat list ``[low0, high0, low1, high1, ...]``."""
    return tuple((flat[2 * a], flat[2 * a + 1]) for a in range(len(flat) // 2))


def _array(view: Tensor) -> Array:
    return Array(tuple(view.shape), dtypes.numpy_dtype(TORCH_DTYPES[view.dtype]))


# --- The kinds: what differs between kernel ops ------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """One kernel op's data for the generic plan.

    ``schema``: its arguments and results as ``torch.library`` writes them, the tensors first (``Tensor?``: an
    optional one). ``sizes(*arguments)``: each destination's (size, dtype) in PyTorch's shapes (dtype None:
    the first tensor's). ``normalize(module, arrays, shapes, *parameters, layout=)``: the problem, from the
    registry's operator module, the tensors' ``Array`` (None where absent), the destinations' shapes in the
    kernel's layout, and the parameters (lists as tuples). ``layout_from``: the tensor whose memory format decides
    the layout (the gradient the step hands over: a weight gradient's grad_output, not its saved input, so that
    the gradient, usually the larger copy, is not the one converted).
    """

    schema: str
    sizes: Callable
    normalize: Callable
    layout_from: int = 0

    @functools.cached_property
    def tensors(self) -> int:
        """How many leading arguments are tensors."""
        arguments = self.schema[1:self.schema.index(")")].split(", ")
        return sum(1 for a in arguments if a.startswith("Tensor"))


def _conv_backward_input(module, arrays, shapes, input_size, stride, padding, dilation, groups, split_precision, *,
                         layout):
    grad_out, weight, relu_output = arrays
    common = dict(input_shape=shapes[0], stride=stride, padding=pairs(padding), dilation=dilation, layout=layout)
    if relu_output is None and groups == 1:  # one group, no ReLU: the plain operator (registry: reached from here)
        plain = registry.module("conv_bwd_data")
        problem = plain.normalize(grad_out, weight, **common)
        precision = data_gradient_precision(problem, split_precision)
        return problem if precision == problem.precision else plain.with_precision(problem, precision)
    problem, _ = module.normalize(grad_out, weight, (relu_output,) if relu_output is not None else (), groups=groups,
                                  epilogue=RELU_BACKWARD if relu_output is not None else None, params={}, **common)
    return problem


def _conv_backward_weight(module, arrays, shapes, weight_size, stride, padding, dilation, groups, split_precision,
                          *, layout):
    common = dict(groups=groups, filter_spatial=weight_size[2:], stride=stride, padding=pairs(padding),
                  dilation=dilation, layout=layout)
    problem = module.normalize(*arrays, **common)
    precision = weight_gradient_precision(problem, split_precision)
    return problem if precision == problem.precision else module.normalize(*arrays, **common, precision=precision)


def _max_pool2d(module, arrays, shapes, *parameters, layout):
    kernel_size, stride, padding, dilation, ceil_mode, relu = parameters
    return module.normalize(*arrays, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                            ceil_mode=ceil_mode, layout=layout, input_activation="relu" if relu else None)


def _max_pool2d_backward(module, arrays, shapes, input_size, *parameters, layout):
    (grad_out, indices, output), (kernel_size, stride, padding, dilation, ceil_mode) = arrays, parameters
    return module.normalize(grad_out, input_shape=shapes[0], kernel_size=kernel_size, stride=stride, padding=padding,
                            dilation=dilation, ceil_mode=ceil_mode, indices=indices, x=None, output=output,
                            layout=layout)


def _avg_pool3d_backward(module, arrays, shapes, input_size, *parameters, layout):
    (grad_out, relu_output), (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) = (
        arrays, parameters)
    return module.normalize(grad_out, relu_output=relu_output, input_shape=shapes[0], kernel_size=kernel_size,
                            stride=stride, padding=padding, dilation=1, ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad, divisor_override=divisor_override, layout=layout)


def _avg_pool3d(module, arrays, shapes, *parameters, layout):
    kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, relu = parameters
    return module.normalize(*arrays, kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad, divisor_override=divisor_override, layout=layout,
                            input_activation="relu" if relu else None)


def _pooled(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int], dilation: List[int],
            ceil_mode: bool) -> list:
    """A pooling's output size, (N, C, *windows), PyTorch's padding on both sides of each axis."""
    return [*input.shape[:2], *(geometry.pool_output_size(input.shape[2 + a], kernel_size[a], stride[a], dilation[a],
                                                           padding[a], padding[a], ceil_mode)
                                for a in range(input.dim() - 2))]


def _max_pooled_sizes(input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool, relu: bool) -> list:
    size = _pooled(input, kernel_size, stride, padding, dilation, ceil_mode)
    return [(size, None), (size, torch.int64)]


def _avg_pooled_sizes(input: Tensor, kernel_size, stride, padding, ceil_mode: bool, *_) -> list:
    return [(_pooled(input, kernel_size, stride, padding, [1] * len(kernel_size), ceil_mode), None)]


KINDS = {
    "conv_backward_input": Kind(
        "(Tensor grad_output, Tensor weight, Tensor? relu_output, SymInt[] input_size, SymInt[] stride, "
        "SymInt[] padding, SymInt[] dilation, SymInt groups, str split_precision) -> Tensor",
        lambda grad_output, weight, relu_output, input_size, *_: [(input_size, None)], _conv_backward_input),
    "conv_backward_weight": Kind(
        "(Tensor input, Tensor grad_output, SymInt[] weight_size, SymInt[] stride, SymInt[] padding, "
        "SymInt[] dilation, SymInt groups, str split_precision) -> Tensor",
        lambda input, grad_output, weight_size, *_: [(weight_size, None)], _conv_backward_weight, layout_from=1),
    "max_pool2d": Kind(
        "(Tensor input, SymInt[] kernel_size, SymInt[] stride, SymInt[] padding, SymInt[] dilation, "
        "bool ceil_mode, bool relu) -> (Tensor, Tensor)",
        _max_pooled_sizes, _max_pool2d),
    "max_pool2d_backward": Kind(
        "(Tensor grad_output, Tensor indices, Tensor? output, SymInt[] input_size, SymInt[] kernel_size, "
        "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool ceil_mode) -> Tensor",
        lambda grad_output, indices, output, input_size, *_: [(input_size, None)], _max_pool2d_backward),
    "avg_pool3d": Kind(
        "(Tensor input, SymInt[] kernel_size, SymInt[] stride, SymInt[] padding, bool ceil_mode, "
        "bool count_include_pad, SymInt? divisor_override, bool relu) -> Tensor",
        _avg_pooled_sizes, _avg_pool3d),
    "avg_pool3d_backward": Kind(
        "(Tensor grad_output, Tensor? relu_output, SymInt[] input_size, SymInt[] kernel_size, SymInt[] stride, "
        "SymInt[] padding, bool ceil_mode, bool count_include_pad, SymInt? divisor_override) -> Tensor",
        lambda grad_output, relu_output, input_size, *_: [(input_size, None)], _avg_pool3d_backward),
}
# the operator module of each kernel op (conv_backward_input's plain problems go to conv_bwd_data: see
# _conv_backward_input)
OPERATORS: dict[str, ModuleType] = {kernel: registry.module(op) for kernel, op in (
    ("conv_backward_input", "grouped_conv_bwd_data"), ("conv_backward_weight", "grouped_conv_bwd_weight"),
    ("max_pool2d", "maxpool2d_fwd"), ("max_pool2d_backward", "maxpool2d_bwd"), ("avg_pool3d", "avgpool3d_fwd"),
    ("avg_pool3d_backward", "avgpool3d_bwd"))}
assert set(KINDS) == set(OPERATORS), "every kernel op has a Kind and an operator"


# --- The generic plan --------------------------------------------------------------------------------------


@dataclass
class Plan:
    """One kernel call: the frozen problem, the tensors it reads and writes (in its layout), what to return."""

    problem: Callable  # () -> the frozen problem: built only where a kernel runs or precompile records it
    inputs: list  # contiguous tensors in the kernel's layout, in the module function's argument order
    writes: list  # contiguous views of the destinations
    returns: tuple  # the tensors handed back to PyTorch (the destinations, in PyTorch's shapes)
    channels_last: bool  # the layout: NHWC/NDHWC views of channels-last tensors, else channels-first

    def result(self):
        return self.returns[0] if len(self.returns) == 1 else self.returns


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


@functools.lru_cache(maxsize=4096)
def _problem(name: str, arrays: tuple, shapes: tuple, parameters: tuple, layout: str):
    """The frozen problem of kernel op ``name`` (see ``Kind.normalize``), checked and built once per arguments."""
    return KINDS[name].normalize(OPERATORS[name], arrays, shapes, *parameters, layout=layout)


def plan(name: str, *arguments) -> Plan:
    """The plan of one call of kernel op ``name`` with its schema's ``arguments``: one tensor's memory format
    (``Kind.layout_from``) decides the layout; the destinations are ``Kind.sizes``; the problem is built when
    asked for."""
    kind = KINDS[name]
    tensors, parameters = arguments[:kind.tensors], arguments[kind.tensors:]
    channels_last = is_channels_last(tensors[kind.layout_from])
    tensors = [None if t is None else conform(t, channels_last) for t in tensors]
    views = [None if t is None else kernel_view(t, channels_last) for t in tensors]
    returns = tuple(empty(size, tensors[0], channels_last, dtype) for size, dtype in kind.sizes(*arguments))
    writes = [kernel_view(t, channels_last) for t in returns]
    key = (name, tuple(None if v is None else _array(v) for v in views), tuple(tuple(w.shape) for w in writes),
           tuple(map(_hashable, parameters)), _layout_name(tensors[0].dim() - 2, channels_last))
    return Plan(functools.partial(_problem, *key), [v for v in views if v is not None], writes, returns, channels_last)
