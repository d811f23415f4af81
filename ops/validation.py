"""Argument checks and normalization shared by every operator.

Each public entry point normalizes its arguments here exactly once; internal code only ever sees the
normalized tuples. Every failure is a ``ValueError`` (or ``TypeError`` for a wrong kind of object)
whose message names the operator, the parameter, what was expected and what came.
"""

from __future__ import annotations

import numbers
import os
import sys
import threading
import warnings
from typing import Sequence

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def check(condition: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``condition`` holds."""
    if not condition:
        raise ValueError(message)


def check_type(condition: bool, message: str) -> None:
    """Raise ``TypeError(message)`` unless ``condition`` holds."""
    if not condition:
        raise TypeError(message)


def _library_frame(filename: str) -> bool:
    """Whether a frame of ``filename`` is this package's or, once it is imported, PyTorch's (whose autograd engine
    and ``nn.Module.__call__`` stand between a user's line and ``ops.torch``'s code)."""
    torch = sys.modules.get("torch")
    torch_dir = os.path.dirname(getattr(torch, "__file__", None) or "") + os.sep if torch is not None else None
    return filename.startswith(_PACKAGE) or (torch_dir is not None and filename.startswith(torch_dir))


def warn_caller(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the user's own line: the first frame outside this package
    and PyTorch (a backward's Python frames lead back through autograd's engine to the user's ``backward()``).
    Where no such frame is on the stack (a thread of the library's own), to the outermost one."""
    frame, level = sys._getframe(1), 1  # the frame that called this: warnings.warn's stacklevel 1 from there
    while frame.f_back is not None and _library_frame(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)  # + 1: this function's own frame


_said: set[str] = set()
_said_lock = threading.Lock()


def say_once(message: str) -> None:
    """``message`` as a RuntimeWarning at the user's line that led here (``warn_caller``), once a process."""
    with _said_lock:
        if message in _said:
            return
        _said.add(message)
    warn_caller(message)


ACTIVATIONS = (None, "relu")  # what an input_activation may be: the activation before a layer, fused into it


def check_activation(op: str, input_activation) -> bool:
    """Whether ``input_activation`` (checked: one of ``ACTIVATIONS``) is a ReLU."""
    check(input_activation in ACTIVATIONS, f"{op}: input_activation must be None or 'relu', but got {input_activation!r}")
    return input_activation == "relu"


# The largest size, stride, dilation or padding accepted: products of two stay inside the int64 index arithmetic
# of the compiled modules (a larger value would reach iree-compile and fail there).
MAX_EXTENT = 2**31 - 1


def _check_extent(op: str, name: str, values: tuple) -> None:
    check(
        all(abs(v) <= MAX_EXTENT for v in values),
        f"{op}: {name} entries must be at most {MAX_EXTENT}, but got {values!r}",
    )


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_per_dim(op: str, name: str, value, rank: int, expected: str) -> None:
    """``value`` is a sequence with one entry per spatial dim (``expected`` says what it may be instead)."""
    check_type(
        isinstance(value, Sequence) and not isinstance(value, (str, bytes)),
        f"{op}: {name} must be {expected}, but got {value!r}",
    )
    check(
        len(value) == rank,
        f"{op}: {name} must have one entry per spatial dimension ({rank}), but got {len(value)}: {tuple(value)!r}",
    )


def int_tuple(op: str, name: str, value, rank: int) -> tuple[int, ...]:
    """An int, or a sequence of ``rank`` ints, as a tuple of ``rank`` ints."""
    if _is_int(value):
        result = (int(value),) * rank
    else:
        _check_per_dim(op, name, value, rank, f"an int or a sequence of {rank} ints")
        for item in value:
            check_type(_is_int(item), f"{op}: {name} entries must be ints, but got {item!r} in {tuple(value)!r}")
        result = tuple(int(item) for item in value)
    _check_extent(op, name, result)
    return result


def positive_int_tuple(op: str, name: str, value, rank: int) -> tuple[int, ...]:
    result = int_tuple(op, name, value, rank)
    check(all(v >= 1 for v in result), f"{op}: {name} must be positive, but got {result!r}")
    return result


def padding_pairs(op: str, value, rank: int) -> tuple[tuple[int, int], ...]:
    """``padding`` as one ``(low, high)`` pair per spatial dim.

    Accepts an int (same on both sides of every dim), one int per dim (symmetric), or one
    ``(low, high)`` pair per dim (CK's left/right pads).
    """
    if _is_int(value):
        pairs = ((int(value), int(value)),) * rank
    else:
        _check_per_dim(op, "padding", value, rank, f"an int, {rank} ints or {rank} (low, high) pairs")
        pairs = []
        for item in value:
            if _is_int(item):
                pairs.append((int(item), int(item)))
                continue
            check_type(
                isinstance(item, Sequence) and len(item) == 2 and all(_is_int(v) for v in item),
                f"{op}: each padding entry must be an int or a (low, high) pair of ints, but got {item!r}",
            )
            pairs.append((int(item[0]), int(item[1])))
        pairs = tuple(pairs)
    check(all(lo >= 0 and hi >= 0 for lo, hi in pairs), f"{op}: padding must be non-negative, but got {pairs!r}")
    _check_extent(op, "padding", tuple(v for pair in pairs for v in pair))
    return pairs


def activation_shape(op: str, name: str, value) -> tuple[int, ...]:
    """An (N, ...) shape: positive sizes, except the batch N, which may be 0 (an empty batch, as in PyTorch)."""
    check_type(
        isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(_is_int(v) for v in value),
        f"{op}: {name} must be a sequence of ints, but got {value!r}",
    )
    result = tuple(int(v) for v in value)
    check(
        all(v >= 1 for v in result[1:]) and (not result or result[0] >= 0),
        f"{op}: {name} must have positive sizes (a batch of 0 aside), but got {result!r}",
    )
    _check_extent(op, name, result)
    return result
