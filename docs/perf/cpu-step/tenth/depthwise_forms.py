"""The depthwise weight gradients of mobilenetv2's and resnext2d's layers: every CPU form each offers, as shipped and
with the gather flag, checked against the float64 reference, then timed interleaved through the CPU launcher
(gather_flag.py's way): medians of 7 rounds of 9 calls, ms.

    PYTHONPATH=. OPS_QUIET=1 python docs/perf/cpu-step/tenth/depthwise_forms.py
"""
import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import numpy as np, torch
import gather_flag as g
from ops import policy, registry, verify
torch.set_num_threads(2)
probs = g.problems(["mobilenetv2", "resnext2d"], "grouped_conv_bwd_weight")
for p in probs.values():
    if p.kind != "depthwise": continue
    module = registry.module(p)
    inputs = module.random_inputs(p, np.random.default_rng(0))
    expected = module.reference(p, inputs)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    thunks = {}
    for form in policy.target_forms(p, g.CPU):
        for label, extra in ((form.contraction, ()), (form.contraction + "+gather", (g.GATHER,))):
            if label in thunks: continue
            try:
                thunks[label], outs = g.launched(policy.module_spec(p, g.CPU, extra_flags=extra, options=form), inputs, module.results(p))
            except Exception as e:
                print(p.name, label, "fails:", str(e).splitlines()[-1][:80]); continue
            thunks[label]()
            err = max(verify.relative_error(o.numpy(), e) for o, e in zip(outs, expected))
            assert err < 1e-4, (label, err)
    medians = g.interleaved_medians(thunks, 7)
    print(p.name[:90], "  ".join(f"{k} {m:.3f}" for k, m in medians.items()), "shipped",
          policy.forms_for(p, g.CPU)[0].contraction, flush=True)
