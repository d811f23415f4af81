"""What issue 45's per-layer probes (``gemm_probe``, ``data_probe``) share: a problem's kernel timed as ops.torch
runs it on a CUDA device (the launcher, checked on first use), and a CUDA call's median time."""

from __future__ import annotations

import numpy as np


def timed(call, repeat: int = 20) -> float:
    """The median device milliseconds of ``call()`` on the current CUDA stream, each from an idle device (the step
    benchmark's ``model_bench.timed``), after 3 warm-ups."""
    import torch

    from build_tools.model_bench import timed as timed_once

    for _ in range(3):
        call()
    device = torch.device("cuda", torch.cuda.current_device())
    return float(np.median([timed_once(call, device)[1] for _ in range(repeat)]))


def kernel_line(label: str, problem, device) -> str:
    """``label`` and ``problem``'s kernel time and TFLOP/s through the CUDA launcher, or why it has none (the
    check refused every form, or no launch plan)."""
    from ops import executor, known_answer, registry
    from ops.torch import calls

    try:
        kernel = executor.launched(problem, calls.host(device), "cuda")
    except Exception as error:  # a refusal or a load failure is the probe's finding, printed
        return f"{label} ERROR {str(error)[:300]}"
    if not callable(kernel):
        return f"{label} NO LAUNCH PLAN (IREE's runtime would serve it): {kernel}"
    rng = np.random.default_rng(0)
    operator = registry.module(problem)
    inputs = [calls.to_torch(a, device, problem.channels_last) for a in operator.random_inputs(problem, rng)]
    outputs = [calls.to_torch(a, device, problem.channels_last) for a in known_answer.poisoned(problem)]
    ms = timed(lambda: kernel(inputs, outputs))
    return f"{label} {ms:8.3f} ms {problem.flops / ms / 1e9:7.2f} TFLOP/s"
