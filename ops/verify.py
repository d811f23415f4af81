"""Checking a kernel's result against its float64 reference, within its operator's tolerance (``ops/registry.py``).

Error is normwise: max |result - reference| / max |reference|, the reference computed in float64 from
the same (already rounded) inputs the kernel saw. float16 and bfloat16 results carry the final rounding
of an f32 accumulator (2^-11 and 2^-8 relative), plus f32 summation order.
"""

from __future__ import annotations

import numpy as np



def relative_error(result, reference) -> float:
    result, reference = np.asarray(result), np.asarray(reference)
    if result.shape != reference.shape:
        raise ValueError(f"result has shape {result.shape}, but the reference has shape {reference.shape}")
    # in float64, a block of leading rows at a time (a large result would otherwise need several float64 copies)
    blocks = [(result, reference)]
    if result.ndim and result.size:
        rows = max(1, (1 << 22) // result[:1].size)
        blocks = [(result[s:s + rows], reference[s:s + rows]) for s in range(0, len(result), rows)]
    scales, errors = [0.0], [0.0]
    for got, expected in blocks:
        got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
        if not np.all(np.isfinite(got)):
            return float("inf")
        if expected.size:
            scales.append(np.max(np.abs(expected)))
            errors.append(np.max(np.abs(got - expected)))
    scale = np.max(scales)  # NaN in the reference stays NaN, as in one pass
    if scale == 0.0:
        raise ValueError("the reference is all zeros: such a check proves nothing; draw other inputs")
    return float(np.max(errors) / scale)


def tolerance(op: str, dtype: str) -> float:
    """The largest normwise relative error allowed of ``op``'s results in ``dtype`` (its registry entry's)."""
    from .registry import entry

    tolerances = entry(op).tolerances
    if tolerances is None:
        raise ValueError(f"{op}: its results are exact; compare them with the reference, not within a tolerance")
    return tolerances[dtype]
