"""Pointwise (1 x 1, unit stride) backward-data modules, batch 16, with IREE's defaults and with
--iree-global-opt-propagate-transposes=false: each checked against the float64 reference, then timed interleaved
(ROUNDS, default 40; medians, us; ratio: default / with the flag).

    PYTHONPATH=. python docs/perf/cpu-step/sixth/pointwise_scan.py
"""
import os
import statistics
import time

import numpy as np

from ops import catalog, policy, registry, runtime, targets
from ops.compiler import ModuleSpec

TARGET = targets.target_for_device("local-task")
FLAG = "--iree-global-opt-propagate-transposes=false"
CASES = [  # in channels (grad_in's), out channels, spatial, layout, dtype
    (16, 96, (32, 32), "NCHW", "float32"), (8, 64, (16, 16), "NCHW", "float32"), (4, 32, (16, 16), "NCHW", "float32"),
    (32, 16, (16, 16), "NCHW", "float32"), (64, 256, (8, 8), "NCHW", "float32"), (16, 16, (32, 32), "NCHW", "float32"),
    (24, 144, (16, 16), "NCHW", "float32"), (128, 64, (8, 8), "NCHW", "float32"),
    (32, 64, (256,), "NCW", "float32"), (16, 96, (1024,), "NCW", "float32"),
    (32, 64, (4, 8, 8), "NCDHW", "float32"), (16, 32, (8, 16, 16), "NCDHW", "float32"),
    (16, 96, (32, 32), "NHWC", "float32"), (64, 256, (8, 8), "NHWC", "float32"),
    (32, 64, (16, 16), "NCHW", "float16"), (32, 64, (16, 16), "NCHW", "bfloat16"), (24, 144, (16, 16), "NCHW", "bfloat16"),
]


def timed(problem, rounds: int) -> tuple[list, float]:
    """Medians (us) of the module without the flag and with it, and the larger error against the reference."""
    module = registry.module(problem)
    inputs = module.random_inputs(problem, np.random.default_rng(0))
    expected = module.reference(problem, inputs)
    spec = policy.module_spec(problem, TARGET)
    base = tuple(f for f in spec.extra_flags if f != FLAG)
    functions = [runtime.load_specs([ModuleSpec(spec.name, spec.mlir, TARGET, flags)], "local-task")
                 for flags in (base, (*base, FLAG))]
    on_device = [runtime.to_device(a, "local-task") for a in inputs]
    (shape, dtype), = module.results(problem)
    outs = [runtime.empty(shape, dtype, "local-task") for _ in functions]
    error = max(float(np.abs(f(*on_device, out)[-1].to_host().astype(np.float64) - expected).max()
                      / np.abs(expected).max()) for f, out in zip(functions, outs))
    times = [[], []]
    for _ in range(rounds):
        for function, out, kept in zip(functions, outs, times):
            started = time.perf_counter()
            function(*on_device, out)
            kept.append(time.perf_counter() - started)
    return [statistics.median(t) * 1e6 for t in times], error


for c, k, spatial, layout, dtype in CASES:
    problem = catalog.problem("conv_bwd_data", "ck_default", batch=16, in_channels=c, out_channels=k,
                              input_spatial=spatial, filter_spatial=(1,) * len(spatial), stride=1, padding=0,
                              layout=layout, dtype=dtype)
    (default, flagged), error = timed(problem, int(os.environ.get("ROUNDS", 40)))
    print(f"{layout:5s} {dtype:8s} C={c:3d} K={k:3d} {'x'.join(map(str, spatial)):>8s}: default {default:6.0f} us, "
          f"flag {flagged:6.0f} us, ratio {default / flagged:4.2f}, err {error:.1e}", flush=True)
