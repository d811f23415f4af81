"""The real-model yardstick: a torchvision model's training step, PyTorch's and the converted model's, on one GPU
or on the CPU.

    python -m build_tools.model_bench --compile-only --models resnet50,... --config f32_cl   # here: into $OPS_CACHE_DIR
    python -m build_tools.model_bench --models resnet50,... --config f32_cl --steps 30 --json out.json   # on the GPU
    python -m build_tools.model_bench --device cpu --threads 2 --models resnet50 --config f32_nchw --batch 4 \
        --steps 10 --rounds 3     # on the CPU: eager steps only, three interleaved rounds

Models and configurations are ``build_tools/model_layers.py``'s (``f32_nchw``, ``f32_cl``, ``bf16_cl``; the layers
they call are the suite ``models``). For each model, PyTorch's and its converted copy (``model_layers.converted``:
one initialization) train on the same batches with SGD (momentum 0.9), step by step in turns, each step's random
layers (dropout, stochastic depth) drawn from the same seed for both. Under cuDNN's TF32 on (PyTorch's default,
``torch.backends.cudnn.allow_tf32``) and off (the converted model's forward convolutions are PyTorch's, so they
follow the setting too):

- the first step's loss and every parameter's gradient, ours against PyTorch's (normwise relative), and against
  PyTorch's without TF32 (the closer to exact);
- eager steps (zero_grad, forward, backward, optimizer step): host time (``perf_counter`` around the step's Python,
  nothing waited for) and device time (CUDA events around the step on the current stream), medians;
- the whole step captured in one CUDA graph, replayed in turns: device time (events) and host time of a replay.

On the CPU (``--device cpu``, both sides on ``--threads`` threads: PyTorch's oneDNN and our launches use
``torch.set_num_threads``'s team) there is no TF32 and no graph: one first step and the eager steps' host time, the
rows without a TF32 label. ``--rounds R`` repeats the interleaved eager measurement R times (the models training on)
and reports each round's ours / PyTorch host-time ratio and their median.

Every ``ops.torch`` warning is reported with the figures, and the problems PyTorch's own kernel computes (no
compiled form passed the known-answer check): a figure that includes such a fallback says so. ``--compile-only``
builds the converted models' CUDA modules on this machine (``otorch.precompile`` of CPU inputs, as
``build_tools/train.py --compile-only`` does); the GPU run precompiles again, which finds them in the cache.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import sys
import time
import warnings

import torch
from torch import nn

import ops.torch as otorch
from build_tools import model_layers
from build_tools.step_bench import forward_backward, warm_up
from build_tools.train import relative
from ops.torch import kernels

LOSS = nn.CrossEntropyLoss()
CLASSES = 400  # targets below every model's class count (r3d_18 has 400 classes, the others 1000)
TF32_MODES = {"on": True, "off": False}  # cuDNN's TF32 settings measured on a GPU
CPU_MODE = "cpu"  # the CPU's one run: no TF32 to set (a cuDNN setting), its rows carry no TF32 label
CPU_MODES = {CPU_MODE: None}


def run_key(kind: str, mode: str) -> str:
    """A result's key for ``kind`` (``eager``, ``captured``) measured in TF32 ``mode``: ``eager_tf32_on``; on the
    CPU plain ``eager``."""
    return kind if mode == CPU_MODE else f"{kind}_tf32_{mode}"


def _setting(mode: str) -> str:
    return "" if mode == CPU_MODE else f", TF32 {mode}"


@contextlib.contextmanager
def cudnn_tf32(enabled: bool | None):
    """cuDNN's TF32 (``torch.backends.cudnn.allow_tf32``) set while open, restored after (None: left as it is)."""
    if enabled is None:
        yield
        return
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = before


def train_step(model: nn.Module, optimizer, x, y) -> torch.Tensor:
    """zero_grad, forward, backward, the optimizer's step; the loss (a tensor: reading it would wait)."""
    loss = forward_backward(model, x, y, LOSS)
    optimizer.step()
    return loss


def timed(call, device: torch.device) -> tuple[float, float | None]:
    """(host ms: ``call``'s Python, nothing waited for; device ms: CUDA events around it on the current stream, None
    on the CPU), from an idle device."""
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    began = time.perf_counter()
    call()
    host = 1e3 * (time.perf_counter() - began)
    if not cuda:
        return host, None
    end.record()
    torch.cuda.synchronize(device)
    return host, start.elapsed_time(end)


def _median(values: list, skip: int) -> float | None:
    kept = [v for v in values[skip:] if v is not None] or [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def _gradients(model: nn.Module) -> dict:
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def _overall(ours: dict, theirs: dict) -> float:
    """The normwise relative difference of all gradients together, ``ours`` against ``theirs`` (robust to a parameter
    whose gradient is nothing but rounding, as a convolution's bias before a batch norm)."""
    difference = sum(float((ours[n].double() - theirs[n].double()).norm()) ** 2 for n in theirs)
    return (difference / max(sum(float(theirs[n].double().norm()) ** 2 for n in theirs), 1e-60)) ** 0.5


def _worst(ours: dict, theirs: dict) -> tuple[float, str]:
    """The largest normwise relative difference of one parameter's gradient, ``ours`` against ``theirs``, and its
    parameter."""
    return max((relative(ours[n], theirs[n]), n) for n in theirs)


def first_step(models: dict, x, y, modes: dict, seed: int) -> dict:
    """One forward and backward of each model from the same weights (no optimizer step) per TF32 setting: losses and
    gradients, ours against PyTorch's, and against PyTorch's without TF32 where that setting is measured."""
    losses, grads = {}, {}
    for mode, enabled in modes.items():
        with cudnn_tf32(enabled):
            for label, model in models.items():
                torch.manual_seed(seed)
                losses[label, mode] = forward_backward(model, x, y, LOSS).item()
                grads[label, mode] = _gradients(model)
    result = {}
    for mode in modes:
        ours, theirs = grads["ours", mode], grads["pytorch", mode]
        worst, name = _worst(ours, theirs)
        result[mode] = {"loss_pytorch": losses["pytorch", mode], "loss_ours": losses["ours", mode],
                        "loss_difference": abs(losses["ours", mode] - losses["pytorch", mode])
                        / max(abs(losses["pytorch", mode]), 1e-30),
                        "gradient_difference": _overall(ours, theirs), "worst_parameter": name,
                        "worst_parameter_difference": worst, "parameters": len(theirs)}
        if "off" in modes and mode != "off":
            result[mode]["gradient_difference_vs_pytorch_off"] = _overall(ours, grads["pytorch", "off"])
            result[mode]["pytorch_vs_pytorch_off"] = _overall(theirs, grads["pytorch", "off"])
    return result


def eager_steps(models: dict, optimizers: dict, batches: list, steps: int, device, seed: int) -> dict:
    """``steps`` training steps of each model in turns, on the same batches and random draws: per model the median
    host and device ms (the first two steps left out where there are four or more) and the losses."""
    runs = {label: {"host_ms": [], "device_ms": [], "losses": []} for label in models}
    for step in range(steps):
        x, y = batches[step % len(batches)]
        for label, model in models.items():
            torch.manual_seed(seed + step)
            loss = []
            host, device_ms = timed(lambda: loss.append(train_step(model, optimizers[label], x, y)), device)
            runs[label]["host_ms"].append(host)
            runs[label]["device_ms"].append(device_ms)
            runs[label]["losses"].append(loss[0].item())
    skip = 2 if steps >= 4 else 0
    result = {label: {"host_ms": _median(r["host_ms"], skip), "device_ms": _median(r["device_ms"], skip),
                      "losses": r["losses"]} for label, r in runs.items()}
    pairs = zip(runs["ours"]["losses"], runs["pytorch"]["losses"])
    result["max_loss_difference"] = max(abs(a - b) / max(abs(b), 1e-30) for a, b in pairs)
    return result


def eager_rounds(models: dict, optimizers: dict, batches: list, steps: int, device, seed: int, rounds: int = 1) -> dict:
    """``eager_steps`` ``rounds`` times (the models training on, each round's random draws after the last's): per
    round the medians and ours / PyTorch's host time (``rounds``, ``host_ratio``) and the median of those ratios;
    per model the median of the rounds' medians and every step's loss. One round gives ``eager_steps``' figures."""
    runs = [eager_steps(models, optimizers, batches, steps, device, seed + r * steps) for r in range(rounds)]
    ratios = [run["ours"]["host_ms"] / run["pytorch"]["host_ms"] for run in runs]
    result = {label: {"host_ms": statistics.median(run[label]["host_ms"] for run in runs),
                      "device_ms": _median([run[label]["device_ms"] for run in runs], 0),
                      "losses": [loss for run in runs for loss in run[label]["losses"]]} for label in models}
    result["max_loss_difference"] = max(run["max_loss_difference"] for run in runs)
    result["rounds"] = [{f"{label}_{what}": run[label][what] for label in models for what in ("host_ms", "device_ms")}
                        | {"host_ratio": ratio} for run, ratio in zip(runs, ratios)]
    result["host_ratio"], result["host_ratio_median"] = ratios, statistics.median(ratios)
    return result


def captured_steps(models: dict, optimizers: dict, batch: tuple, steps: int, device) -> dict:
    """The whole training step of each model captured in one CUDA graph (after ``warm_up``'s three steps on a side
    stream), the graphs replayed in turns: per model the median device and host ms of a replay."""
    x, y = batch
    graphs = {}
    for label, model in models.items():
        warm_up(model, x, y, LOSS, optimizers[label])
        optimizers[label].zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            train_step(model, optimizers[label], x, y)
        graphs[label] = graph
    runs = {label: [] for label in models}
    for _ in range(steps):
        for label, graph in graphs.items():
            runs[label].append(timed(graph.replay, device))
    return {label: {"host_ms": _median([h for h, _ in r], 2), "device_ms": _median([d for _, d in r], 2)}
            for label, r in runs.items()}


def _attempt(measure, *args) -> dict:
    try:
        return measure(*args)
    except Exception as error:  # reported with the others, which stand
        return {"error": f"{type(error).__name__}: {error}"}


def fallbacks(problems) -> list[str]:
    """The names of ``problems`` that PyTorch's own kernel computes (their ready call has a fallback), of every
    kernel op of ``ops.torch``."""
    ops = [value for value in vars(kernels).values() if isinstance(value, kernels.KernelOp)]
    served = {p.problem for op in ops for p in op.ready.values() if p.fallback is not None}
    return sorted(p.name for p in served & set(problems))


def bench_pair(reference: nn.Module, ours: nn.Module, batches: list, steps: int, modes: dict, seed: int = 0,
               capture: bool = True, rounds: int = 1) -> dict:
    """PyTorch's ``reference`` and its converted copy ``ours`` (same weights) on ``batches`` ((x, y) on their device):
    the first step's agreement, eager steps (``rounds`` interleaved rounds: ``eager_rounds``) and (on a GPU, with
    ``capture``) captured steps per TF32 setting of ``modes`` (``TF32_MODES``; ``CPU_MODES``: one run, no setting),
    the ``ops.torch`` warnings and fallbacks. The models train on; the batches are not changed."""
    models = {"pytorch": reference, "ours": ours}
    device = batches[0][0].device
    optimizers = {k: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for k, m in models.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with kernels.recording() as problems:  # the problems of one step (nothing runs), for the fallbacks
            forward_backward(copy.deepcopy(ours), *batches[0], LOSS)
        result = {"first_step": first_step(models, *batches[0], modes, seed)}
        for mode, enabled in modes.items():
            with cudnn_tf32(enabled):
                result[run_key("eager", mode)] = eager_rounds(models, optimizers, batches, steps, device, seed,
                                                              rounds)
                if capture and device.type == "cuda":
                    result[run_key("captured", mode)] = _attempt(captured_steps, models, optimizers, batches[0], steps,
                                                               device)
    result["warnings"] = [str(w.message) for w in caught if str(w.message).startswith("ops.torch")]
    result["fallbacks"] = fallbacks(problems)
    result["kernel_problems"] = len(set(problems))
    return result


def batches_for(x: torch.Tensor, count: int, seed: int, classes: int = CLASSES) -> list:
    """``count`` batches like ``x`` (its shape, dtype, device and memory format) with class targets, from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    fmt = model_layers.memory_format(tuple(x.shape[1:]), not x.is_contiguous())
    return [(torch.randn(x.shape, generator=generator).to(device=x.device, dtype=x.dtype).contiguous(memory_format=fmt),
             torch.randint(0, classes, (x.shape[0],), generator=generator).to(x.device)) for _ in range(count)]


def bench(name: str, config: str, steps: int, modes: dict, batch: int | None = None, seed: int = 0,
          capture: bool = True, device: str = "cuda", rounds: int = 1) -> dict:
    """torchvision's ``name`` in ``config`` on ``device`` (``cuda``, or ``cpu`` on ``torch.get_num_threads()``
    threads): ``bench_pair`` of it and its converted copy, after ``otorch.precompile`` of the copy (which finds the
    modules ``--compile-only`` built; on the CPU it compiles them on first use)."""
    reference, x = model_layers.build(name, config, device, seed, batch)
    ours, left, plain = model_layers.converted(reference)
    started = time.perf_counter()
    modules = len(otorch.precompile(ours, x, progress=False))
    precompile_s = time.perf_counter() - started
    result = {"model": name, "config": config, "batch": x.shape[0], "input": list(x.shape[1:]), "steps": steps,
              "device": torch.cuda.get_device_name() if x.device.type == "cuda"
              else f"{x.device} (threads {torch.get_num_threads()})",
              "modules": modules, "precompile_s": precompile_s, "left_to_pytorch": left, "plain_subclasses": plain}
    return {**result, **bench_pair(reference, ours, batches_for(x, min(steps, 4), seed + 1), steps, modes, seed,
                                   capture, rounds)}


def compile_only(names: list[str], config: str, batch: int | None, device: str) -> None:
    """The converted models' modules for ``device`` (an IREE driver: cuda), compiled here into the cache from a
    step recorded on the CPU (no GPU needed), under TF32 on and off (float32 weight gradients split or not)."""
    for name in names:
        reference, x = model_layers.build(name, config, "cpu", batch=batch)
        ours, left, _ = model_layers.converted(reference)
        paths = []
        for tf32 in (True, False):
            with cudnn_tf32(tf32):
                paths += otorch.precompile(ours, x, device=device)
        paths = list(dict.fromkeys(paths))
        print(f"{name} {config}: {len(paths)} modules for {device}" + (f"; LEFT TO PYTORCH: {left}" if left else ""),
              flush=True)


def fallback_note(r: dict) -> str:
    """What a result's figures include of PyTorch's own kernels: said beside them."""
    if not (r["fallbacks"] or r["warnings"]):
        return "no fallback, no ops.torch warning"
    return (f"INCLUDES {len(r['fallbacks'])} PYTORCH FALLBACK(S) ({', '.join(r['fallbacks'])}); "
            f"{len(r['warnings'])} ops.torch warning(s)")


def _ms(value) -> str:
    return f"{'-':>8}" if value is None else f"{value:8.2f}"


def report(r: dict) -> None:
    print(f"\n== {r['model']} {r['config']} batch {r['batch']} on {r['device']}: {r['kernel_problems']} kernel "
          f"problems, {r['modules']} modules (precompile {r['precompile_s']:.1f} s); {fallback_note(r)}")
    for mode, first in r["first_step"].items():
        print(f"first step{_setting(mode)}: loss {first['loss_pytorch']:.6f} / ours {first['loss_ours']:.6f} "
              f"({first['loss_difference']:.1e}); gradients ours vs PyTorch {first['gradient_difference']:.1e} "
              f"(one parameter's worst: {first['worst_parameter_difference']:.1e}, {first['worst_parameter']})"
              + (f", vs PyTorch without TF32 {first['gradient_difference_vs_pytorch_off']:.1e} (PyTorch's own "
                 f"{first['pytorch_vs_pytorch_off']:.1e})" if "pytorch_vs_pytorch_off" in first else ""))
    report_runs({k: v for k, v in r.items() if k.startswith(("eager", "captured"))})
    for message in r["warnings"]:
        print(f"   warning: {message.splitlines()[0]}")


def report_runs(runs: dict) -> None:
    """The timed runs' rows: host and device ms, ours / PyTorch's device time (host time where no device time was
    measured: the CPU), and each round's host-time ratio where there were several."""
    timed_on_device = any(run.get("ours", {}).get("device_ms") for run in runs.values())
    what = "device_ms" if timed_on_device else "host_ms"
    print(f"{'':24}{'host ms':>10}{'device ms':>10}   (medians; ours / PyTorch {what.removesuffix('_ms')})")
    for key, run in runs.items():
        if "error" in run:
            print(f"{key:<24}ERROR {run['error']}")
            continue
        for label in ("pytorch", "ours"):
            line = f"{key + ' ' + label:<24}{_ms(run[label]['host_ms'])}  {_ms(run[label]['device_ms'])}"
            if label == "ours" and run["ours"][what] and run["pytorch"][what]:
                line += f"   {run['ours'][what] / run['pytorch'][what]:.2f}x"
            print(line)
        if len(run.get("rounds", ())) > 1:
            ratios = " ".join(f"{ratio:.2f}x" for ratio in run["host_ratio"])
            print(f"{key} ours / PyTorch host time by round: {ratios}; median {run['host_ratio_median']:.2f}x")


def running_modes(args, parser) -> dict:
    """The TF32 settings to measure where the steps run: ``--tf32``'s on a GPU, the CPU's one run on the CPU."""
    kind = args.device.split(":")[0]
    if kind not in ("cpu", "cuda"):
        parser.error(f"--device {args.device}: the steps run on cpu or cuda (an IREE driver only with --compile-only)")
    if kind == "cpu":
        if args.tf32 is not None:
            parser.error("--tf32 is cuDNN's setting: the CPU has no TF32 (its rows carry no TF32 label)")
        return CPU_MODES
    return {m: TF32_MODES[m] for m in (args.tf32 or "on,off").split(",")}


def arguments(argv) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(prog="python -m build_tools.model_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet50", help=f"comma-separated, of {', '.join(model_layers.MODELS)}")
    parser.add_argument("--config", default="f32_cl", choices=list(model_layers.CONFIGS))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, help="batch size (default: the model's, model_layers.MODELS)")
    parser.add_argument("--tf32", help="cuDNN TF32 settings to measure on a GPU (default on,off; on: PyTorch's "
                                       "default); the CPU has none")
    parser.add_argument("--no-capture", action="store_true", help="leave out the CUDA-graph-captured steps")
    parser.add_argument("--rounds", type=int, default=1,
                        help="the interleaved eager measurement this many times: each round's ours / PyTorch host "
                             "time and their median")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (on the CPU both sides use that team)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda",
                        help="where the steps run: cuda (the GPU) or cpu; with --compile-only the IREE driver to "
                             "compile for (cuda; cpu means local-task)")
    parser.add_argument("--compile-only", action="store_true",
                        help="only compile the converted models' modules into $OPS_CACHE_DIR (no GPU needed)")
    parser.add_argument("--json", help="write the results here")
    return parser.parse_args(argv), parser


def main(argv=None) -> int:
    args, parser = arguments(argv)
    names = args.models.split(",")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.compile_only:
        compile_only(names, args.config, args.batch, "local-task" if args.device == "cpu" else args.device)
        return 0
    modes = running_modes(args, parser)
    results = []
    for name in names:
        try:
            results.append(bench(name, args.config, args.steps, modes, args.batch, args.seed, not args.no_capture,
                                 args.device, args.rounds))
        except Exception as error:  # reported; the other models stand
            print(f"\n== {name} {args.config}: ERROR {type(error).__name__}: {error}", flush=True)
            results.append({"model": name, "config": args.config, "error": f"{type(error).__name__}: {error}"})
            continue
        report(results[-1])
        if args.json:  # after every model, so a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
