"""The two remedies of the CPU call, alone and together: one converted model's forward+backward+SGD step, interleaved
step by step, as PyTorch runs it and as ours runs it with ``SCHED_BATCH`` and the OpenMP release ("b1r1", the
default), ``SCHED_BATCH`` only ("b1r0"), the release only ("b0r1") or neither ("b0r0"). ``IREE_FLAGS`` are parsed
before the first device is made. ``main`` also serves ``../in-step/contention_ab.py`` and ``../in-step/batch_ab.py``
under their own labels.

    IREE_FLAGS="" PYTHONPATH=. python docs/perf/cpu-step/sched-batch/combinations_ab.py resnext2d 30
"""
import copy
import os
import statistics
import sys
import time

import iree.runtime as rt

if os.environ.get("IREE_FLAGS"):
    rt.flags.parse_flags(*os.environ["IREE_FLAGS"].split())

import torch  # noqa: E402
from torch import nn  # noqa: E402

import ops.torch as otorch  # noqa: E402
from build_tools.train import BATCH, MODELS  # noqa: E402
from ops.torch import calls  # noqa: E402

torch.set_num_threads(2)
default = calls.RuntimeKernel.__call__


def variant(batch: bool, release: bool):
    """A CPU kernel call with the switch and the release each kept or cleared."""
    def call(self, inputs, outputs):
        saved = self.batch, self.release
        self.batch, self.release = batch and saved[0], saved[1] if release else None
        try:
            return default(self, inputs, outputs)
        finally:
            self.batch, self.release = saved
    return call


VARIANTS = {"b1r1": variant(True, True), "b1r0": variant(True, False), "b0r1": variant(False, True),
            "b0r0": variant(False, False)}


def main(name: str, steps: int, variants: list[str], labels: dict | None = None, prefix: str = "") -> None:
    """Print each variant's median step (ms), under ``labels[variant]`` where given."""
    labels = labels or {}
    build, shape = MODELS[name]
    torch.manual_seed(0)
    reference = build()
    ours = otorch.convert(copy.deepcopy(reference))
    x, y = torch.randn(BATCH["cpu"][name], *shape), torch.randint(0, 10, (BATCH["cpu"][name],))
    otorch.precompile(ours, x)
    loss = nn.CrossEntropyLoss()
    optimizers = {m: torch.optim.SGD(m.parameters(), lr=0.001, momentum=0.9) for m in (reference, ours)}
    times = {"pytorch": [], **{v: [] for v in variants}}
    for step in range(steps + 1):
        for label in times:
            model = reference if label == "pytorch" else ours
            if label != "pytorch":
                calls.RuntimeKernel.__call__ = VARIANTS[label]
            started = time.perf_counter()
            optimizers[model].zero_grad(set_to_none=True)
            loss(model(x), y).backward()
            optimizers[model].step()
            if step:
                times[label].append(time.perf_counter() - started)
    print(prefix + name, " ".join(f"{labels.get(k, k)} {1e3 * statistics.median(v):.2f}" for k, v in times.items()),
          flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30,
         sys.argv[3].split(",") if len(sys.argv) > 3 else ["b1r1", "b1r0", "b0r1"])
