"""The shape and stride-phase algebra, checked against brute-force enumeration (no IREE)."""

from __future__ import annotations

import itertools

import pytest

from ops import geometry


def test_ceil_div_handles_negative_numerators():
    assert [geometry.ceil_div(a, 3) for a in (-4, -3, -1, 0, 1, 3, 4)] == [-1, -1, 0, 0, 1, 1, 2]


@pytest.mark.parametrize(
    "in_size, window, stride, dilation, lo, hi, expected",
    [(71, 3, 2, 1, 1, 1, 36), (36, 3, 1, 1, 1, 1, 36), (10, 3, 3, 2, 0, 0, 2), (5, 3, 1, 3, 0, 0, -1), (7, 1, 3, 1, 0, 0, 3)],
)
def test_conv_output_size(in_size, window, stride, dilation, lo, hi, expected):
    assert geometry.conv_output_size(in_size, window, stride, dilation, lo, hi) == expected


def _identity_triples(in_size, out_size, window, stride, dilation, pad_lo):
    """Every (i, f, o) with s*o + d*f = i + p_lo inside the input: the definition."""
    return {
        (stride * o + dilation * f - pad_lo, f, o)
        for o in range(out_size)
        for f in range(window)
        if 0 <= stride * o + dilation * f - pad_lo < in_size
    }


def _phase_triples(in_size, out_size, window, stride, dilation, pad_lo):
    """The (i, f, o) a phase decomposition computes, with o read from the padded grad_out window."""
    triples = []
    for phase in geometry.bwd_data_phases(in_size, out_size, window, stride, dilation, pad_lo):
        for m in range(phase.rows):
            for u in range(phase.taps):
                o = m + phase.sub_dilation * u - phase.grad_out_pad[0]  # index into grad_out
                f = phase.flipped_first_tap - phase.tap_step * u
                if 0 <= o < out_size:
                    triples.append((phase.grad_in_offset + stride * m, f, o))
    return triples


@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 1), (3, 1), (2, 2), (2, 3), (4, 2), (3, 2), (1, 3)])
def test_phases_compute_each_identity_term_exactly_once(stride, dilation):
    for in_size, window, pad_lo, pad_hi in itertools.product(range(1, 12), range(1, 6), range(0, 4), range(0, 3)):
        out_size = geometry.conv_output_size(in_size, window, stride, dilation, pad_lo, pad_hi)
        if out_size < 1:
            continue
        computed = _phase_triples(in_size, out_size, window, stride, dilation, pad_lo)
        assert len(computed) == len(set(computed)), "a term is computed twice"
        assert set(computed) == _identity_triples(in_size, out_size, window, stride, dilation, pad_lo)


def test_phases_spend_no_work_on_inserted_zeros():
    # 3x3 stride 2: taps split 2 + 1 per axis, never padded up to a common size
    phases = geometry.bwd_data_phases(71, 36, 3, 2, 1, 1)
    assert [(p.first_tap, p.taps, p.rows) for p in phases] == [(0, 2, 35), (1, 1, 36)]
    assert sum(p.taps * p.rows for p in phases) == 2 * 35 + 36


def test_phase_rows_stay_inside_the_input():
    for stride, dilation, in_size, window, pad_lo in itertools.product((1, 2, 3), (1, 2), range(1, 10), range(1, 5), range(0, 3)):
        for p in geometry.bwd_data_phases(in_size, 40, window, stride, dilation, pad_lo):
            assert 0 <= p.grad_in_offset < in_size
            assert p.grad_in_offset + stride * (p.rows - 1) < in_size
            assert p.flipped_first_tap < window


def test_zero_taps_read_only_zeros():
    """A zero tap's weight is 0, so it must multiply the window's zero padding, never a grad_out element
    (NaN x 0 = NaN); the real tap keeps its terms."""
    for stride, dilation in [(2, 1), (3, 1), (2, 3), (3, 2)]:
        for in_size, window, pad_lo, pad_hi in itertools.product(range(1, 12), range(1, 5), range(0, 3), range(0, 3)):
            out_size = geometry.conv_output_size(in_size, window, stride, dilation, pad_lo, pad_hi)
            if out_size < 1:
                continue
            for phase in geometry.bwd_data_phases(in_size, out_size, window, stride, dilation, pad_lo):
                if phase.taps != 1:
                    with pytest.raises(ValueError, match="one-tap"):
                        phase.with_zero_taps(1)
                    continue
                padded = phase.with_zero_taps(1)
                assert padded.filter_taps == 2 and padded.grad_out_pad == phase.grad_out_pad
                # the window: grad_out cropped/padded by grad_out_pad (``rows`` long for one tap), then zero_pad zeros
                window_length = phase.rows + padded.zero_pad
                for m in range(phase.rows):
                    assert m + padded.sub_dilation * 0 < phase.rows  # the real tap reads the real window
                    read = m + padded.sub_dilation * 1
                    assert phase.rows <= read < window_length, (stride, dilation, in_size, window, pad_lo, phase)
