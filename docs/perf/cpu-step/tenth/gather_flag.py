"""Every kernel module of layer_bench's models (their convolution and pooling backward problems, channels-first, and
the max-pooling forward), each as the tuning table ships it and with IREE's experimental vectorization of gathers
(``--iree-llvmcpu-experimental-vectorize-to-transfer-gather``) added: both checked against the float64 reference,
then timed interleaved through the CPU launcher on PyTorch's threads, each call after a PyTorch parallel region;
medians of ROUNDS (default 7) rounds of 9 calls, ms.

    PYTHONPATH=. python docs/perf/cpu-step/tenth/gather_flag.py [MODEL,...] [OP_PREFIX]
"""
import os
import statistics
import sys
import time

import numpy as np
import torch

from build_tools import layer_bench  # noqa: E402
from ops import compiler, policy, registry, targets, verify  # noqa: E402
from ops.launch import cpu as cpu_launch  # noqa: E402
from ops.torch import calls  # noqa: E402

CPU = targets.target_for_device("local-task")
GATHER = "--iree-llvmcpu-experimental-vectorize-to-transfer-gather"
ROUNDS = int(os.environ.get("ROUNDS", 7))
BETWEEN = torch.empty(1 << 19)


def problems(models: list[str], prefix: str) -> dict:
    found = {}
    for name in models:
        model, x = layer_bench.model_and_input(name, 0)
        for op, args in layer_bench.kernel_calls(model, x):
            problem = layer_bench.problem_of(op, args)
            if problem.op.startswith(prefix) and not problem.channels_last:
                found[problem.name] = problem
    return found


def launched(spec, inputs: list, results: list):
    """``spec``'s module through the CPU launcher: a thunk running it on ``inputs`` (arrays) into fresh destinations
    of ``results`` (shape, dtype; NaN or -1 first), and those destinations."""
    _, path, data = compiler.load_first([spec])
    found = cpu_launch.load(spec, path, data)  # (stop 40's interface; it reads the plan, made if missing)
    if isinstance(found, str):
        raise RuntimeError(f"{spec.name}: {found}")
    kernel = calls.CpuLaunchedKernel(*found, torch.device("cpu"))
    tensors = [torch.from_numpy(np.ascontiguousarray(a)).clone() for a in inputs]
    outputs = [torch.full(tuple(shape), np.nan if np.dtype(dtype).kind == "f" else -1,  # PyTorch's: 64-byte aligned
                          dtype=getattr(torch, np.dtype(dtype).name)) for shape, dtype in results]
    return (lambda: kernel(tensors, outputs)), outputs


def median_ms(call) -> float:
    times = []
    for _ in range(9):
        torch.relu_(BETWEEN)  # a PyTorch parallel region before each call, as in a step
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def interleaved_medians(thunks: dict, rounds: int = ROUNDS) -> dict:
    """label -> the median over ``rounds`` rounds of each thunk's median_ms, the thunks taking turns (ms)."""
    times = {label: [] for label in thunks}
    for _ in range(rounds):
        for label, call in thunks.items():
            times[label].append(median_ms(call))
    return {label: statistics.median(t) for label, t in times.items()}


def compare(problem) -> str:
    module = registry.module(problem)
    inputs = module.random_inputs(problem, np.random.default_rng(0))
    expected = module.reference(problem, inputs)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    thunks, errors = {}, {}
    for label, extra in (("shipped", ()), ("gather", (GATHER,))):
        thunks[label], outs = launched(policy.module_spec(problem, CPU, extra_flags=extra), inputs,
                                       module.results(problem))
        thunks[label]()
        errors[label] = max(verify.relative_error(o.numpy(), e) for o, e in zip(outs, expected))
    medians = interleaved_medians(thunks)
    a, b = medians["shipped"], medians["gather"]
    form = policy.forms_for(problem, CPU)[0]
    return (f"{problem.name[:96]:96s} {type(form).__name__}/{getattr(form, 'contraction', getattr(form, 'windows', ''))!s:12s}"
            f" shipped {a:7.3f}  gather {b:7.3f}  {a / b:5.2f}x  err {errors['shipped']:.1e} {errors['gather']:.1e}")


def main() -> None:
    torch.set_num_threads(2)
    models = sys.argv[1].split(",") if len(sys.argv) > 1 else ["resnext2d", "cnn3d", "resnet", "mobilenetv2"]
    prefix = sys.argv[2] if len(sys.argv) > 2 else ""
    print(f"# {targets._cpuinfo_line('model name').partition(':')[2].strip()}; ROUNDS={ROUNDS}")
    for problem in problems(models, prefix).values():
        try:
            print(compare(problem), flush=True)
        except compiler.CompileError as error:
            print(f"{problem.name[:96]:96s} does not compile with the flag: {str(error).splitlines()[-1][:120]}", flush=True)


if __name__ == "__main__":
    main()
