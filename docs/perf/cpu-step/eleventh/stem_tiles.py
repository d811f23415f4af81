"""cnn3d's 3-D stem, per_image_nn with other pinned matmul tiles (distribution (M, N), vector (M, N, K)), each checked
against the float64 reference, through the CPU launcher, interleaved medians of 7 rounds (ms).

    PYTHONPATH=. OPS_QUIET=1 python docs/perf/cpu-step/eleventh/stem_tiles.py
"""
import sys
import numpy as np, torch
sys.path.insert(0, "docs/perf/cpu-step/tenth"); sys.path.insert(0, "tests")
import gather_flag as g
from matmul_config import config
from grouped_conv_bwd_weight_cases import TABLE_NAMED
from ops import policy, registry, verify
torch.set_num_threads(2)
p = TABLE_NAMED["cnn3d_stem"]
m = registry.module(p)
inputs = m.random_inputs(p, np.random.default_rng(0)); expected = m.reference(p, inputs)
cands = [((27, 16), (9, 16, 16)), ((81, 16), (9, 16, 16)), ((9, 16), (9, 16, 16)), ((27, 16), (9, 16, 32)), ((81, 16), (27, 16, 16)), ((27, 16), (27, 16, 8)), ((81, 16), (9, 16, 64)), ((3, 16), (3, 16, 16)), ((27, 16), (13, 16, 16))]
thunks = {}
for d, v in cands:
    label = f"{d}/{v}"
    try:
        thunks[label], outs = g.launched(policy.module_spec(p, g.CPU, configs={0: config(d, v)}), inputs, m.results(p))
        thunks[label](); e = verify.relative_error(outs[0].numpy(), expected)
        if e > 1e-5: print(label, "error", e); del thunks[label]
    except Exception as ex:
        print(label, "fails", str(ex).splitlines()[-1][:100])
for k, v in g.interleaved_medians(thunks, 7).items(): print("%-24s %.3f" % (k, v))
