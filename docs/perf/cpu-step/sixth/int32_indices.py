"""resnext2d's max pooling modules with int64 indices (shipped) and int32 ones, alone, interleaved (medians of 60, us).
The forward's ``results`` is patched to int32 for the measurement: the library's forward returns int64 indices only.

    PYTHONPATH=. python docs/perf/cpu-step/sixth/int32_indices.py
"""
import dataclasses
import statistics
import time

import torch

import ops.torch as otorch
from build_tools import layer_bench, train
from ops import known_answer, runtime
from ops.operators import maxpool2d_fwd

torch.set_num_threads(2)
build, shape = train.MODELS["resnext2d"]
model, x = otorch.convert(build()), torch.randn(16, *shape)
problems = {p.name: p for p in (layer_bench.problem_of(op, args)
                                for op, args in layer_bench.kernel_calls(model, x))}
maxpool2d_fwd.results = lambda problem: [(problem.output_shape, problem.dtype), (problem.output_shape, problem.index_dtype)]
runs = []
for problem in (p for name, p in problems.items() if name.startswith("maxpool2d")):
    for index_dtype in ("int64", "int32"):
        variant = dataclasses.replace(problem, index_dtype=index_dtype)
        arrays = [runtime.to_device(a, "local-task")
                  for a in [*known_answer.inputs_for(variant), *known_answer.poisoned(variant)]]
        runs.append((variant.name, runtime.function_for(variant, "local-task"), [a._buffer_view for a in arrays]))
times = {name: [] for name, _, _ in runs}
for _ in range(60):
    for name, function, views in runs:
        started = time.perf_counter()
        function.invoke(views)
        times[name].append(time.perf_counter() - started)
for name, kept in times.items():
    print(f"{name[:100]:100s} {statistics.median(kept) * 1e6:7.0f} us")
