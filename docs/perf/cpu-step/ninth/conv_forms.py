"""Every CPU form of each channels-first float32 convolution backward (input and weight gradients) of layer_bench's
four models, each checked against the float64 reference, then all timed interleaved: medians of ROUNDS (default 7)
rounds of 9 calls, ms. A form is each contraction the problem offers (its first form of that contraction), compiled
with the flags the table gives that form; per_image_nn always with IREE's transpose propagation off. The host's CPU
and its AVX-512/AMX flags head the output.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/conv_forms.py [MODEL,...] [OP_PREFIX]
"""
import os
import statistics
import time
import sys

import numpy as np

from build_tools import layer_bench
from ops import policy, registry, runtime, targets, verify

CPU = targets.target_for_device("local-task")
PROPAGATION_OFF = "--iree-global-opt-propagate-transposes=false"
ROUNDS = int(os.environ.get("ROUNDS", 7))


def median_ms(function, arrays) -> float:
    times = []
    for _ in range(9):
        started = time.perf_counter()
        function(*arrays)
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def problems(models: list[str], prefix: str) -> dict:
    found = {}
    for name in models:
        model, x = layer_bench.model_and_input(name, 0)
        for op, args in layer_bench.kernel_calls(model, x):
            problem = layer_bench.problem_of(op, args)
            if problem.op.startswith(prefix) and "conv" in problem.op and not problem.channels_last:
                found[problem.name] = problem
    return found


def forms_of(problem) -> dict:
    """contraction -> (form, its flags): the first form of each contraction the problem offers."""
    found = {}
    for form in policy.target_forms(problem, CPU):
        if form.contraction not in found:
            flags = policy.flags_for(problem, CPU, form)
            if form.contraction == "per_image_nn" and PROPAGATION_OFF not in flags:
                flags = (*flags, PROPAGATION_OFF)
            found[form.contraction] = (form, tuple(flags))
    return found


def compare(problem) -> str:
    module = registry.module(problem)
    inputs = module.random_inputs(problem, np.random.default_rng(0))
    expected = module.reference(problem, inputs)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    arrays = [runtime.to_device(a, "local-task") for a in inputs]
    functions = {c: runtime.load_specs([policy.module_spec(problem, CPU, extra_flags=flags, options=form)], "local-task")
                 for c, (form, flags) in forms_of(problem).items()}
    outs = {c: [runtime.empty(tuple(shape), str(np.dtype(dtype)), "local-task") for shape, dtype in module.results(problem)]
            for c in functions}
    errors = {}
    for c, function in functions.items():
        function(*arrays, *outs[c])
        errors[c] = max(verify.relative_error(o.to_host(), e) for o, e in zip(outs[c], expected))
    times = {c: [] for c in functions}
    for _ in range(ROUNDS):
        for c, function in functions.items():
            times[c].append(median_ms(function, [*arrays, *outs[c]]))
    shipped = policy.forms_for(problem, CPU)[0].contraction
    medians = {c: statistics.median(t) for c, t in times.items()}
    cells = "  ".join(f"{c} {m:6.3f}" for c, m in medians.items())
    return (f"{problem.name:95s} {cells}  best {min(medians, key=medians.get)}  shipped {shipped}  "
            f"err {max(errors.values()):.1e}")


def main() -> None:
    models = sys.argv[1].split(",") if len(sys.argv) > 1 else ["resnext2d", "mobilenetv2", "resnet", "cnn3d"]
    prefix = sys.argv[2] if len(sys.argv) > 2 else ""
    flags = targets.host_cpu_flags()
    print(f"# {targets._cpuinfo_line('model name').partition(':')[2].strip()}; "
          f"{' '.join(sorted(f for f in flags if f.startswith(('avx512f', 'amx_tile', 'avx2'))))}; ROUNDS={ROUNDS}")
    for problem in problems(models, prefix).values():
        if len(forms_of(problem)) > 1:
            print(compare(problem), flush=True)


if __name__ == "__main__":
    main()
