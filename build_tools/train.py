"""A real training step: two small CNNs trained with this library's backward kernels and with plain PyTorch.

    python -m build_tools.train --device cpu [--steps 20]
    python -m build_tools.train --device cuda --steps 20
    python -m build_tools.train --device cuda --compile-only      # build the CUDA modules here, run them elsewhere

Models (synthetic data, fixed seed):
- ``resnext2d``: a ResNeXt-style 2D CNN: stem convolution, max-pool 3x3/2, two pre-activation bottlenecks with
  grouped 3x3 convolutions (BN -> ReLU -> Conv, the ReLU fused into the convolution by ``otorch.convert``), the
  second with stride 2 and a strided 1x1 shortcut, a depthwise 3x3 layer, global pooling and a linear head.
- ``cnn3d``: a 3D CNN: convolutions (one grouped) with average pooling between them.

Each model is built once, copied, and one copy is converted with ``otorch.convert``; both train from the same
initialization on the same batches with SGD (momentum 0.9). The script prints both losses per step, at step 1
the largest normwise relative difference of every parameter's gradient, and the median step time of each.
PyTorch's steps run first, then ours; ``--interleave`` makes them take turns step by step, so that a machine
whose speed drifts (a shared virtual machine) slows both alike.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from typing import Callable

import torch
from torch import nn

import ops.torch as otorch


class Bottleneck(nn.Module):
    """Pre-activation ResNeXt bottleneck: (BN, ReLU, 1x1) -> (BN, ReLU, grouped 3x3) -> (BN, ReLU, 1x1), plus a shortcut."""

    def __init__(self, cin: int, cout: int, groups: int, stride: int):
        super().__init__()
        width = cout // 2
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, width, 1, bias=False),
            nn.BatchNorm2d(width), nn.ReLU(), nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=groups, bias=False),
            nn.BatchNorm2d(width), nn.ReLU(), nn.Conv2d(width, cout, 1, bias=False),
        )
        self.shortcut = nn.Conv2d(cin, cout, 1, stride=stride, bias=False) if (stride, cin) != (1, cout) else nn.Identity()

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


def resnext2d(classes: int = 10) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
        Bottleneck(32, 64, groups=8, stride=1),
        Bottleneck(64, 128, groups=8, stride=2),
        nn.BatchNorm2d(128), nn.ReLU(), nn.Conv2d(128, 128, 3, padding=1, groups=128, bias=False),  # depthwise
        nn.BatchNorm2d(128), nn.ReLU(), nn.Conv2d(128, 64, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes),
    )


def cnn3d(classes: int = 10) -> nn.Module:
    return nn.Sequential(
        nn.Conv3d(3, 16, 3, padding=1, bias=False), nn.BatchNorm3d(16), nn.ReLU(), nn.AvgPool3d(2),
        nn.Conv3d(16, 32, 3, padding=1, groups=4, bias=False), nn.BatchNorm3d(32), nn.ReLU(), nn.AvgPool3d(2),
        nn.Conv3d(32, 32, (1, 3, 3), padding=(0, 1, 1)),
        nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(32, classes),
    )


MODELS = {"resnext2d": (resnext2d, (3, 32, 32)), "cnn3d": (cnn3d, (3, 8, 32, 32))}
BATCH = {"cpu": {"resnext2d": 16, "cnn3d": 4}, "cuda": {"resnext2d": 128, "cnn3d": 16}}


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def model_memory_format(name: str, channels_last: bool):
    """channels_last for the 2D model when asked (the 3D model stays contiguous)."""
    return torch.channels_last if channels_last and len(MODELS[name][1]) == 3 else torch.contiguous_format


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Run:
    """One model's training (SGD, momentum 0.9): per step its loss and time, and step 1's gradients."""

    def __init__(self, model: nn.Module):
        self.model, self.optimizer = model, torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
        self.losses, self.times, self.gradients = [], [], None

    def step(self, x: torch.Tensor, y: torch.Tensor, loss_fn: Callable, device: torch.device) -> None:
        _synchronize(device)
        started = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(self.model(x).float(), y)
        loss.backward()
        if self.gradients is None:  # before the optimizer reads them: what the step's kernels produced
            self.gradients = {n: p.grad.detach().clone() for n, p in self.model.named_parameters()}
        self.optimizer.step()
        _synchronize(device)
        self.times.append(time.perf_counter() - started)
        self.losses.append(loss.item())


def train(name: str, device: torch.device, steps: int, batch: int, dtype: torch.dtype, channels_last: bool,
          seed: int, interleave: bool = False) -> dict:
    """Both models' ``steps`` steps: PyTorch's, then ours; or, with ``interleave``, taking turns step by step (so
    that a machine whose speed drifts slows both alike)."""
    build, sample_shape = MODELS[name]
    torch.manual_seed(seed)
    reference = build().to(device=device, dtype=dtype)
    memory_format = model_memory_format(name, channels_last)
    reference = reference.to(memory_format=memory_format)
    ours = otorch.convert(copy.deepcopy(reference))
    generator = torch.Generator(device="cpu").manual_seed(seed + 1)
    data = [
        (torch.randn(batch, *sample_shape, generator=generator).to(device=device, dtype=dtype, memory_format=memory_format),
         torch.randint(0, 10, (batch,), generator=generator).to(device))
        for _ in range(min(steps, 4))
    ]
    loss_fn = nn.CrossEntropyLoss()
    # step 1's gradients in float64 (PyTorch's own), against which both float runs are measured
    exact = copy.deepcopy(reference).double()
    loss_fn(exact(data[0][0].double()), data[0][1]).backward()
    exact_grads = {n: p.grad for n, p in exact.named_parameters()}
    started = time.perf_counter()
    otorch.precompile(ours, data[0][0])
    precompile_s = time.perf_counter() - started
    runs = {"pytorch": _Run(reference), "ours": _Run(ours)}
    order = ([(step, label) for step in range(steps) for label in runs] if interleave
             else [(step, label) for label in runs for step in range(steps)])
    for step, label in order:
        runs[label].step(*data[step % len(data)], loss_fn, device)
    (torch_losses, torch_times, torch_grads), (our_losses, our_times, our_grads) = (
        (r.losses, r.times, r.gradients) for r in runs.values())
    grad_differences = {n: (relative(our_grads[n], torch_grads[n]), relative(our_grads[n], exact_grads[n]),
                            relative(torch_grads[n], exact_grads[n])) for n in torch_grads}
    return {
        "model": name, "device": str(device), "dtype": str(dtype).replace("torch.", ""), "batch": batch,
        "channels_last": memory_format is torch.channels_last, "steps": steps, "interleaved": interleave,
        "precompile_s": precompile_s,
        "losses_pytorch": torch_losses, "losses_ours": our_losses,
        "max_loss_difference": max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(our_losses, torch_losses)),
        "step1_gradient_difference": grad_differences,
        "median_step_ms_pytorch": 1e3 * statistics.median(torch_times[1:] or torch_times),
        "median_step_ms_ours": 1e3 * statistics.median(our_times[1:] or our_times),
    }


def report(result: dict) -> None:
    print(f"\n== {result['model']} on {result['device']}, {result['dtype']}, batch {result['batch']}"
          f"{', channels_last' if result['channels_last'] else ''} (modules ready in {result['precompile_s']:.1f} s)")
    print(f"{'step':>4}  {'loss (PyTorch)':>15}  {'loss (ours)':>15}  {'rel. diff':>9}")
    for step, (a, b) in enumerate(zip(result["losses_pytorch"], result["losses_ours"]), 1):
        print(f"{step:>4}  {a:>15.7f}  {b:>15.7f}  {abs(b - a) / max(abs(a), 1e-30):>9.1e}")
    differences = result["step1_gradient_difference"]
    print(f"step 1 gradients of {len(differences)} parameters, normwise relative difference (largest first; "
          "ours vs PyTorch, then each against PyTorch in float64):")
    for n, (mutual, ours, theirs) in sorted(differences.items(), key=lambda item: -item[1][0])[:5]:
        print(f"  {n:<24} {mutual:.1e}   ours {ours:.1e}   PyTorch {theirs:.1e}")
    print(f"  worst against float64: ours {max(d[1] for d in differences.values()):.1e}, "
          f"PyTorch {max(d[2] for d in differences.values()):.1e}")
    print(f"median step: PyTorch {result['median_step_ms_pytorch']:.2f} ms, ours {result['median_step_ms_ours']:.2f} ms"
          + (" (steps interleaved)" if result["interleaved"] else ""))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--models", default="resnext2d,cnn3d")
    parser.add_argument("--batch", type=int, help="batch size (default: per model and device)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    parser.add_argument("--channels-last", action="store_true", help="the 2D model and its data in channels_last")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (the CPU)")
    parser.add_argument("--compile-only", action="store_true",
                        help="only compile the modules the steps need (for --device; no GPU needed), then stop")
    parser.add_argument("--interleave", action="store_true",
                        help="the two models' steps take turns (default: PyTorch's steps, then ours)")
    parser.add_argument("--no-tf32", action="store_true",
                        help="float32 convolutions in full float32 on both sides: PyTorch's without TF32 "
                             "(torch.backends.cudnn.allow_tf32 = False), ours without the bfloat16 x 3 weight gradients")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    torch.backends.cudnn.allow_tf32 = not args.no_tf32
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    names = args.models.split(",")
    if args.compile_only:
        for name in names:
            build, sample_shape = MODELS[name]
            memory_format = model_memory_format(name, args.channels_last)
            model = otorch.convert(build().to(dtype=dtype, memory_format=memory_format))
            example = torch.randn(args.batch or BATCH[args.device][name], *sample_shape).to(dtype=dtype,
                                                                                            memory_format=memory_format)
            paths = otorch.precompile(model, example, device="local-task" if args.device == "cpu" else args.device)
            print(f"{name}: {len(paths)} modules")
        return 0
    device = torch.device(args.device)
    results = []
    for name in names:
        result = train(name, device, args.steps, args.batch or BATCH[args.device][name], dtype, args.channels_last,
                       args.seed, args.interleave)
        report(result)
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
