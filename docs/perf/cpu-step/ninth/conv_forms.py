"""Every CPU form of each channels-first float32 convolution backward (input and weight gradients) of layer_bench's
four models, each checked against the float64 reference, then all timed interleaved: medians of ROUNDS (default 7)
rounds of 9 calls, ms. A form is each contraction the problem offers (its first form of that contraction), compiled
with the flags the table gives that form; per_image_nn always with IREE's transpose propagation off. The host's CPU
and its AVX-512/AMX flags head the output. LAUNCH=plan times each module through the CPU launcher on PyTorch's
threads (ops/launch/cpu.py), as ops.torch runs it since the ninth session; the default is IREE's runtime.

    PYTHONPATH=. [LAUNCH=plan] python docs/perf/cpu-step/ninth/conv_forms.py [MODEL,...] [OP_PREFIX]
"""
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

from build_tools import layer_bench
from ops import compiler, policy, registry, runtime, targets, verify
from ops.launch import cpu as cpu_launch
from ops.torch import calls

sys.path.insert(0, str(Path(__file__).parents[1] / "eighth"))
from nn_ab import median_ms  # noqa: E402

CPU = targets.target_for_device("local-task")
PROPAGATION_OFF = "--iree-global-opt-propagate-transposes=false"
ROUNDS = int(os.environ.get("ROUNDS", 7))


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


def launched(spec, inputs: list, results: list):
    """``spec``'s module through the CPU launcher on tensors: a thunk running it on ``inputs`` (arrays) into fresh
    destinations of ``results`` (shape, dtype), and those destinations."""
    _, path, data = compiler.load_first([spec])
    compiler.ensure_plan(spec, path, data)
    found = cpu_launch.load(path, data, str(compiler.cache_dir()))
    if isinstance(found, str):
        raise RuntimeError(f"{spec.name}: {found}")
    kernel = calls.CpuLaunchedKernel(*found, torch.device("cpu"))
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).clone() for a in inputs]
    outputs = [torch.full(tuple(shape), float("nan"), dtype=torch.float32) for shape, _ in results]
    return (lambda: kernel(tensors, outputs)), outputs


def compare(problem) -> str:
    module = registry.module(problem)
    inputs = module.random_inputs(problem, np.random.default_rng(0))
    expected = module.reference(problem, inputs)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    arrays = [runtime.to_device(a, "local-task") for a in inputs]
    specs = {c: policy.module_spec(problem, CPU, extra_flags=flags, options=form)
             for c, (form, flags) in forms_of(problem).items()}
    calls_, read = {}, {}
    for c, spec in specs.items():
        if os.environ.get("LAUNCH") == "plan":
            calls_[c], outs = launched(spec, inputs, module.results(problem))
            read[c] = lambda outs=outs: [o.numpy() for o in outs]
        else:
            function = runtime.load_specs([spec], "local-task")
            outs = [runtime.empty(tuple(shape), str(np.dtype(dtype)), "local-task")
                    for shape, dtype in module.results(problem)]
            calls_[c] = lambda function=function, outs=outs: function(*arrays, *outs)
            read[c] = lambda outs=outs: [o.to_host() for o in outs]
    errors = {}
    for c, call in calls_.items():
        call()
        errors[c] = max(verify.relative_error(o, e) for o, e in zip(read[c](), expected))
    times = {c: [] for c in calls_}
    for _ in range(ROUNDS):
        for c, call in calls_.items():
            times[c].append(median_ms(call, []))
    shipped = policy.forms_for(problem, CPU)[0].contraction
    medians = {c: statistics.median(t) for c, t in times.items()}
    cells = "  ".join(f"{c} {m:6.3f}" for c, m in medians.items())
    return (f"{problem.name:95s} {cells}  best {min(medians, key=medians.get)}  shipped {shipped}  "
            f"err {max(errors.values()):.1e}")


def main() -> None:
    torch.set_num_threads(2)
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
