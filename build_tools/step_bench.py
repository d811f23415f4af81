"""A converted model's training step against PyTorch's on one CUDA GPU: eager and captured, host and device.

    python -m build_tools.train --device cuda --compile-only [--channels-last] [--dtype bfloat16]   # here, first
    python -m build_tools.step_bench [--steps 30] [--json out.json]                                 # on the GPU

For each of ``train.py``'s models and each configuration (float32; float32 channels_last for the 2D model;
bfloat16): the eager step (zero_grad, forward, backward, SGD step) of PyTorch's model and of its converted copy,
interleaved, timed as wall time to a synchronized end and as host time (until the step's Python returns, nothing
waited for); the same forward+backward captured in one CUDA graph, its replay timed with events (the device time
of the step's kernels and little else) and its gradients compared with the eager ones; the host time of every
kernel call of one converted step (each with its module's dispatch count); and whether the converted step passes
``torch.cuda.set_sync_debug_mode("error")`` (no host synchronization).
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
from build_tools.train import BATCH, MODELS, _memory_format
from ops.torch import calls

KERNEL_OPS = ("_conv_backward_input", "_conv_backward_weight", "_max_pool2d_op", "_max_pool2d_backward",
              "_avg_pool3d_backward")


def _step(model, x, y, loss_fn):
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
            _step(m, x, y, loss_fn)
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
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            _step(model, x, y, loss_fn)
    torch.cuda.current_stream().wait_stream(side)
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
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return {"replay_ms": start.elapsed_time(end) / 20, "gradient_difference": difference}


def _per_call(model, x, y) -> list:
    """Host time of each kernel call of one converted step, and its module's dispatch count."""
    calls_seen, problems = [], []
    wrapped = {}
    for name in KERNEL_OPS:
        original = getattr(otorch, name)

        def timed(*args, _original=original, _name=name):
            start = time.perf_counter_ns()
            result = _original(*args)
            calls_seen.append((_name, (time.perf_counter_ns() - start) / 1e3))
            return result

        wrapped[name] = original
        setattr(otorch, name, timed)
    prepared_call = calls.Prepared.__call__

    def noting(self, args):
        kernel = self.kernel
        problems.append((self.problem.name, len(kernel.plan.dispatches) if hasattr(kernel, "plan") else None))
        return prepared_call(self, args)

    calls.Prepared.__call__ = noting
    try:
        _step(model, x, y, nn.CrossEntropyLoss())
        torch.cuda.synchronize()
    finally:
        calls.Prepared.__call__ = prepared_call
        for name, original in wrapped.items():
            setattr(otorch, name, original)
    return [{"op": op, "host_us": us, "problem": p, "dispatches": d} for (op, us), (p, d) in zip(calls_seen, problems)]


def _no_sync(model, x, y) -> str:
    loss_fn = nn.CrossEntropyLoss()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _step(model, x, y, loss_fn)
        return "passed"
    except RuntimeError as error:
        return f"failed: {error}"
    finally:
        torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()


def bench(name: str, dtype: torch.dtype, channels_last: bool, steps: int) -> dict:
    build, sample_shape = MODELS[name]
    torch.manual_seed(0)
    memory_format = _memory_format(name, channels_last)
    reference = build().to(device="cuda", dtype=dtype).to(memory_format=memory_format)
    ours = otorch.convert(copy.deepcopy(reference))
    batch = BATCH["cuda"][name]
    x = torch.randn(batch, *sample_shape, device="cuda", dtype=dtype).to(memory_format=memory_format)
    y = torch.randint(0, 10, (batch,), device="cuda")
    result = {"model": name, "dtype": str(dtype).replace("torch.", ""), "channels_last": memory_format is torch.channels_last,
              "batch": batch}
    result["eager"] = _timed_steps({"pytorch": reference, "ours": ours}, x, y, steps)
    result["per_call"] = _per_call(ours, x, y)
    result["sync_debug"] = _no_sync(ours, x, y)
    for label, model in (("pytorch", reference), ("ours", ours)):
        try:
            result[f"captured_{label}"] = _captured(model, x, y)
        except Exception as error:  # reported, the other measurements stand
            result[f"captured_{label}"] = {"error": f"{type(error).__name__}: {error}"}
    return result


def report(r: dict) -> None:
    e = r["eager"]
    host = [c["host_us"] for c in r["per_call"]]
    print(f"\n== {r['model']} {r['dtype']}{' channels_last' if r['channels_last'] else ''} batch {r['batch']}")
    print(f"eager step (wall / host): PyTorch {e['pytorch']['wall_ms']:.2f} / {e['pytorch']['host_ms']:.2f} ms, "
          f"ours {e['ours']['wall_ms']:.2f} / {e['ours']['host_ms']:.2f} ms, ratio {e['ours']['wall_ms'] / e['pytorch']['wall_ms']:.2f}")
    for label in ("pytorch", "ours"):
        print(f"captured fwd+bwd ({label}): {r[f'captured_{label}']}")
    if host:
        print(f"kernel calls: {len(host)}, host us median {statistics.median(host):.1f}, max {max(host):.1f}; sync debug: {r['sync_debug']}")
        for c in r["per_call"]:
            print(f"   {c['op']:<22} {c['host_us']:7.1f} us  {c['dispatches']} dispatches  {c['problem']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    configs = [("resnext2d", torch.float32, False), ("resnext2d", torch.float32, True), ("cnn3d", torch.float32, False),
               ("resnext2d", torch.bfloat16, True)]
    results = []
    for name, dtype, channels_last in configs:
        try:
            results.append(bench(name, dtype, channels_last, args.steps))
            report(results[-1])
        except Exception as error:
            print(f"\n== {name} {dtype} channels_last={channels_last}: ERROR {type(error).__name__}: {error}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
