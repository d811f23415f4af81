"""Where a real model's GPU step spends its device time: every kernel of one eager training step, PyTorch's model
and its converted copy, from CUPTI (``torch.profiler``, which sees IREE's kernels like PyTorch's).

    python -m build_tools.model_bench --compile-only --models resnet50 --config f32_nchw   # here: the modules
    python -m build_tools.step_profile --models resnet50 --config f32_nchw [--tf32 on|off] [--top 25] [--dispatches]

Per model and side: the step's summed kernel time, split into this library's kernels (IREE's dispatches, named
after their module's function: the operator and its problem) and PyTorch's own (batch norm, ReLU, the forward
convolutions, the optimizer...); then the ``--top`` kernels by their total time in the step, with their count.
IREE's dispatches of one module are summed under the module's problem name, so each row is one layer's gradient
(a convolution's backward-data, its weight gradient, a pooling backward); ``--dispatches`` lists each dispatch of
those modules instead (the split, the contraction, the store...). The step is the one ``model_bench``
times (zero_grad, forward, backward, SGD with momentum), after three warm-up steps.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import torch

import ops.torch as otorch
from build_tools import bench, model_bench, model_layers
from build_tools.step_bench import warm_up

# an IREE dispatch's kernel name: <module function>_dispatch_<n>_<what it computes>
_DISPATCH = re.compile(r"^(?P<function>.+?)_dispatch_\d+")


def owner(kernel: str) -> tuple[str, str]:
    """("ours", the module's function: the problem name) for an IREE dispatch, else ("pytorch", the kernel name)."""
    match = _DISPATCH.match(kernel)
    return ("ours", match["function"]) if match else ("pytorch", kernel)


def profile_step(model, optimizer, x, y) -> dict[str, dict]:
    """Each kernel of one eager training step (``bench.kernel_times``, after ``warm_up``'s steps): {kernel name:
    {"side", "module", "us", "count"}} (``owner``)."""
    warm_up(model, x, y, model_bench.LOSS, optimizer)
    step = bench.kernel_times(lambda: model_bench.train_step(model, optimizer, x, y), calls=1)
    return {row["kernel"]: dict(zip(("side", "module"), owner(row["kernel"])), us=row["us"], count=int(row["count"]))
            for row in step}


def profile_model(name: str, config: str, tf32: bool, batch: int | None) -> dict:
    """Both sides' kernel rows of ``name``'s step in ``config`` under cuDNN's TF32 setting ``tf32``."""
    reference, x = model_layers.build(name, config, "cuda", batch=batch)
    ours, _, _ = model_layers.converted(reference)
    otorch.precompile(ours, x, progress=False)
    y = torch.randint(0, model_bench.CLASSES, (x.shape[0],), device=x.device)
    result = {"model": name, "config": config, "tf32": tf32, "batch": x.shape[0],
              "device": torch.cuda.get_device_name()}
    with model_bench.cudnn_tf32(tf32):
        for label, model in (("pytorch", reference), ("ours", ours)):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            result[label] = profile_step(model, optimizer, x, y)
    return result


def by_module(rows: dict) -> dict[str, dict]:
    """The kernel rows summed per module (IREE's dispatches under their problem; PyTorch's kernels as they are)."""
    modules: dict[str, dict] = {}
    for row in rows.values():
        summed = modules.setdefault(row["module"], {"side": row["side"], "us": 0.0, "count": 0})
        summed["us"] += row["us"]
        summed["count"] += row["count"]
    return modules


def report(r: dict, top: int, dispatches: bool) -> None:
    print(f"\n== {r['model']} {r['config']} batch {r['batch']}, TF32 {'on' if r['tf32'] else 'off'}, {r['device']}")
    for label in ("pytorch", "ours"):
        rows = r[label]
        total = sum(row["us"] for row in rows.values()) / 1e3
        library = sum(row["us"] for row in rows.values() if row["side"] == "ours") / 1e3
        print(f"{label}: {total:.2f} ms of kernels a step; this library's {library:.2f} ms, PyTorch's "
              f"{total - library:.2f} ms")
        if label == "ours":
            ranked = sorted((rows if dispatches else by_module(rows)).items(), key=lambda kv: -kv[1]["us"])[:top]
            for kernel, row in ranked:
                print(f"  {row['us'] / 1e3:8.3f} ms  {row['count']:4d}x  {row['side']:<7}  {kernel[:150]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build_tools.step_profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet50", help=f"comma-separated, of {', '.join(model_layers.MODELS)}")
    parser.add_argument("--config", default="f32_nchw", choices=list(model_layers.CONFIGS))
    parser.add_argument("--tf32", default="on", choices=list(model_bench.TF32_MODES))
    parser.add_argument("--batch", type=int, help="batch size (default: the model's, model_layers.MODELS)")
    parser.add_argument("--top", type=int, default=25, help="how many of our step's kernels to list")
    parser.add_argument("--dispatches", action="store_true", help="list each IREE dispatch, not each module")
    parser.add_argument("--json", help="write every kernel row here")
    args = parser.parse_args(argv)
    results = [profile_model(name, args.config, model_bench.TF32_MODES[args.tf32], args.batch)
               for name in args.models.split(",")]
    for r in results:
        report(r, args.top, args.dispatches)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
