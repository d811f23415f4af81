"""ops.torch: the backward kernels inside torch.autograd, checked against PyTorch's own autograd.

Every case runs forward and backward twice from the same tensors: through ``ops.torch`` (this library's
kernels on the CPU device) and through ``torch.nn.functional`` (PyTorch's own), and compares outputs and
every gradient. float16 is checked against PyTorch's float64 result on the same float16 values.
"""

import copy
import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the test extra installs it; the NumPy API's tests run without it
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import ops.torch as otorch  # noqa: E402
from ops.torch import calls, functional, kernels  # noqa: E402
from ops import compiler, cpu_executor  # noqa: E402
from conftest import compiles_nothing  # noqa: E402


TOLERANCE = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 2e-2}  # normwise relative error


def relative_error(ours, exact) -> float:
    ours, exact = ours.detach().double(), exact.detach().double()
    return float((ours - exact).norm() / exact.norm().clamp_min(1e-300))


def channels_last(t):
    return t.to(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


def forward_backward(function, tensors, grad=None):
    """(output, grad_output, gradients of every tensor) of ``function(*tensors)``, fresh leaves each call."""
    leaves = [t.detach().clone(memory_format=torch.preserve_format).requires_grad_(t.requires_grad) for t in tensors]
    output = function(*leaves)
    grad = torch.randn_like(output, dtype=torch.float32).to(output.dtype) if grad is None else grad.to(output.dtype)
    output.backward(grad)
    return output, grad, [leaf.grad for leaf in leaves]

# (rank, batch, in_channels, out_channels, spatial, kernel, stride, padding, dilation, groups)


CONV_CASES = {
    "1d": (1, 2, 4, 6, (11,), 3, 1, 1, 1, 1),
    "1d_s2_d2_g2": (1, 2, 4, 6, (13,), 3, 2, 2, 2, 2),
    "2d_same": (2, 2, 3, 5, (7, 8), (3, 3), 1, "same", 1, 1),
    "2d_same_even_asymmetric": (2, 2, 3, 4, (7, 6), (2, 4), 1, "same", (2, 1), 1),
    "2d_valid_s2": (2, 2, 3, 4, (9, 8), (3, 2), (2, 1), "valid", 1, 1),
    "2d_valid_s1": (2, 2, 4, 4, (8, 7), (3, 2), 1, 0, (1, 2), 2),
    "2d_s2_g4": (2, 2, 8, 8, (9, 9), (3, 3), 2, 1, 1, 4),
    "2d_depthwise_s2": (2, 2, 6, 6, (10, 9), (3, 3), 2, 1, 1, 6),
    "2d_depthwise_x2_dilated": (2, 2, 4, 8, (9, 9), (3, 3), 1, 2, 2, 4),
    "3d_g2": (3, 2, 4, 4, (5, 6, 6), (3, 3, 3), (1, 2, 2), 1, 1, 2),
    "3d_depthwise": (3, 1, 4, 4, (4, 5, 5), (1, 3, 3), 1, (0, 1, 1), 1, 4),
}


CONV_FUNCTIONS = {1: (otorch.conv1d, F.conv1d), 2: (otorch.conv2d, F.conv2d), 3: (otorch.conv3d, F.conv3d)}


def conv_tensors(case, dtype, memory_format_last: bool, bias: bool = True):
    rank, batch, cin, cout, spatial, kernel, stride, padding, dilation, groups = case
    kernel = kernel if isinstance(kernel, tuple) else (kernel,) * rank
    x = torch.randn(batch, cin, *spatial).to(dtype)
    w = (torch.randn(cout, cin // groups, *kernel) / math.sqrt(cin // groups * math.prod(kernel))).to(dtype)
    b = torch.randn(cout).to(dtype) if bias else None
    if memory_format_last:
        x, w = channels_last(x), channels_last(w)
    for t in (x, w, b):
        if t is not None:
            t.requires_grad_()
    return [t for t in (x, w, b) if t is not None], dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def conv_layouts(case_name):
    rank = CONV_CASES[case_name][0]
    return [False, True] if rank > 1 else [False]


@pytest.mark.parametrize("name,memory_last", [(n, m) for n in CONV_CASES for m in conv_layouts(n)])
def test_conv_matches_pytorch_float32(name, memory_last, seeded):
    case = CONV_CASES[name]
    ours, theirs = CONV_FUNCTIONS[case[0]]
    tensors, kwargs = conv_tensors(case, torch.float32, memory_last)
    y, grad, our_grads = forward_backward(lambda *t: ours(*t, **kwargs), tensors)
    y_ref, _, their_grads = forward_backward(lambda *t: theirs(*t, **kwargs), tensors, grad)
    assert relative_error(y, y_ref) <= 1e-5
    for label, a, b in zip(("input", "weight", "bias"), our_grads, their_grads):
        assert a is not None and a.dtype == b.dtype and a.shape == b.shape
        assert not torch.isnan(a).any(), label
        assert relative_error(a, b) <= TOLERANCE[torch.float32], label
    if memory_last:  # results in the layout the kernels wrote, without a transposing copy
        assert our_grads[0].is_contiguous(memory_format=torch.channels_last if case[0] == 2 else torch.channels_last_3d)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["1d_s2_d2_g2", "2d_s2_g4", "2d_depthwise_s2", "3d_g2"])
def test_conv_half_precision_against_float64(name, dtype, seeded):
    case = CONV_CASES[name]
    ours, theirs = CONV_FUNCTIONS[case[0]]
    tensors, kwargs = conv_tensors(case, dtype, memory_format_last=case[0] == 2)
    y, grad, our_grads = forward_backward(lambda *t: ours(*t, **kwargs), tensors)
    exact = [t.detach().double().requires_grad_() for t in tensors]
    _, _, exact_grads = forward_backward(lambda *t: theirs(*t, **kwargs), exact, grad.double())
    for a, b in zip(our_grads, exact_grads):
        assert a.dtype == dtype
        assert relative_error(a, b) <= TOLERANCE[dtype]


@pytest.mark.parametrize("name", ["2d_s2_g4", "2d_same", "3d_g2", "1d"])
def test_fused_relu_conv_matches_relu_then_conv(name, seeded):
    case = CONV_CASES[name]
    ours, theirs = CONV_FUNCTIONS[case[0]]
    tensors, kwargs = conv_tensors(case, torch.float32, memory_format_last=case[0] == 2)
    with torch.no_grad():  # exact zeros as well as negatives: ReLU's gradient at 0 is 0 in PyTorch
        tensors[0][torch.rand(tensors[0].shape) < 0.2] = 0.0
    assert (tensors[0] == 0).any() and (tensors[0] < 0).any()
    y, grad, our_grads = forward_backward(lambda *t: ours(*t, **kwargs, input_activation="relu"), tensors)
    y_ref, _, their_grads = forward_backward(lambda x, *rest: theirs(torch.relu(x), *rest, **kwargs), tensors, grad)
    assert relative_error(y, y_ref) <= 1e-5
    for a, b in zip(our_grads, their_grads):
        assert relative_error(a, b) <= TOLERANCE[torch.float32]
    assert (our_grads[0][tensors[0] <= 0] == 0).all()


def test_fused_relu_kernel_is_one_grouped_backward_data_with_the_mask(monkeypatch, seeded):
    tensors, kwargs = conv_tensors(CONV_CASES["2d_s2_g4"], torch.float32, memory_format_last=False)
    launched = []
    original = calls.Prepared.__call__
    monkeypatch.setattr(calls.Prepared, "__call__", lambda self, args: launched.append(self.problem) or original(self, args))
    forward_backward(lambda *t: otorch.conv2d(*t, **kwargs, input_activation="relu"), tensors)
    assert [p.op for p in launched] == ["grouped_conv_bwd_data", "grouped_conv_bwd_weight"]
    assert launched[0].epilogue is not None and launched[0].d_shapes == (tuple(tensors[0].shape),)


# --- Pooling ----------------------------------------------------------------------------------------------

MAX_POOL_CASES = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("memory_last", [False, True])
@pytest.mark.parametrize("params", MAX_POOL_CASES)
def test_max_pool2d_matches_pytorch(params, memory_last, seeded):
    x = torch.randn(2, 3, 11, 10)
    if memory_last:
        x = channels_last(x)
    x.requires_grad_()
    y, indices = otorch.max_pool2d(x, **params, return_indices=True)
    y_ref, indices_ref = F.max_pool2d(x, **params, return_indices=True)
    assert torch.equal(y, y_ref) and torch.equal(indices, indices_ref)
    grad = torch.randn_like(y)
    (g,) = torch.autograd.grad(y, x, grad)
    (g_ref,) = torch.autograd.grad(y_ref, x, grad)
    assert relative_error(g, g_ref) <= 1e-6
    module = otorch.MaxPool2d(**params)
    assert torch.equal(module(x), y_ref)


@pytest.mark.parametrize("memory_last", [False, True])
@pytest.mark.parametrize("params", MAX_POOL_CASES[:3])
def test_fused_relu_max_pool2d_matches_relu_then_pool(params, memory_last, monkeypatch, seeded):
    """max_pool2d(relu(x)) with the ReLU in the pooling's kernels (each tap through it as the forward reads it, its
    backward from the output): PyTorch's values, indices (ties among a window's zeros included) and gradient,
    through the function and the module."""
    x = torch.randn(2, 3, 11, 10)
    x[torch.rand(x.shape) < 0.2] = 0.0
    x[0, 0] = -1.0  # a plane whose every window's maximum is 0: the ReLU stops every gradient there
    x = (channels_last(x) if memory_last else x).requires_grad_()
    launched = []
    original = calls.Prepared.__call__
    monkeypatch.setattr(calls.Prepared, "__call__", lambda self, args: launched.append(self.problem) or original(self, args))
    for function in (lambda t: otorch.max_pool2d(t, **params, return_indices=True, input_activation="relu"),
                     otorch.MaxPool2d(**params, return_indices=True, input_activation="relu")):
        (y, indices), (y_ref, indices_ref) = function(x), F.max_pool2d(torch.relu(x), **params, return_indices=True)
        assert torch.equal(y, y_ref) and torch.equal(indices, indices_ref)
        grad = torch.randn_like(y)
        ours, theirs = torch.autograd.grad(y, x, grad)[0], torch.autograd.grad(y_ref, x, grad)[0]
        assert relative_error(ours, theirs) <= 1e-6 and (ours[x <= 0] == 0).all() and (ours[0, 0] == 0).all()
    assert [(p.op, p.input_activation) for p in launched] == [("maxpool2d_fwd", "relu"), ("maxpool2d_bwd", "relu")] * 2


def test_a_fused_max_pool2d_output_changed_in_place_is_refused_by_autograd(seeded):
    """The fused ReLU's backward reads the pooled output (the ReLU's output at each argmax): autograd refuses a
    backward after that output changed in place, rather than a wrong gradient; convert does not fuse where the
    next module changes it in place, or where it leaves the Sequential."""
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    y = otorch.max_pool2d(x, 2, input_activation="relu")
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    model = otorch.convert(nn.Sequential(nn.Conv2d(3, 3, 1), nn.ReLU(), nn.MaxPool2d(2), nn.ReLU(inplace=True),
                                         nn.ReLU(), nn.MaxPool2d(2)))
    assert type(model[1]) is nn.ReLU and type(model[4]) is nn.ReLU
    assert model[2].input_activation is None and model[5].input_activation is None
    model = otorch.convert(nn.Sequential(nn.Conv2d(3, 3, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()))
    assert type(model[1]) is nn.Identity and model[2].input_activation == "relu"
    with pytest.raises(ValueError, match="MaxPool2d: input_activation must be None or 'relu'"):
        otorch.MaxPool2d(2, input_activation="gelu")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_max_pool2d_half_precision(dtype, seeded):
    x = channels_last(torch.randn(2, 4, 9, 9).to(dtype)).requires_grad_()
    y = otorch.max_pool2d(x, 3, 2, 1)
    y_ref = F.max_pool2d(x, 3, 2, 1)
    assert torch.equal(y, y_ref)
    grad = torch.randn_like(y)
    (g,) = torch.autograd.grad(y, x, grad)
    exact = torch.zeros(x.shape, dtype=torch.float64).view(2, 4, -1).scatter_add_(  # overlapping windows add up
        2, F.max_pool2d(x, 3, 2, 1, return_indices=True)[1].view(2, 4, -1), grad.double().view(2, 4, -1)).view(x.shape)
    assert g.dtype == dtype and relative_error(g, exact) <= TOLERANCE[dtype]


AVG_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True, divisor_override=5),
]


@pytest.mark.parametrize("memory_last", [False, True])
@pytest.mark.parametrize("params", AVG_POOL_CASES)
def test_avg_pool3d_matches_pytorch(params, memory_last, seeded):
    x = torch.randn(2, 3, 5, 8, 7)
    if memory_last:
        x = channels_last(x)
    x.requires_grad_()
    for function in (lambda t: otorch.avg_pool3d(t, **params), otorch.AvgPool3d(**params)):
        y = function(x)
        y_ref = F.avg_pool3d(x, **params)
        assert relative_error(y, y_ref) <= 1e-6
        grad = torch.randn_like(y)
        assert relative_error(torch.autograd.grad(y, x, grad)[0], torch.autograd.grad(y_ref, x, grad)[0]) <= 1e-6


@pytest.mark.parametrize("memory_last", [False, True])
@pytest.mark.parametrize("params", AVG_POOL_CASES[1:3])
def test_fused_relu_avg_pool3d_matches_relu_then_pool(params, memory_last, monkeypatch, seeded):
    """avg_pool3d(relu(x)) with the ReLU in the pooling kernels: PyTorch's values and gradient (0 where x <= 0,
    exact zeros included), from the forward kernel reading relu(x) and one backward call with the mask, through the
    function and the module."""
    x = torch.randn(2, 3, 5, 8, 7)
    x[torch.rand(x.shape) < 0.2] = 0.0
    x = (channels_last(x) if memory_last else x).requires_grad_()
    launched = []
    original = calls.Prepared.__call__
    monkeypatch.setattr(calls.Prepared, "__call__", lambda self, args: launched.append(self.problem) or original(self, args))
    for function in (lambda t: otorch.avg_pool3d(t, **params, input_activation="relu"),
                     otorch.AvgPool3d(**params, input_activation="relu")):
        y, y_ref = function(x), F.avg_pool3d(torch.relu(x), **params)
        assert relative_error(y, y_ref) <= 1e-6
        grad = torch.randn_like(y)
        ours, theirs = torch.autograd.grad(y, x, grad)[0], torch.autograd.grad(y_ref, x, grad)[0]
        assert relative_error(ours, theirs) <= 1e-6 and (ours[x <= 0] == 0).all()
    assert [(p.op, p.input_activation) for p in launched] == [("avgpool3d_fwd", "relu"), ("avgpool3d_bwd", "relu")] * 2


def test_unbatched_inputs(seeded):
    x = torch.randn(4, 9, 9, requires_grad=True)
    w = torch.randn(6, 2, 3, 3, requires_grad=True)
    for ours, theirs in ((lambda t: otorch.conv2d(t, w, groups=2, padding=1), lambda t: F.conv2d(t, w, groups=2, padding=1)),
                         (lambda t: otorch.max_pool2d(t, 2), lambda t: F.max_pool2d(t, 2))):
        y, grad, (g,) = forward_backward(ours, [x])
        y_ref, _, (g_ref,) = forward_backward(theirs, [x], grad)
        assert y.shape == y_ref.shape and relative_error(g, g_ref) <= 1e-5


# --- NaN and infinity: PyTorch's pattern, exactly ---------------------------------------------------------

def assert_same_pattern(ours, theirs):
    """NaN where PyTorch has NaN, the same infinities, the finite values close."""
    assert torch.equal(torch.isnan(ours), torch.isnan(theirs))
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))
    assert torch.equal(ours[torch.isinf(ours)], theirs[torch.isinf(theirs)])
    finite = torch.isfinite(theirs)
    assert relative_error(ours[finite], theirs[finite]) <= 1e-5


def poison(t, count: int = 3):
    t = t.detach().clone(memory_format=torch.preserve_format)
    flat = t.view(-1) if t.is_contiguous() else t.permute(0, *range(2, t.dim()), 1).reshape(-1)
    positions = torch.randperm(flat.numel())[: 3 * count]
    flat[positions[:count]] = float("nan")
    flat[positions[count:2 * count]] = float("inf")
    flat[positions[2 * count:]] = -float("inf")
    return t


def conv_nan_gradients(name, tensors, kwargs, grad, activation):
    ours, theirs = CONV_FUNCTIONS[CONV_CASES[name][0]]
    _, grad, our_grads = forward_backward(lambda *t: ours(*t, **kwargs, input_activation=activation), tensors, grad)
    _, _, their_grads = forward_backward(
        lambda x, *rest: theirs(torch.relu(x) if activation else x, *rest, **kwargs), tensors, grad)
    return our_grads, their_grads


@pytest.mark.parametrize("name", ["2d_same", "2d_s2_g4", "2d_depthwise_s2", "1d_s2_d2_g2", "3d_g2"])
def test_nan_and_inf_in_the_input_propagate_as_pytorch(name, seeded):
    """NaN and infinities in x (through the fused ReLU too) reach every gradient exactly where PyTorch's do."""
    tensors, kwargs = conv_tensors(CONV_CASES[name], torch.float32, memory_format_last=False)
    tensors[0] = poison(tensors[0]).requires_grad_()
    for activation in (None, "relu"):
        for a, b in zip(*conv_nan_gradients(name, tensors, kwargs, None, activation)):
            assert_same_pattern(a, b)


@pytest.mark.parametrize("name,checked", [("2d_valid_s1", ("input", "weight", "bias")), ("2d_same", ("input", "bias")),
                                          ("1d", ("input", "bias")), ("2d_s2_g4", ("input", "weight", "bias")),
                                          ("3d_depthwise", ("input", "weight", "bias"))])
def test_nan_and_inf_in_grad_output_propagate_as_pytorch(name, checked, seeded):
    """NaN and infinities in grad_output reach every gradient where PyTorch's float32 autograd puts them.

    The weight gradient of a padded convolution is left out where PyTorch's float32 CPU kernel (oneDNN, batch > 1)
    skips x's zero padding: this library multiplies it, as PyTorch's float64 kernels do (tests/test_nan_semantics.py
    checks it against those).
    """
    tensors, kwargs = conv_tensors(CONV_CASES[name], torch.float32, memory_format_last=False)
    grad = poison(CONV_FUNCTIONS[CONV_CASES[name][0]][1](*tensors, **kwargs).detach())
    for activation in (None, "relu"):
        ours, theirs = conv_nan_gradients(name, tensors, kwargs, grad, activation)
        for label, a, b in zip(("input", "weight", "bias"), ours, theirs):
            if label in checked:
                assert_same_pattern(a, b)


def test_pools_propagate_nan_and_inf_as_pytorch(seeded):
    x = poison(torch.randn(2, 3, 10, 10), count=4).requires_grad_()
    y, indices = otorch.max_pool2d(x, 3, 2, 1, return_indices=True)
    y_ref, indices_ref = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert torch.isnan(y_ref).any()
    assert_same_pattern(y, y_ref)
    assert torch.equal(indices, indices_ref)
    grad = poison(torch.randn_like(y_ref))
    assert_same_pattern(torch.autograd.grad(y, x, grad)[0], torch.autograd.grad(y_ref, x, grad)[0])
    x3 = torch.randn(1, 2, 6, 6, 6, requires_grad=True)
    y3, y3_ref = otorch.avg_pool3d(x3, 3, 2, 1), F.avg_pool3d(x3, 3, 2, 1)
    grad3 = poison(torch.randn_like(y3_ref))
    assert_same_pattern(torch.autograd.grad(y3, x3, grad3)[0], torch.autograd.grad(y3_ref, x3, grad3)[0])
    # the fused ReLUs: NaN and infinities in their input (a NaN output passes the gradient) and in the gradient
    y, y_ref = otorch.max_pool2d(x, 3, 2, 1, input_activation="relu"), F.max_pool2d(torch.relu(x), 3, 2, 1)
    assert_same_pattern(y, y_ref)
    for grad in (torch.randn_like(y_ref), poison(torch.randn_like(y_ref))):
        assert_same_pattern(torch.autograd.grad(y, x, grad, retain_graph=True)[0],
                            torch.autograd.grad(y_ref, x, grad, retain_graph=True)[0])
    x3 = poison(torch.randn(1, 2, 6, 6, 6), count=4).requires_grad_()
    y3, y3_ref = otorch.avg_pool3d(x3, 3, 2, 1, input_activation="relu"), F.avg_pool3d(torch.relu(x3), 3, 2, 1)
    assert torch.isnan(y3_ref).any()
    assert_same_pattern(y3, y3_ref)
    for grad3 in (torch.randn_like(y3_ref), poison(torch.randn_like(y3_ref))):
        assert_same_pattern(torch.autograd.grad(y3, x3, grad3, retain_graph=True)[0],
                            torch.autograd.grad(y3_ref, x3, grad3, retain_graph=True)[0])


# --- Modules, convert, training -----------------------------------------------------------------------------

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False))
        self.up = nn.ConvTranspose2d(8, 8, 1)  # no kernel here: stays PyTorch's
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(self.body(x) + self.up(x))


def small_model():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(8, 8, 3, stride=2, padding=1, padding_mode="reflect"),
        Block(), nn.Flatten(), nn.Linear(8 * 4 * 4, 5),
    )


def test_convert_swaps_in_place_and_keeps_checkpoints(seeded):
    model = small_model()
    keys = list(model.state_dict())
    parameters = [id(p) for p in model.parameters()]
    with pytest.warns(UserWarning, match=r"3\.up \(ConvTranspose2d has no kernel here\)"):
        assert otorch.convert(model) is model
    assert type(model[0]) is otorch.Conv2d and type(model[3].body[2]) is otorch.Conv2d
    assert type(model[3].pool) is otorch.MaxPool2d and type(model[3].up) is nn.ConvTranspose2d
    assert model[3].body[2].input_activation == "relu" and type(model[3].body[1]) is nn.Identity
    assert model[2].input_activation == "relu" and type(model[1]) is nn.Identity  # ReLU(inplace) not first: fused
    assert list(model.state_dict()) == keys and [id(p) for p in model.parameters()] == parameters
    restored = small_model()
    restored.load_state_dict(model.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(restored.state_dict().values(), model.state_dict().values()))


def test_convert_fuses_a_relu_into_the_avg_pool3d_after_it(seeded):
    model = nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.ReLU(), nn.AvgPool3d(2), nn.ReLU(inplace=True),
                          nn.AvgPool3d(2, 1), nn.MaxPool3d(1))
    reference = copy.deepcopy(model)
    with pytest.warns(UserWarning, match=r"5 \(MaxPool3d has no kernel here\)"):
        otorch.convert(model)
    assert [type(m) for m in model][:5] == [otorch.Conv3d, nn.Identity, otorch.AvgPool3d, nn.Identity, otorch.AvgPool3d]
    assert model[2].input_activation == model[4].input_activation == "relu" and "input_activation='relu'" in repr(model[2])
    x = torch.randn(2, 2, 6, 8, 8)
    for m in (model, reference):
        m(x).square().sum().backward()
    for a, b in zip(model.parameters(), reference.parameters()):
        assert relative_error(a.grad, b.grad) <= 1e-5
    with pytest.raises(ValueError, match="AvgPool3d: input_activation must be None or 'relu'"):
        otorch.AvgPool3d(2, input_activation="gelu")


def test_convert_leaves_a_leading_inplace_relu_and_float64_layers():
    model = nn.Sequential(nn.ReLU(inplace=True), nn.Conv2d(3, 4, 3), nn.Sequential(nn.Conv2d(4, 4, 1).double()))
    with pytest.warns(UserWarning, match=r"2\.0 \(torch\.float64 parameters\)"):
        otorch.convert(model)
    assert type(model[0]) is nn.ReLU and model[1].input_activation is None
    assert type(model[2][0]) is nn.Conv2d


def test_three_sgd_steps_match_pytorch(seeded):
    reference = small_model()
    ours = copy.deepcopy(reference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        otorch.convert(ours)
    data = [(torch.randn(4, 3, 16, 16), torch.randint(0, 5, (4,))) for _ in range(3)]
    results = []
    for model in (reference, ours):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for x, y in data:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results.append((losses, [p.detach().clone() for p in model.parameters()]))
    (losses_ref, params_ref), (losses, params) = results
    assert np.allclose(losses, losses_ref, rtol=1e-5)
    for a, b in zip(params, params_ref):
        assert relative_error(a, b) <= 1e-5


def test_modules_take_pytorchs_constructor_arguments():
    conv = otorch.Conv3d(4, 8, (1, 3, 3), stride=(1, 2, 2), padding="valid", groups=2, bias=False, input_activation="relu")
    assert isinstance(conv, nn.Conv3d) and conv.weight.shape == (8, 2, 1, 3, 3) and conv.bias is None
    assert "input_activation='relu'" in repr(conv)
    with pytest.raises(ValueError, match="Conv2d: input_activation must be None or 'relu'"):
        otorch.Conv2d(3, 3, 1, input_activation="gelu")


# --- Zero copies, precompile, compile, opcheck, autocast, float64 -------------------------------------------

def _at_an_odd_offset(t: torch.Tensor, offset: int = 3) -> torch.Tensor:
    """``t``'s values in memory that starts ``offset`` elements into a fresh buffer (no longer 64-byte aligned)."""
    flat = torch.empty(t.numel() + offset, dtype=t.dtype)
    view = flat[offset:].view(t.shape)
    view.copy_(t)
    return view


def test_tensors_at_odd_storage_offsets_give_pytorchs_gradients(seeded):
    """IREE's CPU device imports only 64-byte aligned memory: an input that is not gets one copy, not an error."""
    x = _at_an_odd_offset(torch.randn(2, 4, 8, 8)).requires_grad_()
    weight = _at_an_odd_offset(torch.randn(6, 4, 3, 3), 5).requires_grad_()
    assert x.data_ptr() % cpu_executor.ALIGNMENT and weight.data_ptr() % cpu_executor.ALIGNMENT
    grad = torch.randn(2, 6, 4, 4)
    otorch.conv2d(x, weight, stride=2, padding=1).backward(grad)
    ref_x, ref_w = x.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    F.conv2d(ref_x, ref_w, stride=2, padding=1).backward(grad)
    torch.testing.assert_close(x.grad, ref_x.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(weight.grad, ref_w.grad, rtol=1e-4, atol=1e-4)
    pooled = _at_an_odd_offset(torch.randn(2, 3, 8, 8)).requires_grad_()
    pool_grad = torch.randn(2, 3, 4, 4)
    otorch.max_pool2d(pooled, 2).backward(pool_grad)
    ref = pooled.detach().clone().requires_grad_()
    F.max_pool2d(ref, 2).backward(pool_grad)
    torch.testing.assert_close(pooled.grad, ref.grad)


def test_backward_makes_no_host_copy(monkeypatch, seeded):
    """No tensor is turned into a NumPy array, and the kernels write into the tensors PyTorch returns."""
    tensors, kwargs = conv_tensors(CONV_CASES["2d_s2_g4"], torch.float32, memory_format_last=True)
    x = torch.randn(2, 3, 10, 10, requires_grad=True)
    forward_backward(lambda *t: otorch.conv2d(*t, **kwargs), tensors)  # compiled and loaded outside the check
    forward_backward(lambda t: otorch.max_pool2d(t, 2), [x])

    def refuse(*args, **kwargs):
        raise AssertionError("a host copy through NumPy")

    monkeypatch.setattr(torch.Tensor, "numpy", refuse)
    monkeypatch.setattr(torch.Tensor, "__array__", refuse)
    wrapped = []
    views = calls.TorchHost.views  # IREE's runtime's buffer views of the tensors (the stream's and the synchronous call's)
    monkeypatch.setattr(calls.TorchHost, "views", staticmethod(lambda device, inputs, outputs, channels_last: wrapped.extend(
        t.data_ptr() for t in outputs) or views(device, inputs, outputs, channels_last)))
    launch, then = cpu_executor.CpuLaunchedCall.__call__, cpu_executor.CpuLaunchedCall.then  # the CPU launcher's pointers
    monkeypatch.setattr(cpu_executor.CpuLaunchedCall, "__call__", lambda self, inputs, outputs: wrapped.extend(
        t.data_ptr() for t in outputs) or launch(self, inputs, outputs))
    monkeypatch.setattr(cpu_executor.CpuLaunchedCall, "then", lambda self, second, *tensors: wrapped.extend(
        t.data_ptr() for t in tensors[1] + tensors[3]) or then(self, second, *tensors))  # a layer's two gradients
    _, _, grads = forward_backward(lambda *t: otorch.conv2d(*t, **kwargs), tensors)
    _, _, (grad_x,) = forward_backward(lambda t: otorch.max_pool2d(t, 2), [x])
    assert grads[0].data_ptr() in wrapped and grads[1].data_ptr() in wrapped and grad_x.data_ptr() in wrapped


def test_precompile_builds_every_module_a_step_needs(seeded):
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.Conv2d(6, 6, 3, groups=3),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6 * 3 * 3, 2))
    otorch.convert(model)
    x = channels_last(torch.randn(3, 3, 8, 8))
    state = copy.deepcopy(model.state_dict())
    paths = otorch.precompile(model, x, progress=False)
    assert len(paths) == 5  # two weight gradients, one fused input gradient, max-pool forward and backward
    assert all(p.is_file() for p in paths)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), state.values()))  # model untouched
    compiles = compiler.stats["compiles"]
    model(x).sum().backward()
    assert compiler.stats["compiles"] == compiles  # nothing left to compile
    # on meta tensors (another device's modules, built here): the same modules as the real step; contiguous
    # layouts, since PyTorch's meta kernels do not keep channels_last through every backward
    real = otorch.precompile(model, x.contiguous(), progress=False)
    meta = otorch.precompile(model, torch.empty(3, 3, 8, 8, device="meta"), progress=False)
    assert len(real) == 5 and sorted(meta) == sorted(real)


def test_torch_compile_fullgraph_matches_eager(seeded):
    model = otorch.convert(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, groups=2),
                                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 3 * 3, 2)))
    x = torch.randn(2, 3, 16, 16, requires_grad=True)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    outputs = []
    for function in (model, compiled):
        model.zero_grad()
        x.grad = None
        y = function(x)
        y.sum().backward()
        outputs.append((y.detach(), x.grad.clone(), [p.grad.clone() for p in model.parameters()]))
    (y, gx, gp), (yc, gxc, gpc) = outputs
    assert torch.equal(y, yc) and torch.equal(gx, gxc) and all(torch.equal(a, b) for a, b in zip(gp, gpc))


def test_eager_calls_skip_the_dispatcher_and_traced_ones_use_the_registered_ops(monkeypatch, seeded):
    """Plain tensors take the eager path (an autograd.Function whose backward calls the ready kernels directly);
    under torch.compile the registered operators run, and both give the same bits."""
    seen = []
    original = kernels.KernelOp.call
    monkeypatch.setattr(kernels.KernelOp, "call", lambda self, direct, *args: seen.append((self.op.name(), direct))
                        or original(self, direct, *args))
    model = otorch.convert(nn.Sequential(nn.ReLU(), nn.Conv2d(4, 8, 3, padding=1, groups=2), nn.MaxPool2d(2)))
    x = torch.randn(2, 4, 8, 8)
    results = []
    for function in (model, torch.compile(model, fullgraph=True, backend="aot_eager")):
        seen.clear()
        model.zero_grad()
        function(x).square().sum().backward()
        results.append([p.grad.clone() for p in model.parameters()])
        if function is model:
            assert sorted(seen) == [("iree_ck::conv_backward_weight", True), ("iree_ck::max_pool2d_backward", True)]
        else:
            assert seen and not any(direct for _, direct in seen)
    assert all(torch.equal(a, b) for a, b in zip(*results))


OPCHECK_CASES = {
    "conv": lambda: (torch.randn(2, 4, 9, 9, requires_grad=True), torch.randn(8, 2, 3, 3, requires_grad=True),
                     torch.randn(8, requires_grad=True), [1, 1], [1, 1, 1, 1], [1, 1], 2),
    "relu_conv": lambda: (torch.randn(2, 4, 9, 9, requires_grad=True), torch.randn(8, 2, 3, 3, requires_grad=True), None,
                          [2, 2], [1, 0, 1, 1], [1, 1], 2),
    "conv_backward_input": lambda: (torch.randn(2, 8, 5, 5), torch.randn(8, 2, 3, 3), torch.randn(2, 4, 9, 9).relu(),
                                    [2, 4, 9, 9], [2, 2], [1, 1, 1, 1], [1, 1], 2, "float32"),
    "conv_backward_weight": lambda: (torch.randn(2, 4, 9, 9), torch.randn(2, 8, 9, 9), [8, 2, 3, 3], [1, 1], [1, 1, 1, 1],
                                     [1, 1], 2, "float32"),
    "max_pool2d": lambda: (torch.randn(2, 3, 9, 9, requires_grad=True), [3, 3], [2, 2], [1, 1], [1, 1], False, True),
    "max_pool2d_backward": lambda: (torch.randn(2, 3, 4, 4), *F.max_pool2d(torch.randn(2, 3, 8, 8).relu(), 2,
                                                                           return_indices=True)[::-1],
                                    [2, 3, 8, 8], [2, 2], [2, 2], [0, 0], [1, 1], False),
    "avg_pool3d": lambda: (torch.randn(1, 2, 4, 6, 6, requires_grad=True), [2, 2, 2], [2, 2, 2], [0, 0, 0], False,
                           True, None, True),
    "avg_pool3d_backward": lambda: (torch.randn(1, 2, 2, 3, 3), torch.randn(1, 2, 4, 6, 6).relu(), [1, 2, 4, 6, 6],
                                    [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None),
}


def test_every_registered_op_has_an_opcheck_case():
    registered = {name for name in dir(torch.ops.iree_ck) if hasattr(getattr(torch.ops.iree_ck, name), "default")}
    assert registered == set(OPCHECK_CASES)


@pytest.mark.parametrize("name", sorted(OPCHECK_CASES))
def test_opcheck(name, seeded):
    torch.library.opcheck(getattr(torch.ops.iree_ck, name).default, OPCHECK_CASES[name]())


def test_autocast_runs_the_kernels_in_half_precision(seeded):
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    w = torch.randn(8, 4, 3, 3, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = otorch.conv2d(x, w, padding=1)
        y_ref = F.conv2d(x, w, padding=1)
    assert y.dtype == y_ref.dtype == torch.bfloat16
    grad = torch.randn_like(y)
    ours = torch.autograd.grad(y, (x, w), grad)
    theirs = torch.autograd.grad(y_ref, (x, w), grad)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype == torch.float32 and relative_error(a, b) <= TOLERANCE[torch.bfloat16]


def test_float64_falls_back_to_pytorch_with_one_warning(seeded):
    functional.float64_warned.discard("conv2d")
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="conv2d: float64 has no kernel here"):
        y = otorch.conv2d(x, w, input_activation="relu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        otorch.conv2d(x, w)  # warned once
    assert torch.equal(y, F.conv2d(torch.relu(x), w))
    assert torch.equal(otorch.conv2d(x[0], w), F.conv2d(x[0], w))  # unbatched too
    functional.float64_warned.discard("avg_pool3d")
    x3 = torch.randn(1, 2, 4, 4, 4, dtype=torch.float64)
    with pytest.warns(UserWarning, match="avg_pool3d: float64 has no kernel here"):
        assert torch.equal(otorch.avg_pool3d(x3, 2, input_activation="relu"), F.avg_pool3d(torch.relu(x3), 2))


def test_empty_batch_gives_empty_gradients():
    x = torch.randn(0, 4, 6, 6, requires_grad=True)
    w = torch.randn(4, 2, 3, 3, requires_grad=True)
    y = otorch.conv2d(x, w, groups=2)
    y.sum().backward()
    assert x.grad.shape == x.shape and torch.equal(w.grad, torch.zeros_like(w))


# --- Bad input: a clear error naming the parameter, before anything compiles --------------------------------

BAD_CALLS = [
    (lambda x, w: otorch.conv2d(x, w, stride=0), ValueError, r"conv2d: stride must be positive"),
    (lambda x, w: otorch.conv2d(x, w, stride=[[1], [1]], groups=2), TypeError, r"conv2d: stride entries must be ints"),
    (lambda x, w: otorch.conv2d(x, w, padding="full"), ValueError, r"conv2d: padding must be an int, a tuple, 'same' or 'valid'"),
    (lambda x, w: otorch.conv2d(x, w, padding="same", stride=2), ValueError, r"padding='same' is not supported for strided"),
    (lambda x, w: otorch.conv2d(x, w, padding=-1), ValueError, r"conv2d: padding must be non-negative"),
    (lambda x, w: otorch.conv2d(x, w, groups=3), ValueError, r"conv2d: input has 4 channels, but weight"),
    (lambda x, w: otorch.conv2d(x, w[:, :, :, :, None]), ValueError, r"conv2d: weight must be 4-D"),
    (lambda x, w: otorch.conv2d(x, w, torch.zeros(3), groups=2), ValueError, r"conv2d: bias must have shape \(6,\)"),
    (lambda x, w: otorch.conv2d(x, w.half(), groups=2), TypeError, r"conv2d: weight has dtype torch.float16, but input has torch.float32"),
    (lambda x, w: otorch.conv2d(x.int(), w, groups=2), TypeError, r"conv2d: input has dtype torch.int32"),
    (lambda x, w: otorch.conv2d(x.detach().numpy(), w, groups=2), TypeError, r"conv2d: input must be a torch.Tensor, but got ndarray"),
    (lambda x, w: otorch.conv2d(x, w, input_activation="tanh"), ValueError, r"conv2d: input_activation must be None or 'relu'"),
    (lambda x, w: otorch.avg_pool3d(x[None], 2, input_activation="tanh"), ValueError,
     r"avg_pool3d: input_activation must be None or 'relu'"),
    (lambda x, w: otorch.max_pool2d(x, 2, input_activation=True), ValueError,
     r"max_pool2d: input_activation must be None or 'relu'"),
    (lambda x, w: otorch.conv2d(x, w, dilation=4, groups=2), ValueError, r"conv2d: the kernel \(3, 3\) \(dilation \(4, 4\)\) does not fit"),
    (lambda x, w: otorch.conv3d(x[0, 0], w), ValueError, r"conv3d: input must be 4-D \(unbatched\) or 5-D"),
    (lambda x, w: otorch.max_pool2d(x, 3, padding=2), ValueError, r"max_pool2d: padding must be at most half the window"),
    (lambda x, w: otorch.max_pool2d(x, 9), ValueError, r"max_pool2d: the window \(9, 9\) .* does not fit the padded input"),
    (lambda x, w: otorch.avg_pool3d(x[None], 3, padding=2), ValueError,
     r"avg_pool3d: padding must be at most half the window"),
    (lambda x, w: otorch.avg_pool3d(x[None], (1, 9, 9)), ValueError, r"avg_pool3d: the window \(1, 9, 9\) .* does not fit"),
    (lambda x, w: otorch.avg_pool3d(x[None], 2, divisor_override=0), ValueError, r"avg_pool3d: divisor_override must not be zero"),
    (lambda x, w: otorch.max_pool2d(x, 0), ValueError, r"max_pool2d: kernel_size must be positive"),
    (lambda x, w: otorch.avg_pool3d(x[0], 2), ValueError, r"avg_pool3d: input must be 4-D \(unbatched\) or 5-D"),
    (lambda x, w: otorch.convert(x), TypeError, r"convert: model must be a torch.nn.Module"),
    (lambda x, w: otorch.precompile(nn.Conv2d(4, 6, 3), "x"), TypeError, r"precompile: example_input\[0\] must be a torch.Tensor"),
]


@pytest.mark.parametrize("call,error,message", BAD_CALLS)
def test_bad_input_names_the_parameter(call, error, message, nothing_compiles):
    x = torch.randn(2, 4, 7, 7, requires_grad=True)
    w = torch.randn(6, 2, 3, 3, requires_grad=True)
    with pytest.raises(error, match=message):
        call(x, w)


EQUAL_BUT_BAD = [  # (a good call, then one whose bad argument compares equal to the good one's)
    (lambda x, w: otorch.conv2d(x, w.repeat(1, 2, 1, 1)), lambda x, w: otorch.conv2d(x, w.repeat(1, 2, 1, 1), groups=True),
     TypeError,
     r"conv2d: groups must be an int, but got True"),
    (lambda x, w: otorch.conv2d(x, w, groups=2, stride=(1, 1)), lambda x, w: otorch.conv2d(x, w, groups=2, stride=(1.0, 1)),
     TypeError, r"conv2d: stride entries must be ints"),
    (lambda x, w: otorch.conv2d(x, w, groups=2, padding=((1, 1), (0, 0))),
     lambda x, w: otorch.conv2d(x, w, groups=2, padding=((1, 1.0), (0, 0))), TypeError, r"conv2d: each padding entry must be an int"),
    (lambda x, w: otorch.avg_pool3d(x, 2, divisor_override=2), lambda x, w: otorch.avg_pool3d(x, 2, divisor_override=2.0),
     TypeError, r"divisor_override must be None or an int, but got 2.0"),
]


@pytest.mark.parametrize("good,bad,error,message", EQUAL_BUT_BAD)
def test_checks_remembered_per_call_still_refuse_an_equal_value_of_another_type(good, bad, error, message):
    """The checks of a call's arguments run once per shapes and arguments (ops/torch/functional._checked_once);
    True, 1.0 and 1 compare equal, so the remembered key holds each entry's type too. The bad call compiles and
    loads nothing (the good one may: average pooling's forward is a kernel)."""
    x = torch.randn(2, 4, 7, 7, requires_grad=True)
    w = torch.randn(6, 2, 3, 3, requires_grad=True)
    good(x, w)
    with compiles_nothing(), pytest.raises(error, match=message):
        bad(x, w)


def test_a_ready_call_serves_the_same_argument_objects_and_anything_else_is_checked_again(nothing_compiles,
                                                                                        monkeypatch):
    """A call's checks run once per its tensors' types, dtypes, shapes and devices and its argument objects
    (ops/torch/functional._READY, keyed on their ids and holding them): a module's later calls reuse them; an
    attribute set to a bad value, a list changed in place, another shape, dtype or device is checked again."""
    monkeypatch.setattr(functional, "_READY", {})
    made, original = [], functional._ConvCall
    monkeypatch.setattr(functional, "_ConvCall", type("Counted", (original,), {
        "__init__": lambda self, *a: made.append(1) or original.__init__(self, *a)}))
    conv = otorch.convert(nn.Sequential(nn.Conv2d(4, 6, 3, groups=2)))[0]
    x = torch.randn(2, 4, 7, 7)
    for _ in range(3):
        conv(x)
    assert len(made) == 1 and len(functional._READY) == 1
    conv(torch.randn(3, 4, 7, 7))  # another shape: checked, and kept too
    assert len(made) == 2 and len(functional._READY) == 2
    for attribute, value, error, message in [
            ("stride", (0, 1), ValueError, r"conv2d: stride must be positive"),
            ("groups", True, TypeError, r"conv2d: groups must be an int, but got True"),
            ("groups", 3, ValueError, r"conv2d: input has 4 channels, but weight .* with groups=3")]:
        kept = getattr(conv, attribute)
        setattr(conv, attribute, value)
        with pytest.raises(error, match=message):
            conv(x)
        setattr(conv, attribute, kept)
    conv(x)
    with pytest.raises(ValueError, match=r"conv2d: input has 5 channels"):
        conv(torch.randn(2, 5, 7, 7))
    with pytest.raises(TypeError, match=r"conv2d: weight has dtype torch.float16, but input has torch.float32"):
        functional.conv2d(x, conv.weight.detach().half(), groups=2)
    with pytest.raises(ValueError, match=r"conv2d: weight is on cpu, but input is on meta"):
        conv(x.to("meta"))
    stride = [1, 1]  # a list: checked at every call, never kept
    before = len(functional._READY)
    functional.conv2d(x, conv.weight, stride=stride, groups=2)
    stride[0] = 0
    with pytest.raises(ValueError, match=r"conv2d: stride must be positive"):
        functional.conv2d(x, conv.weight, stride=stride, groups=2)
    assert len(functional._READY) == before


@pytest.mark.parametrize("layer,attribute,value,error,message", [
    (nn.MaxPool2d(3, stride=2, padding=1), "kernel_size", 0, ValueError, r"max_pool2d: kernel_size must be positive"),
    (nn.MaxPool2d(3, stride=2, padding=1), "padding", 2, ValueError, r"max_pool2d: padding must be at most half the"),
    (nn.AvgPool3d(2), "count_include_pad", 1, TypeError, r"avg_pool3d: count_include_pad must be a bool, but got 1"),
    (nn.AvgPool3d(2), "divisor_override", 2.0, TypeError, r"divisor_override must be None or an int, but got 2.0"),
])
def test_a_pooling_layers_attribute_set_after_a_good_call_is_checked_again(layer, attribute, value, error, message):
    """As for a convolution (above); the max-pooling forward is a kernel, so its good call compiles."""
    pool = otorch.convert(nn.Sequential(layer))[0]
    x = torch.randn(2, 3, 6, 8, 8) if isinstance(layer, nn.AvgPool3d) else torch.randn(2, 3, 8, 8)
    pool(x)
    pool(x)
    setattr(pool, attribute, value)
    with pytest.raises(error, match=message):
        pool(x)


def test_functorch_transforms_take_the_registered_operators(seeded, monkeypatch):
    """The eager path (the autograd Functions' C++ apply, without torch.autograd.Function.apply's wrapper) serves
    plain tensors only: under a functorch transform the registered operators run (vmap: PyTorch's fallback over
    them), with PyTorch's values."""
    applied = []
    monkeypatch.setattr(kernels, "_apply_conv", lambda *a: applied.append(1) or kernels._ConvFunction.apply(*a))
    x, w = torch.randn(3, 2, 4, 6, 6), torch.randn(5, 4, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's fallback warns that iree_ck::conv has no batching rule
        ours = torch.vmap(lambda xx: otorch.conv2d(xx, w, padding=1))(x)
    assert not applied
    assert relative_error(ours, torch.vmap(lambda xx: F.conv2d(xx, w, padding=1))(x)) < 1e-6
    otorch.conv2d(x[0], w, padding=1)  # a plain call: the eager path
    assert applied


def test_pytorch_kernels_that_serve_a_problem_no_form_computes_right_match_ours(seeded):
    """PyTorch's own kernels (what serves a problem whose every module fails its known-answer check) against this
    library's, with the same arguments: asymmetric padding, groups, a fused ReLU mask, channels-last."""
    x, g, w = torch.randn(2, 4, 9, 9), torch.randn(2, 6, 5, 3), torch.randn(6, 2, 3, 3)
    arguments = ([2, 2], [1, 1, 0, 0], [1, 2], 2)
    relu_output = torch.randn(2, 4, 9, 9).relu()
    for memory_format in (torch.contiguous_format, torch.channels_last):
        x, g, w, relu_output = (t.contiguous(memory_format=memory_format) for t in (x, g, w, relu_output))
        pairs = [
            (kernels.conv_backward_weight, (x, g, list(w.shape), *arguments, False)),
            (kernels.conv_backward_input, (g, w, relu_output, list(x.shape), *arguments, False)),
            (kernels.conv_backward_input, (g, w, None, list(x.shape), *arguments, False)),
            (kernels.max_pool2d, (x, [3, 3], [2, 2], [1, 1], [1, 2], True, False)),
            (kernels.max_pool2d, (x, [3, 3], [2, 2], [1, 1], [1, 2], True, True)),
        ]
        y, indices = kernels.max_pool2d.run(x, [3, 3], [2, 2], [1, 1], [1, 1], False, False)
        for output in (None, y):  # without and with a ReLU before the pooling (the kernels take x as its output here)
            pairs.append((kernels.max_pool2d_backward, (torch.randn_like(y), indices, output, list(x.shape), [3, 3],
                                                        [2, 2], [1, 1], [1, 1], False)))
        for kernel, args in pairs:
            ours, theirs = kernel.run(*args), kernel.fallback(*args)
            for a, b in zip(ours if isinstance(ours, tuple) else [ours], theirs if isinstance(theirs, tuple) else [theirs]):
                assert a.shape == b.shape and a.stride() == b.stride(), kernel.op
                assert torch.equal(a, b) if a.dtype == torch.int64 else relative_error(a, b) <= 1e-5, kernel.op
    v = torch.randn(1, 2, 5, 7, 7)
    grad = torch.randn(1, 2, 3, 4, 4)
    for relu_output in (None, v.relu()):
        args = (grad, relu_output, list(v.shape), [2, 2, 2], [2, 2, 2], [1, 0, 1], True, False, 3)
        assert relative_error(kernels.avg_pool3d_backward.run(*args), kernels.avg_pool3d_backward.fallback(*args)) <= 1e-5

def test_a_weight_gradient_takes_its_layout_from_grad_output():
    """The step hands a weight gradient its grad_output and the saved input; where their memory formats differ (a
    channels_last input, a contiguous gradient from a flatten), the layout is grad_output's, as for every other
    gradient: the gradient is not the one converted."""
    from ops.torch import plans

    x = torch.randn(2, 8, 5, 5).to(memory_format=torch.channels_last)
    grad_output = torch.randn(2, 4, 5, 5)
    arguments = (x, grad_output, [4, 8, 1, 1], [1, 1], [0, 0, 0, 0], [1, 1], 1, "float32")
    planned = plans.plan("conv_backward_weight", *arguments)
    assert not planned.channels_last and planned.problem().layout == "NCHW"
    planned = plans.plan("conv_backward_weight", x, grad_output.to(memory_format=torch.channels_last), *arguments[2:])
    assert planned.channels_last and planned.problem().layout == "NHWC"
