"""Max-pooling backward on the CPU: the candidates form (one pass over grad_in's grid) against the slices form (a
pass per stride phase, then a transposing pass) and the extract form, on the step models' layer and larger ones: each
module checked against the float64 reference, then all timed interleaved, each call after a PyTorch parallel region
and the pool's release as in a step (layer_bench.between_ops); medians of ROUNDS rounds (default 9) of 9 calls, ms.

    PYTHONPATH=. python docs/perf/cpu-step/eighth/pool_ab.py
"""
import os
import statistics
import time

import numpy as np
import torch

from build_tools import layer_bench
from ops import policy, runtime, targets, verify
from ops.operators import maxpool2d, pool_windows
from ops.torch import calls

CPU = targets.target_for_device("local-task")
FORMS = {name: pool_windows.Form(windows=name) for name in ("candidates", "slices", "extract")}
P = maxpool2d.problem_from_params
NCHW, NHWC = dict(layout="NCHW", dtype="float32"), dict(layout="NHWC", dtype="float32")
PROBLEMS = [
    P(batch=16, channels=32, input_spatial=(32, 32), kernel_size=3, stride=2, padding=1, **NCHW),  # resnext2d's
    P(batch=16, channels=32, input_spatial=(32, 32), kernel_size=3, stride=2, padding=1, **NHWC),
    P(batch=16, channels=32, input_spatial=(32, 32), kernel_size=3, stride=2, padding=1, source="x", **NCHW),
    P(batch=16, channels=64, input_spatial=(56, 56), kernel_size=3, stride=2, padding=1, **NCHW),  # 12.8 MB
    P(batch=16, channels=64, input_spatial=(56, 56), kernel_size=3, stride=2, padding=1, **NHWC),
    P(batch=16, channels=32, input_spatial=(33, 33), kernel_size=3, stride=2, padding=1, ceil_mode=True, **NCHW),
    P(batch=16, channels=32, input_spatial=(32, 32), kernel_size=3, stride=1, padding=1, **NCHW),
    P(batch=16, channels=32, input_spatial=(32, 32), kernel_size=2, stride=2, **NCHW),  # disjoint windows
]


def main() -> None:
    torch.set_num_threads(2)
    release = calls.openmp_release()
    rounds = int(os.environ.get("ROUNDS", 9))
    for problem in PROBLEMS:
        inputs = maxpool2d.random_inputs(problem, np.random.default_rng(0))
        expected = maxpool2d.reference(problem, inputs)
        arrays = [runtime.to_device(a, "local-task") for a in inputs]
        functions = {name: runtime.load_specs([policy.module_spec(problem, CPU, options=form)], "local-task")
                     for name, form in FORMS.items()}
        outs = {name: runtime.empty(tuple(problem.input_shape), problem.dtype, "local-task") for name in functions}
        errors = {}
        for name, function in functions.items():
            function(*arrays, outs[name])
            errors[name] = verify.relative_error(outs[name].to_host(), expected)
        times = {name: [] for name in functions}
        for _ in range(rounds):
            for name, function in functions.items():
                kept = []
                for _ in range(9):
                    layer_bench.between_ops()
                    if release is not None:
                        release()
                    started = time.perf_counter()
                    function(*arrays, outs[name])
                    kept.append(time.perf_counter() - started)
                times[name].append(statistics.median(kept))
        print(f"{problem.name:96s} " + "  ".join(f"{n} {1e3 * statistics.median(t):6.3f}" for n, t in times.items())
              + f"  err {max(errors.values()):.1e}", flush=True)


if __name__ == "__main__":
    main()
