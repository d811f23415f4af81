"""The backward operators inside ``torch.autograd``: functions, ``torch.nn`` twins, ``convert`` and ``precompile``.

    import ops.torch as otorch                 # needs PyTorch: pip install -e ".[torch]"
    y = otorch.conv2d(x, weight, bias, stride=2, padding=1, groups=4, input_activation="relu")
    model = otorch.convert(model)              # nn.Conv*d, nn.MaxPool2d, nn.AvgPool3d -> these twins

Forward passes of convolution and average pooling are PyTorch's own; max-pool's forward is ours (it makes the
indices its backward reads). Every backward is ours: ``grad_input`` by ``conv_bwd_data`` (one group) or
``grouped_conv_bwd_data`` (several, or a fused ReLU), ``grad_weight`` by ``grouped_conv_bwd_weight``,
``grad_bias`` as the sum of ``grad_output``, pooling by ``maxpool2d_bwd`` / ``avgpool3d_bwd``. Only the
gradients autograd asks for are computed.

How a call runs: each kernel is an operator of the ``iree_ck`` library (``torch.library.Library``, so
``torch.compile(fullgraph=True)`` traces it), with a fake implementation for shapes and ``register_autograd``
for its gradient. Its body builds a *plan* — the tensors in the layout the kernel takes, the destinations, the
frozen problem — shared by the real and the fake implementation; the real one runs it once per call signature and
keeps the result as a ready call (``ops/torch/calls.py``). Results are written in place into tensors PyTorch
allocated. ``contiguous_format`` maps to the channels-first layouts (NCW/NCHW/NCDHW),
``channels_last``/``channels_last_3d`` to NHWC/NDHWC as a permuted view (no copy); other strides get one
``contiguous()``.

Stream order, devices and the launch itself: ``ops/torch/calls.py`` (on CUDA, a module's launch plan on
PyTorch's current stream, nothing waited for; on the CPU and ROCm, IREE's runtime, synchronously).
"""

import concurrent.futures
import contextlib
import copy
import functools
import os
import sys
import threading
import warnings
from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional, Tuple

import numpy as np

try:
    import torch
except ModuleNotFoundError as error:  # the extra: PyTorch is not a dependency of the NumPy API
    raise ModuleNotFoundError(
        "ops.torch needs PyTorch, which is not installed: pip install 'iree-ck-backward-ops[torch]' "
        "(or pip install -e \".[torch]\" in a checkout)", name="torch") from error
import torch.nn.functional as F
from torch import Tensor, nn

from .. import compiler, dtypes, geometry, known_answer, targets, policy
from . import calls
from ..operators import avgpool3d, conv_bwd_data, grouped_conv_bwd_data, grouped_conv_bwd_weight, maxpool2d, maxpool2d_fwd
from ..validation import check, check_type, int_tuple, padding_pairs, positive_int_tuple

__all__ = [
    "conv1d", "conv2d", "conv3d", "max_pool2d", "avg_pool3d",
    "Conv1d", "Conv2d", "Conv3d", "MaxPool2d", "AvgPool3d",
    "convert", "precompile",
]

_TORCH_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
                 torch.int64: "int64", torch.int32: "int32"}
_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_ACTIVATIONS = (None, "relu")
# ReLU's backward as PyTorch computes it (threshold_backward on the ReLU's output: 0 where out <= 0, else the
# gradient), fused into grouped_conv_bwd_data's epilogue with d0 = the ReLU's output. A NaN activation passes
# the gradient through, as in PyTorch (the named "relu_grad", ``where(d0 > 0, acc, 0)``, would zero it).
_RELU_BACKWARD = "where(d0 <= 0, 0, acc)"


# --- Layouts, devices and the crossing into IREE ---------------------------------------------------------


class _Array(NamedTuple):
    """What an operator's normalization reads of an array: its shape and dtype (of a tensor in IREE's layout)."""

    shape: tuple
    dtype: np.dtype


def _memory_format(rank: int):
    return {2: torch.channels_last, 3: torch.channels_last_3d}.get(rank)


def _is_channels_last(t: Tensor) -> bool:
    """Whether ``t`` (N, C, *spatial) is stored channels-last (and not also plainly contiguous)."""
    memory_format = _memory_format(t.dim() - 2)
    return memory_format is not None and not t.is_contiguous() and t.is_contiguous(memory_format=memory_format)


def _conform(t: Tensor, channels_last: bool) -> Tensor:
    """``t`` in the layout the kernel reads: unchanged when it already is, else one ``contiguous()``."""
    if channels_last:
        return t.contiguous(memory_format=_memory_format(t.dim() - 2))
    return t.contiguous()


def _kernel_view(t: Tensor, channels_last: bool) -> Tensor:
    """The (N, *spatial, C) view of a channels-last tensor (no copy); a channels-first tensor as it is."""
    return t.permute(0, *range(2, t.dim()), 1) if channels_last else t


def _empty(shape, like: Tensor, channels_last: bool, dtype=None) -> Tensor:
    memory_format = _memory_format(len(shape) - 2) if channels_last else torch.contiguous_format
    return torch.empty(tuple(shape), dtype=dtype or like.dtype, device=like.device, memory_format=memory_format)


def _layout(rank: int, channels_last: bool) -> str:
    return {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}[rank][channels_last]


def _array(view: Tensor) -> _Array:
    return _Array(tuple(view.shape), dtypes.numpy_dtype(_TORCH_DTYPES[view.dtype]))


@dataclass
class _Plan:
    """One kernel call: the frozen problem, the tensors it reads and writes (in its layout), what to return."""

    problem: Callable  # () -> the frozen problem: built only where a kernel runs or precompile records it
    inputs: list  # contiguous tensors in the kernel's layout, in the module function's argument order
    writes: list  # contiguous views of the destinations
    returns: tuple  # the tensors handed back to PyTorch (the destinations, in PyTorch's shapes)
    channels_last: bool  # the layout: NHWC/NDHWC views of channels-last tensors, else channels-first

    def result(self):
        return self.returns[0] if len(self.returns) == 1 else self.returns


_recording: list | None = None  # precompile(): plans' problems are noted, nothing runs
_recording_lock = threading.Lock()


def _note(plan: _Plan) -> None:
    if _recording is not None:
        _recording.append(plan.problem())


def _fake(plan: _Plan):
    _note(plan)
    return plan.result()


def _prepare(plan: Callable, args: tuple, fallback: Callable) -> calls.Prepared:
    """The ready call of ``args``' signature: ``plan`` run once (layout, destinations, the checked problem), and
    what it decided kept (see ``ops/torch/calls.py``). The tensor arguments are the module's inputs, in order;
    the first one's memory format decides the layout. ``fallback`` (PyTorch's own kernel, the same arguments)
    serves a problem none of whose forms computes its known answer on the device."""
    planned = plan(*args)
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    channels_last = planned.channels_last
    memory_format = _memory_format(planned.returns[0].dim() - 2) if channels_last else torch.contiguous_format
    reads = tuple((i, _conform(a, channels_last) is not a) for i, a in tensors)
    results = tuple((tuple(r.shape), r.dtype) for r in planned.returns)
    device = tensors[0][1].device
    empty = any(t.numel() == 0 for t in [*planned.inputs, *planned.writes])
    problem = planned.problem()
    try:
        kernel = None if empty else calls.kernel_for(problem, device, lambda ts: [_kernel_view(t, channels_last) for t in ts])
    except known_answer.WrongResultError as error:
        calls.say_once(f"ops.torch: {error}. PyTorch's own kernel computes this problem instead.")
        return calls.Prepared(problem, reads, memory_format, results, device, None, empty, fallback)
    return calls.Prepared(problem, reads, memory_format, results, device, kernel, empty)


_library = torch.library.Library("iree_ck", "DEF")


def _define(name: str, schema_of: Callable, implementation: Callable, fake: Callable):
    """Define ``iree_ck::name`` (the schema of ``schema_of``'s annotations) with a CPU and CUDA implementation and a
    fake one: direct library registration, which costs about two thirds of ``torch.library.custom_op``'s call
    (measured, docs/PERFORMANCE.md)."""
    _library.define(name + torch.library.infer_schema(schema_of, mutates_args=()))
    for key in ("CPU", "CUDA"):
        _library.impl(name, implementation, key)
    torch.library.register_fake(f"iree_ck::{name}", fake, lib=_library)
    return getattr(torch.ops.iree_ck, name).default


def _register_autograd(name: str, backward: Callable, setup_context: Callable) -> None:
    torch.library.register_autograd(f"iree_ck::{name}", backward, setup_context=setup_context, lib=_library)


class _KernelOp:
    """``iree_ck::name`` (``op``), whose implementation runs the ready call of its arguments' signature (prepared
    from ``plan`` on first use) and whose fake one returns ``plan``'s destinations (and notes the problem for
    ``precompile``). ``run`` is that implementation without the dispatcher: eager autograd calls it directly."""

    def __init__(self, name: str, plan: Callable, fallback: Callable):
        self.plan, self.fallback, self.ready = plan, fallback, {}
        self.op = _define(name, plan, lambda *args: self.run(*args), lambda *args: _fake(plan(*args)))

    def run(self, *args):
        if _recording is not None:
            return _fake(self.plan(*args))
        key = calls.signature(args)
        call = self.ready.get(key)
        if call is None:
            call = self.ready[key] = _prepare(self.plan, args, self.fallback)
        return call(args)

    def call(self, direct: bool, *args):
        return self.run(*args) if direct else self.op(*args)


def _direct(*tensors: Optional[Tensor]) -> bool:
    """Whether a call takes the eager path (a ``torch.autograd.Function`` whose backward runs the kernels' ready
    calls, no dispatcher): plain tensors, nothing compiling, tracing or recording. Otherwise it is the registered
    operators, which ``torch.compile``, ``opcheck``, fake tensors and ``precompile`` see."""
    return (_recording is None and not torch.compiler.is_compiling() and torch._C._len_torch_dispatch_stack() == 0
            and all(t is None or type(t) in (Tensor, nn.Parameter) for t in tensors))


# --- Plans: each kernel's layout, problem and destinations ---------------------------------------------


def _flat_pairs(pairs) -> list[int]:
    return [v for pair in pairs for v in pair]


def _pairs(flat: List[int]) -> tuple:
    return tuple((flat[2 * a], flat[2 * a + 1]) for a in range(len(flat) // 2))


@functools.lru_cache(maxsize=4096)
def _input_grad_problem(grad_out: _Array, weight: _Array, mask: Optional[_Array], input_shape, stride, padding,
                        dilation, groups: int, layout: str):
    if mask is None and groups == 1:
        return conv_bwd_data.normalize(grad_out, weight, input_shape=input_shape, stride=stride, padding=padding,
                                       dilation=dilation, layout=layout)
    problem, _ = grouped_conv_bwd_data.normalize(
        grad_out, weight, (mask,) if mask is not None else (), groups=groups, input_shape=input_shape,
        stride=stride, padding=padding, dilation=dilation, epilogue=_RELU_BACKWARD if mask is not None else None,
        layout=layout, params={},
    )
    return problem


def _plan_conv_backward_input(grad_output: Tensor, weight: Tensor, relu_output: Optional[Tensor],
                              input_size: List[int], stride: List[int], padding: List[int], dilation: List[int],
                              groups: int) -> Tensor:
    cl = _is_channels_last(grad_output)
    rank = grad_output.dim() - 2
    grad_output, weight = _conform(grad_output, cl), _conform(weight, cl)
    grad_input = _empty(input_size, grad_output, cl)
    views = [_kernel_view(grad_output, cl), _kernel_view(weight, cl)]
    if relu_output is not None:
        views.append(_kernel_view(_conform(relu_output, cl), cl))
    out_view = _kernel_view(grad_input, cl)
    problem = functools.partial(
        _input_grad_problem, *(_array(v) for v in views[:2]), _array(views[2]) if relu_output is not None else None,
        tuple(out_view.shape), tuple(stride), _pairs(padding), tuple(dilation), groups, _layout(rank, cl),
    )
    return _Plan(problem, views, [out_view], (grad_input,), cl)


@functools.lru_cache(maxsize=4096)
def _weight_grad_problem(x: _Array, grad_out: _Array, filter_spatial, stride, padding, dilation, groups: int, layout: str):
    return grouped_conv_bwd_weight.normalize(x, grad_out, groups=groups, filter_spatial=filter_spatial, stride=stride,
                                             padding=padding, dilation=dilation, layout=layout)


def _plan_conv_backward_weight(input: Tensor, grad_output: Tensor, weight_size: List[int], stride: List[int],
                               padding: List[int], dilation: List[int], groups: int) -> Tensor:
    cl = _is_channels_last(grad_output)
    rank = grad_output.dim() - 2
    input, grad_output = _conform(input, cl), _conform(grad_output, cl)
    grad_weight = _empty(weight_size, input, cl)
    views = [_kernel_view(input, cl), _kernel_view(grad_output, cl)]
    problem = functools.partial(_weight_grad_problem, *(_array(v) for v in views), tuple(weight_size[2:]),
                                tuple(stride), _pairs(padding), tuple(dilation), groups, _layout(rank, cl))
    return _Plan(problem, views, [_kernel_view(grad_weight, cl)], (grad_weight,), cl)


@functools.lru_cache(maxsize=4096)
def _max_pool_problem(x: _Array, kernel_size, stride, padding, dilation, ceil_mode: bool, layout: str):
    return maxpool2d_fwd.normalize(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                                   ceil_mode=ceil_mode, layout=layout)


def _plan_max_pool2d(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                     dilation: List[int], ceil_mode: bool) -> Tuple[Tensor, Tensor]:
    cl = _is_channels_last(input)
    input = _conform(input, cl)
    view = _kernel_view(input, cl)
    problem = functools.partial(_max_pool_problem, _array(view), tuple(kernel_size), tuple(stride), tuple(padding),
                                tuple(dilation), ceil_mode, _layout(2, cl))
    size = [*input.shape[:2], *(geometry.pool_output_size(input.shape[2 + a], kernel_size[a], stride[a], dilation[a],
                                                           padding[a], padding[a], ceil_mode) for a in range(2))]
    y = _empty(size, input, cl)
    indices = _empty(size, input, cl, dtype=torch.int64)
    return _Plan(problem, [view], [_kernel_view(y, cl), _kernel_view(indices, cl)], (y, indices), cl)


@functools.lru_cache(maxsize=4096)
def _max_pool_backward_problem(grad_out: _Array, indices: _Array, input_shape, kernel_size, stride, padding, dilation,
                               ceil_mode: bool, layout: str):
    return maxpool2d.normalize(grad_out, input_shape=input_shape, kernel_size=kernel_size, stride=stride,
                                   padding=padding, dilation=dilation, ceil_mode=ceil_mode, indices=indices, x=None,
                                   layout=layout)


def _plan_max_pool2d_backward(grad_output: Tensor, indices: Tensor, input_size: List[int], kernel_size: List[int],
                              stride: List[int], padding: List[int], dilation: List[int], ceil_mode: bool) -> Tensor:
    cl = _is_channels_last(grad_output)
    grad_output, indices = _conform(grad_output, cl), _conform(indices, cl)
    grad_input = _empty(input_size, grad_output, cl)
    views = [_kernel_view(grad_output, cl), _kernel_view(indices, cl)]
    out_view = _kernel_view(grad_input, cl)
    problem = functools.partial(_max_pool_backward_problem, *(_array(v) for v in views), tuple(out_view.shape),
                                tuple(kernel_size), tuple(stride), tuple(padding), tuple(dilation), ceil_mode,
                                _layout(2, cl))
    return _Plan(problem, views, [out_view], (grad_input,), cl)


@functools.lru_cache(maxsize=4096)
def _avg_pool_backward_problem(grad_out: _Array, input_shape, kernel_size, stride, padding, ceil_mode: bool,
                               count_include_pad: bool, divisor_override, layout: str):
    return avgpool3d.normalize(grad_out, input_shape=input_shape, kernel_size=kernel_size, stride=stride,
                               padding=padding, dilation=1, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                               divisor_override=divisor_override, layout=layout)


def _plan_avg_pool3d_backward(grad_output: Tensor, input_size: List[int], kernel_size: List[int], stride: List[int],
                              padding: List[int], ceil_mode: bool, count_include_pad: bool,
                              divisor_override: Optional[int]) -> Tensor:
    cl = _is_channels_last(grad_output)
    grad_output = _conform(grad_output, cl)
    grad_input = _empty(input_size, grad_output, cl)
    view, out_view = _kernel_view(grad_output, cl), _kernel_view(grad_input, cl)
    problem = functools.partial(_avg_pool_backward_problem, _array(view), tuple(out_view.shape), tuple(kernel_size),
                                tuple(stride), tuple(padding), ceil_mode, count_include_pad, divisor_override,
                                _layout(3, cl))
    return _Plan(problem, [view], [out_view], (grad_input,), cl)


# --- The registered operators ----------------------------------------------------------------------------

# --- PyTorch's own kernels: where no compiled form computes a problem's known answer (ops.known_answer) ------


def _linear_gradient(forward: Callable, like: Tensor, size: List[int], grad_output: Tensor) -> Tensor:
    """The gradient, by PyTorch's autograd, of ``forward`` (linear in its one tensor argument of ``size``)."""
    with torch.enable_grad():
        point = torch.zeros(size, dtype=like.dtype, device=like.device, requires_grad=True)
        (gradient,) = torch.autograd.grad(forward(point), point, grad_output)
    return _conform(gradient, _is_channels_last(grad_output))


def _torch_conv_backward_input(grad_output, weight, relu_output, input_size, stride, padding, dilation, groups):
    gradient = _linear_gradient(lambda x: _torch_conv(x, weight.detach(), None, stride, padding, dilation, groups),
                                grad_output, input_size, grad_output)
    return gradient if relu_output is None else torch.where(relu_output <= 0, 0, gradient)  # _RELU_BACKWARD


def _torch_conv_backward_weight(input, grad_output, weight_size, stride, padding, dilation, groups):
    return _linear_gradient(lambda w: _torch_conv(input.detach(), w, None, stride, padding, dilation, groups),
                            input, weight_size, grad_output)


def _torch_max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    cl = _is_channels_last(input)
    y, indices = F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
    return _conform(y, cl), _conform(indices, cl)


def _torch_max_pool2d_backward(grad_output, indices, input_size, kernel_size, stride, padding, dilation, ceil_mode):
    cl = _is_channels_last(grad_output)
    return _conform(torch.ops.aten.max_pool2d_with_indices_backward(
        grad_output, _empty(input_size, grad_output, cl), kernel_size, stride, padding, dilation, ceil_mode, indices), cl)


def _torch_avg_pool3d_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode, count_include_pad,
                               divisor_override):
    cl = _is_channels_last(grad_output)
    return _conform(torch.ops.aten.avg_pool3d_backward(
        grad_output, _empty(input_size, grad_output, cl), kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override), cl)


_conv_backward_input = _KernelOp("conv_backward_input", _plan_conv_backward_input, _torch_conv_backward_input)
_conv_backward_weight = _KernelOp("conv_backward_weight", _plan_conv_backward_weight, _torch_conv_backward_weight)
_max_pool2d_kernel = _KernelOp("max_pool2d", _plan_max_pool2d, _torch_max_pool2d)
_max_pool2d_backward = _KernelOp("max_pool2d_backward", _plan_max_pool2d_backward, _torch_max_pool2d_backward)
_avg_pool3d_backward = _KernelOp("avg_pool3d_backward", _plan_avg_pool3d_backward, _torch_avg_pool3d_backward)


def _symmetric_padding(input: Tensor, padding: List[int]) -> tuple[Tensor, list[int]]:
    """(input, per-dim padding) for PyTorch's kernels, which pad both sides alike: asymmetric (low, high) pairs
    pad the input first (F.pad, last dim first) and then need none."""
    pairs = _pairs(padding)
    if all(lo == hi for lo, hi in pairs):
        return input, [lo for lo, _ in pairs]
    return F.pad(input, [v for lo, hi in reversed(pairs) for v in (lo, hi)]), [0] * len(pairs)


def _torch_conv(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride, padding, dilation, groups: int) -> Tensor:
    """PyTorch's own forward convolution, with (low, high) padding pairs."""
    conv = (F.conv1d, F.conv2d, F.conv3d)[input.dim() - 3]
    padded, symmetric = _symmetric_padding(input, padding)
    output = conv(padded, weight, bias, stride, symmetric, dilation, groups)
    if _is_channels_last(input) or _is_channels_last(weight):
        # what PyTorch's CPU and CUDA convolutions return; its meta kernel (precompile's) returns contiguous
        output = output.contiguous(memory_format=_memory_format(output.dim() - 2))
    return output


def _conv_forward(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int], padding: List[int],
                  dilation: List[int], groups: int) -> Tensor:
    return _torch_conv(input, weight, bias, stride, padding, dilation, groups)


def _relu_conv_forward(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int], padding: List[int],
                       dilation: List[int], groups: int) -> Tuple[Tensor, Tensor]:
    """conv(relu(input)); also returns relu(input), which the backward reads (as PyTorch's ReLU and conv save it)."""
    activation = torch.relu(input)
    return _torch_conv(activation, weight, bias, stride, padding, dilation, groups), activation


def _relu_conv_fake(input, weight, bias, stride, padding, dilation, groups):
    activation = torch.empty_like(input)
    return _torch_conv(activation, weight, bias, stride, padding, dilation, groups), activation


_conv_op = _define("conv", _conv_forward, _conv_forward, _torch_conv)
_relu_conv_op = _define("relu_conv", _relu_conv_forward, _relu_conv_forward, _relu_conv_fake)


def _conv_setup(ctx, inputs, output, direct: bool = False):
    input, weight, bias, stride, padding, dilation, groups = inputs
    ctx.direct = direct
    conv_input = output[1] if isinstance(output, tuple) else input  # relu(input) for relu_conv
    ctx.save_for_backward(conv_input, weight)
    ctx.fused_relu = isinstance(output, tuple)
    ctx.has_bias = bias is not None
    ctx.params = (stride, padding, dilation, groups)
    if ctx.fused_relu:
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)


def _conv_backward(ctx, grad_output, *unused):
    conv_input, weight = ctx.saved_tensors
    stride, padding, dilation, groups = ctx.params
    grad_input = grad_weight = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_input = _conv_backward_input.call(ctx.direct, grad_output, weight, conv_input if ctx.fused_relu else None,
                                          list(conv_input.shape), stride, padding, dilation, groups)
    if ctx.needs_input_grad[1]:
        grad_weight = _conv_backward_weight.call(ctx.direct, conv_input, grad_output, list(weight.shape), stride, padding,
                                                 dilation, groups)
    if ctx.has_bias and ctx.needs_input_grad[2]:
        grad_bias = grad_output.sum(dim=[0, *range(2, grad_output.dim())])
    return grad_input, grad_weight, grad_bias, None, None, None, None


_register_autograd("conv", _conv_backward, _conv_setup)
_register_autograd("relu_conv", _conv_backward, _conv_setup)


class _ConvFunction(torch.autograd.Function):
    """``conv`` (or ``relu_conv``) and its backward on the eager path (``_direct``): the registered operators'
    forward and backward, without the dispatcher."""

    @staticmethod
    def forward(ctx, *inputs_and_relu):
        *inputs, relu = inputs_and_relu  # last, so that ctx.needs_input_grad is indexed as the operators' is
        output = (_relu_conv_forward if relu else _conv_forward)(*inputs)
        _conv_setup(ctx, inputs, output, direct=True)
        return output

    @staticmethod
    def backward(ctx, *grads):
        return *_conv_backward(ctx, *grads), None


def _max_pool_setup(ctx, inputs, output, direct: bool = False):
    input, kernel_size, stride, padding, dilation, ceil_mode = inputs
    ctx.direct = direct
    ctx.save_for_backward(output[1])
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)
    ctx.params = (list(input.shape), kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool_backward(ctx, grad_output, _grad_indices):
    (indices,) = ctx.saved_tensors
    if grad_output is None or not ctx.needs_input_grad[0]:
        return None, None, None, None, None, None
    return _max_pool2d_backward.call(ctx.direct, grad_output, indices, *ctx.params), None, None, None, None, None


_register_autograd("max_pool2d", _max_pool_backward, _max_pool_setup)


class _MaxPoolFunction(torch.autograd.Function):
    """``max_pool2d`` and its backward on the eager path (``_direct``)."""

    @staticmethod
    def forward(ctx, *inputs):
        output = _max_pool2d_kernel.run(*inputs)
        _max_pool_setup(ctx, inputs, output, direct=True)
        return output

    @staticmethod
    def backward(ctx, *grads):
        return _max_pool_backward(ctx, *grads)


def _torch_avg_pool3d(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int], ceil_mode: bool,
                      count_include_pad: bool, divisor_override: Optional[int]) -> Tensor:
    return F.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


_avg_pool3d_op = _define("avg_pool3d", _torch_avg_pool3d, _torch_avg_pool3d, _torch_avg_pool3d)


def _avg_pool_setup(ctx, inputs, output, direct: bool = False):
    input, *params = inputs
    ctx.direct = direct
    ctx.params = (list(input.shape), *params)


def _avg_pool_backward(ctx, grad_output):
    grad_input = _avg_pool3d_backward.call(ctx.direct, grad_output, *ctx.params) if ctx.needs_input_grad[0] else None
    return grad_input, None, None, None, None, None, None


_register_autograd("avg_pool3d", _avg_pool_backward, _avg_pool_setup)


class _AvgPoolFunction(torch.autograd.Function):
    """``avg_pool3d`` and its backward on the eager path (``_direct``)."""

    @staticmethod
    def forward(ctx, *inputs):
        output = _torch_avg_pool3d(*inputs)
        _avg_pool_setup(ctx, inputs, output, direct=True)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return _avg_pool_backward(ctx, grad_output)


# --- The functions (torch.nn.functional's arguments) ------------------------------------------------------

_float64_warned: set[str] = set()


def _falls_back(name: str, *tensors: Optional[Tensor]) -> bool:
    """Whether a call runs PyTorch's own operator: float64 (the kernels have none; warned once per function)."""
    if any(t is not None and t.dtype == torch.float64 for t in tensors):
        if name not in _float64_warned:
            _float64_warned.add(name)
            warnings.warn(f"ops.torch.{name}: float64 has no kernel here; PyTorch's own {name} (and its backward) "
                          "runs instead", stacklevel=3)
        return True
    return False


def _check_tensor(name: str, parameter: str, value, optional: bool = False) -> None:
    check_type(isinstance(value, Tensor) or (optional and value is None),
               f"{name}: {parameter} must be a torch.Tensor{' or None' if optional else ''}, but got {type(value).__name__}")
    if isinstance(value, Tensor):
        check_type(value.dtype in (*_KERNEL_DTYPES, torch.float64),
                   f"{name}: {parameter} has dtype {value.dtype}, but only float32, float16, bfloat16 (and float64, "
                   "through PyTorch's own operator) are supported")


def _autocast(*tensors: Optional[Tensor]) -> list:
    """The tensors in autocast's dtype where autocast is on for their device (as PyTorch's convolution does)."""
    device_type = tensors[0].device.type
    if device_type not in ("cpu", "cuda") or not torch.is_autocast_enabled(device_type):
        return list(tensors)
    dtype = torch.get_autocast_dtype(device_type)
    return [t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors]


def _conv_padding(name: str, padding, kernel: tuple, stride: tuple, dilation: tuple) -> tuple:
    rank = len(kernel)
    if isinstance(padding, str):
        check(padding in ("same", "valid"), f"{name}: padding must be an int, a tuple, 'same' or 'valid', but got {padding!r}")
        if padding == "valid":
            return ((0, 0),) * rank
        check(all(s == 1 for s in stride), f"{name}: padding='same' is not supported for strided convolutions "
                                           f"(PyTorch's rule), but stride is {stride!r}")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)  # PyTorch puts the odd extra on the high side
    pairs = padding_pairs(name, padding, rank)
    check(all(lo >= 0 and hi >= 0 for lo, hi in pairs), f"{name}: padding must be non-negative, but got {pairs!r}")
    return pairs


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def _is_hashable(key: tuple) -> bool:
    try:
        hash(key)
    except TypeError:  # an argument of a type no check accepts: the uncached checks say so
        return False
    return True


@functools.lru_cache(maxsize=4096)
def _conv_arguments(name: str, rank: int, input_shape: tuple, weight_shape: tuple, bias_shape, stride, padding, dilation,
                    groups, input_activation) -> tuple:
    """(unbatched?, stride, flat padding pairs, dilation) of a convolution call, checked; computed once per
    shapes and arguments (a bad one raises, and nothing is kept)."""
    check(input_activation in _ACTIVATIONS, f"{name}: input_activation must be None or 'relu', but got {input_activation!r}")
    check(len(input_shape) in (rank + 1, rank + 2),
          f"{name}: input must be {rank + 1}-D (unbatched) or {rank + 2}-D (batched), but has shape {input_shape}")
    check(len(weight_shape) == rank + 2,
          f"{name}: weight must be {rank + 2}-D (out_channels, in_channels/groups, *kernel), but has shape {weight_shape}")
    check_type(isinstance(groups, int) and not isinstance(groups, bool), f"{name}: groups must be an int, but got {groups!r}")
    check(groups >= 1, f"{name}: groups must be positive, but got {groups}")
    stride = positive_int_tuple(name, "stride", stride, rank)
    dilation = positive_int_tuple(name, "dilation", dilation, rank)
    kernel = weight_shape[2:]
    pairs = _conv_padding(name, padding, kernel, stride, dilation)
    unbatched = len(input_shape) == rank + 1
    channels, spatial = input_shape[-rank - 1], input_shape[-rank:]
    check(channels == weight_shape[1] * groups,
          f"{name}: input has {channels} channels, but weight {weight_shape} with groups={groups} expects "
          f"{weight_shape[1] * groups} (in_channels/groups = {weight_shape[1]})")
    check(weight_shape[0] % groups == 0,
          f"{name}: groups={groups} must divide weight's out_channels, but {groups} does not divide {weight_shape[0]}")
    if bias_shape is not None:
        check(bias_shape == (weight_shape[0],),
              f"{name}: bias must have shape ({weight_shape[0]},), one value per output channel, but has {bias_shape}")
    sizes = tuple(geometry.conv_output_size(i, k, s, d, *p) for i, k, s, d, p in zip(spatial, kernel, stride, dilation, pairs))
    check(all(o >= 1 for o in sizes),
          f"{name}: the kernel {kernel} (dilation {dilation}) does not fit the padded input {spatial} with "
          f"padding {pairs}: the output size would be {sizes}")
    return unbatched, list(stride), _flat_pairs(pairs), list(dilation)


def _conv(rank: int, input, weight, bias, stride, padding, dilation, groups, input_activation) -> Tensor:
    name = f"conv{rank}d"
    _check_tensor(name, "input", input)
    _check_tensor(name, "weight", weight)
    _check_tensor(name, "bias", bias, optional=True)
    key = (name, rank, tuple(input.shape), tuple(weight.shape), None if bias is None else tuple(bias.shape),
           *map(_hashable, (stride, padding, dilation, groups, input_activation)))
    checked = _conv_arguments.__wrapped__ if torch.compiler.is_compiling() or not _is_hashable(key) else _conv_arguments
    unbatched, stride, padding, dilation = checked(*key)
    for parameter, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            check(t.device == input.device, f"{name}: {parameter} is on {t.device}, but input is on {input.device}")
    input, weight, bias = _autocast(input, weight, bias)
    for parameter, t in (("weight", weight), ("bias", bias)):
        check_type(t is None or t.dtype == input.dtype,
                   f"{name}: {parameter} has dtype {t.dtype if t is not None else None}, but input has {input.dtype}")
    x = input.unsqueeze(0) if unbatched else input
    arguments = (x, weight, bias, list(stride), list(padding), list(dilation), groups)
    if _falls_back(name, input, weight, bias):
        return _unbatch(_torch_conv(torch.relu(x) if input_activation == "relu" else x, *arguments[1:]), unbatched)
    relu = input_activation == "relu"
    if _direct(x, weight, bias):
        y = _ConvFunction.apply(*arguments, relu)
    else:
        y = (_relu_conv_op if relu else _conv_op)(*arguments)
    return _unbatch(y[0] if relu else y, unbatched)


def _unbatch(y: Tensor, unbatched: bool) -> Tensor:
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, input_activation=None) -> Tensor:
    """``torch.nn.functional.conv1d`` whose backward runs this library's kernels; ``input_activation="relu"``
    computes ``conv1d(relu(input))`` with the ReLU's backward fused into the input-gradient kernel."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups, input_activation)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, input_activation=None) -> Tensor:
    """``torch.nn.functional.conv2d`` whose backward runs this library's kernels (see :func:`conv1d`)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, input_activation)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, input_activation=None) -> Tensor:
    """``torch.nn.functional.conv3d`` whose backward runs this library's kernels (see :func:`conv1d`)."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, input_activation)


def _pool_arguments(name: str, input, rank: int, kernel_size, stride, padding, ceil_mode):
    """(unbatched?, kernel, stride, padding) as tuples, PyTorch's defaults (stride: the kernel), checked."""
    _check_tensor(name, "input", input)
    check(input.dim() in (rank + 1, rank + 2),
          f"{name}: input must be {rank + 1}-D (unbatched) or {rank + 2}-D (batched), but has shape {tuple(input.shape)}")
    kernel = positive_int_tuple(name, "kernel_size", kernel_size, rank)
    no_stride = stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0)
    stride = kernel if no_stride else positive_int_tuple(name, "stride", stride, rank)
    pads = int_tuple(name, "padding", padding, rank)
    check(all(p >= 0 for p in pads), f"{name}: padding must be non-negative, but got {pads!r}")
    check_type(isinstance(ceil_mode, bool), f"{name}: ceil_mode must be a bool, but got {ceil_mode!r}")
    return input.dim() == rank + 1, kernel, stride, pads


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``torch.nn.functional.max_pool2d``: forward (with PyTorch's indices) and backward are this library's."""
    name = "max_pool2d"
    unbatched, kernel, stride, pads = _pool_arguments(name, input, 2, kernel_size, stride, padding, ceil_mode)
    dilation = positive_int_tuple(name, "dilation", dilation, 2)
    if _falls_back(name, input):
        return F.max_pool2d(input, kernel, stride, pads, dilation, ceil_mode, return_indices)
    x = input.unsqueeze(0) if unbatched else input
    if not torch.compiler.is_compiling():  # the window against the input (PyTorch's rules), before compiling
        maxpool2d_fwd.normalize(_Array(tuple(x.shape), np.dtype(np.float32)), kernel_size=kernel, stride=stride,
                                padding=pads, dilation=dilation, ceil_mode=ceil_mode, layout="NCHW")
    arguments = (x, list(kernel), list(stride), list(pads), list(dilation), ceil_mode)
    y, indices = _MaxPoolFunction.apply(*arguments) if _direct(x) else _max_pool2d_kernel.op(*arguments)
    if unbatched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices) if return_indices else y


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """``torch.nn.functional.avg_pool3d``: PyTorch's forward, this library's backward."""
    name = "avg_pool3d"
    unbatched, kernel, stride, pads = _pool_arguments(name, input, 3, kernel_size, stride, padding, ceil_mode)
    check_type(isinstance(count_include_pad, bool), f"{name}: count_include_pad must be a bool, but got {count_include_pad!r}")
    if _falls_back(name, input):
        return F.avg_pool3d(input, kernel, stride, pads, ceil_mode, count_include_pad, divisor_override)
    x = input.unsqueeze(0) if unbatched else input
    if not torch.compiler.is_compiling():  # the window against the input (PyTorch's rules), before compiling
        avgpool3d.problem_from_params(batch=x.shape[0], channels=x.shape[1], input_spatial=tuple(x.shape[2:]),
                                      kernel_size=kernel, stride=stride, padding=pads, ceil_mode=ceil_mode,
                                      count_include_pad=count_include_pad, divisor_override=divisor_override,
                                      layout="NCDHW", dtype="float32")
    arguments = (x, list(kernel), list(stride), list(pads), ceil_mode, count_include_pad, divisor_override)
    y = _AvgPoolFunction.apply(*arguments) if _direct(x) else _avg_pool3d_op(*arguments)
    return y.squeeze(0) if unbatched else y


# --- torch.nn twins ---------------------------------------------------------------------------------------


class _ConvForward:
    """``_conv_forward`` of the convolution twins: PyTorch's module arguments, this library's backward."""

    input_activation = None  # "relu": the layer computes conv(relu(x)), the ReLU's backward fused

    def _conv_forward(self, input, weight, bias):
        padding = self.padding
        if self.padding_mode != "zeros":  # as PyTorch does: pad first (PyTorch's F.pad), then no padding
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        return _conv(self._rank, input, weight, bias, self.stride, padding, self.dilation, self.groups,
                     self.input_activation)

    def extra_repr(self):
        text = super().extra_repr()
        return text + (f", input_activation={self.input_activation!r}" if self.input_activation else "")


def _init_conv(module, input_activation):
    check(input_activation in _ACTIVATIONS,
          f"{type(module).__name__}: input_activation must be None or 'relu', but got {input_activation!r}")
    module.input_activation = input_activation


class Conv1d(_ConvForward, nn.Conv1d):
    """``torch.nn.Conv1d`` with this library's backward; ``input_activation="relu"`` fuses a preceding ReLU."""

    _rank = 1

    def __init__(self, *args, input_activation=None, **kwargs):
        super().__init__(*args, **kwargs)
        _init_conv(self, input_activation)


class Conv2d(_ConvForward, nn.Conv2d):
    """``torch.nn.Conv2d`` with this library's backward; ``input_activation="relu"`` fuses a preceding ReLU."""

    _rank = 2

    def __init__(self, *args, input_activation=None, **kwargs):
        super().__init__(*args, **kwargs)
        _init_conv(self, input_activation)


class Conv3d(_ConvForward, nn.Conv3d):
    """``torch.nn.Conv3d`` with this library's backward; ``input_activation="relu"`` fuses a preceding ReLU."""

    _rank = 3

    def __init__(self, *args, input_activation=None, **kwargs):
        super().__init__(*args, **kwargs)
        _init_conv(self, input_activation)


class MaxPool2d(nn.MaxPool2d):
    """``torch.nn.MaxPool2d`` whose forward and backward are this library's."""

    def forward(self, input):
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                          self.return_indices)


class AvgPool3d(nn.AvgPool3d):
    """``torch.nn.AvgPool3d`` whose backward is this library's."""

    def forward(self, input):
        return avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                          self.divisor_override)


_TWINS = {nn.Conv1d: Conv1d, nn.Conv2d: Conv2d, nn.Conv3d: Conv3d, nn.MaxPool2d: MaxPool2d, nn.AvgPool3d: AvgPool3d}
# layers of the families this library covers that it cannot take: named in convert's warning
_FAMILIES = (nn.modules.conv._ConvNd, nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AvgPoolNd)


def _why_not(module: nn.Module) -> str | None:
    """Why ``module`` stays PyTorch's, or None if its twin can take it."""
    if type(module) not in _TWINS:
        return f"{type(module).__name__} has no kernel here"
    dtypes_ = {p.dtype for p in module.parameters(recurse=False)}
    if dtypes_ - set(_KERNEL_DTYPES):
        return f"{', '.join(sorted(str(d) for d in dtypes_ - set(_KERNEL_DTYPES)))} parameters"
    return None


def convert(model: nn.Module) -> nn.Module:
    """Swap every supported layer of ``model`` for its twin, in place, and return ``model``.

    ``nn.Conv1d/2d/3d``, ``nn.MaxPool2d`` and ``nn.AvgPool3d`` (exactly those classes, not subclasses, which
    may change ``forward``) become this module's twins: the same object, parameters and ``state_dict`` (an
    optimizer made before keeps working). Inside ``nn.Sequential``, a ``ReLU`` directly followed by a
    convolution becomes ``nn.Identity`` and the convolution takes ``input_activation="relu"``, except an
    in-place ``ReLU`` that opens the Sequential (its input may have other readers, which in-place would have
    changed). Layers of these families it cannot take (another class, float64 parameters) stay PyTorch's, and
    one warning lists them.
    """
    check_type(isinstance(model, nn.Module), f"convert: model must be a torch.nn.Module, but got {type(model).__name__}")
    left = []
    for name, module in model.named_modules():
        if isinstance(module, _FAMILIES) and not isinstance(module, tuple(_TWINS.values())):
            reason = _why_not(module)
            if reason is None:
                module.__class__ = _TWINS[type(module)]
            else:
                left.append(f"{name or '(the model)'} ({reason})")
    for module in model.modules():
        if isinstance(module, nn.Sequential):
            _fuse_relus(module)
    if left:
        warnings.warn(f"ops.torch.convert: these layers stay PyTorch's: {'; '.join(left)}", stacklevel=2)
    return model


def _fuse_relus(sequential: nn.Sequential) -> None:
    names = list(sequential._modules)
    for position, (name, following) in enumerate(zip(names, names[1:])):
        relu, conv = sequential._modules[name], sequential._modules[following]
        if (type(relu) is nn.ReLU and isinstance(conv, _ConvForward) and conv.input_activation is None
                and not (position == 0 and relu.inplace)):
            conv.input_activation = "relu"
            sequential._modules[name] = nn.Identity()


# --- precompile -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _recording_plans():
    global _recording
    with _recording_lock:
        _recording = []
        try:
            yield _recording
        finally:
            _recording = None


def precompile(model: nn.Module, example_input, *, device: str | None = None, workers: int | None = None,
               progress: bool = True) -> list:
    """Compile every module one training step of ``model`` on ``example_input`` needs, in parallel.

    The step (its forward and a backward from every output) runs on a copy of the model, so the model is
    untouched, and finds each kernel the step calls with its shapes, dtypes and layouts; no kernel runs. Not
    to be called while another thread trains in this process: their kernels would be recorded, not run.
    ``example_input``: a tensor or a tuple of them, real or meta. ``device``: the IREE driver to compile for
    (``local-task``, ``cuda``, ``hip``), by default that of ``example_input``'s device; CPU inputs with
    ``device="cuda"`` build a GPU's modules on a machine without one. Returns the modules' paths; modules
    already in ``artifacts/`` or the cache are not compiled again.
    """
    inputs = example_input if isinstance(example_input, tuple) else (example_input,)
    for i, t in enumerate(inputs):
        _check_tensor("precompile", f"example_input[{i}]", t)
    home = inputs[0].device
    own_driver = None if home.type == "meta" else calls.driver_for(home)
    device = device or own_driver or targets.DEFAULT_DEVICE
    target = targets.target_for_device(device, "precompile")
    # The step runs where the inputs are: PyTorch's layers compute, this library's kernels only note their
    # problems, so every layout is the one training sees (modules for a GPU can be built from CPU inputs). On
    # meta inputs nothing computes, and layouts follow PyTorch's meta kernels, which do not keep channels_last
    # through every backward: give real inputs for channels-last models.
    step_model = copy.deepcopy(model).to("meta") if home.type == "meta" else copy.deepcopy(model)
    step_inputs = tuple(t.detach() for t in inputs)
    with _recording_plans() as plans:
        outputs = step_model(*step_inputs)
        outputs = [o for o in (outputs if isinstance(outputs, (tuple, list)) else [outputs])
                   if isinstance(o, Tensor) and o.requires_grad]
        if outputs:
            torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
    alternatives = list({specs[0].name + specs[0].key(None): specs for specs in (
        policy.module_specs(problem, target) for problem in plans)}.values())
    done = []

    def build(specs):
        compiler.announce.quiet = True  # the progress bar says what compiles
        path = compiler.find_or_compile(specs)
        done.append(specs[0].name)
        if progress:
            bar = "#" * (20 * len(done) // len(alternatives))
            print(f"\rprecompile [{bar:<20}] {len(done)}/{len(alternatives)} modules for {target}", end="",
                  file=sys.stderr, flush=True)
        return path

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        paths = list(pool.map(build, alternatives))
    if progress and alternatives:
        print(file=sys.stderr)
    return paths
