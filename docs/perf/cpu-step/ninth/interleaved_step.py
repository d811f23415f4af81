"""The training step of train.py's models, ours and PyTorch's alternating step by step in one process (forward,
backward and SGD, as train.py's step), against train.py's order (all of PyTorch's steps, then all of ours): whether
the machine's drift within a run favours either side. Medians of STEPS (default 40) steps after 5 of warm-up, ms.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/interleaved_step.py [MODEL,...]
"""
import copy
import os
import statistics
import sys
import time

import torch

import ops.torch as otorch
from build_tools import train

STEPS = int(os.environ.get("STEPS", 40))


def stepper(model, x, y):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return step


def timed(step) -> float:
    started = time.perf_counter()
    step()
    return 1e3 * (time.perf_counter() - started)


def main() -> None:
    torch.set_num_threads(2)
    for name in (sys.argv[1].split(",") if len(sys.argv) > 1 else ["resnext2d", "cnn3d"]):
        build, shape = train.MODELS[name]
        torch.manual_seed(0)
        reference = build()
        ours = otorch.convert(copy.deepcopy(reference))
        batch = train.BATCH["cpu"][name]
        x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))
        otorch.precompile(ours, x, progress=False)
        steps = {"pytorch": stepper(reference, x, y), "ours": stepper(ours, x, y)}
        for step in steps.values():
            for _ in range(5):
                step()
        sequential = {label: [timed(step) for _ in range(STEPS)] for label, step in steps.items()}
        alternating = {label: [] for label in steps}
        for _ in range(STEPS):
            for label, step in steps.items():
                alternating[label].append(timed(step))
        for how, times in (("one side, then the other", sequential), ("alternating", alternating)):
            ours_ms, theirs_ms = statistics.median(times["ours"]), statistics.median(times["pytorch"])
            print(f"{name:10s} {how:25s} ours {ours_ms:6.2f} ms  PyTorch {theirs_ms:6.2f} ms  {ours_ms / theirs_ms:.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
