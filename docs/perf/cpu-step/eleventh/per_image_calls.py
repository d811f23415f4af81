"""cnn3d's 3-D stem: four calls of the batch-1 module (one per image) against one call of the batch-4 module, through the
CPU launcher (tenth/gather_flag.py's thunks), interleaved medians (ms).

    PYTHONPATH=. python docs/perf/cpu-step/eleventh/per_image_calls.py
"""
import sys, dataclasses
import numpy as np, torch
sys.path.insert(0, "docs/perf/cpu-step/tenth"); sys.path.insert(0, "tests")
import gather_flag as g
from grouped_conv_bwd_weight_cases import TABLE_NAMED
from ops import policy, registry
torch.set_num_threads(2)
p4 = TABLE_NAMED["cnn3d_stem"]
p1 = dataclasses.replace(p4, batch=1)
m = registry.module(p4)
for p in (p4, p1): print(p.name, policy.forms_for(p, g.CPU)[0])
i4 = m.random_inputs(p4, np.random.default_rng(0)); i1 = [a[:1].copy() for a in i4]
spec4 = policy.module_spec(p4, g.CPU); spec1 = policy.module_spec(p1, g.CPU)
t4, _ = g.launched(spec4, i4, m.results(p4)); t1, _ = g.launched(spec1, i1, m.results(p1))
def four(): 
    for _ in range(4): t1()
print(g.interleaved_medians({"n4 once": t4, "n1 four times": four, "n1 once": t1}))
