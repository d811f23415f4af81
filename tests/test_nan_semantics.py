"""NaN and infinities through every operator and every form its targets compile, against PyTorch.

Numerics run on the CPU, so a GPU target's form is run there by rendering its structure for llvm-cpu: the
stride phases as the GPUs take them (no zero taps), and backward-weight's batch split (the GPU default). The
GPUs' other weight flip (an indexing map) is a copy without arithmetic and cannot run on llvm-cpu. A form added
to an operator later belongs in ``FORMS``.

Inputs carry NaN, +inf and -inf at random places; the result must have NaN exactly where PyTorch has NaN, the
same infinities, and close finite values. The oracle is PyTorch's autograd in float32 on the same values, except
for the weight gradient: PyTorch's own kernels disagree there (its float64 kernels, and float32 at batch 1,
multiply x's zero padding by grad_output, so 0 x inf gives NaN; oneDNN's float32 kernel at batch > 1 skips the
padding), and this library follows the definition PyTorch's reference kernels compute, padding included, so the
oracle is PyTorch in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the test extra installs it
import torch.nn.functional as F  # noqa: E402

import ops  # noqa: E402
from ops import executor, policy  # noqa: E402
from ops.operators import grouped_conv_bwd_weight  # noqa: E402

from conftest import gpu_phases, interleaved_store, phase_forms  # noqa: E402


def _gpu_interleaved(monkeypatch):
    """The GPU phases, stored through the phase-major tensor (the interleaved store)."""
    gpu_phases(monkeypatch)
    interleaved_store(monkeypatch)


def _gpu_batch_split(monkeypatch):
    monkeypatch.setitem(policy.FORM_RULES, grouped_conv_bwd_weight.Form,
                        lambda problem, target: [grouped_conv_bwd_weight.Form(batch_split=problem.batch)])


def _gpu_row_split(monkeypatch):
    """The GPUs' depthwise weight gradients: the batch split, the first axis's rows partial sums too."""
    form = grouped_conv_bwd_weight.Form
    monkeypatch.setitem(policy.FORM_RULES, form, lambda problem, target: [form(batch_split=problem.batch, row_split=True)])


FORMS = {
    "conv_bwd_data": {"llvm-cpu": None, "gpu phases": gpu_phases, "gpu interleaved": _gpu_interleaved},
    "grouped_conv_bwd_data": {"llvm-cpu": None, "gpu phases": gpu_phases, "gpu interleaved": _gpu_interleaved},
    "depthwise_conv_bwd_data": {"llvm-cpu": None,
                                "gpu merged": lambda monkeypatch: phase_forms(monkeypatch, contraction="merged")},
    "grouped_conv_bwd_weight": {"llvm-cpu": None, "gpu batch split": _gpu_batch_split,
                                "gpu row split": _gpu_row_split},
    "maxpool2d_bwd": {"every target": None},
    "avgpool3d_bwd": {"every target": None},
}


def _forms(operator):
    return [pytest.param(patch, id=name) for name, patch in FORMS[operator].items()]


@pytest.fixture
def form(request, monkeypatch):
    """The target form a test runs (parametrized indirectly from FORMS): the CPU's as it is, or a GPU's."""
    if request.param:
        executor.forget()  # ready calls are keyed by problem and host, not by the form a test forces
        request.param(monkeypatch)


def poison(t: torch.Tensor, count: int = 3) -> torch.Tensor:
    """A copy with ``count`` NaN, +inf and -inf each, at random places."""
    t = t.detach().clone()
    flat = t.view(-1)
    positions = torch.randperm(flat.numel())[: 3 * count]
    flat[positions[:count]] = float("nan")
    flat[positions[count:2 * count]] = float("inf")
    flat[positions[2 * count:]] = -float("inf")
    return t


def assert_same_pattern(ours: np.ndarray, theirs: torch.Tensor):
    theirs = theirs.detach().double().numpy()
    ours = np.asarray(ours, dtype=np.float64)
    assert not np.isfinite(theirs).all() and np.isfinite(theirs).any()
    nan_differs = np.isnan(ours) != np.isnan(theirs)
    assert not nan_differs.any(), f"{nan_differs.sum()} NaN positions differ from PyTorch's: {np.argwhere(nan_differs)[:5]}"
    assert np.array_equal(ours[np.isinf(ours)], theirs[np.isinf(theirs)]) and np.array_equal(np.isinf(ours), np.isinf(theirs))
    finite = np.isfinite(theirs)
    assert np.linalg.norm(ours[finite] - theirs[finite]) <= 1e-5 * np.linalg.norm(theirs[finite])


# (spatial, kernel, stride, padding, dilation, groups): strided phases with one-tap and several-tap axes
# (the CPU's zero taps), 1D, 3D, dilation with asymmetric padding, groups
CONV_CASES = {
    "2d_3x3_s2": ((9, 8), (3, 3), 2, 1, 1, 1),
    "1d_s3": ((13,), (4,), 3, 1, 1, 1),
    "3d_1x3x3_s122": ((3, 7, 6), (1, 3, 3), (1, 2, 2), (0, 1, 1), 1, 1),
    "2d_3x2_s21_dilated": ((9, 7), (3, 2), (2, 1), ((1, 0), (2, 1)), (1, 2), 1),
    "2d_3x3_s2_g2": ((8, 9), (3, 3), 2, 1, 1, 2),
    # the CPU's taps forms: one phase (and the weight gradient's), and phases that tile grad_in (the transposed store)
    "2d_3x3_s1_g2": ((8, 9), (3, 3), 1, 1, 1, 2),
    "2d_3x3_s2_g2_tiled": ((8, 8), (3, 3), 2, 1, 1, 2),
    # pointwise: the CPU compiles it without IREE's transpose propagation (llvm-cpu.json's pointwise rule)
    "2d_1x1_pointwise": ((8, 9), (1, 1), 1, 0, 1, 1),
}
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _torch_padding(padding, rank):
    """(pad for F.pad, symmetric part for the convolution): PyTorch's convolution takes symmetric padding only."""
    per_axis = (padding,) * rank if isinstance(padding, int) else padding
    pairs = [p if isinstance(p, tuple) else (p, p) for p in per_axis]
    return [v for lo, hi in reversed(pairs) for v in (lo, hi)]


def _conv_case(name, batch=2, channels=(4, 6)):
    spatial, kernel, stride, padding, dilation, groups = CONV_CASES[name]
    c, k = channels
    x = torch.randn(batch, c, *spatial)
    w = torch.randn(k, c // groups, *kernel) / np.sqrt(c // groups * np.prod(kernel))
    kwargs = dict(stride=stride, padding=padding, dilation=dilation)
    return x, w, kwargs, groups


def _torch_forward(x, w, kwargs, groups):
    rank = x.dim() - 2
    padded = F.pad(x, _torch_padding(kwargs["padding"], rank))
    return _CONV[rank](padded, w, stride=kwargs["stride"], dilation=kwargs["dilation"], groups=groups)


@pytest.mark.parametrize("form", _forms("conv_bwd_data"), indirect=True)
@pytest.mark.parametrize("name", [n for n in CONV_CASES if CONV_CASES[n][-1] == 1])
def test_conv_bwd_data(name, form, seeded):
    x, w, kwargs, _ = _conv_case(name)
    x.requires_grad_()
    y = _torch_forward(x, w, kwargs, 1)
    grad = poison(torch.randn_like(y))
    y.backward(grad)
    ours = ops.conv_bwd_data(grad.numpy(), w.numpy(), input_shape=tuple(x.shape), layout=_LAYOUT[x.dim() - 2], **kwargs)
    assert_same_pattern(ours, x.grad)


@pytest.mark.parametrize("form", _forms("grouped_conv_bwd_data"), indirect=True)
@pytest.mark.parametrize("name", ["2d_3x3_s2_g2", "3d_1x3x3_s122", "2d_3x3_s1_g2", "2d_3x3_s2_g2_tiled"])
def test_grouped_conv_bwd_data_with_nan_in_a_d_tensor(name, form, seeded):
    """grad_in = acc * alpha + d0: NaN and infinities in grad_out and in d0, positions no phase reaches too."""
    x, w, kwargs, groups = _conv_case(name)
    x.requires_grad_()
    y = _torch_forward(x, w, kwargs, groups)
    grad, d0 = poison(torch.randn_like(y)), poison(torch.randn_like(x))
    y.backward(grad)
    ours = ops.grouped_conv_bwd_data(
        grad.numpy(), w.numpy(), (d0.numpy(),), groups=groups, input_shape=tuple(x.shape),
        layout=_LAYOUT[x.dim() - 2], epilogue="acc * alpha + d0", alpha=0.5, **kwargs)
    assert_same_pattern(ours, x.grad * 0.5 + d0)


@pytest.mark.parametrize("form", _forms("depthwise_conv_bwd_data"), indirect=True)
@pytest.mark.parametrize("spatial, kernel, stride", [((8, 10), (3, 3), 2), ((9, 6), (5, 3), (3, 1))])
def test_depthwise_conv_bwd_data(spatial, kernel, stride, form, seeded):
    """The GPUs' merged form multiplies a zero phase-filter tap by grad_out only where the filter reaches: an
    infinite grad_out stays out of the positions its taps miss (3x3 stride 2: each 2x2 block's 16 products, 9 real)."""
    x = torch.randn(2, 4, *spatial, requires_grad=True)
    w = torch.randn(4, 1, *kernel)
    y = F.conv2d(x, w, stride=stride, padding=1, groups=4)
    grad = poison(torch.randn_like(y))
    y.backward(grad)
    ours = ops.grouped_conv_bwd_data(grad.numpy(), w.numpy(), groups=4, input_shape=tuple(x.shape), stride=stride,
                                     padding=1, layout="NCHW")
    assert_same_pattern(ours, x.grad)


@pytest.mark.parametrize("form", _forms("grouped_conv_bwd_weight"), indirect=True)
@pytest.mark.parametrize("name", ["2d_3x3_s2_g2", "1d_s3", "3d_1x3x3_s122", "2d_3x3_s1_g2"])
@pytest.mark.parametrize("poisoned", ["grad_out", "x"])
def test_grouped_conv_bwd_weight(name, poisoned, form, seeded):
    x, w, kwargs, groups = _conv_case(name)
    if poisoned == "x":
        x = poison(x, count=1)  # each poisoned element reaches a whole (k, c) slice of the weight gradient
    w64 = w.double().requires_grad_()
    y = _torch_forward(x.double(), w64, kwargs, groups)
    grad = torch.randn_like(y, dtype=torch.float32)
    if poisoned == "grad_out":
        grad = poison(grad, count=1)
    y.backward(grad.double())
    ours = ops.grouped_conv_bwd_weight(
        x.numpy(), grad.numpy(), groups=groups, filter_spatial=tuple(w.shape[2:]), layout=_LAYOUT[x.dim() - 2], **kwargs)
    assert_same_pattern(ours, w64.grad)


@pytest.mark.parametrize("form", _forms("maxpool2d_bwd"), indirect=True)
@pytest.mark.parametrize("source", ["indices", "x"])
def test_maxpool2d_bwd_with_nan_in_x_and_grad_out(source, form, seeded):
    x = poison(torch.randn(2, 3, 11, 10)).requires_grad_()
    kwargs = dict(kernel_size=3, stride=2, padding=1)
    y, indices = F.max_pool2d(x, **kwargs, return_indices=True)
    grad = poison(torch.randn_like(y), count=2)
    y.backward(grad)
    y_ours, indices_ours = ops.maxpool2d_fwd(x.detach().numpy(), layout="NCHW", **kwargs)
    assert_same_pattern(y_ours, y)
    assert np.array_equal(indices_ours, indices.numpy())
    given = {"indices": indices_ours} if source == "indices" else {"x": x.detach().numpy()}
    ours = ops.maxpool2d_bwd(grad.numpy(), input_shape=tuple(x.shape), layout="NCHW", **kwargs, **given)
    assert_same_pattern(ours, x.grad)


@pytest.mark.parametrize("form", _forms("maxpool2d_bwd"), indirect=True)
@pytest.mark.parametrize("source", ["indices", "x"])
def test_maxpool2d_bwd_through_a_relu(source, form, seeded):
    """A ReLU before the pooling (its backward fused, from the forward's output), NaN and infinities in its input
    and in grad_out: PyTorch's ReLU-then-pool gradient pattern (a NaN maximum passes the gradient, 0 stops it)."""
    x = torch.randn(2, 3, 11, 10)
    x[0, 0, :5, :5] = -1.0  # windows whose maximum is 0
    x = poison(x).requires_grad_()
    kwargs = dict(kernel_size=3, stride=2, padding=1)
    relu_output = torch.relu(x)
    y, indices = F.max_pool2d(relu_output, **kwargs, return_indices=True)
    grad = poison(torch.randn_like(y), count=2)
    y.backward(grad)
    assert torch.isnan(y).any() and (y == 0).any()
    given = {"indices": indices.numpy()} if source == "indices" else {"x": relu_output.detach().numpy()}
    ours = ops.maxpool2d_bwd(grad.numpy(), input_shape=tuple(x.shape), layout="NCHW", **kwargs, **given,
                             output=y.detach().numpy())
    assert_same_pattern(ours, x.grad)


@pytest.mark.parametrize("form", _forms("avgpool3d_bwd"), indirect=True)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avgpool3d_bwd(count_include_pad, form, seeded):
    x = torch.randn(2, 3, 6, 7, 5, requires_grad=True)
    kwargs = dict(kernel_size=3, stride=2, padding=1, count_include_pad=count_include_pad)
    y = F.avg_pool3d(x, **kwargs)
    grad = poison(torch.randn_like(y), count=2)
    y.backward(grad)
    ours = ops.avgpool3d_bwd(grad.numpy(), input_shape=tuple(x.shape), layout="NCDHW", **kwargs)
    assert_same_pattern(ours, x.grad)


@pytest.mark.parametrize("mask_from", ["output", "input"])
@pytest.mark.parametrize("form", _forms("avgpool3d_bwd"), indirect=True)
def test_avgpool3d_bwd_through_a_relu(form, mask_from, seeded):
    """relu_output (the fused ReLU's output, or its input, as ops.torch passes it: <= 0 at the same positions) with
    NaN, infinities and zeros of both signs, grad_out with NaN and infinities: PyTorch's ReLU-then-pool backward
    pattern (a NaN output passes the gradient; 0 and -0 stop it)."""
    x = poison(torch.randn(2, 3, 6, 7, 5), count=4)
    x.view(-1)[torch.randperm(x.numel())[:8]] = torch.tensor([0.0, -0.0] * 4)
    x.requires_grad_()
    kwargs = dict(kernel_size=3, stride=2, padding=1)
    relu_output = torch.relu(x)
    y = F.avg_pool3d(relu_output, **kwargs)
    grad = poison(torch.randn_like(y), count=2)
    y.backward(grad)
    mask = relu_output if mask_from == "output" else x
    ours = ops.avgpool3d_bwd(grad.numpy(), input_shape=tuple(x.shape), layout="NCDHW",
                             relu_output=mask.detach().numpy(), **kwargs)
    assert torch.isnan(relu_output).any() and (relu_output == 0).any()
    assert_same_pattern(ours, x.grad)
