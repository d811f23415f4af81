"""The training step with CPU modules launched on PyTorch's threads (the default) against IREE's runtime
(OPS_CPU_LAUNCHER=runtime), alternating whole `build_tools.train` runs: PAIRS pairs (default 4) of each model's
median step, ours and PyTorch's, ms.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/launcher_ab.py [PAIRS]
"""
import os
import re
import subprocess
import sys

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
COMMAND = [sys.executable, "-m", "build_tools.train", "--device", "cpu", "--threads", "2", "--steps", "30",
           "--models", "resnext2d,cnn3d"]


def run(launcher: str) -> list[tuple[float, float]]:
    env = {**os.environ, "OPS_CPU_LAUNCHER": launcher}
    out = subprocess.run(COMMAND, env=env, capture_output=True, text=True, check=True).stdout
    return [(float(a), float(b)) for a, b in re.findall(r"median step: PyTorch ([\d.]+) ms, ours ([\d.]+) ms", out)]


print(f"{'launcher':9s} {'resnext2d ours / PyTorch':>30s} {'cnn3d ours / PyTorch':>30s}")
for _ in range(PAIRS):
    for launcher in ("runtime", "plan"):
        cells = [f"{ours:6.2f} / {theirs:6.2f} = {ours / theirs:4.2f}x" for theirs, ours in run(launcher)]
        print(f"{launcher:9s} " + " ".join(f"{c:>30s}" for c in cells), flush=True)
