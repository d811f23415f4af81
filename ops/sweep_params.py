"""Random problem parameters for the compile sweep (``ops.catalog.random_problems``): small shapes that reach
every layout, dtype, stride, dilation, padding and group count the operators take. Each operator's
``random_params(rng, rank)`` draws its own from these."""

from __future__ import annotations

LAYOUTS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}
DTYPES = ("float16", "bfloat16", "float32")


def conv_params(rng, rank: int) -> dict:
    """A convolution's parameters: filter, stride, dilation, padding pairs, spatial size, groups, channels."""
    filters = tuple(int(v) for v in rng.integers(1, 4, rank))
    stride = tuple(int(v) for v in rng.integers(1, 4, rank))
    dilation = tuple(int(v) for v in rng.choice([1, 1, 2, 3], rank))
    padding = tuple((int(lo), int(hi)) for lo, hi in rng.integers(0, 3, (rank, 2)))
    spatial = tuple(int(v) for v in rng.integers(3, 12 if rank < 3 else 7, rank))
    groups = int(rng.choice([1, 1, 2, 3, 4]))
    return dict(batch=int(rng.integers(1, 4)), in_channels=int(rng.integers(1, 6)), out_channels=int(rng.integers(1, 6)),
                input_spatial=spatial, filter_spatial=filters, stride=stride, padding=padding, dilation=dilation,
                layout=str(rng.choice(LAYOUTS[rank])), dtype=str(rng.choice(DTYPES)), groups=groups)


def pool_params(rng, rank: int) -> dict:
    """A pooling's parameters: window, stride, padding (at most half the window), dilation, ceil_mode."""
    kernel = tuple(int(v) for v in rng.integers(1, 4, rank))
    return dict(batch=int(rng.integers(1, 3)), channels=int(rng.integers(1, 6)),
                input_spatial=tuple(int(v) for v in rng.integers(4, 12 if rank < 3 else 8, rank)), kernel_size=kernel,
                stride=tuple(int(v) for v in rng.integers(1, 4, rank)),
                padding=tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel),
                dilation=tuple(int(v) for v in rng.choice([1, 1, 2], rank)), ceil_mode=bool(rng.integers(2)),
                layout=str(rng.choice(LAYOUTS[rank])), dtype=str(rng.choice(DTYPES)))
