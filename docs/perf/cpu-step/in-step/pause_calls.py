"""Six of resnext2d's kernel calls, back to back, with a 2 MB ``torch.relu`` before each, and with the relu then
libgomp's ``omp_pause_resource_all`` before each: what PyTorch's OpenMP threads cost the calls that follow them.
Medians of 15 per round; each penalty is the time over the calls alone, less the relu (and release) alone. The
kernel calls themselves leave the pool as it is (``contention_ab.kept``), so that only the release this script
makes is measured.

    PYTHONPATH=. python docs/perf/cpu-step/in-step/pause_calls.py [rounds]
"""
import statistics
import sys
import time

import torch

from build_tools import layer_bench
from contention_ab import kept  # this folder's script (the first entry of sys.path when run as below)
from ops.torch import calls

torch.set_num_threads(2)
release = calls.openmp_release()
calls.RuntimeKernel.__call__ = kept
y = torch.randn(16, 32, 32, 32)


def between(mode: int) -> None:
    if mode >= 1:
        torch.relu(y)
    if mode == 2:
        release()


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def main(rounds: int) -> None:
    model, x = layer_bench.model_and_input("resnext2d", 0)
    convs = [(op, a) for op, a in layer_bench.kernel_calls(model, x) if "conv" in op.name][:6]

    def calls(mode):
        for op, args in convs:
            between(mode)
            op.run(*args)

    def gaps(mode):
        for _ in convs:
            between(mode)
    for _ in range(rounds):
        t = {m: [] for m in range(3)}
        g = {m: [] for m in (1, 2)}
        for _ in range(15):
            for m in range(3):
                t[m].append(timed(lambda: calls(m)))
            for m in (1, 2):
                g[m].append(timed(lambda: gaps(m)))
        ms = {m: 1e3 * statistics.median(v) for m, v in t.items()}
        gs = {m: 1e3 * statistics.median(v) for m, v in g.items()}
        print(f"alone {ms[0]:.2f} ms; penalty after relu {ms[1] - ms[0] - gs[1]:.2f} ms, after relu and release "
              f"{ms[2] - ms[0] - gs[2]:.2f} ms (the release and the next region's new thread: {gs[2] - gs[1]:.2f} ms "
              "for six)", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
