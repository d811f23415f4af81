"""Every catalog module through the launcher and through IREE's runtime, on one CUDA GPU, side by side.

    python -m build_tools.launch_check [--suite ck_examples --suite zoo] [--repeat 50] [--json out.json]
    python -m build_tools.launch_check --prepare          # here, with the compiler: build the modules and plans

For each problem: the module's launch plan (``ops/launch/plan.py``) runs on PyTorch's current stream through
``ops.launch.cuda`` and the same module runs through ``iree.runtime``, on the same seeded random inputs, into
NaN-filled destinations. The two results must be bitwise identical, and both are checked against the float64
reference (``ops.verify``). Then the host time of one call (the launcher's: issue only, nothing waits; IREE's:
its synchronous invocation), the device time of one call (CUDA events around 20 calls), and whether a CUDA
graph captures the launcher's call and replays it to the same bits. Prints a table; ``--json`` keeps it all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from ops import catalog, compiler, policy, registry, targets, verify
from ops.launch import store as plan_store
from ops.api import run

TARGET = "cuda:sm_80"


def _specs(problem):
    return policy.module_specs(problem, targets.parse_target(TARGET))


def prepare(suites: list[str]) -> int:
    """Compile every module and its plan into the cache (no GPU needed)."""
    for suite in suites:
        for op, name, problem in catalog.problems(suite):
            spec, path, data = compiler.load_first(_specs(problem))
            plan = plan_store.load(compiler.cache_dir(), path, data)
            print(f"{suite}/{op}/{name}: {'plan' if not isinstance(plan, str) else plan}", flush=True)
    return 0


def _to_torch(array, torch):
    array = np.ascontiguousarray(array)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(array).cuda()


def _to_numpy(tensor, dtype, torch):
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).cpu().numpy().view(dtype)
    return tensor.cpu().numpy()


def _poisoned(shape, dtype, torch):
    torch_dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                   "int64": torch.int64}[dtype]
    t = torch.empty(tuple(shape), dtype=torch_dtype, device="cuda")
    return t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-7)


def check_one(op: str, name: str, problem, repeat: int, torch, launch_cuda, transient_fill=None) -> dict:
    row = {"operator": op, "problem": name, "function": problem.name}
    spec, path, data = compiler.load_first(_specs(problem))
    plan = plan_store.load(compiler.artifacts_dir() if str(path).startswith(str(compiler.artifacts_dir()))
                              else compiler.cache_dir(), path, data)
    if isinstance(plan, str):
        return {**row, "status": f"no plan: {plan}"}
    containers = [data[e.offset:e.offset + e.nbytes] for e in plan.executables]
    kernels = launch_cuda.Kernels(plan, containers, torch.cuda.current_device())
    rng = np.random.default_rng(abs(hash(problem.name)) % 2**32)
    arrays = registry.module(problem).random_inputs(problem, rng)
    results = registry.module(problem).results(problem)
    expected = run(problem, arrays, device="cuda")
    expected = expected if isinstance(expected, tuple) else (expected,)
    inputs = [_to_torch(a, torch) for a in arrays]
    outputs = [_poisoned(shape, dtype, torch) for shape, dtype in results]
    transients = [torch.empty(max(n, 1), dtype=torch.uint8, device="cuda") for n in plan.transients]
    if transient_fill is not None:  # what a kernel that reads its transient before writing it would see
        for t in transients:
            t.fill_(transient_fill)
    tensors = inputs + outputs

    def bases():
        return [(tensors[s.argument] if s.argument is not None else transients[s.transient]).data_ptr() + s.offset
                for s in plan.slots]

    stream = torch.cuda.current_stream().cuda_stream
    kernels(bases(), stream)
    torch.cuda.synchronize()
    got = [_to_numpy(t, e.dtype, torch) for t, e in zip(outputs, expected)]
    row["dispatches"] = len(plan.dispatches)
    row["bitwise"] = all(np.array_equal(g.view(np.uint8), np.ascontiguousarray(e).view(np.uint8))
                         for g, e in zip(got, expected))
    reference = registry.module(problem).reference(problem, arrays)
    reference = reference if isinstance(reference, tuple) else (reference,)
    row["error"] = max(verify.relative_error(g, r) for g, r in zip(got, reference))
    row["within_tolerance"] = row["error"] <= verify.tolerance(op, problem.dtype)
    row["iree_runtime_error"] = max(verify.relative_error(e, r) for e, r in zip(expected, reference))
    host = []
    for _ in range(repeat):
        start = time.perf_counter()
        kernels(bases(), stream)
        host.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    row["launcher_host_us"] = 1e6 * statistics.median(host)
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start_event.record()
    for _ in range(20):
        kernels(bases(), stream)
    end_event.record()
    torch.cuda.synchronize()
    row["device_us"] = 1e3 * start_event.elapsed_time(end_event) / 20
    iree_host = []
    for _ in range(max(3, repeat // 5)):
        start = time.perf_counter()
        run(problem, arrays, device="cuda")
        iree_host.append(time.perf_counter() - start)
    row["iree_runtime_call_us"] = 1e6 * statistics.median(iree_host)
    try:
        row["graph_replays_bitwise"] = _graph_check(kernels, plan, tensors, outputs, got, torch)
    except Exception as error:  # reported in the row; the eager results above stand
        row["graph_replays_bitwise"] = False
        row["graph_error"] = f"{type(error).__name__}: {error}"
    row["status"] = "ok" if row["bitwise"] and row["within_tolerance"] and row["graph_replays_bitwise"] else "FAILED"
    return row


def _graph_check(kernels, plan, tensors, outputs, got, torch) -> bool:
    """Capture one launcher call in a CUDA graph (its transients from the graph's pool), poison the outputs,
    replay, and compare with the eager bits."""
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph):
            transients = [torch.empty(max(n, 1), dtype=torch.uint8, device="cuda") for n in plan.transients]
            bases = [(tensors[s.argument] if s.argument is not None else transients[s.transient]).data_ptr() + s.offset
                     for s in plan.slots]
            kernels(bases, torch.cuda.current_stream().cuda_stream)
    torch.cuda.current_stream().wait_stream(side)
    for t in outputs:
        t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-7)
    graph.replay()
    torch.cuda.synchronize()
    return all(np.array_equal(t.cpu().view(torch.uint8).numpy().reshape(-1), np.ascontiguousarray(g).view(np.uint8).reshape(-1))
               for t, g in zip(outputs, got))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="append")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--problems", help="comma-separated problem names (default: all)")
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--transients", type=int, help="fill the launcher's transients with this byte first")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    suites = args.suite or ["ck_examples", "zoo"]
    if args.prepare:
        return prepare(suites)
    import torch

    from ops.launch import cuda as launch_cuda

    rows = []
    wanted = set(args.problems.split(",")) if args.problems else None
    for suite in suites:
        for op, name, problem in catalog.problems(suite):
            if wanted and name not in wanted:
                continue
            try:
                row = check_one(op, name, problem, args.repeat, torch, launch_cuda, args.transients)
            except Exception as error:  # one problem's failure is reported, the others still run
                row = {"operator": op, "problem": name, "status": f"ERROR {type(error).__name__}: {error}"}
            rows.append({"suite": suite, **row})
            r = rows[-1]
            print(f"{suite:<12} {op:<24} {name:<28} {r.get('dispatches', '-'):>3} "
                  f"{'bitwise' if r.get('bitwise') else 'DIFFERS':<8} err {r.get('error', float('nan')):.1e} "
                  f"host {r.get('launcher_host_us', float('nan')):7.1f} us  iree {r.get('iree_runtime_call_us', float('nan')):8.1f} us  "
                  f"iree err {r.get('iree_runtime_error', float('nan')):.1e}  device {r.get('device_us', float('nan')):8.1f} us  graph {r.get('graph_replays_bitwise')}  {r['status']}",
                  flush=True)
    failed = [r for r in rows if r["status"] != "ok"]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
