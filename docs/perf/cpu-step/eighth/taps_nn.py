"""The two grouped weight gradients that ship the taps form (resnext2d's g8 3x3, cnn3d's g4 3x3x3) against
per_image_nn, interleaved: medians of 9 rounds of 9 calls, ms.

    PYTHONPATH=. python docs/perf/cpu-step/eighth/taps_nn.py
"""
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from nn_ab import CPU, PROPAGATION_OFF, median_ms  # noqa: E402

from ops import policy, runtime  # noqa: E402
from ops.operators import grouped_conv_bwd_weight as W  # noqa: E402

PROBLEMS = [
    W.problem_from_params(batch=16, in_channels=4, out_channels=4, groups=8, input_spatial=(16, 16),
                          filter_spatial=(3, 3), padding=1, layout="NCHW", dtype="float32"),
    W.problem_from_params(batch=4, in_channels=4, out_channels=8, groups=4, input_spatial=(4, 16, 16),
                          filter_spatial=(3, 3, 3), padding=1, layout="NCDHW", dtype="float32"),
]

for problem in PROBLEMS:
    arrays = [runtime.to_device(a, "local-task") for a in W.random_inputs(problem, np.random.default_rng(0))]
    functions = {form: runtime.load_specs([policy.module_spec(problem, CPU, extra_flags=extra, options={"contraction": form})],
                                          "local-task")
                 for form, extra in (("taps", ()), ("per_image_nn", PROPAGATION_OFF))}
    outs = {form: runtime.empty(tuple(problem.weight_shape), "float32", "local-task") for form in functions}
    times = {form: [] for form in functions}
    for _ in range(9):
        for form, function in functions.items():
            times[form].append(median_ms(function, [*arrays, outs[form]]))
    print(problem.name, "  ".join(f"{form} {statistics.median(t):.3f}" for form, t in times.items()), flush=True)
