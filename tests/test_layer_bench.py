"""build_tools/layer_bench.py records every kernel call of a converted step, a convolution's paired launch as its
two calls, and times each layer as the step runs it; a fused pooling's PyTorch side is PyTorch's pooling then its
ReLU backward. A torchvision model (a small one standing in, built through ``model_layers``) is benched in the
configuration and at the batch asked, with IREE's own GEMM beside each convolution."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import ops.torch as otorch  # noqa: E402
from build_tools import layer_bench, model_layers  # noqa: E402
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


def _small_build(name, config, device="cpu", seed=0, batch=None):
    """``model_layers.build``'s stand-in: a stem (weight gradient only), a ReLU fused into a max-pool, a convolution
    with both gradients, in ``config``'s dtype and memory format."""
    dtype, channels_last = model_layers.CONFIGS[config]
    fmt = model_layers.memory_format((3, 8, 8), channels_last)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 8, 3, padding=1, bias=False), nn.Flatten())
    x = torch.randn(batch or 5, 3, 8, 8)
    return (model.to(device=device, dtype=dtype, memory_format=fmt).train(),
            x.to(device=device, dtype=dtype).contiguous(memory_format=fmt))


def test_a_torchvision_model_is_benched_in_the_configuration_and_at_the_batch_asked(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(model_layers, "MODELS", {"small": (5, (3, 8, 8))})
    monkeypatch.setattr(model_layers, "build", _small_build)
    threads = torch.get_num_threads()
    out = tmp_path / "layers.json"
    try:
        assert layer_bench.main(["--models", "small", "--config", "f32_cl", "--batch", "3", "--repeat", "1",
                                 "--threads", "1", "--json", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    rows = json.loads(out.read_text())["rows"]
    assert [row["ops"] for row in rows] == [["max_pool2d"], ["conv_backward_input", "conv_backward_weight"],
                                            ["max_pool2d_backward"], ["conv_backward_weight"]]
    assert all(row["model"] == "small" and row["ours_ms"] > 0 and row["pytorch_ms"] > 0 for row in rows)
    convolutions = [row for row in rows if row["ops"][0].startswith("conv")]
    assert all(row["gemm_ms"] > 0 and row["gflops"] > 0 for row in convolutions)  # IREE's own GEMM beside each
    assert all("gemm_ms" not in row and row["megabytes"] > 0 for row in rows if row not in convolutions)
    problems = [layer_bench.problem_of(op, args) for op, args in layer_bench.kernel_calls(
        *layer_bench.model_and_input("small", 0, "f32_cl", 3))]
    assert {p.batch for p in problems} == {3}  # --batch, not the model's own 5
    assert all(p.name in {name for row in rows for name in row["problems"]} for p in problems)
    assert "small" in capsys.readouterr().out


def test_the_hand_written_sets_keep_their_batch_unless_one_is_asked():
    assert layer_bench.model_and_input("resnet", 0)[1].shape == (16, 3, 64, 64)
    assert layer_bench.model_and_input("resnet", 0, batch=2)[1].shape == (2, 3, 64, 64)
    model, x = layer_bench.model_and_input("mobilenetv2", 0, "f32_cl")  # --config is torchvision's models'
    assert x.is_contiguous() and isinstance(model[0], otorch.Conv2d)


def test_a_convolutions_pytorch_side_computes_the_gradients_its_calls_compute(seeded):
    """Stride, padding and dilation read from the kernel ops' arguments (the float32 split they end with is ours
    alone): PyTorch's one ``convolution_backward`` gives what each call's own fallback gives."""
    model = otorch.convert(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(),
                                         nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, bias=False)))
    launches = layer_bench.by_layer(layer_bench.kernel_calls(model, torch.randn(2, 3, 9, 9)))
    assert [[op.name for op, _ in layer.calls] for layer in launches] == [
        ["conv_backward_input", "conv_backward_weight"], ["conv_backward_weight"]]
    for layer in launches:
        grad_input, grad_weight = layer.pytorch()()
        expected = {op.name: op.fallback(*args) for op, args in layer.calls}
        torch.testing.assert_close(grad_weight, expected["conv_backward_weight"])
        if "conv_backward_input" in expected:  # the ReLU's mask applied, as ours fuses it
            torch.testing.assert_close(grad_input, expected["conv_backward_input"])
            assert (grad_input == 0).any()
