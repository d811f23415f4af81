"""A training step's forward and backward timed apart (out.sum().backward(), no optimizer), ours and PyTorch's
alternating, 60 steps after 5 of warm-up, medians (ms).

    PYTHONPATH=. python docs/perf/cpu-step/tenth/step_parts.py cnn3d|resnext2d
"""
import copy, statistics, time, sys, torch
import ops.torch as otorch
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "cnn3d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build(); ours = otorch.convert(copy.deepcopy(ref))
b = train.BATCH["cpu"][name]
x = torch.randn(b, *shape)
otorch.precompile(ours, x, progress=False)
def parts(m):
    t0 = time.perf_counter(); out = m(x); t1 = time.perf_counter(); out.sum().backward(); t2 = time.perf_counter()
    m.zero_grad(set_to_none=True)
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3
for m in (ref, ours):
    for _ in range(5): parts(m)
res = {"pt": [], "ours": []}
for _ in range(60):
    res["pt"].append(parts(ref)); res["ours"].append(parts(ours))
for k, v in res.items():
    print(k, "fwd %.2f bwd %.2f" % (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)))
