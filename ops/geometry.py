"""Shape and padding algebra of strided, dilated, padded windows: small pure functions, no IREE.

Notation along one spatial axis (the forward convolution or pooling window):

    s*o + d*f = i + p_lo        (s stride, d dilation, p_lo low padding)

``o`` is an output position, ``f`` a filter tap, ``i`` an input position. Every backward operator in
this package is this identity read in another direction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


def ceil_div(a: int, b: int) -> int:
    """Ceiling of a / b for b > 0, for negative a too."""
    return -((-a) // b)


def conv_output_size(in_size: int, window: int, stride: int, dilation: int, pad_lo: int, pad_hi: int) -> int:
    """Forward output length: floor((in + p_lo + p_hi - d*(window-1) - 1) / s) + 1 (may be <= 0)."""
    span = dilation * (window - 1) + 1
    return (in_size + pad_lo + pad_hi - span) // stride + 1


@dataclass(frozen=True)
class PhaseAxis:
    """One spatial axis of one stride phase of a backward-data convolution.

    The phase holds the input positions ``i = s*m + residue - p_lo`` (``m = first_row .. first_row+rows-1``)
    and the filter taps ``f = first_tap + tap_step*t`` (``t = 0 .. taps-1``). On those, the identity becomes

        o = m - tap_shift - sub_dilation*t,   with d*first_tap = residue + s*tap_shift

    so the phase is a stride-1 convolution with dilation ``sub_dilation`` of the output gradient,
    padded by ``grad_out_pad``, with the taps flipped (``u = taps-1-t``): no multiply-add touches
    an inserted zero.
    """

    first_tap: int
    tap_step: int
    taps: int
    sub_dilation: int
    residue: int
    tap_shift: int
    first_row: int
    rows: int
    grad_in_offset: int
    grad_out_pad: tuple[int, int]  # (low, high); negative means "crop that many"
    zero_taps: int = 0  # taps appended at u = taps.. with a zero weight (see with_zero_taps)
    zero_pad: int = 0  # zeros after the cropped and padded window, read only by the zero taps

    @property
    def flipped_first_tap(self) -> int:
        """Filter tap read at u = 0 of the flipped sub-filter: first_tap + tap_step*(taps-1)."""
        return self.first_tap + self.tap_step * (self.taps - 1)

    @property
    def grad_out_crop(self) -> tuple[int, int]:
        """grad_out elements cut off (low, high) before the phase's window: the negative parts of grad_out_pad."""
        return max(0, -self.grad_out_pad[0]), max(0, -self.grad_out_pad[1])

    @property
    def window_pad(self) -> tuple[int, int]:
        """Zeros around the cropped grad_out (low, high): grad_out_pad's positive parts, and the zero taps' zeros."""
        return max(0, self.grad_out_pad[0]), max(0, self.grad_out_pad[1]) + self.zero_pad

    @property
    def filter_taps(self) -> int:
        """The sub-filter's length: the real taps and the zero ones."""
        return self.taps + self.zero_taps

    def with_rows(self, rows: int) -> "PhaseAxis":
        """This phase computing ``rows`` rows (at least its own): the rows past its last position of grad_in read
        more of grad_out, or zeros past its end, and are never stored (the interleaved store, ``stride_phases``)."""
        if rows < self.rows or self.zero_taps:
            raise ValueError(f"a phase grows to more rows before any zero tap, not {self.rows} -> {rows}")
        return replace(self, rows=rows, grad_out_pad=(self.grad_out_pad[0], self.grad_out_pad[1] + rows - self.rows))

    def with_zero_taps(self, count: int) -> "PhaseAxis":
        """This one-tap phase with ``count`` zero-weight taps after its real one (u = 1, ...).

        Their multiply-adds are wasted, on purpose: IREE's CPU backend folds a one-tap filter axis away and
        then compiles the convolution as a generic contraction, 20-30x slower than a convolution with two taps.
        A zero tap must multiply a zero, never a grad_out element (NaN x 0 = NaN): with one real tap the
        dilation is free, so it becomes ``rows``, and the window grows by ``rows`` zeros per zero tap on the
        high side. Tap u then reads window rows [u*rows, (u+1)*rows): the real rows for u = 0, zeros after.
        """
        if self.taps != 1:
            raise ValueError(f"zero taps go on one-tap phase axes only, not on one with {self.taps} taps")
        total = self.zero_taps + count
        return replace(self, zero_taps=total, sub_dilation=self.rows, zero_pad=self.rows * total)


def bwd_data_phases(in_size: int, out_size: int, window: int, stride: int, dilation: int, pad_lo: int) -> list[PhaseAxis]:
    """The stride phases of one axis that receive at least one tap (CK's YTilde decomposition).

    With g = gcd(s, d) there are s/g tap classes ``f = first_tap mod (s/g)``; each class reaches
    exactly the input positions with ``(i + p_lo) mod s == (d*first_tap) mod s``. Positions in no
    class, and classes with no taps or no rows, stay zero.
    """
    g = math.gcd(stride, dilation)
    tap_step = stride // g
    sub_dilation = dilation // g
    phases = []
    for first_tap in range(min(tap_step, window)):
        taps = ceil_div(window - first_tap, tap_step)
        tap_shift, residue = divmod(dilation * first_tap, stride)
        first_row = ceil_div(pad_lo - residue, stride)
        last_row = (in_size - 1 + pad_lo - residue) // stride
        rows = last_row - first_row + 1
        if rows <= 0:
            continue
        # grad_out index read at (m, u): o = m - tap_shift - sub_dilation*(taps-1-u); padded index j = (m - first_row) + sub_dilation*u.
        pad_low = tap_shift + sub_dilation * (taps - 1) - first_row
        padded_len = rows + sub_dilation * (taps - 1)
        pad_high = padded_len - pad_low - out_size
        if padded_len - max(0, pad_low) - max(0, pad_high) <= 0:
            continue  # every tap of this phase lands in padding: the phase contributes nothing
        phases.append(
            PhaseAxis(
                first_tap=first_tap,
                tap_step=tap_step,
                taps=taps,
                sub_dilation=sub_dilation,
                residue=residue,
                tap_shift=tap_shift,
                first_row=first_row,
                rows=rows,
                grad_in_offset=stride * first_row + residue - pad_lo,
                grad_out_pad=(pad_low, pad_high),
            )
        )
    return phases


@dataclass(frozen=True)
class MergedAxis:
    """One spatial axis of the merged-phase form of a depthwise backward-data (``data_merged``, dilation 1).

    grad_in's position i = s*m + r (row m < ``rows``, residue r < s) sums grad_out[m + shift + u] times tap
    ``first_tap + r - s*u`` of the filter over u < ``taps``, a tap outside [0, window) counting zero; grad_out is
    read zero-padded by ``pad`` (low, high), at row m + shift + u + pad[0].
    """

    rows: int
    taps: int
    shift: int
    first_tap: int
    pad: tuple[int, int]


def merged_phase_axis(in_size: int, out_size: int, window: int, stride: int, pad_lo: int) -> MergedAxis:
    """The merged-phase form's axis: from s*o + f = s*m + r + p_lo, o - m = (r + p_lo - f) / s where s divides it;
    ``shift`` is its least value over every residue and tap, ``taps`` its span."""
    reach = [(r + pad_lo - f) // stride for r in range(stride) for f in range(window) if (r + pad_lo - f) % stride == 0]
    shift, taps, rows = min(reach), max(reach) - min(reach) + 1, in_size // stride
    last_read = rows - 1 + shift + taps - 1
    return MergedAxis(rows, taps, shift, pad_lo - stride * shift, (max(0, -shift), max(0, last_read - (out_size - 1))))


def window_reads(in_size: int, out_size: int, window: int, stride: int, dilation: int, pad_lo: int) -> tuple[int, int, int]:
    """What a convolution's windows read along one axis: (zeros before x, elements of x from its start, zeros after).

    Window o reads padded positions s*o + d*f (f < window); together the windows span exactly
    ``s*(out_size-1) + d*(window-1) + 1`` positions from the padded start: the first ``min(p_lo, span)`` are the
    low padding, then x's first elements (all of x, or fewer when the last window ends inside x), then as much
    high padding as the last window reaches. An operand of exactly this size keeps every index map's reads and
    sizes equal, also after IREE folds unit dims away.
    """
    span = stride * (out_size - 1) + dilation * (window - 1) + 1
    before = min(pad_lo, span)
    taken = max(0, min(in_size, span - pad_lo))
    return before, taken, span - before - taken


# --- Gathering taps (the CPU's im2col forms) -----------------------------------------------------------

# A chunk of gathered taps may take at most this many times the bytes of the module's inputs.
CPU_GATHER_BUDGET = 4


def gather_leading_axes(taps: list[int], bytes_per_tap: int, input_bytes: int) -> int:
    """How many leading tap axes each chunk of gathered taps fixes (0: every tap in one chunk): the fewest that keep
    a chunk, ``bytes_per_tap`` times its taps, within CPU_GATHER_BUDGET times ``input_bytes``."""
    return next((lead for lead in range(len(taps) + 1)
                 if bytes_per_tap * math.prod(taps[lead:]) <= CPU_GATHER_BUDGET * input_bytes), len(taps))


# --- Pooling windows -----------------------------------------------------------------------------------
#
# A pooling window is a filter without weights: window o covers the taps i = s*o + d*f - p_lo, f < window.
# Backward gathers read the identity from the input side: the windows holding position i are those with
# s*o <= i + p_lo <= s*o + span - 1, where span = d*(window-1) + 1 (and d | i + p_lo - s*o), i.e.
#     o = (i + p_lo) // s - j,   j = 0 .. pool_candidates(...) - 1.


def pool_output_size(in_size: int, window: int, stride: int, dilation: int, pad_lo: int, pad_hi: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape_pad_lr: floor (or with ceil_mode, ceiling) windows, may be <= 0.

    With ceil_mode the size rounds up (an extra, partly outside window), but the last window must
    start inside the input or the left padding: ``(size - 1) * s < in + p_lo``.
    """
    size = conv_output_size(in_size, window, stride, dilation, pad_lo, pad_hi + (stride - 1 if ceil_mode else 0))
    if ceil_mode and (size - 1) * stride >= in_size + pad_lo:
        size -= 1
    return size


def window_taps_in(start: int, window: int, dilation: int, lo: int, hi: int) -> int:
    """How many taps ``start + d*f`` (f < window) lie in [lo, hi)."""
    first = max(0, ceil_div(lo - start, dilation))
    end = min(window, ceil_div(hi - start, dilation))
    return max(0, end - first)


def pool_tap_counts(in_size: int, out_size: int, window: int, stride: int, dilation: int, pad_lo: int, pad_hi: int,
                    include_pad: bool) -> tuple[int, ...]:
    """Per window o: its taps inside the padded input [-p_lo, in + p_hi) (include_pad) or inside the input.

    These are PyTorch's avg-pool divisors along one axis: with dilation 1, ``min(start + k, in + p_hi) - start``
    (count_include_pad) and ``min(start + k, in) - max(start, 0)``; a ceil_mode window that runs past the
    padded end is clipped there. With dilation (CK's extension) the taps are counted the same way, so the
    count_include_pad divisor is the full window ``k`` except for those clipped last windows.
    """
    lo, hi = (-pad_lo, in_size + pad_hi) if include_pad else (0, in_size)
    return tuple(window_taps_in(stride * o - pad_lo, window, dilation, lo, hi) for o in range(out_size))


def pool_candidates(window: int, stride: int, dilation: int) -> int:
    """The most windows one input position can lie in: ceil(span / s); 1 means windows never overlap."""
    return ceil_div(dilation * (window - 1) + 1, stride)
