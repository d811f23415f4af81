"""What each axis of an operator's arrays is: the known-answer check samples by these declarations alone.

An operator's ``roles(problem)`` names, for every axis of every input and result, the indices it holds, each of
one kind:

- ``batch``, ``group``, ``channel``: pointwise indices. A result position reads the same values of these indices
  in its inputs and nothing else of them: channel c of grad_in reads channel c of the weight, batch index n of
  grad_in reads batch index n of grad_out. Where such an index indexes every result, its values can be sampled
  (a channel the results do not index, such as backward-data's K, is a reduced channel: it is summed over, and
  kept whole; so is backward-weight's batch).
- ``spatial``, ``tap``: window indices, mixed by the windows (``s*o + d*f = i + p``): never sampled.
- ``parameter``: a vector of scalars (an epilogue's alpha and beta).

An axis holds one index, or several fused, outer first (a grouped activation's channel axis is (group, channel):
position g * C + c); an axis of no index is a broadcast axis (extent 1, a D tensor's).
"""

from __future__ import annotations

from dataclasses import dataclass

POINTWISE = ("batch", "group", "channel")
KINDS = (*POINTWISE, "spatial", "tap", "parameter")


@dataclass(frozen=True)
class Index:
    """One index of the operator's iteration space: ``name`` unique within a problem, its ``kind`` and extent."""

    name: str
    kind: str
    extent: int

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"roles: index {self.name} has kind {self.kind!r}, not one of {', '.join(KINDS)}")


Axis = tuple  # the Index values an axis holds, outer first; () for a broadcast axis


@dataclass(frozen=True)
class Roles:
    """Each input's and each result's axes (tuples of ``Axis``), in the arrays' own order."""

    inputs: tuple
    results: tuple


def activation(batch: Index, channel: Axis, spatial: tuple, channels_last: bool) -> tuple:
    """An activation's axes in its layout: (N, *spatial, channel) or (N, channel, *spatial)."""
    spatial_axes = tuple((s,) for s in spatial)
    return ((batch,), *spatial_axes, channel) if channels_last else ((batch,), channel, *spatial_axes)


def spatial(prefix: str, extents: tuple, kind: str = "spatial") -> tuple:
    """One index a spatial axis: ``prefix0``, ``prefix1``, ..."""
    return tuple(Index(f"{prefix}{axis}", kind, extent) for axis, extent in enumerate(extents))


def broadcast(against: tuple, shape: tuple) -> tuple:
    """The axes of an array broadcast against an array of axes ``against`` (NumPy's rule, aligned right): an axis of
    extent 1 is a broadcast axis, any other holds the indices of the axis it meets."""
    met = against[len(against) - len(shape):]
    return tuple(() if extent == 1 else axis for axis, extent in zip(met, shape))


def extent(axis: Axis) -> int:
    """How many positions ``axis`` holds: the product of its indices' extents (1 for a broadcast axis)."""
    size = 1
    for index in axis:
        size *= index.extent
    return size


# --- The two families' arrays -------------------------------------------------------------------------------


def convolution(problem) -> tuple:
    """A convolution problem's (input, output, weight) axes: x or grad_in (N, (G, C), *I), y or grad_out
    (N, (G, K), *O), and the weight ((G, K), *F, C) channels-last or ((G, K), C, *F) channels-first."""
    n = Index("n", "batch", problem.batch)
    g = Index("g", "group", problem.groups)
    c = Index("c", "channel", problem.in_channels)
    k = Index("k", "channel", problem.out_channels)
    cl = problem.channels_last
    taps = tuple((f,) for f in spatial("f", problem.filter_spatial, "tap"))
    weight = ((g, k), *taps, (c,)) if cl else ((g, k), (c,), *taps)
    return (activation(n, (g, c), spatial("i", problem.input_spatial), cl),
            activation(n, (g, k), spatial("o", problem.output_spatial), cl), weight)


def pooling(problem) -> tuple:
    """A pooling problem's (input, output) axes: (N, C, *I) and (N, C, *O) in its layout."""
    n, c, cl = Index("n", "batch", problem.batch), Index("c", "channel", problem.channels), problem.channels_last
    return (activation(n, (c,), spatial("i", problem.input_spatial), cl),
            activation(n, (c,), spatial("o", problem.output_spatial), cl))
