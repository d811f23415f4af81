"""The weight gradient's per_image form against per_image_nn (one operand laid out (o, channels), IREE's transpose
propagation off), on the channels-first weight-gradient problems of layer_bench's models: each module checked
against the float64 reference, then both timed interleaved (ROUNDS rounds of 9 calls, default 7; medians, ms).

    PYTHONPATH=. python docs/perf/cpu-step/eighth/nn_ab.py [MODEL,...] [FLAGS]
"""
import os
import statistics
import sys
import time

import numpy as np

from build_tools import layer_bench
from ops import policy, runtime, targets, verify
from ops.operators import grouped_conv_bwd_weight as W

CPU = targets.target_for_device("local-task")
PROPAGATION_OFF = ("--iree-global-opt-propagate-transposes=false",)


def median_ms(function, arrays) -> float:
    times = []
    for _ in range(9):
        started = time.perf_counter()
        function(*arrays)
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def weight_problems(models: list[str]) -> dict:
    found = {}
    for name in models:
        model, x = layer_bench.model_and_input(name, 0)
        for op, args in layer_bench.kernel_calls(model, x):
            problem = layer_bench.problem_of(op, args)
            if problem.op == "grouped_conv_bwd_weight" and not problem.channels_last:
                found[problem.name] = problem
    return found


def compare(problem, flags: tuple, rounds: int) -> str:
    inputs = W.random_inputs(problem, np.random.default_rng(0))
    expected = W.reference(problem, inputs)
    arrays = [runtime.to_device(a, "local-task") for a in inputs]
    functions = {form: runtime.load_specs([policy.module_spec(problem, CPU, extra_flags=extra, options={"contraction": form})],
                                          "local-task")
                 for form, extra in (("per_image", ()), ("per_image_nn", flags))}
    errors, times = {}, {form: [] for form in functions}
    for form, function in functions.items():
        out = runtime.empty(tuple(problem.weight_shape), "float32", "local-task")
        function(*arrays, out)
        errors[form] = verify.relative_error(out.to_host(), expected)
    outs = {form: runtime.empty(tuple(problem.weight_shape), "float32", "local-task") for form in functions}
    for _ in range(rounds):
        for form, function in functions.items():
            times[form].append(median_ms(function, [*arrays, outs[form]]))
    a, b = (statistics.median(times[f]) for f in functions)
    moved = "grad_out" if W.grad_out_moved(problem) else "cols"
    return (f"{problem.name:95s} per_image {a:7.3f}  per_image_nn {b:7.3f} ms  {a / b:5.2f}x  moved {moved:8s} "
            f"err {max(errors.values()):.1e}")


def main() -> None:
    models = sys.argv[1].split(",") if len(sys.argv) > 1 else ["resnext2d", "mobilenetv2", "resnet", "cnn3d"]
    flags = tuple(sys.argv[2].split()) if len(sys.argv) > 2 else PROPAGATION_OFF
    for problem in weight_problems(models).values():
        if "per_image" in {f.contraction for f in policy.target_forms(problem, CPU)}:
            print(compare(problem, flags, int(os.environ.get("ROUNDS", 7))), flush=True)


if __name__ == "__main__":
    main()
