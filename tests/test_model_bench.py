"""build_tools/model_bench.py without a GPU: its step benchmark on a small model (not torchvision's) on the CPU,
two steps, ours following PyTorch and the report holding its fields (the GPU run adds device times and graphs);
and its CPU run from the command line (``--device cpu``: no TF32 labels, interleaved rounds), the small model
standing in for torchvision's."""

from __future__ import annotations

import json
import statistics

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


def _small_build(name, config, device="cpu", seed=0, batch=None):
    """``model_layers.build``'s stand-in: the small model above (400 classes, model_bench's targets' range) in
    ``config``'s memory format."""
    dtype, channels_last = model_layers.CONFIGS[config]
    fmt = model_layers.memory_format((3, 8, 8), channels_last)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Dropout(0.5), nn.Linear(4 * 4 * 4, model_bench.CLASSES))
    x = torch.randn(batch or 5, 3, 8, 8, generator=torch.Generator().manual_seed(seed + 1))
    return (model.to(device=device, dtype=dtype, memory_format=fmt).train(),
            x.to(device=device, dtype=dtype).contiguous(memory_format=fmt))


@pytest.fixture
def small_model(monkeypatch):
    monkeypatch.setattr(model_layers, "MODELS", {"small": (5, (3, 8, 8))})
    monkeypatch.setattr(model_layers, "build", _small_build)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_the_cpu_run_measures_one_unlabelled_setting_in_interleaved_rounds(small_model, tmp_path, capsys):
    out = tmp_path / "cpu.json"
    assert model_bench.main(["--device", "cpu", "--threads", "1", "--models", "small", "--config", "f32_nchw",
                             "--batch", "2", "--steps", "2", "--rounds", "3", "--json", str(out)]) == 0
    [r] = json.loads(out.read_text())
    assert torch.get_num_threads() == 1 and r["device"] == "cpu (threads 1)"
    assert r["batch"] == 2 and r["modules"] == 3 and r["fallbacks"] == [] and r["warnings"] == []
    assert list(r["first_step"]) == ["cpu"]  # one setting: no TF32 on, off or "vs PyTorch off" on the CPU
    first = r["first_step"]["cpu"]
    assert first["loss_difference"] < 1e-6 and first["gradient_difference"] < 1e-5
    assert "gradient_difference_vs_pytorch_off" not in first
    assert [k for k in r if k.startswith(("eager", "captured"))] == ["eager"]
    eager = r["eager"]
    assert len(eager["rounds"]) == len(eager["host_ratio"]) == 3 and eager["max_loss_difference"] < 1e-5
    for one, ratio in zip(eager["rounds"], eager["host_ratio"]):
        assert ratio == one["host_ratio"] == one["ours_host_ms"] / one["pytorch_host_ms"]
        assert one["ours_device_ms"] is None and one["pytorch_device_ms"] is None
    assert eager["host_ratio_median"] == statistics.median(eager["host_ratio"])
    for label in ("pytorch", "ours"):
        assert len(eager[label]["losses"]) == 6  # three rounds of two steps, the models training on
        assert eager[label]["host_ms"] == statistics.median(one[f"{label}_host_ms"] for one in eager["rounds"])
    assert eager["ours"]["losses"][2:] != eager["ours"]["losses"][:4]  # later rounds: later steps, not repeats

    printed = capsys.readouterr().out
    assert "on cpu (threads 1)" in printed and "TF32" not in printed and "(medians; ours / PyTorch host)" in printed
    assert "first step: loss" in printed and "eager ours" in printed
    ratios = " ".join(f"{ratio:.2f}x" for ratio in eager["host_ratio"])
    assert f"eager ours / PyTorch host time by round: {ratios}; median {eager['host_ratio_median']:.2f}x" in printed


def test_the_device_and_tf32_arguments_say_what_is_wrong(small_model, capsys):
    with pytest.raises(SystemExit):
        model_bench.main(["--device", "cpu", "--tf32", "on", "--models", "small"])
    assert "--tf32 is cuDNN's setting: the CPU has no TF32" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        model_bench.main(["--device", "local-task", "--models", "small"])
    assert "the steps run on cpu or cuda (an IREE driver only with --compile-only)" in capsys.readouterr().err
    assert model_bench.running_modes(model_bench.arguments(["--tf32", "off"])[0], None) == {"off": False}
    assert model_bench.running_modes(model_bench.arguments([])[0], None) == model_bench.TF32_MODES  # the GPU's


def test_compile_only_takes_an_iree_driver_and_cpu_for_local_task(small_model, capsys):
    assert model_bench.main(["--compile-only", "--device", "cpu", "--models", "small", "--config", "f32_nchw",
                             "--batch", "2"]) == 0
    assert "small f32_nchw: 3 modules for local-task" in capsys.readouterr().out
