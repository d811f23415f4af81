"""``precompile``: every module one training step needs, compiled in parallel before the step runs."""

from __future__ import annotations

import concurrent.futures
import copy
import os
import sys

import torch
from torch import Tensor, nn

from .. import compiler, policy, targets
from . import calls, kernels
from .functional import check_tensor


def _record_step(model: nn.Module, inputs: tuple, driver: str) -> list:
    """The problems of every kernel one training step of ``model`` on ``inputs`` calls (recorded, none runs).

    The step runs where the inputs are: PyTorch's layers compute, this library's kernels only note their
    problems, so every layout is the one training sees (modules for a GPU can be built from CPU inputs). On
    meta inputs nothing computes, and layouts follow PyTorch's meta kernels, which do not keep channels_last
    through every backward: give real inputs for channels-last models. ``driver``: record the problems its step makes
    (``kernels.recording``)."""
    meta = inputs[0].device.type == "meta"
    step_model = copy.deepcopy(model).to("meta") if meta else copy.deepcopy(model)
    step_inputs = tuple(t.detach() for t in inputs)
    with kernels.recording(driver) as problems:
        outputs = step_model(*step_inputs)
        outputs = [o for o in (outputs if isinstance(outputs, (tuple, list)) else [outputs])
                   if isinstance(o, Tensor) and o.requires_grad]
        if outputs:
            torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
    return problems


def precompile(model: nn.Module, example_input, *, device: str | None = None, workers: int | None = None,
               progress: bool = True) -> list:
    """Compile every module one training step of ``model`` on ``example_input`` needs, in parallel.

    The step (its forward and a backward from every output) runs on a copy of the model, so the model is
    untouched, and finds each kernel the step calls with its shapes, dtypes and layouts; no kernel runs. Not
    to be called while another thread trains in this process: their kernels would be recorded, not run.
    ``example_input``: a tensor or a tuple of them, real or meta. ``device``: the IREE driver to compile for
    (``local-task``, ``cuda``, ``hip``), by default that of ``example_input``'s device; CPU inputs with
    ``device="cuda"`` build a GPU's modules on a machine without one. Returns the modules' paths; modules
    already in ``artifacts/`` or the cache are not compiled again.
    """
    inputs = example_input if isinstance(example_input, tuple) else (example_input,)
    for i, t in enumerate(inputs):
        check_tensor("precompile", f"example_input[{i}]", t)
    home = inputs[0].device
    own_driver = None if home.type == "meta" else calls.driver_for(home)
    device = device or own_driver or targets.DEFAULT_DEVICE
    target = targets.target_for_device(device, "precompile")
    problems = _record_step(model, inputs, device)
    alternatives = list({specs[0].name + specs[0].key(None): specs for specs in (
        *(policy.module_specs(problem, target) for problem in problems),
        *([spec] for spec in policy.pair_specs(problems, target)))}.values())
    done = []

    def build(specs):
        compiler.announce.quiet = True  # the progress bar says what compiles
        path = compiler.find_or_compile(specs)
        done.append(specs[0].name)
        if progress:
            bar = "#" * (20 * len(done) // len(alternatives))
            print(f"\rprecompile [{bar:<20}] {len(done)}/{len(alternatives)} modules for {target}", end="",
                  file=sys.stderr, flush=True)
        return path

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        paths = list(pool.map(build, alternatives))
    if progress and alternatives:
        print(file=sys.stderr)
    return paths
