"""Every argument of every public function is checked before anything compiles, at the edges too: integers too
large for the modules' index arithmetic, arrays in a foreign byte order, device names IREE cannot open."""

from __future__ import annotations

import numpy as np
import pytest

import ops

pytestmark = pytest.mark.usefixtures("nothing_compiles")

HUGE = 2**63
F32 = np.float32


def _calls():
    """(operator, baseline keyword arguments, the function) for each public operator; each baseline is valid."""
    nhwc = np.ones((2, 4, 4, 8), F32)
    return {
        "conv_bwd_data": (ops.conv_bwd_data, dict(
            grad_out=nhwc, weight=np.ones((8, 3, 3, 3), F32), input_shape=(2, 7, 7, 3), stride=2, padding=1, dilation=1)),
        "grouped_conv_bwd_data": (ops.grouped_conv_bwd_data, dict(
            grad_out=nhwc, weight=np.ones((8, 3, 3, 3), F32), ds=(np.ones(6, F32),), groups=2, input_shape=(2, 7, 7, 6),
            stride=2, padding=1, dilation=1, epilogue="add")),
        "grouped_conv_bwd_weight": (ops.grouped_conv_bwd_weight, dict(
            x=np.ones((2, 7, 7, 6), F32), grad_out=nhwc, groups=2, filter_spatial=3, stride=2, padding=1, dilation=1)),
        "maxpool2d_fwd": (ops.maxpool2d_fwd, dict(x=np.ones((2, 8, 8, 3), F32), kernel_size=2, stride=2, padding=0, dilation=1)),
        "maxpool2d_bwd": (ops.maxpool2d_bwd, dict(
            grad_out=np.ones((2, 4, 4, 3), F32), input_shape=(2, 8, 8, 3), kernel_size=2, stride=2, padding=0, dilation=1,
            x=np.ones((2, 8, 8, 3), F32))),
        "avgpool3d_bwd": (ops.avgpool3d_bwd, dict(
            grad_out=np.ones((1, 2, 2, 2, 3), F32), input_shape=(1, 4, 4, 4, 3), kernel_size=2, stride=2, padding=0,
            dilation=1, divisor_override=3)),
    }


CALLS = _calls()
INT_PARAMETERS = [(op, name) for op, (_, kwargs) in CALLS.items() for name in
                  ("stride", "padding", "dilation", "kernel_size", "filter_spatial", "groups", "input_shape", "divisor_override") if name in kwargs]
ARRAY_PARAMETERS = [(op, name) for op, (_, kwargs) in CALLS.items() for name, value in kwargs.items()
                    if isinstance(value, np.ndarray)] + [("grouped_conv_bwd_data", "ds")]


def _call(op, **changes):
    function, kwargs = CALLS[op]
    return function(**{**kwargs, **changes})


@pytest.mark.parametrize("op", list(CALLS))
def test_the_baselines_are_valid(op):
    """Each baseline passes validation: the rejections below are the changed argument's doing."""
    import ops.executor as executor

    checked = []
    original = executor.ready

    def stop(*args, **kwargs):
        checked.append(True)
        raise LookupError("validated")

    executor.ready = stop
    try:
        with pytest.raises(LookupError, match="validated"):
            _call(op)
    finally:
        executor.ready = original
    assert checked


@pytest.mark.parametrize("op, name", INT_PARAMETERS)
def test_integers_too_large_for_the_modules(op, name):
    value = CALLS[op][1][name]
    huge = tuple([HUGE] * len(value)) if isinstance(value, tuple) else HUGE
    if name == "input_shape":
        huge = (value[0], HUGE, *value[2:])
    with pytest.raises(ValueError, match=rf"{op}: {name}[ =].*(at most {2**31 - 1}|must divide)"):
        _call(op, **{name: huge})


@pytest.mark.parametrize("op, name", ARRAY_PARAMETERS)
def test_arrays_in_a_foreign_byte_order(op, name):
    if name == "ds":
        changed = (np.ones(6, F32).astype(">f4"),)
        shown = r"ds\[0\]"
    else:
        changed = CALLS[op][1][name].astype(CALLS[op][1][name].dtype.newbyteorder(">"))
        shown = name
    with pytest.raises(TypeError, match=rf"{op}: {shown} has dtype >f4 in a byte order not this machine's"):
        _call(op, **{name: changed})


@pytest.mark.parametrize("op", list(CALLS))
@pytest.mark.parametrize("device, error, message", [
    ("cpu", ValueError, r"device must be one of local-task, local-sync, hip, cuda \(an IREE driver name\), but got 'cpu'"),
    ("local-task://x", ValueError, r"device='local-task://x' cannot be used: IREE could not open device"),
    (0, TypeError, r"device must be an IREE driver name"),
])
def test_devices_that_cannot_run_it(op, device, error, message):
    with pytest.raises(error, match=f"{op}: {message}"):
        _call(op, device=device)


def _empty_batch(name, value):
    activation = isinstance(value, np.ndarray) and value.ndim >= 3 and name != "weight"
    return np.ones((0, *value.shape[1:]), value.dtype) if activation else value


@pytest.mark.parametrize("op", list(CALLS))
def test_an_empty_batch_gives_empty_results_and_a_zero_weight_gradient(op):
    """Decided as PyTorch does: a batch of 0 is valid; activation gradients are empty, a weight gradient (a sum
    over the batch) is zero, into out= too. Nothing compiles."""
    from conftest import DEVICE, poisoned

    function, kwargs = CALLS[op]
    changed = {name: _empty_batch(name, value) for name, value in kwargs.items()}
    if "input_shape" in changed:
        changed["input_shape"] = (0, *kwargs["input_shape"][1:])
    results = function(**changed)
    results = results if isinstance(results, tuple) else (results,)
    for result in results:
        if op == "grouped_conv_bwd_weight":
            assert result.shape == (8, 3, 3, 3) and np.array_equal(result, np.zeros_like(result))
        else:
            assert result.shape[0] == 0
    if op == "grouped_conv_bwd_weight":
        out = poisoned((8, 3, 3, 3), "float32", DEVICE)
        assert function(**changed, out=out, device=DEVICE) is out
        assert np.array_equal(out.to_host(), np.zeros((8, 3, 3, 3), F32))
