"""A converted model's training step against PyTorch's on one CUDA GPU: eager and captured, host and device.

    python -m build_tools.train --device cuda --compile-only [--channels-last] [--dtype bfloat16]   # here, first
    python -m build_tools.step_bench [--steps 30] [--repeats 3] [--compile] [--json out.json]       # on the GPU

For each of ``train.py``'s models and each configuration (float32; float32 channels_last for the 2D model;
bfloat16): the eager step (zero_grad, forward, backward, SGD step) of PyTorch's model and of its converted copy,
interleaved, timed as wall time to a synchronized end and as host time (until the step's Python returns, nothing
waited for); the same forward+backward captured in one CUDA graph, its replay timed with events (the device time
of the step's kernels and little else) and its gradients compared with the eager ones; the host time of every
kernel call of one converted step (each with its module's dispatch count); and whether the converted step passes
``torch.cuda.set_sync_debug_mode("error")`` (no host synchronization); the whole step with its optimizer captured
in one CUDA graph, its replay against the summed device time of one eager step's kernels; and with
``--compile``, ``torch.compile(mode="reduce-overhead")`` of both models.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time

import torch
from torch import nn

import ops.torch as otorch
from build_tools.train import BATCH, MODELS, model_memory_format
from ops.torch import calls


def forward_backward(model, x, y, loss_fn):
    """A training step before its optimizer: zero_grad, forward, the loss (in float32), backward; the loss."""
    model.zero_grad(set_to_none=True)
    loss = loss_fn(model(x).float(), y)
    loss.backward()
    return loss


def _timed_steps(models: dict, x, y, steps: int) -> dict:
    loss_fn = nn.CrossEntropyLoss()
    optimizers = {k: torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for k, m in models.items()}
    wall = {k: [] for k in models}
    host = {k: [] for k in models}
    for _ in range(steps):
        for k, m in models.items():  # interleaved
            torch.cuda.synchronize()
            start = time.perf_counter()
            forward_backward(m, x, y, loss_fn)
            optimizers[k].step()
            host[k].append(time.perf_counter() - start)
            torch.cuda.synchronize()
            wall[k].append(time.perf_counter() - start)
    return {k: {"wall_ms": 1e3 * statistics.median(wall[k][2:]), "host_ms": 1e3 * statistics.median(host[k][2:])}
            for k in models}


def _captured(model, x, y) -> dict:
    """forward+backward in one CUDA graph: replay time (events) and the largest relative gradient difference
    against an eager step on the same input."""
    loss_fn = nn.CrossEntropyLoss()
    warm_up(model, x, y, loss_fn)
    eager = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    graph = torch.cuda.CUDAGraph()
    for p in model.parameters():
        p.grad = None
    with torch.cuda.graph(graph):
        loss_fn(model(x).float(), y).backward()
    for p in model.parameters():
        p.grad.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    difference = max(float((p.grad.double() - eager[n].double()).norm() / eager[n].double().norm().clamp_min(1e-30))
                     for n, p in model.named_parameters())
    return {"replay_ms": _replay_ms(graph), "gradient_difference": difference}


def warm_up(model, x, y, loss_fn, optimizer=None) -> None:
    """Three steps on a side stream, as PyTorch's CUDA-graph recipe asks before a capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            forward_backward(model, x, y, loss_fn)
            if optimizer is not None:
                optimizer.step()
    torch.cuda.current_stream().wait_stream(side)


def _replay_ms(graph, replays: int = 20) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / replays


def _whole_step(model, x, y) -> dict:
    """The whole training step (zero_grad, forward, backward, SGD step) captured in one CUDA graph: its replay time
    (events), against the summed device time of the kernels of one eager step (torch.profiler: PyTorch's and
    this library's, which CUPTI sees like any other), and the parameters after one replay against one eager step
    from the same state."""
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    eager_model = copy.deepcopy(model)
    warm_up(model, x, y, loss_fn, optimizer)
    eager_model.load_state_dict(model.state_dict())
    eager_optimizer = torch.optim.SGD(eager_model.parameters(), lr=0.01, momentum=0.9)
    eager_optimizer.load_state_dict(optimizer.state_dict())
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn(model(x).float(), y).backward()
        optimizer.step()
    torch.cuda.synchronize()
    before = [p.detach().double() for p in model.parameters()]
    kernels_ms = _kernel_time(eager_model, eager_optimizer, x, y)  # one eager step from the same state
    graph.replay()
    torch.cuda.synchronize()
    difference = max(float(((p.double() - b) - (q.double() - b)).norm() / (q.double() - b).norm().clamp_min(1e-30))
                     for p, q, b in zip(model.parameters(), eager_model.parameters(), before))
    replay = _replay_ms(graph)
    return {"replay_ms": replay, "kernels_ms": kernels_ms, "replay_over_kernels": replay / kernels_ms,
            "update_difference": difference}


def _kernel_time(model, optimizer, x, y) -> float:
    """Summed device time (ms) of the kernels of one eager step."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        forward_backward(model, x, y, nn.CrossEntropyLoss())
        optimizer.step()
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in prof.key_averages()) / 1e3


def _compiled(model, x, y, steps: int) -> dict:
    """``torch.compile(mode="reduce-overhead")`` (Inductor and CUDA graphs) of the forward+backward: the median step
    wall time after warm-up, and the gradients against an eager step."""
    loss_fn = nn.CrossEntropyLoss()
    compiled = torch.compile(model, mode="reduce-overhead")
    start = time.perf_counter()
    for _ in range(3):
        forward_backward(compiled, x, y, loss_fn)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - start
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        forward_backward(compiled, x, y, loss_fn)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    forward_backward(model, x, y, loss_fn)
    difference = max(float((grads[n].double() - p.grad.double()).norm() / p.grad.double().norm().clamp_min(1e-30))
                     for n, p in model.named_parameters())
    return {"wall_ms": 1e3 * statistics.median(times), "compile_s": compile_s, "gradient_difference": difference}


def _per_call(model, x, y, steps: int = 5, sync=torch.cuda.synchronize) -> list:
    """Host time of each kernel call of a converted step, the median over ``steps`` steps: each ready call
    (``calls.Prepared``, which every path reaches: the dispatcher's, the eager autograd path's, a layer's paired
    gradients, one entry where the CPU launches a layer's two in one) timed from its entry to its return, with its
    operator, its problem and its module's dispatch count (None where IREE's runtime serves it). ``sync`` ends each step (CUDA's; the CPU's calls have returned done)."""
    seen = []
    prepared_call = calls.Prepared.__call__

    def timed(self, args):
        start = time.perf_counter_ns()
        result = prepared_call(self, args)
        plan = getattr(self.kernel, "plan", None)
        seen.append((self.problem.op, self.problem.name, len(plan.dispatches) if plan is not None else None,
                     (time.perf_counter_ns() - start) / 1e3))
        return result

    def timed_pair(self, first_args, second_args):  # a layer's two gradients in one CPU launch: one entry
        if not self.together:
            return paired_call(self, first_args, second_args)
        start = time.perf_counter_ns()
        result = paired_call(self, first_args, second_args)
        first, second = self.first, self.second
        seen.append((f"{first.problem.op}+{second.problem.op}", f"{first.problem.name}+{second.problem.name}",
                     len(first.kernel.plan.dispatches) + len(second.kernel.plan.dispatches),
                     (time.perf_counter_ns() - start) / 1e3))
        return result

    paired_call = calls.Paired.__call__
    calls.Prepared.__call__, calls.Paired.__call__ = timed, timed_pair
    try:
        for _ in range(steps):
            forward_backward(model, x, y, nn.CrossEntropyLoss())
            sync()
    finally:
        calls.Prepared.__call__, calls.Paired.__call__ = prepared_call, paired_call
    per_step = len(seen) // steps
    return [{"op": seen[i][0], "problem": seen[i][1], "dispatches": seen[i][2],
             "host_us": statistics.median(seen[i + k * per_step][3] for k in range(steps))} for i in range(per_step)]


def _no_sync(model, x, y) -> str:
    loss_fn = nn.CrossEntropyLoss()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        forward_backward(model, x, y, loss_fn)
        return "passed"
    except RuntimeError as error:
        return f"failed: {error}"
    finally:
        torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()


def _gradient_difference(reference, ours, x, y) -> float:
    """The largest normwise relative difference between the two models' gradients of one step from the same
    weights (ours against PyTorch's, both in the models' dtype)."""
    loss_fn = nn.CrossEntropyLoss()
    for model in (reference, ours):
        forward_backward(model, x, y, loss_fn)
    return max(float((a.grad.double() - b.grad.double()).norm() / a.grad.double().norm().clamp_min(1e-30))
               for a, b in zip(reference.parameters(), ours.parameters()))


def _attempt(measure, *args) -> dict:
    try:
        return measure(*args)
    except Exception as error:  # reported, the other measurements stand
        return {"error": f"{type(error).__name__}: {error}"}


def bench(name: str, dtype: torch.dtype, channels_last: bool, steps: int, repeats: int, compile_: bool) -> dict:
    build, sample_shape = MODELS[name]
    torch.manual_seed(0)
    memory_format = model_memory_format(name, channels_last)
    reference = build().to(device="cuda", dtype=dtype).to(memory_format=memory_format)
    ours = otorch.convert(copy.deepcopy(reference))
    batch = BATCH["cuda"][name]
    x = torch.randn(batch, *sample_shape, device="cuda", dtype=dtype).to(memory_format=memory_format)
    y = torch.randint(0, 10, (batch,), device="cuda")
    result = {"model": name, "dtype": str(dtype).replace("torch.", ""), "channels_last": memory_format is torch.channels_last,
              "batch": batch}
    result["gradients_vs_pytorch"] = _gradient_difference(reference, ours, x, y)
    runs = [_timed_steps({"pytorch": reference, "ours": ours}, x, y, steps) for _ in range(repeats)]
    result["eager_runs"] = runs
    result["eager"] = {k: {m: statistics.median(r[k][m] for r in runs) for m in ("wall_ms", "host_ms")} for k in runs[0]}
    result["per_call"] = _per_call(ours, x, y)
    result["sync_debug"] = _no_sync(ours, x, y)
    for label, model in (("pytorch", reference), ("ours", ours)):
        result[f"captured_{label}"] = _attempt(_captured, model, x, y)
        result[f"whole_step_{label}"] = _attempt(_whole_step, model, x, y)
        if compile_:
            result[f"compiled_{label}"] = _attempt(_compiled, model, x, y, steps)
    return result


def report(r: dict) -> None:
    e = r["eager"]
    host = [c["host_us"] for c in r["per_call"]]
    print(f"\n== {r['model']} {r['dtype']}{' channels_last' if r['channels_last'] else ''} batch {r['batch']}")
    print(f"eager step (wall / host): PyTorch {e['pytorch']['wall_ms']:.2f} / {e['pytorch']['host_ms']:.2f} ms, "
          f"ours {e['ours']['wall_ms']:.2f} / {e['ours']['host_ms']:.2f} ms, ratio {e['ours']['wall_ms'] / e['pytorch']['wall_ms']:.2f}")
    print(f"gradients against PyTorch's (largest normwise relative difference): {r['gradients_vs_pytorch']:.2e}")
    print("eager runs (ours/PyTorch wall ratio): "
          + ", ".join(f"{run['ours']['wall_ms'] / run['pytorch']['wall_ms']:.2f}" for run in r["eager_runs"]))
    for label in ("pytorch", "ours"):
        for kind in ("captured", "whole_step", "compiled"):
            if f"{kind}_{label}" in r:
                print(f"{kind} ({label}): {r[f'{kind}_{label}']}")
    if host:
        print(f"kernel calls: {len(host)}, host us median {statistics.median(host):.1f}, max {max(host):.1f}; sync debug: {r['sync_debug']}")
        for c in r["per_call"]:
            print(f"   {c['op']:<22} {c['host_us']:7.1f} us  {c['dispatches']} dispatches  {c['problem']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved eager runs (the median is reported)")
    parser.add_argument("--compile", action="store_true", help="also torch.compile(mode='reduce-overhead') both models")
    parser.add_argument("--configs", default="0,1,2,3", help="which of the four configurations (0-3)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    configs = [("resnext2d", torch.float32, False), ("resnext2d", torch.float32, True), ("cnn3d", torch.float32, False),
               ("resnext2d", torch.bfloat16, True)]
    results = []
    for name, dtype, channels_last in (configs[int(i)] for i in args.configs.split(",")):
        try:
            results.append(bench(name, dtype, channels_last, args.steps, args.repeats, args.compile))
            report(results[-1])
        except Exception as error:
            print(f"\n== {name} {dtype} channels_last={channels_last}: ERROR {type(error).__name__}: {error}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
