"""build_tools/model_bench.py without a GPU: its step benchmark on a small model (not torchvision's) on the CPU,
two steps, ours following PyTorch and the report holding its fields (the GPU run adds device times and graphs)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from build_tools import model_bench, model_layers  # noqa: E402


def test_the_step_benchmark_of_a_small_model_on_the_cpu_follows_pytorch_and_reports_every_field(capsys):
    torch.manual_seed(0)
    # the stem's input needs no gradient (weight gradient only); the ReLU is fused into the max-pool
    reference = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Dropout(0.5), nn.Linear(4 * 4 * 4, 5))
    ours, left, plain = model_layers.converted(reference)
    assert left == [] and plain == [] and ours is not reference
    batches = model_bench.batches_for(torch.randn(2, 3, 8, 8), 2, seed=1, classes=5)
    result = model_bench.bench_pair(reference, ours, batches, steps=2, modes=model_bench.TF32_MODES)

    assert result["kernel_problems"] == 3  # the max-pool's forward and backward, the stem's weight gradient
    assert result["fallbacks"] == [] and result["warnings"] == []
    for mode in ("on", "off"):
        first = result["first_step"][mode]
        assert first["parameters"] == 6 and first["loss_difference"] < 1e-6 and first["gradient_difference"] < 1e-5
        # the stem's bias before a batch norm: a gradient of rounding alone, no relative agreement to expect
        assert first["worst_parameter"] == "0.bias"
        eager = result[f"eager_tf32_{mode}"]
        assert eager["max_loss_difference"] < 1e-5  # the same dropout masks: the same seed for both models
        for label in ("pytorch", "ours"):
            assert len(eager[label]["losses"]) == 2 and eager[label]["host_ms"] > 0
            assert eager[label]["device_ms"] is None  # no CUDA events on the CPU
    assert "gradient_difference_vs_pytorch_off" in result["first_step"]["on"]
    assert not any(key.startswith("captured_") for key in result)  # CUDA graphs need a GPU

    model_bench.report({"model": "small", "config": "f32_nchw", "batch": 2, "device": "cpu", "modules": 3,
                        "precompile_s": 0.0, **result})
    printed = capsys.readouterr().out
    assert "no fallback, no ops.torch warning" in printed and "eager_tf32_off ours" in printed


def test_a_fallback_is_said_beside_the_figures():
    result = {"fallbacks": ["conv_bwd_data_x"], "warnings": ["ops.torch: conv_bwd_data conv_bwd_data_x: ..."]}
    assert "INCLUDES 1 PYTORCH FALLBACK(S) (conv_bwd_data_x); 1 ops.torch warning(s)" in model_bench.fallback_note(
        result)
