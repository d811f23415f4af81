"""The launched kernels' shared workspace three ways, alternating in one process: a PyTorch allocation (torch.empty,
as stop 39 kept it), an anonymous mapping in plain pages, and one in 2 MB pages (policy.CPU_WORKSPACE_HUGE_PAGES): every kernel call of a training step (train.py's models, converted, precompiled) timed inside whole
steps, ROUNDS rounds of 15 steps each way, each call's median (ms), and the whole step's median.

    PYTHONPATH=. python docs/perf/cpu-step/eleventh/huge_workspace.py [cnn3d|resnext2d]
"""
import os
import statistics
import sys
import threading
import time

import torch

import ops.torch as otorch
from build_tools import train
from ops import policy
from ops.launch import cpu as cpu_launch
from ops.torch import calls

ROUNDS = int(os.environ.get("ROUNDS", 6))
mapped = calls.launch_workspace


def torch_workspace(size: int) -> int:
    """Stop 39's workspace: a PyTorch allocation, grown when a module needs more."""
    buffer = getattr(calls._launch_workspace, "buffer", None)
    if buffer is None or buffer.numel() < size:
        buffer = calls._launch_workspace.buffer = torch.empty(max(size, 64), dtype=torch.uint8)
    return buffer.data_ptr()


def main() -> None:
    torch.set_num_threads(2)
    name = sys.argv[1] if len(sys.argv) > 1 else "cnn3d"
    build, shape = train.MODELS[name]
    torch.manual_seed(0)
    model = otorch.convert(build())
    x = torch.randn(train.BATCH["cpu"][name], *shape)
    otorch.precompile(model, x, progress=False)
    record = []
    run = cpu_launch.Kernels.__call__

    def timed(self, bases, threads):
        started = time.perf_counter()
        run(self, bases, threads)
        record.append(time.perf_counter() - started)

    cpu_launch.Kernels.__call__ = timed

    def step() -> float:
        started = time.perf_counter()
        model(x).sum().backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - started

    for _ in range(5):
        step()
    record.clear()
    step()
    count = len(record)
    kinds = ("torch.empty", "plain pages", "huge pages")
    calls_ms, steps_ms = {k: [] for k in kinds}, {k: [] for k in kinds}
    for round_ in range(ROUNDS):
        for kind in kinds[round_ % 3:] + kinds[:round_ % 3]:  # each kind first in turn
            policy.CPU_WORKSPACE_HUGE_PAGES = kind == "huge pages"
            calls._launch_workspace = threading.local()  # a fresh workspace of this kind
            calls.launch_workspace = torch_workspace if kind == "torch.empty" else mapped
            step()
            record.clear()
            steps_ms[kind] += [1e3 * step() for _ in range(15)]
            calls_ms[kind] += [1e3 * t for t in record]
    print(f"# {name}; {count} kernel calls a step; ROUNDS={ROUNDS}")
    for kind in kinds:
        medians = [statistics.median(calls_ms[kind][i::count]) for i in range(count)]
        print(f"{kind:12s}: calls {' '.join(f'{m:.3f}' for m in medians)}; sum {sum(medians):.3f} ms; "
              f"step {statistics.median(steps_ms[kind]):.3f} ms")


if __name__ == "__main__":
    main()
