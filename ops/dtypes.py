"""The one place for the element-type policy: what dtypes the operators take, and how they accumulate.

Every operator accumulates in float32 and returns its input dtype (unless an operator documents an
``out_dtype``). bfloat16 travels through ``ml_dtypes``, which the IREE runtime exchanges natively.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from . import render

# numpy dtype name -> MLIR element type
MLIR_ELEMENT_TYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
ACCUMULATOR = "f32"
SUPPORTED = tuple(MLIR_ELEMENT_TYPES)


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def random_normal(rng, shape, name: str) -> np.ndarray:
    """Standard normal values of dtype ``name`` (drawn in float32, then rounded)."""
    return rng.standard_normal(shape, dtype="float32").astype(numpy_dtype(name))


def dtype_name(dtype) -> str:
    """Canonical name ('float16', 'bfloat16', ...) of anything numpy or ml_dtypes calls a dtype."""
    return np.dtype(dtype).name


def mlir_element_type(name: str) -> str:
    return MLIR_ELEMENT_TYPES[name]


def widen(value: str, element: str, result: str) -> tuple[str, str]:
    """(line, value): ``value`` of MLIR type ``element`` in the float32 accumulator as ``result`` (no line for f32)."""
    if element == ACCUMULATOR:
        return "", value
    return render.render("common.widen", result=result, value=value, element=element), result


def narrow(value: str, element: str, result: str) -> tuple[str, str]:
    """(line, value): the float32 accumulator ``value`` as the stored element type ``element`` (no line for f32)."""
    if element == ACCUMULATOR:
        return "", value
    return render.render("common.narrow", result=result, value=value, element=element), result
