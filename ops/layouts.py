"""Activation layouts: the table of layout names, activation shapes split and joined in a layout, and the one
home of layout conversion (``in_layout``) between PyTorch's channels-first arrays and channels-last ones."""

from __future__ import annotations

import numpy as np

# layout -> (spatial rank, channels last?)
LAYOUTS = {
    "NWC": (1, True),
    "NHWC": (2, True),
    "NDHWC": (3, True),
    "NCW": (1, False),
    "NCHW": (2, False),
    "NCDHW": (3, False),
}


def layouts_of_rank(rank: int) -> list[str]:
    """The layout names for ``rank`` spatial dims, channels-last first."""
    return [name for name, (r, _) in LAYOUTS.items() if r == rank]


def split_activation(shape: tuple[int, ...], channels_last: bool) -> tuple[int, tuple[int, ...], int]:
    """(batch, spatial, channels) of an activation-shaped tuple in the given layout."""
    if channels_last:
        return shape[0], shape[1:-1], shape[-1]
    return shape[0], shape[2:], shape[1]


def join_activation(batch: int, spatial: tuple[int, ...], channels: int, channels_last: bool) -> tuple[int, ...]:
    """An activation's shape from its sizes: the inverse of ``split_activation``."""
    return (batch, *spatial, channels) if channels_last else (batch, channels, *spatial)


def activation_from_params(batch: int, spatial, channels: int, layout) -> tuple[int, ...]:
    """An activation's shape from its sizes, in ``layout`` (an unknown layout is reported by the problem's checks)."""
    return join_activation(batch, tuple(spatial), channels, LAYOUTS.get(layout, (0, True))[1])


def channels_last(array):
    """(N, C, *spatial) -> (N, *spatial, C); also (K, C, *filter) -> (K, *filter, C) for weights."""
    return np.moveaxis(np.asarray(array), 1, -1)


def channels_first(array):
    """(N, *spatial, C) -> (N, C, *spatial); the inverse of channels_last."""
    return np.moveaxis(np.asarray(array), -1, 1)


def in_layout(channels_last_layout: bool, function, *arrays):
    """Apply a channels-last ``function`` to channels-first ``arrays`` too: convert in, call, convert back (each
    result, when it returns a tuple). The one home of layout conversion."""
    if channels_last_layout:
        return function(*arrays)
    result = function(*(channels_last(a) for a in arrays))
    return tuple(channels_first(r) for r in result) if isinstance(result, tuple) else channels_first(result)
