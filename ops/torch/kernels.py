"""The ``iree_ck`` operators: the kernel ops, the forward ops with their autograd, and PyTorch's fallbacks.

Each kernel (``conv_backward_input``, ``conv_backward_weight``, ``max_pool2d``, ``max_pool2d_backward``,
``avg_pool3d``, ``avg_pool3d_backward``) is a ``KernelOp``: an operator of the ``iree_ck`` library
(``torch.library.Library``, so ``torch.compile(fullgraph=True)`` traces it) whose real implementation runs the
ready call of its arguments' signature (``ops/torch/calls.py``, prepared once from the generic plan of
``ops/torch/plans.py``) and whose fake one returns the plan's destinations. The forward ops ``conv`` and
``relu_conv`` are PyTorch's own computations; ``register_autograd`` gives them (and the pooling forwards
``max_pool2d`` and ``avg_pool3d``) backwards that call the kernel ops.

Eager calls on plain tensors skip the dispatcher (``_direct``): a ``torch.autograd.Function`` per forward (through
its C++ ``apply``: ``_applied``) whose backward calls the kernel ops' ready calls directly. ``Conv``,
``max_pool2d_with_indices`` and ``avg_pool3d`` pick the path; ``ops/torch/functional.py`` calls them with checked
arguments (a ``Conv`` per ready call).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Callable, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import executor, known_answer, registry, runtime
from ..operators import conv_pair
from ..precision import allowed_split
from ..validation import check, say_once
from . import calls, plans
from .plans import conform, empty, is_channels_last

# --- Recording (precompile): plans' problems are noted, nothing runs ----------------------------------------

_recording: list | None = None
_recording_driver: str | None = None  # the IREE driver whose step is recorded (its problems, whatever the tensors)
_recording_lock = threading.Lock()


@contextlib.contextmanager
def recording(driver: str | None = None):
    """While open, kernel ops run nothing: each call notes its problem in the list this yields and returns its
    (uninitialized) destinations; ``driver``: the IREE driver whose problems are recorded, whatever device the
    tensors are on (the split it may compute, ``split_precision``; by default the tensors' device's). One
    recording at a time in a process; other threads' calls are recorded too."""
    global _recording, _recording_driver
    with _recording_lock:
        _recording, _recording_driver = [], driver
        try:
            yield _recording
        finally:
            _recording, _recording_driver = None, None


def _fake(plan: plans.Plan):
    if _recording is not None:
        _recording.append(plan.problem())
    return plan.result()


# --- Kernel ops ------------------------------------------------------------------------------------------------


def _checked_problem(plan: plans.Plan):
    """The plan's problem, whose results (the operator's ``results``) are the plan's destinations."""
    problem = plan.problem()
    expected = [(tuple(shape), dtype) for shape, dtype in registry.module(problem).results(problem)]
    planned = [(tuple(w.shape), plans.TORCH_DTYPES[w.dtype]) for w in plan.writes]
    check(planned == expected, f"ops.torch: {problem.name}'s destinations {planned} are not its results {expected}")
    return problem


def _prepare(name: str, args: tuple, fallback: Callable) -> calls.Prepared:
    """The ready call of ``args``' signature: kernel op ``name``'s plan run once (layout, destinations, the checked
    problem), and what it decided kept (see ``ops/torch/calls.py``). The tensor arguments are the module's
    inputs, in order; the plan's layout (``plans.Kind.layout_from``) decides which need a copy. ``fallback`` (PyTorch's own kernel, the
    same arguments) serves a problem none of whose forms computes its known answer on the device."""
    planned = plans.plan(name, *args)
    tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    channels_last = planned.channels_last
    memory_format = plans.memory_format(planned.returns[0].dim() - 2) if channels_last else torch.contiguous_format
    reads = tuple((i, conform(a, channels_last) is not a) for i, a in tensors)
    results = tuple((tuple(r.shape), r.dtype) for r in planned.returns)
    device = tensors[0][1].device
    is_empty = any(t.numel() == 0 for t in [*planned.inputs, *planned.writes])
    problem = _checked_problem(planned)
    try:
        kernel = None if is_empty else calls.kernel_for(problem, device)
    except known_answer.WrongResultError as error:
        say_once(fallback_message(problem, error))
        return calls.Prepared(problem, reads, memory_format, results, device, None, is_empty, fallback)
    return calls.Prepared(problem, reads, memory_format, results, device, kernel, is_empty)


def fallback_message(problem, error: known_answer.WrongResultError) -> str:
    """The one warning of a problem that PyTorch's own kernel computes (two lines): what, why, and what to do."""
    worst = f" (worst: {error.worst})" if error.worst else ""
    return (f"ops.torch: {problem.op} {problem.name}: no compiled form passed the known-answer check{worst}; "
            "PyTorch's own kernel computes it instead.\n"
            "If the check is wrong, OPS_VERIFY=off trusts the modules; else rebuild them (python -m ops cache "
            "--clear) and please report this warning.")


_library = torch.library.Library("iree_ck", "DEF")


def _define(name: str, schema: str, implementation: Callable, fake: Callable):
    """Define ``iree_ck::name`` (``schema``: its arguments and results) with a CPU and CUDA implementation and a
    fake one: direct library registration, which costs about two thirds of ``torch.library.custom_op``'s call
    (measured when the launch path was built, issue 22)."""
    _library.define(name + schema)
    for key in ("CPU", "CUDA"):
        _library.impl(name, implementation, key)
    torch.library.register_fake(f"iree_ck::{name}", fake, lib=_library)
    return getattr(torch.ops.iree_ck, name).default


def _schema_of(function: Callable) -> str:
    return torch.library.infer_schema(function, mutates_args=())


def _register_autograd(name: str, backward: Callable, setup_context: Callable) -> None:
    torch.library.register_autograd(f"iree_ck::{name}", backward, setup_context=setup_context, lib=_library)


class KernelOp:
    """``iree_ck::name`` (``op``), whose implementation runs the ready call of its arguments' signature (prepared
    from the plan of ``name`` on first use) and whose fake one returns the plan's destinations (and notes the
    problem for ``precompile``). ``run`` is that implementation without the dispatcher: eager autograd calls it
    directly. ``fallback``: PyTorch's own kernel, the same arguments."""

    def __init__(self, name: str, fallback: Callable):
        self.name, self.fallback, self.ready = name, fallback, {}
        self.op = _define(name, plans.KINDS[name].schema, lambda *args: self.run(*args),
                          lambda *args: _fake(plans.plan(name, *args)))

    def run(self, *args):
        if _recording is not None:
            return _fake(plans.plan(self.name, *args))
        return self.prepared(args)(args)

    def prepared(self, args: tuple) -> calls.Prepared:
        """The ready call of ``args``' signature (prepared on its first call)."""
        key = calls.signature(args)
        call = self.ready.get(key)
        if call is None:
            call = self.ready[key] = _prepare(self.name, args, self.fallback)
        return call

    def call(self, direct: bool, *args):
        return self.run(*args) if direct else self.op(*args)


_PLAIN_TYPES = (Tensor, nn.Parameter)
_functorch_active = torch._C._are_functorch_transforms_active
_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


def _direct(*tensors: Optional[Tensor]) -> bool:
    """Whether a call takes the eager path (a ``torch.autograd.Function`` whose backward runs the kernels' ready
    calls, no dispatcher): plain tensors (no functorch wrapper among them, and no functorch transform active),
    nothing compiling, tracing or recording. Otherwise it is the registered operators, which ``torch.compile``,
    ``opcheck``, fake tensors, functorch and ``precompile`` see."""
    if (_recording is not None or torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack()
            or _functorch_active()):
        return False
    for t in tensors:
        if t is not None and (type(t) not in _PLAIN_TYPES or _functorch_wrapped(t)):
            return False
    return True


def _applied(function: type) -> Callable:
    """``function.apply`` without ``torch.autograd.Function.apply``'s Python wrapper, where this PyTorch has its C++
    apply (``torch._C._FunctionBase``). The wrapper binds default arguments for a ``setup_context`` (these Functions
    have none), unwraps functorch's dead wrappers and hands functorch's transforms to ``custom_function_call``: on
    the eager path (``_direct``) there are none. It costs about 16 us a call when the caches are cold, as they are
    in a training step (docs/perf/cpu-step/eleventh/forward_cold.txt)."""
    apply = getattr(torch._C, "_FunctionBase", object).__dict__.get("apply")
    return function.apply if apply is None else apply.__get__(None, function)


# --- PyTorch's own kernels: where no compiled form computes a problem's known answer (ops.known_answer) ------


def _linear_gradient(forward: Callable, like: Tensor, size: List[int], grad_output: Tensor) -> Tensor:
    """The gradient, by PyTorch's autograd, of ``forward`` (linear in its one tensor argument of ``size``)."""
    with torch.enable_grad():
        point = torch.zeros(size, dtype=like.dtype, device=like.device, requires_grad=True)
        (gradient,) = torch.autograd.grad(forward(point), point, grad_output)
    return conform(gradient, is_channels_last(grad_output))


def _torch_conv_backward_input(grad_output, weight, relu_output, input_size, stride, padding, dilation, groups,
                               split_precision):
    gradient = _linear_gradient(lambda x: torch_conv(x, weight.detach(), None, stride, padding, dilation, groups),
                                grad_output, input_size, grad_output)
    return _relu_backward(relu_output, gradient)


def _torch_conv_backward_weight(input, grad_output, weight_size, stride, padding, dilation, groups, split_precision):
    return _linear_gradient(lambda w: torch_conv(input.detach(), w, None, stride, padding, dilation, groups),
                            input, weight_size, grad_output)


def _torch_max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, relu):
    cl = is_channels_last(input)
    y, indices = F.max_pool2d(torch.relu(input) if relu else input, kernel_size, stride, padding, dilation, ceil_mode,
                              return_indices=True)
    return conform(y, cl), conform(indices, cl)


def _torch_max_pool2d_backward(grad_output, indices, output, input_size, kernel_size, stride, padding, dilation,
                               ceil_mode):
    cl = is_channels_last(grad_output)
    grad_output = _relu_backward(output, grad_output)  # max(relu(x)) = relu(max(x)): the ReLU's output at the argmax
    return conform(torch.ops.aten.max_pool2d_with_indices_backward(
        grad_output, empty(input_size, grad_output, cl), kernel_size, stride, padding, dilation, ceil_mode, indices), cl)


def _relu_backward(relu_output: Optional[Tensor], gradient: Tensor) -> Tensor:
    """The gradient at a ReLU's input from the gradient at its output (None: no ReLU), as PyTorch computes it:
    ``plans.RELU_BACKWARD``."""
    return gradient if relu_output is None else torch.where(relu_output <= 0, 0, gradient)


def _torch_avg_pool3d_backward(grad_output, relu_output, input_size, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override):
    cl = is_channels_last(grad_output)
    return conform(_relu_backward(relu_output, torch.ops.aten.avg_pool3d_backward(
        grad_output, empty(input_size, grad_output, cl), kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override)), cl)


def _torch_avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, relu):
    cl = is_channels_last(input)
    return conform(F.avg_pool3d(torch.relu(input) if relu else input, kernel_size, stride, padding, ceil_mode,
                                count_include_pad, divisor_override), cl)


def torch_conv(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride, padding, dilation, groups: int) -> Tensor:
    """PyTorch's own forward convolution, with flat (low, high) padding pairs."""
    return Conv(stride, padding, dilation, groups, False).convolve(input, weight, bias)


conv_backward_input = KernelOp("conv_backward_input", _torch_conv_backward_input)
conv_backward_weight = KernelOp("conv_backward_weight", _torch_conv_backward_weight)
max_pool2d = KernelOp("max_pool2d", _torch_max_pool2d)
max_pool2d_backward = KernelOp("max_pool2d_backward", _torch_max_pool2d_backward)
avg_pool3d_backward = KernelOp("avg_pool3d_backward", _torch_avg_pool3d_backward)
avg_pool3d_forward = KernelOp("avg_pool3d", _torch_avg_pool3d)
_KERNEL_OPS = (conv_backward_input, conv_backward_weight, max_pool2d, max_pool2d_backward, avg_pool3d_backward,
               avg_pool3d_forward)


def _forget_ready_calls() -> None:
    """Every kernel op's ready calls, and the paired calls made of them: their kernels hold IREE's runtime objects,
    and the kernel ops live as long as PyTorch's operator library, past the interpreter's end."""
    for op in _KERNEL_OPS:
        op.ready.clear()
    _PAIRS.clear()


runtime.release_at_exit(_forget_ready_calls)


# --- Convolution: PyTorch's forward, the kernels' backward ------------------------------------------------


_CONV_FUNCTIONS = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}  # by the input's dimensions


class Conv:
    """A convolution's arguments (flat (low, high) padding pairs; ``relu``: of ``relu(input)``), fixed: its forward
    is PyTorch's own convolution, its backward the kernels'. Calling it runs the eager path on plain tensors, else
    the registered ``conv`` / ``relu_conv``. ``ops/torch/functional.py`` keeps one per ready call."""

    __slots__ = ("arguments", "relu", "stride", "padding", "pad_first", "dilation", "groups")

    def __init__(self, stride: List[int], padding: List[int], dilation: List[int], groups: int, relu: bool):
        self.arguments, self.relu = (stride, padding, dilation, groups), relu
        self.stride, self.dilation, self.groups = stride, dilation, groups
        low, high = padding[0::2], padding[1::2]
        # PyTorch's kernels pad both sides alike: asymmetric pairs pad the input first (F.pad, last dim first)
        self.padding = low if low == high else [0] * len(low)
        self.pad_first = None if low == high else [v for lo, hi in reversed(plans.pairs(padding)) for v in (lo, hi)]

    def __call__(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        if _direct(input, weight, bias):
            y = _apply_conv(input, weight, bias, self)
        else:
            y = (_relu_conv_op if self.relu else _conv_op)(input, weight, bias, *self.arguments)
        return y[0] if self.relu else y

    def forward(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]):
        """conv(input), or (conv(relu(input)), relu(input)), which the backward reads (as PyTorch's ReLU and conv
        save it)."""
        if self.relu:
            activation = torch.relu(input)
            return self.convolve(activation, weight, bias), activation
        return self.convolve(input, weight, bias)

    def convolve(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        padded = input if self.pad_first is None else F.pad(input, self.pad_first)
        output = _CONV_FUNCTIONS[input.dim()](padded, weight, bias, self.stride, self.padding, self.dilation, self.groups)
        if not (input.is_contiguous() and weight.is_contiguous()) and (is_channels_last(input) or is_channels_last(weight)):
            # what PyTorch's CPU and CUDA convolutions return; its meta kernel (precompile's) returns contiguous
            output = output.contiguous(memory_format=plans.memory_format(output.dim() - 2))
        return output


def _conv_forward(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int], padding: List[int],
                  dilation: List[int], groups: int) -> Tensor:
    return Conv(stride, padding, dilation, groups, False).forward(input, weight, bias)


def _relu_conv_forward(input: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int], padding: List[int],
                       dilation: List[int], groups: int) -> Tuple[Tensor, Tensor]:
    return Conv(stride, padding, dilation, groups, True).forward(input, weight, bias)


def _relu_conv_fake(input, weight, bias, stride, padding, dilation, groups):
    activation = torch.empty_like(input)
    return torch_conv(activation, weight, bias, stride, padding, dilation, groups), activation


_conv_op = _define("conv", _schema_of(_conv_forward), _conv_forward, torch_conv)
_relu_conv_op = _define("relu_conv", _schema_of(_relu_conv_forward), _relu_conv_forward, _relu_conv_fake)


def _conv_setup(ctx, inputs, output, direct: bool = False):
    input, weight, bias, *params = inputs
    ctx.direct = direct
    fused_relu = ctx.fused_relu = isinstance(output, tuple)
    ctx.save_for_backward(output[1] if fused_relu else input, weight)  # relu(input) for relu_conv
    ctx.has_bias = bias is not None
    ctx.params = params  # stride, padding, dilation, groups
    if fused_relu:
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)


def _conv_backward(ctx, grad_output, *unused):
    conv_input, weight = ctx.saved_tensors
    needs_input, needs_weight, needs_bias = ctx.needs_input_grad[:3]
    if needs_input and needs_weight:
        # in the layout both kernels read (plans: grad_output's), copied once for the two, where it is not
        grad_output = conform(grad_output, is_channels_last(grad_output))
    grad_input, grad_weight = _conv_gradients(ctx, grad_output, conv_input, weight)
    grad_bias = grad_output.sum(dim=[0, *range(2, grad_output.dim())]) if ctx.has_bias and needs_bias else None
    return grad_input, grad_weight, grad_bias, None, None, None, None


def _conv_gradients(ctx, grad_output: Tensor, conv_input: Tensor, weight: Tensor) -> tuple:
    """The input and weight gradients the layer needs (None for the others), from the kernels: both, on the eager
    path, as one paired call (``paired_gradients``: one launch, or two queued behind each other)."""
    stride, padding, dilation, groups = ctx.params
    grad_input = grad_weight = None
    split = split_precision(conv_input)
    input_args = (grad_output, weight, conv_input if ctx.fused_relu else None, list(conv_input.shape), stride, padding,
                  dilation, groups, split)
    weight_args = (conv_input, grad_output, list(weight.shape), stride, padding, dilation, groups, split)
    if ctx.direct and _recording is None and ctx.needs_input_grad[0] and ctx.needs_input_grad[1]:
        return paired_gradients(input_args, weight_args)
    if ctx.needs_input_grad[0]:
        grad_input = conv_backward_input.call(ctx.direct, *input_args)
    if ctx.needs_input_grad[1]:
        grad_weight = conv_backward_weight.call(ctx.direct, *weight_args)
    return grad_input, grad_weight


def split_precision(conv_input: Tensor) -> str:
    """The split this convolution's float32 gradients may take (``precision.allowed_split``; ``"float32"``: none):
    on a driver the policy splits float32 for, bf16x3 (each product within 2^-16, where TF32 is within 2^-11) where
    PyTorch allows reduced precision (``torch.backends.cudnn.allow_tf32``, its default for convolutions), else
    bf16x6 where ``OPS_FLOAT32=bf16x6`` opts in (``float32_mode``); ``precision.weight_gradient_precision`` and
    ``data_gradient_precision`` choose per problem (bf16x3 allowed: f16x1, TF32's precision, but for grouped weight
    gradients)."""
    if _recording is not None and _recording_driver:
        driver = _recording_driver  # precompile's step for a driver, whatever the tensors' device
    else:
        driver = calls.driver_for(conv_input.device) if conv_input.is_cuda else None
    if conv_input.dtype != torch.float32:
        return "float32"
    return allowed_split(driver, torch.backends.cudnn.allow_tf32, float32_mode() == "bf16x6")


FLOAT32_MODES = ("ieee", "bf16x6")


def float32_mode() -> str:
    """``OPS_FLOAT32``: how float32 convolutions' gradients compute on CUDA where PyTorch allows no TF32: ``ieee``
    (the default: float32 arithmetic) or ``bf16x6`` (``precision.allowed_split``: six bfloat16 products on the matrix
    units, float32 sums there truncated)."""
    value = os.environ.get("OPS_FLOAT32", "ieee")
    check(value in FLOAT32_MODES, f"OPS_FLOAT32 must be one of {', '.join(FLOAT32_MODES)}, but got {value!r}")
    return value


# a layer's signature (its input gradient's arguments, the saved input's and the precision allowed) -> its paired
# call, made of the two ops' ready calls (forgetting those, forget these too)
_PAIRS: dict = {}


def paired_gradients(input_args: tuple, weight_args: tuple) -> tuple:
    """A convolution layer's (input gradient, weight gradient) from the kernel ops' arguments, eagerly, as one
    paired call (``calls.Paired``: one launch where both run on the CPU launcher), kept per signature: the input
    gradient's arguments and the saved input (the weight gradient's first) determine the weight gradient's."""
    key = calls.signature((*input_args, weight_args[0], weight_args[-1]))
    paired = _PAIRS.get(key)
    if paired is None:
        first, second = conv_backward_input.prepared(input_args), conv_backward_weight.prepared(weight_args)
        paired = _PAIRS[key] = calls.Paired(first, second, _joint(first, second))
    return paired(input_args, weight_args)


def _joint(first: calls.Prepared, second: calls.Prepared):
    """The one module of a layer's two gradients (``executor.joined``, where the policy joins them), where both
    calls launch their own checked kernels (no fallback, no ``OPS_VERIFY=always``) and are one convolution's."""
    if not (first.launches and second.launches and conv_pair.pairs(first.problem, second.problem)):
        return None
    return executor.joined(conv_pair.ConvBwdPair(first.problem, second.problem), first.kernel, second.kernel)


_register_autograd("conv", _conv_backward, _conv_setup)
_register_autograd("relu_conv", _conv_backward, _conv_setup)


class _ConvFunction(torch.autograd.Function):
    """``conv`` (or ``relu_conv``) and its backward on the eager path (``_direct``): the registered operators'
    forward and backward, without the dispatcher; the last input is the ``Conv``."""

    @staticmethod
    def forward(ctx, input, weight, bias, conv):
        output = conv.forward(input, weight, bias)
        _conv_setup(ctx, (input, weight, bias, *conv.arguments), output, direct=True)
        return output

    @staticmethod
    def backward(ctx, *grads):
        return *_conv_backward(ctx, *grads)[:3], None


_apply_conv = _applied(_ConvFunction)


# --- Max pooling: the kernels' forward (with PyTorch's indices) and backward ---------------------------------


def _max_pool_setup(ctx, inputs, output, direct: bool = False):
    """Saves the indices and, with the ReLU fused (``relu``), the output: the ReLU's output at each argmax, whose
    backward masks the gradient there (autograd refuses a backward after an in-place change of it)."""
    input, kernel_size, stride, padding, dilation, ceil_mode, relu = inputs
    ctx.direct = direct
    ctx.save_for_backward(output[1], output[0] if relu else None)
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)
    ctx.params = (list(input.shape), kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool_backward(ctx, grad_output, _grad_indices):
    indices, pooled = ctx.saved_tensors
    if grad_output is None or not ctx.needs_input_grad[0]:
        return None, None, None, None, None, None, None
    return (max_pool2d_backward.call(ctx.direct, grad_output, indices, pooled, *ctx.params),
            None, None, None, None, None, None)


_register_autograd("max_pool2d", _max_pool_backward, _max_pool_setup)


class _MaxPoolFunction(torch.autograd.Function):
    """``max_pool2d`` and its backward on the eager path (``_direct``)."""

    @staticmethod
    def forward(ctx, *inputs):
        output = max_pool2d.run(*inputs)
        _max_pool_setup(ctx, inputs, output, direct=True)
        return output

    @staticmethod
    def backward(ctx, *grads):
        return _max_pool_backward(ctx, *grads)


_apply_max_pool = _applied(_MaxPoolFunction)


def max_pool2d_with_indices(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int],
                            dilation: List[int], ceil_mode: bool, relu: bool = False) -> Tuple[Tensor, Tensor]:
    """(output, PyTorch's indices) of the ``max_pool2d`` kernel (of ``relu(input)`` where ``relu``: the ReLU
    applied to each tap as the kernel reads it), its backward the kernels' (with the ReLU's backward fused)."""
    arguments = (input, kernel_size, stride, padding, dilation, ceil_mode, relu)
    return _apply_max_pool(*arguments) if _direct(input) else max_pool2d.op(*arguments)


# --- Average pooling: the kernels' forward and backward ----------------------------------------------------


def _avg_pool_setup(ctx, inputs, output, direct: bool = False):
    """Saves, with the ReLU fused (``relu``), the pooled input: its backward masks where the ReLU's output is <= 0,
    which is where the input is (relu(x) <= 0 exactly where x <= 0, NaN in neither), so relu(x) is never kept."""
    input, *params, relu = inputs
    ctx.direct = direct
    ctx.params = (list(input.shape), *params)
    ctx.fused_relu = relu
    if relu:
        ctx.save_for_backward(input)


def _avg_pool_backward(ctx, grad_output):
    relu_output = ctx.saved_tensors[0] if ctx.fused_relu else None  # the mask's source: the ReLU's input
    if not ctx.needs_input_grad[0]:
        return None, None, None, None, None, None, None, None
    grad_input = avg_pool3d_backward.call(ctx.direct, grad_output, relu_output, *ctx.params)
    return grad_input, None, None, None, None, None, None, None


_register_autograd("avg_pool3d", _avg_pool_backward, _avg_pool_setup)


class _AvgPoolFunction(torch.autograd.Function):
    """``avg_pool3d`` and its backward on the eager path (``_direct``)."""

    @staticmethod
    def forward(ctx, *inputs):
        output = avg_pool3d_forward.run(*inputs)
        _avg_pool_setup(ctx, inputs, output, direct=True)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return _avg_pool_backward(ctx, grad_output)


_apply_avg_pool = _applied(_AvgPoolFunction)


def avg_pool3d(input: Tensor, kernel_size: List[int], stride: List[int], padding: List[int], ceil_mode: bool,
               count_include_pad: bool, divisor_override: Optional[int], relu: bool = False) -> Tensor:
    """``avg_pool3d`` (of ``relu(input)`` where ``relu``, the ReLU inside the kernel) whose backward is the
    ``avg_pool3d_backward`` kernel (with the ReLU's backward fused)."""
    arguments = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, relu)
    return _apply_avg_pool(*arguments) if _direct(input) else avg_pool3d_forward.op(*arguments)
