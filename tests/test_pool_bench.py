"""build_tools/pool_bench.py checks each pooling call against PyTorch's on the same tensors, then times both sides
and our share of the copy bandwidth (tiny layers here)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from build_tools import pool_bench  # noqa: E402


def test_each_pooling_call_is_checked_against_pytorchs_and_timed():
    copy, rows = pool_bench.rows(max_shape=(2, 3, 8, 8), avg_shape=(1, 2, 4, 8, 8), repeat=2)
    assert copy > 0
    assert [r["layer"] for r in rows] == [
        "max_pool2d forward, ReLU fused", "max_pool2d backward from the indices", "avg_pool3d forward, ReLU fused",
        "avg_pool3d backward, ReLU fused"]
    assert all(r["ok"] for r in rows), [r["layer"] for r in rows if not r["ok"]]
    assert all(r["ours_ms"] > 0 and r["torch_ms"] > 0 and 0 < r["of_copy"] for r in rows)
    # max pooling's forward moves its input (2*3*8*8 floats), output and int64 indices (2*3*4*4 each)
    assert rows[0]["mb"] == pytest.approx((2 * 3 * 64 * 4 + 2 * 3 * 16 * (4 + 8)) / 1e6)


def test_a_call_that_differs_from_pytorchs_is_not_ok():
    case = pool_bench.Case("wrong", lambda: None, lambda: None, lambda: False, 1)
    row = pool_bench.row(case, repeat=1, copy_bytes_per_s=1e9)
    assert not row["ok"] and "DIFFERS" in pool_bench.line(row)
