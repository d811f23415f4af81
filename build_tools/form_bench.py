"""Every CPU form of a convolution backward, side by side: the evidence behind ``mlir/tuning/llvm-cpu.json``'s form
rules, measured on the host it runs on.

    python -m build_tools.form_bench [--models resnext2d,mobilenetv2,resnet,cnn3d] [--ops grouped_conv_bwd_weight]
                                     [--rounds 7] [--launcher torch|runtime]
    python -m build_tools.form_bench --models resnet50 --batch 4 [--config f32_cl] [--forms im2col,per_image_nn]

The problems are the convolution backwards that one converted training step of ``layer_bench``'s models makes
(torchvision's, ``layer_bench``'s, in ``--config``: float32 NCHW, or channels_last; ``--ops``: only operators whose
name starts so). Of each, the first form of each contraction it offers on ``llvm-cpu`` (``--forms``: only those;
``policy.target_forms``, with the flags the table gives that form; per_image_nn always with IREE's transpose
propagation off, as its rules give it) is loaded through the executor, known-answer check included: as
``ops.torch`` runs it (``--launcher torch``, the default: the CPU launcher on PyTorch's threads) or as the NumPy API
does (``runtime``: IREE's runtime). Its results on other inputs are compared with the float64 reference; then the
forms are timed in turns, round after round (each round the median of 9 calls; a form's time is the median over
``--rounds``, ms). One line a problem: each form's time, the fastest form, the form the table puts first
(``shipped``) and the largest error. The host's CPU and its AVX2, AVX-512 and AMX flags head the output: a rule holds
on the hosts it was measured on (``host_flags``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ops import executor, known_answer, policy, registry, runtime, targets, verify

CPU = targets.parse_target("llvm-cpu")
PROPAGATION_OFF = "--iree-global-opt-propagate-transposes=false"
CALLS_A_ROUND = 9


def conv_problems(models: list[str], prefix: str = "", batch: int | None = None, config: str = "f32_nchw") -> dict:
    """name -> problem: the convolution backwards of one converted step of each of ``models`` (at ``batch``, or each
    model's own; torchvision's in ``config``, the others channels-first)."""
    from build_tools import layer_bench

    found = {}
    for name in models:
        model, x = layer_bench.model_and_input(name, 0, config=config, batch=batch)
        for op, args in layer_bench.kernel_calls(model, x):
            problem = layer_bench.problem_of(op, args)
            if problem.op.startswith(prefix) and "conv" in problem.op:
                found[problem.name] = problem
    return found


def forms_of(problem) -> dict:
    """contraction -> (its first form for ``problem`` on llvm-cpu, the flags added to the table's for that form)."""
    found = {}
    for form in policy.target_forms(problem, CPU):
        if form.contraction not in found:
            table = policy.flags_for(problem, CPU, form)
            extra = (PROPAGATION_OFF,) if form.contraction == "per_image_nn" and PROPAGATION_OFF not in table else ()
            found[form.contraction] = (form, extra)
    return found


def host_for(launcher: str):
    """The executor's host: PyTorch's tensors (the CPU launcher, as ``ops.torch``) or IREE's arrays (its runtime)."""
    if launcher == "runtime":
        return runtime.IreeHost("local-task")
    import torch
    from ops.torch import calls

    return calls.TorchHost(torch.device("cpu"), "local-task")


def error_of(call, problem, rng) -> float:
    """The largest normwise error of ``call``'s results on fresh random inputs against the float64 reference."""
    module = registry.module(problem)
    inputs = module.random_inputs(problem, rng)
    expected = module.reference(problem, inputs)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    ran = executor.known_run(call, inputs)
    return max(verify.relative_error(got, want) for got, want in zip(ran.results, expected))


def _round_ms(call, host, arrays: list, outputs: list) -> float:
    times = []
    for _ in range(CALLS_A_ROUND):
        started = time.perf_counter()
        call(arrays, outputs)
        host.wait()
        times.append(time.perf_counter() - started)
    return 1e3 * statistics.median(times)


def timed_ms(calls: dict, problem, host, rounds: int) -> dict:
    """contraction -> the median over ``rounds`` of each round's median call (ms), the forms taking turns."""
    inputs = registry.module(problem).random_inputs(problem, np.random.default_rng(1))
    arrays = [host.put(np.ascontiguousarray(a), problem.channels_last) for a in inputs]
    times = {c: [] for c in calls}
    for _ in range(rounds):
        for c, call in calls.items():
            outputs = [host.put(a, problem.channels_last) for a in known_answer.poisoned(problem)]
            times[c].append(_round_ms(call, host, arrays, outputs))
    return {c: statistics.median(t) for c, t in times.items()}


def compare(problem, host, rounds: int, contractions: tuple[str, ...] | None = None) -> dict:
    """``problem``'s forms (each contraction's first; only ``contractions`` where given), checked and timed."""
    calls, refused, errors = {}, {}, {}
    for contraction, (form, extra) in forms_of(problem).items():
        if contractions and contraction not in contractions:
            continue
        try:
            calls[contraction] = executor.ready(problem, host, extra, form)
        except known_answer.WrongResultError as error:
            refused[contraction] = str(error).splitlines()[0]
            continue
        errors[contraction] = error_of(calls[contraction], problem, np.random.default_rng(0))
    ms = timed_ms(calls, problem, host, rounds)
    return {"problem": problem.name, "ms": ms, "best": min(ms, key=ms.get) if ms else None,
            "shipped": policy.forms_for(problem, CPU)[0].contraction, "error": max(errors.values(), default=0.0),
            "refused": refused}


def line(row: dict) -> str:
    cells = "  ".join(f"{c} {m:6.3f}" for c, m in row["ms"].items())
    refused = "".join(f"  {c} refused" for c in row["refused"])
    return (f"{row['problem']:95s} {cells}{refused}  best {row['best']}  shipped {row['shipped']}  "
            f"err {row['error']:.1e}")


def host_line(rounds: int) -> str:
    """The host's processor and the flags the CPU rules are keyed on."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    model = next((line.partition(":")[2].strip() for line in lines if line.startswith("model name")), "unknown CPU")
    shown = " ".join(sorted(f for f in targets.host_cpu_flags() if f.startswith(("avx512f", "amx_tile", "avx2"))))
    return f"# {model}; {shown}; rounds {rounds}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnext2d,mobilenetv2,resnet,cnn3d")
    parser.add_argument("--ops", default="", help="only operators whose name starts with this")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--launcher", choices=("torch", "runtime"), default="torch")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--batch", type=int, help="batch size (default: each model's own)")
    parser.add_argument("--config", choices=("f32_nchw", "f32_cl"), default="f32_nchw",
                        help="torchvision models' configuration (f32_cl: channels_last)")
    parser.add_argument("--forms", default="", help="comma-separated contractions to compare (default: all)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    host = host_for(args.launcher)
    print(host_line(args.rounds), flush=True)
    for problem in conv_problems(args.models.split(","), args.ops, args.batch, args.config).values():
        if len(forms_of(problem)) > 1:
            print(line(compare(problem, host, args.rounds, tuple(filter(None, args.forms.split(","))))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
