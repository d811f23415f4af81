"""PyTorch's OpenMP workers against IREE's: one converted model's forward+backward+SGD step, interleaved step by
step, as PyTorch runs it, as ours runs it, and as ours runs it when PyTorch's OpenMP pool is released
(``omp_pause_resource_all``) before every kernel call. IREE runtime flags (``IREE_FLAGS``, e.g.
``--task_topology_group_count=1``) are parsed before the first device is made.

    IREE_FLAGS="" PYTHONPATH=. python docs/perf/cpu-step/in-step/contention_ab.py resnext2d 30
"""
import copy
import ctypes
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
gomp = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp.so.1"))
plain = calls.RuntimeKernel.__call__


def paused(self, inputs, outputs):
    gomp.omp_pause_resource_all(1)  # omp_pause_soft: the pool's threads exit; the next parallel region makes them
    return plain(self, inputs, outputs)


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
            calls.RuntimeKernel.__call__ = paused if label == "ours_paused" else plain
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
