"""The weight gradient's two CPU forms, im2col and per_image, interleaved in one process on the step models'
layers (NCHW/NCDHW): medians of 5 rounds of 9 calls each, on IREE arrays.

    PYTHONPATH=. python docs/perf/cpu-step/per-image/forms_ab.py
"""
import statistics
import time

import numpy as np

from ops import policy, runtime, targets
from ops.operators import grouped_conv_bwd_weight as W

CPU = targets.target_for_device("local-task")
P = W.problem_from_params
L2, L3 = dict(layout="NCHW", dtype="float32"), dict(layout="NCDHW", dtype="float32")
PROBLEMS = [
    P(batch=16, in_channels=3, out_channels=32, input_spatial=(32, 32), filter_spatial=(3, 3), padding=1, **L2),
    P(batch=16, in_channels=4, out_channels=4, groups=8, input_spatial=(16, 16), filter_spatial=(3, 3), padding=1, **L2),
    P(batch=16, in_channels=8, out_channels=8, groups=8, input_spatial=(16, 16), filter_spatial=(3, 3), stride=2, padding=1, **L2),
    P(batch=16, in_channels=32, out_channels=64, input_spatial=(16, 16), filter_spatial=(1, 1), **L2),
    P(batch=16, in_channels=64, out_channels=128, input_spatial=(16, 16), filter_spatial=(1, 1), stride=2, **L2),
    P(batch=16, in_channels=128, out_channels=64, input_spatial=(8, 8), filter_spatial=(1, 1), **L2),
    P(batch=16, in_channels=64, out_channels=64, input_spatial=(8, 8), filter_spatial=(3, 3), padding=1, **L2),
    P(batch=16, in_channels=32, out_channels=32, input_spatial=(16, 16), filter_spatial=(3, 3), padding=1, **L2),
    P(batch=16, in_channels=144, out_channels=24, input_spatial=(16, 16), filter_spatial=(1, 1), **L2),
    P(batch=16, in_channels=16, out_channels=96, input_spatial=(32, 32), filter_spatial=(1, 1), **L2),
    P(batch=4, in_channels=32, out_channels=32, input_spatial=(2, 8, 8), filter_spatial=(1, 3, 3), padding=(0, 1, 1), **L3),
    P(batch=4, in_channels=4, out_channels=8, groups=4, input_spatial=(4, 16, 16), filter_spatial=(3, 3, 3), padding=1, **L3),
    P(batch=4, in_channels=3, out_channels=16, input_spatial=(8, 32, 32), filter_spatial=(3, 3, 3), padding=1, **L3),
    P(batch=16, in_channels=3, out_channels=32, input_spatial=(64, 64), filter_spatial=(7, 7), stride=2, padding=3, **L2),
    P(batch=16, in_channels=128, out_channels=128, input_spatial=(4, 4), filter_spatial=(3, 3), padding=1, **L2),
]


def median_ms(function, arrays, repeat: int) -> float:
    function(*arrays)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function(*arrays)
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    for problem in PROBLEMS:
        arrays = [runtime.to_device(a, "local-task") for a in W.random_inputs(problem, rng)]
        arrays.append(runtime.empty(tuple(problem.weight_shape), "float32", "local-task"))
        forms = {form: runtime.load_specs([policy.module_spec(problem, CPU, options={"contraction": form})], "local-task",
                                          problem=problem) for form in ("im2col", "per_image")}
        times = {form: [] for form in forms}
        for _ in range(5):
            for form, function in forms.items():
                times[form].append(median_ms(function, arrays, 9))
        a, b = (statistics.median(times[f]) for f in forms)
        print(f"{problem.name:100s} im2col {a:7.3f} ms  per_image {b:7.3f} ms  {a / b:5.2f}x  "
              f"positions {int(np.prod(problem.output_spatial))}", flush=True)


if __name__ == "__main__":
    main()
