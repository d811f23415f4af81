"""Each kernel module of one step of MODEL (train.py's resnext2d or cnn3d, or layer_bench's resnet or mobilenetv2), as
the policy ships it and compiled again with each extra flag set; each checked against the float64 reference, then
all timed interleaved (ROUNDS, default 30; medians, us; ratio: shipped / with the flags).

    PYTHONPATH=. python docs/perf/cpu-step/sixth/flagscan.py MODEL "FLAGS A,FLAGS B" [NAME_PREFIX,...]

Since the pointwise rule of mlir/tuning/llvm-cpu.json, the shipped module of its problems already has its flag.
"""
import os
import statistics
import sys
import time

import numpy as np
import torch

from build_tools import layer_bench
from ops import policy, registry, runtime, targets
from ops.compiler import ModuleSpec

torch.set_num_threads(2)
TARGET = targets.target_for_device("local-task")


def loaded(spec, flags: tuple):
    return runtime.load_specs([ModuleSpec(spec.name, spec.mlir, TARGET, (*spec.extra_flags, *flags))], "local-task")


def worst_error(function, results, inputs, expected) -> float:
    """The largest error of ``function``'s results, relative to the largest magnitude of each expected result."""
    outs = [runtime.empty(shape, dtype, "local-task") for shape, dtype in results]
    got = function(*inputs, *outs)[-len(outs):]
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    return max(float(np.abs(g.to_host().astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30))
               for g, r in zip(got, expected))


def scan(problem, flag_sets: list, rounds: int) -> tuple[list, float]:
    module = registry.module(problem)
    inputs = module.random_inputs(problem, np.random.default_rng(0))
    spec = policy.module_spec(problem, TARGET)
    functions = [loaded(spec, flags) for flags in [(), *flag_sets]]
    on_device = [runtime.to_device(a, "local-task") for a in inputs]
    results = module.results(problem)
    error = max(worst_error(f, results, on_device, module.reference(problem, inputs)) for f in functions)
    outs = [[runtime.empty(shape, dtype, "local-task") for shape, dtype in results] for _ in functions]
    times = [[] for _ in functions]
    for _ in range(rounds):
        for function, out, kept in zip(functions, outs, times):
            started = time.perf_counter()
            function(*on_device, *out)
            kept.append(time.perf_counter() - started)
    return [statistics.median(t) * 1e6 for t in times], error


def main() -> None:
    model, x = layer_bench.model_and_input(sys.argv[1], 0)
    problems = {p.name: p for p in (layer_bench.problem_of(op, args)
                                    for op, args in layer_bench.kernel_calls(model, x))}
    flag_sets = [tuple(f.split()) for f in sys.argv[2].split(",")]
    prefixes = sys.argv[3].split(",") if len(sys.argv) > 3 else [""]
    for name, problem in problems.items():
        if any(name.startswith(p) for p in prefixes):
            med, error = scan(problem, flag_sets, int(os.environ.get("ROUNDS", 30)))
            print(f"{name[:75]:75s} " + " ".join(f"{m:7.0f}" for m in med) + "  ratio "
                  + " ".join(f"{med[0] / m:5.2f}" for m in med[1:]) + f"  err {error:.1e}", flush=True)


main()
