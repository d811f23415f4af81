"""The calling thread under ``SCHED_BATCH`` during CPU kernel calls (``policy.CPU_CALLS_SCHED_BATCH``), against the
same calls left under ``SCHED_OTHER``: one converted model's forward+backward+SGD step, interleaved step by step, as
PyTorch runs it, as ours runs it without the switch ("ours_other"), and as ours runs it by default ("ours", the
switch on; PyTorch's OpenMP pool released before each call in both).

    PYTHONPATH=. python docs/perf/cpu-step/in-step/batch_ab.py resnext2d 30
"""
import copy
import statistics
import sys
import time

import torch
from torch import nn

import ops.torch as otorch
from build_tools.train import BATCH, MODELS
from ops.torch import calls

torch.set_num_threads(2)
default = calls.RuntimeKernel.__call__


def other(self, inputs, outputs):
    """A CPU kernel call that leaves the calling thread under SCHED_OTHER."""
    batch, self.batch = self.batch, False
    try:
        return default(self, inputs, outputs)
    finally:
        self.batch = batch


def main(name: str, steps: int) -> None:
    build, shape = MODELS[name]
    torch.manual_seed(0)
    reference = build()
    ours = otorch.convert(copy.deepcopy(reference))
    x, y = torch.randn(BATCH["cpu"][name], *shape), torch.randint(0, 10, (BATCH["cpu"][name],))
    otorch.precompile(ours, x)
    loss = nn.CrossEntropyLoss()
    optimizers = {m: torch.optim.SGD(m.parameters(), lr=0.001, momentum=0.9) for m in (reference, ours)}
    times = {"pytorch": [], "ours_other": [], "ours": []}
    for step in range(steps + 1):
        for label, model in (("pytorch", reference), ("ours_other", ours), ("ours", ours)):
            calls.RuntimeKernel.__call__ = other if label == "ours_other" else default
            started = time.perf_counter()
            optimizers[model].zero_grad(set_to_none=True)
            loss(model(x), y).backward()
            optimizers[model].step()
            if step:
                times[label].append(time.perf_counter() - started)
    medians = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    print(name, " ".join(f"{k} {v:.2f} ms" for k, v in medians.items()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
