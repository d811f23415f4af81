"""Hand-written modules timed against the module of the current form: PYTHONPATH=. python ab_mlir.py PROBLEM.pkl CURRENT.mlir CANDIDATE.mlir ...
(problem_mlir.py MODEL SUBSTRING NAME writes NAME.mlir, the current form, and NAME.pkl, the problem). A module given as
"PATH|FLAG|FLAG..." compiles with those extra flags. Each module is checked against the float64 reference first, then all
are timed interleaved, 40 rounds (ROUNDS)."""

import pickle
import re
import statistics
import sys
import time

import numpy as np

from ops import registry, runtime, targets
from ops.compiler import ModuleSpec

problem = pickle.load(open(sys.argv[1], "rb"))
target = targets.target_for_device("local-task")
rng = np.random.default_rng(0)
mod = registry.module(problem)
inputs = mod.random_inputs(problem, rng)
ref = mod.reference(problem, inputs)
fns = []
for item in sys.argv[2:]:
    path, *flags = item.split("|")
    text = open(path).read()
    name = re.search(r"func.func @(\w+)", text).group(1)
    fn = runtime.load_specs([ModuleSpec(name, text, target, tuple(flags))], "local-task")
    fns.append((item.split("/")[-1], fn))
dev_in = [runtime.to_device(a, "local-task") for a in inputs]
(shape, dt), = mod.results(problem)
for label, fn in fns:
    out = runtime.empty(shape, dt, "local-task")
    r = fn(*dev_in, out)[-1].to_host()
    err = np.abs(r - ref).max() / np.abs(ref).max()
    print(label, "max rel err", err)
times = {l: [] for l, _ in fns}
outs = {l: runtime.empty(shape, dt, "local-task") for l, _ in fns}
for _ in range(int(__import__("os").environ.get("ROUNDS", 40))):
    for label, fn in fns:
        t = time.perf_counter(); fn(*dev_in, outs[label]); times[label].append(time.perf_counter() - t)
for l, v in times.items():
    print(f"{l}: median {1e3*statistics.median(v):.3f} ms  min {1e3*min(v):.3f}")
