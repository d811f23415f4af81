"""build_tools/layer_bench.py records every kernel call of a converted step, a convolution's paired launch as its
two calls, and times each layer as the step runs it; a fused pooling's PyTorch side is PyTorch's pooling then its
ReLU backward."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ops.torch as otorch  # noqa: E402
from build_tools import layer_bench  # noqa: E402
from ops.torch import kernels  # noqa: E402


def test_the_layers_of_a_converted_step_as_the_step_launches_them(seeded):
    model = otorch.convert(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                                         nn.Conv2d(4, 4, 3, padding=1), nn.Flatten()))
    assert model[3].input_activation == "relu"  # the ReLU fused into the pooling
    calls = layer_bench.kernel_calls(model, torch.randn(2, 3, 8, 8))
    assert [op.name for op, _ in calls] == ["max_pool2d", "conv_backward_input", "conv_backward_weight",
                                            "max_pool2d_backward", "conv_backward_weight"]
    launches = layer_bench.by_layer(calls)
    assert [[op.name for op, _ in layer.calls] for layer in launches] == [
        ["max_pool2d"], ["conv_backward_input", "conv_backward_weight"], ["max_pool2d_backward"],
        ["conv_backward_weight"]]
    paired = []
    original = kernels.paired_gradients
    try:
        kernels.paired_gradients = lambda *args: paired.append(args) or original(*args)
        for layer in launches:
            layer.ours()
    finally:
        kernels.paired_gradients = original
    assert len(paired) == 1  # the two-gradient layer, as one launch


def test_a_fused_poolings_pytorch_side_is_its_pooling_then_the_relu_backward(seeded):
    x = torch.randn(2, 3, 8, 8).relu()
    y, indices = F.max_pool2d(x, 2, return_indices=True)
    grad = torch.randn_like(y)
    args = (grad, indices, y, list(x.shape), [2, 2], [2, 2], [0, 0], [1, 1], False)
    got = layer_bench._pytorch_pooling(kernels.max_pool2d_backward, args)()
    plain = kernels.max_pool2d_backward.fallback(grad, indices, None, *args[3:])
    assert got.shape == x.shape and torch.equal(got[got != 0], plain[got != 0])  # the mask only zeroes
