"""build_tools/form_bench.py loads each CPU form of a convolution backward through the executor, checks it against
the float64 reference and times the forms in turns (a small grouped weight gradient here, through IREE's runtime
and through the CPU launcher on PyTorch's threads)."""

from __future__ import annotations

import numpy as np
import pytest

from build_tools import form_bench
from ops import catalog, executor, runtime, verify

SMALL = catalog.problem("grouped_conv_bwd_weight", "ck_default", batch=2, groups=2, in_channels=4, out_channels=4,
                        input_spatial=(8, 8), filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32")


def test_each_contractions_first_form_is_offered_once_with_its_flags():
    forms = form_bench.forms_of(SMALL)
    assert len(forms) >= 2 and all(form.contraction == c for c, (form, _) in forms.items())
    for contraction, (_, extra) in forms.items():
        assert (form_bench.PROPAGATION_OFF in extra) <= (contraction == "per_image_nn")


@pytest.mark.parametrize("launcher", ["runtime", "torch"])
def test_every_form_compared_is_right_and_timed(launcher):
    if launcher == "torch":
        pytest.importorskip("torch")
    compared = tuple(list(form_bench.forms_of(SMALL))[:2])
    row = form_bench.compare(SMALL, form_bench.host_for(launcher), rounds=1, contractions=compared)
    assert set(row["ms"]) == set(compared) and not row["refused"]
    assert all(ms > 0 for ms in row["ms"].values()) and row["best"] in compared
    assert row["error"] <= verify.tolerance(SMALL.op, SMALL.dtype)
    assert f"shipped {row['shipped']}" in form_bench.line(row)


def test_the_check_against_the_reference_finds_a_wrong_result():
    host = runtime.IreeHost("local-task")
    form, extra = form_bench.forms_of(SMALL)["generic"]
    right = executor.ready(SMALL, host, extra, form)

    class Halved:  # the right module on x halved: a weight gradient of half the size
        problem = SMALL

        def __init__(self):
            self.host = host

        def __call__(self, inputs, outputs):
            right([host.put(inputs[0].to_host() / 2, False), *inputs[1:]], outputs)

    tolerance = verify.tolerance(SMALL.op, SMALL.dtype)
    assert form_bench.error_of(right, SMALL, np.random.default_rng(0)) <= tolerance
    assert form_bench.error_of(Halved(), SMALL, np.random.default_rng(0)) > tolerance
