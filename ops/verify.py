"""Checking a kernel's result against its float64 reference: the one tolerance table.

Error is normwise: max |result - reference| / max |reference|, the reference computed in float64 from
the same (already rounded) inputs the kernel saw. float16 and bfloat16 results carry the final rounding
of an f32 accumulator (2^-11 and 2^-8 relative), plus f32 summation order.
"""

from __future__ import annotations

import numpy as np

# (operator, dtype) -> largest allowed normwise relative error
TOLERANCES = {
    (op, dtype): tol
    for op in ("conv_bwd_data", "grouped_conv_bwd_data", "grouped_conv_bwd_weight", "maxpool2d_bwd", "avgpool3d_bwd")
    for dtype, tol in (("float32", 1e-5), ("float16", 1e-2), ("bfloat16", 2e-2))
}


def relative_error(result, reference) -> float:
    result = np.asarray(result, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if result.shape != reference.shape:
        raise ValueError(f"result has shape {result.shape}, but the reference has shape {reference.shape}")
    if not np.all(np.isfinite(result)):
        return float("inf")
    scale = np.max(np.abs(reference)) if reference.size else 0.0
    if scale == 0.0:
        raise ValueError("the reference is all zeros: such a check proves nothing; draw other inputs")
    return float(np.max(np.abs(result - reference)) / scale)


def tolerance(op: str, dtype: str) -> float:
    return TOLERANCES[(op, dtype)]
