"""A layer's two gradient modules called one after the other, each waited for, against the same two modules queued
back to back (``Function.invoke(queue=True)``: the second waits on the first's fence in IREE's queue) with one
wait at the end (``runtime.finish``), as ``ops.torch`` now calls them. Each round starts after a PyTorch op (relu
on 4 MB) and the release of PyTorch's OpenMP pool, as in a step; the waits under SCHED_BATCH, as shipped. Then
each module alone, compiled with IREE's default execution model (async-internal) against the shipped one
(async-external, waited for).

    PYTHONPATH=. python docs/perf/cpu-step/seventh/async_pair.py MODEL [ROUNDS]
"""
import statistics
import sys
import time

import numpy as np
import torch

from build_tools import layer_bench
from ops import policy, registry, runtime, targets
from ops.compiler import ModuleSpec
from ops.torch import calls

torch.set_num_threads(2)
TARGET = targets.target_for_device("local-task")
SYNC = ("--iree-execution-model=async-internal",)
release = calls.openmp_release()
busy = torch.randn(16, 64, 32, 32)


def loaded(problem, flags=()):
    spec = policy.module_spec(problem, TARGET)
    return runtime.load_specs([ModuleSpec(spec.name, spec.mlir, TARGET, (*spec.extra_flags, *flags))], "local-task")


def views(problem):
    module = registry.module(problem)
    inputs = [runtime.to_device(a, "local-task") for a in module.random_inputs(problem, np.random.default_rng(0))]
    outs = [runtime.empty(shape, dtype, "local-task") for shape, dtype in module.results(problem)]
    return [a._buffer_view for a in inputs + outs], outs


def timed(runs: list, rounds: int) -> list:
    times = [[] for _ in runs]
    for _ in range(rounds):
        for kept, run in zip(times, runs):
            torch.relu(busy)
            release()
            started = time.perf_counter()
            run()
            kept.append(time.perf_counter() - started)
    return [statistics.median(t) * 1e6 for t in times]


def pair(data, weight, rounds: int) -> list:
    functions = [loaded(data), loaded(weight)]
    args = [views(data), views(weight)]

    def two_waits():
        for f, (v, _) in zip(functions, args):
            calls.batch_scheduled(f.invoke, v)

    def queued():
        for f, (v, _) in zip(functions, args):
            f.invoke(v, queue=True)
        runtime.finish(lambda fence: calls.batch_scheduled(fence.wait))

    queued()
    first = [o.to_host().copy() for _, outs in args for o in outs]
    two_waits()
    same = all(np.array_equal(a, o.to_host()) for a, o in zip(first, [o for _, outs in args for o in outs]))
    return [*timed([two_waits, queued], rounds), same]


def alone(problem, rounds: int) -> list:
    functions = [loaded(problem, SYNC), loaded(problem)]
    v, _ = views(problem)
    return timed([lambda f=f: calls.batch_scheduled(f.invoke, v) for f in functions], rounds)


def main():
    model, x = layer_bench.model_and_input(sys.argv[1], 0)
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    seen = layer_bench.kernel_calls(model, x)
    pairs = [(layer_bench.problem_of(*a), layer_bench.problem_of(*b)) for a, b in zip(seen, seen[1:])
             if a[0].name == "conv_backward_input" and b[0].name == "conv_backward_weight"]
    total = [0.0, 0.0]
    print("# a layer's two calls: two waits / queued, one wait (us, medians); bitwise equal results")
    for data, weight in pairs:
        two, one, same = pair(data, weight, rounds)
        total = [total[0] + two, total[1] + one]
        print(f"{data.name[:72]:72s} {two:7.0f} {one:7.0f}  {two / one:.2f}x  same {same}", flush=True)
    print(f"total: two waits {total[0] / 1e3:.2f} ms, queued {total[1] / 1e3:.2f} ms ({total[0] / total[1]:.3f}x)")
    print("# each module alone: async-internal (IREE's default) / async-external (shipped) (us, medians)")
    total = [0.0, 0.0]
    for problem in {layer_bench.problem_of(*call).name: layer_bench.problem_of(*call) for call in seen}.values():
        a, b = alone(problem, rounds)
        total = [total[0] + a, total[1] + b]
        print(f"{problem.name[:72]:72s} {a:7.0f} {b:7.0f}  {a / b:.2f}x", flush=True)
    print(f"total: {total[0] / 1e3:.2f} ms / {total[1] / 1e3:.2f} ms ({total[0] / total[1]:.3f}x)")


main()
