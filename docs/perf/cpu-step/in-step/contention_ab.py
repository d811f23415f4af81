"""PyTorch's OpenMP workers against IREE's: one converted model's forward+backward+SGD step, interleaved step by
step, as PyTorch runs it, as ours runs it with PyTorch's OpenMP pool kept ("ours", the code before
``policy.CPU_CALLS_RELEASE_OPENMP``), and as ours runs it with the pool released (``omp_pause_resource_all``)
before every kernel call ("ours_paused", now the default). IREE runtime flags (``IREE_FLAGS``, e.g.
``--task_topology_group_count=1``) are parsed before the first device is made.

    IREE_FLAGS="" PYTHONPATH=. python docs/perf/cpu-step/in-step/contention_ab.py resnext2d 30
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
released = calls.RuntimeKernel.__call__


def kept(self, inputs, outputs):
    """A CPU kernel call that leaves PyTorch's OpenMP pool as it is."""
    release, self.release = self.release, None
    try:
        return released(self, inputs, outputs)
    finally:
        self.release = release


def main(name: str, steps: int) -> None:
    build, shape = MODELS[name]
    torch.manual_seed(0)
    reference = build()
    ours = otorch.convert(copy.deepcopy(reference))
    x, y = torch.randn(BATCH["cpu"][name], *shape), torch.randint(0, 10, (BATCH["cpu"][name],))
    otorch.precompile(ours, x)
    loss = nn.CrossEntropyLoss()
    optimizers = {m: torch.optim.SGD(m.parameters(), lr=0.001, momentum=0.9) for m in (reference, ours)}
    times = {"pytorch": [], "ours": [], "ours_paused": []}
    for step in range(steps + 1):
        for label, model in (("pytorch", reference), ("ours", ours), ("ours_paused", ours)):
            calls.RuntimeKernel.__call__ = released if label == "ours_paused" else kept
            started = time.perf_counter()
            optimizers[model].zero_grad(set_to_none=True)
            loss(model(x), y).backward()
            optimizers[model].step()
            if step:
                times[label].append(time.perf_counter() - started)
    medians = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    print(name, f"flags={os.environ.get('IREE_FLAGS', '')!r}", " ".join(f"{k} {v:.2f} ms" for k, v in medians.items()))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
