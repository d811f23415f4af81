"""Re-audit of the known-answer check's refusals against an independent reference: every compiled form of a set of
convolution problems, run with no check, on fresh random inputs, against PyTorch's float64 gradient (autograd of
``conv{1,2,3}d`` on an explicitly padded input), whole results; beside it, the check's own verdict on the module.

    python -m build_tools.audit --prepare [--sets wrong,bf16,train]     # here: compile every form for cuda:sm_80
    python -m build_tools.audit [--sets ...] [--json out.json]          # on the GPU (no compiler needed)

Sets: ``wrong`` and ``bf16`` (``build_tools.verify_run``'s: the sweep problems IREE 3.13 computed wrong on the H100,
the bfloat16 weight gradients of train.py's 2D model), ``train`` (every convolution gradient of train.py's two
models at their CUDA batches: float32 and channels-last float32, and bfloat16 channels-last for the 2D model),
``resnet`` (the ResNet layers the old batch sample refused). A module is *really wrong* where some position's
error exceeds the check's own tolerance formula with the magnitudes taken from PyTorch too (its gradient on the
inputs' absolute values); the verdict does not use this library's reference.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib

import numpy as np

from ops import compiler, known_answer, policy, registry
from ops.problem import ConvBwdWeightProblem, ConvProblem
from build_tools import verify_run

_RESNET = [dict(batch=64, in_channels=c, out_channels=k, input_spatial=(s, s), filter_spatial=(f, f), stride=st,
                padding=f // 2, layout=layout, dtype="float32")
           for c, k, s, f, st in ((64, 64, 8, 3, 1), (32, 64, 16, 1, 2), (32, 64, 16, 3, 2), (256, 64, 14, 1, 1))
           for layout in ("NCHW", "NHWC")]


def problems(name: str) -> list:
    if name in ("wrong", "bf16"):
        return [p for p in verify_run.problems(name) if isinstance(p, ConvProblem)]
    if name == "train":
        return train_problems()
    if name == "resnet":
        return [registry.module("conv_bwd_data").problem_from_params(**params) for params in _RESNET]
    raise SystemExit(f"unknown set {name!r}")


def train_problems() -> list:
    """The convolution gradients train.py's models call on CUDA (recorded: nothing runs)."""
    import torch

    import ops.torch as otorch
    from ops.torch import kernels
    from build_tools.train import BATCH, MODELS

    found = {}
    for model, dtype, channels_last in (("resnext2d", torch.float32, False), ("resnext2d", torch.float32, True),
                                        ("resnext2d", torch.bfloat16, True), ("cnn3d", torch.float32, False)):
        build, shape = MODELS[model]
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        net = otorch.convert(build().to(dtype=dtype, memory_format=fmt))
        x = torch.randn(BATCH["cuda"][model], *shape, dtype=dtype)
        x = x.to(memory_format=fmt) if x.dim() == 4 else x
        with kernels.recording() as recorded:
            net(x).float().sum().backward()
        found.update({p.name: p for p in recorded if isinstance(p, ConvProblem)})
    return list(found.values())


def forms(name: str, problem) -> list:
    """The forms audited: every one for ``wrong`` and ``bf16``; elsewhere the first three of a problem the old batch
    sample misjudged (a sampled backward-data whose weight or D tensor had the batch as its first extent), the
    first (the one served) of the others."""
    specs = policy.module_specs(problem, verify_run.CUDA)
    return specs if name in ("wrong", "bf16") else specs[:3] if sliced_by_the_old_sample(problem) else specs[:1]


def sliced_by_the_old_sample(problem) -> bool:
    """Whether check version 1 sliced an input that has no batch axis: it sliced each input of rank above 2 whose
    first extent equalled the batch, in sampled checks of batch-separable operators (not backward-weight)."""
    if isinstance(problem, ConvBwdWeightProblem) or problem.batch <= known_answer.KEPT:
        return False
    inputs = known_answer.inputs_for(problem)
    if not known_answer.sample_of(problem, inputs).axes:
        return False
    no_batch_axis = [problem.weight_shape, *(s for s in problem.d_shapes if s != problem.input_shape)]
    return any(len(shape) > 2 and shape[0] == problem.batch for shape in no_batch_axis)


def prepare(sets: list[str]) -> int:
    specs = [spec for name in sets for p in problems(name) for spec in forms(name, p)]
    failed = 0
    for spec in specs:
        try:
            compiler.find_or_compile([spec])
        except compiler.CompileError:
            failed += 1
    print(f"{len(specs) - failed} of {len(specs)} modules ready in {compiler.cache_dir()}; {failed} do not compile")
    return 0


# --- The independent reference: PyTorch's float64 autograd ---------------------------------------------------


def torch_reference(problem, inputs: list, device):
    """grad_in or grad_w of ``problem`` in float64 by PyTorch's autograd, in the problem's layout (a NumPy array)."""
    import torch
    import torch.nn.functional as F

    def logical(array, weight=False):  # the problem's layout -> PyTorch's (N, C, *spatial) / (K, C, *filter)
        t = torch.from_numpy(np.asarray(array, np.float64)).to(device)
        return t.movedim(-1, 1) if problem.channels_last else t

    conv = getattr(F, f"conv{problem.rank}d")
    pads = [p for lo, hi in reversed(problem.padding) for p in (lo, hi)]
    x_shape = (problem.batch, problem.groups * problem.in_channels, *problem.input_spatial)
    w_shape = (problem.groups * problem.out_channels, problem.in_channels, *problem.filter_spatial)
    if isinstance(problem, ConvBwdWeightProblem):
        x, grad_out = logical(inputs[0]), logical(inputs[1])
        w = torch.zeros(w_shape, dtype=torch.float64, device=device, requires_grad=True)
        leaf = w
    else:
        grad_out, w = logical(inputs[0]), logical(inputs[1])
        x = torch.zeros(x_shape, dtype=torch.float64, device=device, requires_grad=True)
        leaf = x
    y = conv(F.pad(x, pads), w, stride=problem.stride, dilation=problem.dilation, groups=problem.groups)
    (grad,) = torch.autograd.grad(y, leaf, grad_out)
    grad = grad.movedim(1, -1) if problem.channels_last else grad
    result = grad.cpu().numpy()
    if getattr(problem, "epilogue", None) is not None:  # grouped_conv_bwd_data's D tensors, evaluated in float64
        module = registry.module(problem)
        ds = {f"d{j}": np.asarray(d, np.float64) for j, d in enumerate(inputs[2:2 + len(problem.d_shapes)])}
        values = {"acc": result, **ds, **module.param_values(problem, inputs)}
        from ops import epilogue as epilogues
        result = np.broadcast_to(epilogues.evaluate(problem.epilogue.root, values), result.shape)
    return result


def independent_verdict(problem, inputs: list, got, device) -> dict:
    """``got`` (the whole result) against PyTorch's float64 gradient, position by position, with the check's
    tolerance formula on PyTorch's gradient of the inputs' absolute values."""
    want = torch_reference(problem, inputs, device)
    absolute = [np.abs(np.asarray(a, np.float64)) for a in inputs[:2]]
    magnitude = torch_reference(problem, absolute, device) if getattr(problem, "epilogue", None) is None else \
        _convolution_magnitude(problem, absolute, device) + np.abs(want)
    tolerance = known_answer.tolerance(problem, 0, magnitude, want)
    got64 = np.asarray(got, np.float64)
    error = np.abs(got64 - want)
    ratio = np.where(np.isfinite(got64), error / tolerance, np.inf)
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    norm = float(np.linalg.norm(np.nan_to_num(got64 - want, nan=1e30)) / max(np.linalg.norm(want), 1e-300))
    return {"right": bool(ratio.max() <= 1.0), "worst": float(ratio.max()), "at": [int(i) for i in worst],
            "got": float(got64[worst]), "expected": float(want[worst]), "relative_error": norm}


def _convolution_magnitude(problem, absolute: list, device):
    """The convolution's sum of term magnitudes alone (no epilogue), from PyTorch."""
    import dataclasses

    return torch_reference(dataclasses.replace(problem, epilogue=None), absolute, device)


# --- On the GPU: every form, unchecked, then judged both ways --------------------------------------------------


def audit(problem, specs: list, device) -> list:
    """Each of ``specs``, compiled forms of ``problem``: loaded as ops.torch loads it (the CUDA launcher, or IREE's
    runtime where it has no plan), run on fresh inputs with no check, judged against PyTorch; and the check's
    verdict on it."""
    from ops import arrays, executor, runtime
    from ops.launch import cuda as launcher
    from ops.torch import calls

    rng = np.random.default_rng(zlib.crc32(problem.name.encode()) + 7)  # not the check's inputs
    inputs = registry.module(problem).random_inputs(problem, rng)
    records = []
    for spec in specs:
        try:
            _, path, data = compiler.load_first([spec])
        except (RuntimeError, OSError) as error:  # not compiled (CompileError), not carried (MissingModuleError)
            records.append({"module": spec.name, "missing": str(error).splitlines()[0][:160]})
            continue
        plan = launcher.load(spec, path, data, device.index)
        if isinstance(plan, str):
            function = runtime.loaded_function(spec, data, "cuda", runtime.get_device("cuda"))
            run = lambda i, axes=(): arrays.known_run(function, problem, i, axes)  # noqa: E731
        else:
            kernel = executor.LaunchedCall(*plan, calls.host(device), problem)
            run = lambda i, axes=(): executor.known_run(kernel, i, axes)  # noqa: E731
        got = run(inputs).results[0]
        record = {"module": path.name, "path": "runtime" if isinstance(plan, str) else "launcher",
                  **independent_verdict(problem, inputs, got, device)}
        verdict = known_answer.verify(problem, run)
        record.update(check=verdict.describe(), check_passed=verdict.passed)
        records.append(record)
    return records


def run(sets: list[str], out: str | None) -> int:
    import torch

    device = torch.device("cuda", torch.cuda.current_device())
    report = {}
    for name in sets:
        report[name] = {p.name: audit(p, forms(name, p), device) for p in problems(name)}
        modules = [m for records in report[name].values() for m in records if "right" in m]
        wrong = [m for m in modules if not m["right"]]
        false_refusals = [m for m in modules if m["right"] and not m["check_passed"]]
        missed = [m for m in modules if not m["right"] and m["check_passed"]]
        print(f"\n== {name}: {len(report[name])} problems, {len(modules)} modules run; really wrong (PyTorch float64): "
              f"{len(wrong)}; refused by the check though right: {len(false_refusals)}; passed by it though wrong: "
              f"{len(missed)}")
        for problem, records in report[name].items():
            for m in records:
                if "right" in m and (not m["right"] or not m["check_passed"]):
                    print(f"   {m['module']} ({m['path']}): right={m['right']} worst={m['worst']:.3g}x "
                          f"rel={m['relative_error']:.2e}; check passed={m['check_passed']}")
    if out:
        with open(out, "w") as f:
            json.dump(report, f, indent=1)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="wrong,bf16,train,resnet")
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    return prepare(sets) if args.prepare else run(sets, args.json)


if __name__ == "__main__":
    sys.exit(main())
