"""The layer's two gradients as two module calls against one call of pair.mlir (pair_module.py): results compared
bitwise, then 60 interleaved rounds, medians.

    PYTHONPATH=. python docs/perf/cpu-step/forms-tried/pair/pair_ab.py
"""
import os
import pickle
import re
import statistics
import time

import numpy as np

from ops import registry, runtime, targets
from ops.compiler import ModuleSpec

HERE = os.path.dirname(os.path.abspath(__file__))
target = targets.target_for_device("local-task")
rng = np.random.default_rng(0)
pd = pickle.load(open(HERE + "/pair_data.pkl", "rb")); pw = pickle.load(open(HERE + "/pair_weight.pkl", "rb"))
def load(path):
    text = open(path).read()
    name = re.findall(r"func.func @(\w+)\(", text)[-1]
    return runtime.load_specs([ModuleSpec(name, text, target)], "local-task")
fd, fw, fp = load(HERE + "/pair_data.mlir"), load(HERE + "/pair_weight.mlir"), load(HERE + "/pair.mlir")
md, mw = registry.module(pd), registry.module(pw)
ind = md.random_inputs(pd, rng)  # grad_out, weight, d0
go, w, d0 = ind
x = rng.standard_normal(pw.input_shape if hasattr(pw, "input_shape") else (16, 64, 16, 16)).astype(np.float32)
dev = lambda a: runtime.to_device(a, "local-task")
GO, W, D0, X = map(dev, (go, w, d0, x))
(sd, tdd), = md.results(pd); (sw, tdw), = mw.results(pw)
oi, ow, pi, pww = (runtime.empty(sd, tdd, "local-task"), runtime.empty(sw, tdw, "local-task"),
                   runtime.empty(sd, tdd, "local-task"), runtime.empty(sw, tdw, "local-task"))
fd(GO, W, D0, oi); fw(X, GO, ow); fp(GO, W, D0, X, pi, pww)
print("max diff data", np.abs(oi.to_host() - pi.to_host()).max(), "weight", np.abs(ow.to_host() - pww.to_host()).max())
t2, t1 = [], []
for _ in range(60):
    t = time.perf_counter(); fd(GO, W, D0, oi); fw(X, GO, ow); t2.append(time.perf_counter() - t)
    t = time.perf_counter(); fp(GO, W, D0, X, pi, pww); t1.append(time.perf_counter() - t)
print(f"two calls {1e3*statistics.median(t2):.3f} ms, one pair call {1e3*statistics.median(t1):.3f} ms")
