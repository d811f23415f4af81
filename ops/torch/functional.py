"""The functions, with ``torch.nn.functional``'s arguments: ``conv1d/2d/3d``, ``max_pool2d``, ``avg_pool3d``.

Each checks its arguments (a clear error naming the parameter, before anything compiles), takes PyTorch's own
operator for float64 (warned once per function), and calls the ``iree_ck`` operators of
``ops/torch/kernels.py``.
"""

from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import geometry
from ..problem import AvgPoolProblem, MaxPoolProblem
from ..problem_checks import avg_pool_fields, pool_problem
from ..validation import check, check_activation, check_type, int_tuple, padding_pairs, positive_int_tuple, warn_caller
from . import kernels
from .plans import KERNEL_DTYPES

float64_warned: set[str] = set()  # the functions that said, once, that PyTorch's own operator runs float64


def _falls_back(name: str, input: Tensor) -> bool:
    """Whether a call runs PyTorch's own operator: a float64 ``input`` (the kernels have none; warned once per
    function)."""
    if input.dtype == torch.float64:
        if name not in float64_warned:
            float64_warned.add(name)
            warn_caller(f"ops.torch.{name}: float64 has no kernel here; PyTorch's own {name} (and its backward) "
                        "runs instead", UserWarning)
        return True
    return False


_TAKEN_DTYPES = frozenset((*KERNEL_DTYPES, torch.float64))
# torch.is_autocast_enabled for any device in one call (private; where missing, each call asks per device)
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", lambda: True)


def check_tensor(name: str, parameter: str, value, optional: bool = False) -> None:
    """``value`` is a tensor (or None, where ``optional``) of a dtype the functions take: a TypeError naming the
    function ``name`` and its ``parameter`` otherwise (its message formatted only then: calls check every time)."""
    if (optional and value is None) or (isinstance(value, Tensor) and value.dtype in _TAKEN_DTYPES):
        return
    check_type(isinstance(value, Tensor),
               f"{name}: {parameter} must be a torch.Tensor{' or None' if optional else ''}, but got {type(value).__name__}")
    check_type(False, f"{name}: {parameter} has dtype {value.dtype}, but only float32, float16, bfloat16 (and float64, "
                      "through PyTorch's own operator) are supported")


def _autocast(*tensors: Optional[Tensor]) -> list:
    """The tensors in autocast's dtype where autocast is on for their device (as PyTorch's convolution does)."""
    if not _any_autocast():
        return list(tensors)
    device_type = tensors[0].device.type
    if device_type not in ("cpu", "cuda") or not torch.is_autocast_enabled(device_type):
        return list(tensors)
    dtype = torch.get_autocast_dtype(device_type)
    return [t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors]


# --- Convolution -------------------------------------------------------------------------------------------

_CONV_NAMES = {1: "conv1d", 2: "conv2d", 3: "conv3d"}


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


def _types(given: tuple) -> tuple:
    """The type of each of ``given``'s entries, nested: a cache key under which True is not 1, nor 1.0
    (``lru_cache``'s ``typed`` does not look inside tuples)."""
    return tuple([_types(v) if type(v) in (tuple, list) else type(v) for v in given])


_CHECKED: dict = {}  # (checks, known, given, given's types) -> what checks returned
_CHECKED_MOST = 4096


def _checked_once(checks: Callable, known: tuple, given: tuple):
    """``checks(*known, *given)``, remembered (a bad call raises, and nothing is kept): ``known`` holds values of
    types the caller made (names, shapes), ``given`` the arguments as the user passed them, keyed with their
    entries' types too. Computed again where they cannot be hashed, or while compiling (which traces no cache)."""
    if torch.compiler.is_compiling():
        return checks(*known, *given)
    key = (checks, known, given, _types(given))
    try:
        return _CHECKED[key]
    except KeyError:
        pass
    except TypeError:  # an argument of a type no check accepts (unhashable): the checks say so
        return checks(*known, *given)
    if len(_CHECKED) >= _CHECKED_MOST:
        _CHECKED.clear()
    result = _CHECKED[key] = checks(*known, *given)
    return result


_READY: dict = {}  # a call's key (its tensors' metadata, the ids of its other arguments) -> its ready call
_READY_MOST = 4096
_ATOMS = (int, bool, float, str, type(None))


def _immutable(value) -> bool:
    return type(value) in _ATOMS or (type(value) is tuple and all(_immutable(v) for v in value))


def _remember(key: Optional[tuple], given: tuple, ready):
    """``ready`` (a call whose arguments its making checked), kept under ``key`` for the calls after it, where
    ``given`` (the arguments as the user passed them, which ``key`` names by ``id``) are immutable: ``ready`` holds
    them, so no other object takes their ids while it is kept, and a call with the same objects is the same call
    (an equal argument of another type, True for 1, is another object: it is checked). A module's calls pass its
    attributes, the same objects every time. ``key`` is None while compiling, which traces no cache."""
    if key is not None and _immutable(given):
        if len(_READY) >= _READY_MOST:
            _READY.clear()
        ready.held = given
        _READY[key] = ready
    return ready


def _conv_arguments(name: str, rank: int, input_shape: tuple, weight_shape: tuple, bias_shape, stride, padding, dilation,
                    groups, input_activation) -> tuple:
    """(unbatched?, stride, flat padding pairs, dilation) of a convolution call, checked (once per shapes and
    arguments: ``_checked_once``)."""
    check_activation(name, input_activation)
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
    return unbatched, list(stride), [v for pair in pairs for v in pair], list(dilation)


def convolution(rank: int, input, weight, bias, stride, padding, dilation, groups, input_activation) -> Tensor:
    """``conv1d``, ``conv2d`` or ``conv3d`` (``rank`` spatial dimensions), arguments as theirs."""
    if _any_autocast():  # the tensors in autocast's dtype first, checked as they came
        for parameter, t in (("input", input), ("weight", weight), ("bias", bias)):
            check_tensor(_CONV_NAMES[rank], parameter, t, optional=parameter == "bias")
        input, weight, bias = _autocast(input, weight, bias)
    key = ready = None
    if not torch.compiler.is_compiling():
        try:
            key = (rank, type(input), input.dtype, input.shape, input.device, type(weight), weight.dtype, weight.shape,
                   weight.device, None if bias is None else (type(bias), bias.dtype, bias.shape, bias.device),
                   id(stride), id(padding), id(dilation), id(groups), id(input_activation))
            ready = _READY.get(key)
        except (AttributeError, TypeError):  # not tensors (or unhashable): the checks say so
            key = ready = None
    if ready is None:
        ready = _remember(key, (stride, padding, dilation, groups, input_activation),
                          _ConvCall(rank, input, weight, bias, stride, padding, dilation, groups, input_activation))
    return ready(input, weight, bias)


class _ConvCall:
    """A convolution call's checked arguments (raising where they are bad), ready for every later call with the
    same tensors' types, dtypes, shapes and devices and the same argument objects (``_remember``)."""

    __slots__ = ("name", "unbatched", "conv", "held")

    def __init__(self, rank: int, input, weight, bias, stride, padding, dilation, groups, input_activation):
        self.name = name = _CONV_NAMES[rank]
        check_tensor(name, "input", input)
        check_tensor(name, "weight", weight)
        check_tensor(name, "bias", bias, optional=True)
        known = (name, rank, tuple(input.shape), tuple(weight.shape), None if bias is None else tuple(bias.shape))
        given = tuple(map(_hashable, (stride, padding, dilation, groups, input_activation)))
        self.unbatched, stride, padding, dilation = _checked_once(_conv_arguments, known, given)
        for parameter, t in (("weight", weight), ("bias", bias)):
            if t is not None:
                check(t.device == input.device, f"{name}: {parameter} is on {t.device}, but input is on {input.device}")
                check_type(t.dtype == input.dtype, f"{name}: {parameter} has dtype {t.dtype}, but input has {input.dtype}")
        self.conv = kernels.Conv(stride, padding, dilation, groups, input_activation == "relu")

    def __call__(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        x = input.unsqueeze(0) if self.unbatched else input
        if input.dtype == torch.float64 and _falls_back(self.name, input):  # weight and bias have its dtype (above)
            forward = self.conv.forward(x, weight, bias)
            y = forward[0] if self.conv.relu else forward
        else:
            y = self.conv(x, weight, bias)
        return y.squeeze(0) if self.unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, input_activation=None) -> Tensor:
    """``torch.nn.functional.conv1d`` whose backward runs this library's kernels; ``input_activation="relu"``
    computes ``conv1d(relu(input))`` with the ReLU's backward fused into the input-gradient kernel."""
    return convolution(1, input, weight, bias, stride, padding, dilation, groups, input_activation)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, input_activation=None) -> Tensor:
    """``torch.nn.functional.conv2d`` whose backward runs this library's kernels (see :func:`conv1d`)."""
    return convolution(2, input, weight, bias, stride, padding, dilation, groups, input_activation)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, input_activation=None) -> Tensor:
    """``torch.nn.functional.conv3d`` whose backward runs this library's kernels (see :func:`conv1d`)."""
    return convolution(3, input, weight, bias, stride, padding, dilation, groups, input_activation)


# --- Pooling ---------------------------------------------------------------------------------------------


def _pool_arguments(name: str, input, rank: int, kernel_size, stride, padding, ceil_mode):
    """(unbatched?, kernel, stride, padding) as tuples, PyTorch's defaults (stride: the kernel), checked."""
    check_tensor(name, "input", input)
    check(input.dim() in (rank + 1, rank + 2),
          f"{name}: input must be {rank + 1}-D (unbatched) or {rank + 2}-D (batched), but has shape {tuple(input.shape)}")
    kernel = positive_int_tuple(name, "kernel_size", kernel_size, rank)
    no_stride = stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0)
    stride = kernel if no_stride else positive_int_tuple(name, "stride", stride, rank)
    pads = int_tuple(name, "padding", padding, rank)
    check(all(p >= 0 for p in pads), f"{name}: padding must be non-negative, but got {pads!r}")
    check_type(isinstance(ceil_mode, bool), f"{name}: ceil_mode must be a bool, but got {ceil_mode!r}")
    return input.dim() == rank + 1, kernel, stride, pads


def _max_pool_window(shape: tuple, kernel, stride, pads, dilation, ceil_mode) -> None:
    """max_pool2d's window against an input of ``shape``: the pooling operators' own checks (PyTorch's rules),
    their messages naming this function and its ``input`` (run once per shape and arguments: ``_pool``)."""
    pool_problem(MaxPoolProblem, "max_pool2d", rank=2, layout="NCHW", dtype="float32", input_shape=shape,
                 input_name="input", output_name="input", kernel_size=kernel, stride=stride, padding=pads,
                 dilation=dilation, ceil_mode=ceil_mode, index_dtype="int64")


def _avg_pool_window(shape: tuple, kernel, stride, pads, ceil_mode, count_include_pad, divisor_override) -> None:
    """avg_pool3d's window and divisor against an input of ``shape``, checked (as ``_max_pool_window``)."""
    name = "avg_pool3d"
    pool_problem(AvgPoolProblem, name, rank=3, layout="NCDHW", dtype="float32", input_shape=shape, input_name="input",
                 kernel_size=kernel, stride=stride, padding=pads, ceil_mode=ceil_mode,
                 **avg_pool_fields(name, count_include_pad, divisor_override))


def _check_window(input: Tensor, unbatched: bool, window: Callable, arguments: tuple) -> None:
    """``window``'s checks of a pooling call's window against its input (PyTorch's rules), before anything compiles:
    once per shape and arguments (``_checked_once``); not for float64, which PyTorch's own operator runs, nor while
    compiling."""
    if input.dtype != torch.float64 and not torch.compiler.is_compiling():
        shape = (1, *input.shape) if unbatched else tuple(input.shape)
        _checked_once(window, (shape,), arguments)


def _pool(name: str, ready_call: type, input, given: tuple):
    """Pooling function ``name``'s call: its ready call (``ready_call(input, *given)`` made once, kept under its
    input's type, dtype, shape and device and its other arguments' ids: ``_remember``) run on ``input``. Not kept
    while compiling, or where ``input`` is not a tensor (the checks say so)."""
    key = ready = None
    if not torch.compiler.is_compiling() and isinstance(input, Tensor):
        key = (name, type(input), input.dtype, input.shape, input.device, *map(id, given))
        ready = _READY.get(key)
    if ready is None:
        ready = _remember(key, given, ready_call(input, *given))
    return ready(input)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False,
               input_activation=None):
    """``torch.nn.functional.max_pool2d``: forward (with PyTorch's indices) and backward are this library's;
    ``input_activation="relu"`` computes ``max_pool2d(relu(input))``, the ReLU inside both kernels: the forward's
    applies it to each tap as it reads it, the backward's applies its backward from the saved output (the ReLU's
    output at each window's argmax)."""
    return _pool("max_pool2d", _MaxPoolCall, input,
                 (kernel_size, stride, padding, dilation, ceil_mode, return_indices, input_activation))


class _MaxPoolCall:
    """A ``max_pool2d`` call's checked arguments, ready (as ``_ConvCall``)."""

    __slots__ = ("unbatched", "arguments", "return_indices", "relu", "held")

    def __init__(self, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, input_activation):
        name = "max_pool2d"
        self.relu = check_activation(name, input_activation)
        self.unbatched, kernel, stride, pads = _pool_arguments(name, input, 2, kernel_size, stride, padding, ceil_mode)
        dilation = positive_int_tuple(name, "dilation", dilation, 2)
        _check_window(input, self.unbatched, _max_pool_window, (kernel, stride, pads, dilation, ceil_mode))
        self.arguments = (list(kernel), list(stride), list(pads), list(dilation), ceil_mode)
        self.return_indices = return_indices

    def __call__(self, input: Tensor):
        if input.dtype == torch.float64 and _falls_back("max_pool2d", input):
            return F.max_pool2d(torch.relu(input) if self.relu else input, *self.arguments,
                                return_indices=self.return_indices)
        x = input.unsqueeze(0) if self.unbatched else input
        y, indices = kernels.max_pool2d_with_indices(x, *self.arguments, self.relu)
        if self.unbatched:
            y, indices = y.squeeze(0), indices.squeeze(0)
        return (y, indices) if self.return_indices else y


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None,
               input_activation=None):
    """``torch.nn.functional.avg_pool3d``: forward and backward are this library's; ``input_activation="relu"``
    computes ``avg_pool3d(relu(input))``, the ReLU inside both kernels: the forward's applies it to each tap as it
    reads it, the backward's applies its backward from the saved input (<= 0 where the ReLU's output is)."""
    return _pool("avg_pool3d", _AvgPoolCall, input,
                 (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, input_activation))


class _AvgPoolCall:
    """An ``avg_pool3d`` call's checked arguments, ready (as ``_ConvCall``)."""

    __slots__ = ("unbatched", "arguments", "relu", "held")

    def __init__(self, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                 input_activation):
        name = "avg_pool3d"
        self.relu = check_activation(name, input_activation)
        self.unbatched, kernel, stride, pads = _pool_arguments(name, input, 3, kernel_size, stride, padding, ceil_mode)
        check_type(isinstance(count_include_pad, bool),
                   f"{name}: count_include_pad must be a bool, but got {count_include_pad!r}")
        _check_window(input, self.unbatched, _avg_pool_window,
                      (kernel, stride, pads, ceil_mode, count_include_pad, divisor_override))
        self.arguments = (list(kernel), list(stride), list(pads), ceil_mode, count_include_pad, divisor_override)

    def __call__(self, input: Tensor):
        if input.dtype == torch.float64 and _falls_back("avg_pool3d", input):
            return F.avg_pool3d(torch.relu(input) if self.relu else input, *self.arguments)
        x = input.unsqueeze(0) if self.unbatched else input
        y = kernels.avg_pool3d(x, *self.arguments, self.relu)
        return y.squeeze(0) if self.unbatched else y
