"""The one place for the element-type policy: what dtypes the operators take, and how they accumulate.

Every operator accumulates in float32 and returns its input dtype (unless an operator documents an
``out_dtype``). bfloat16 travels through ``ml_dtypes``, which the IREE runtime exchanges natively.
Pure: no MLIR is written here; ``ops/render.py``'s ``widen`` and ``narrow`` write the casts to and from
the accumulator.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

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
