"""Each autograd node's time in a training step's backward, ours (converted) and PyTorch's: a pre-hook and a hook on
every node of the graph (timestamps before and after it runs), 40 steps of each taking turns after 5, medians (ms),
and the backward's whole time.

    PYTHONPATH=. python docs/perf/cpu-step/eleventh/backward_nodes.py cnn3d|resnext2d
"""
import copy, statistics, time, sys, torch
import ops.torch as otorch
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "cnn3d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build(); ours = otorch.convert(copy.deepcopy(ref))
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(ours, x, progress=False)
def step(m, rec):
    out = m(x).sum()
    nodes, stack, seen = [], [out.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or n in seen: continue
        seen.add(n); nodes.append(n)
        stack += [f for f, _ in n.next_functions]
    t = {}
    for i, n in enumerate(nodes):
        key = (i, n.name())
        n.register_prehook(lambda g, key=key: t.__setitem__(key, -time.perf_counter()))
        n.register_hook(lambda gi, go, key=key: t.__setitem__(key, t[key] + time.perf_counter()))
    t0 = time.perf_counter(); out.backward(); total = time.perf_counter() - t0
    rec.append((total, t))
    m.zero_grad(set_to_none=True)
R = {"pt": [], "ours": []}
for _ in range(5): step(ref, []); step(ours, [])
for _ in range(40): step(ref, R["pt"]); step(ours, R["ours"])
for k, v in R.items():
    tot = statistics.median(a for a, _ in v) * 1e3
    per = {}
    for _, t in v:
        for key, d in t.items(): per.setdefault(key, []).append(d)
    s = sum(statistics.median(d) for d in per.values()) * 1e3
    print(f"{k}: backward {tot:.3f} ms, nodes {s:.3f}, outside nodes {tot - s:.3f}")
    for key in sorted(per): print(f"   {key[1]:40s} {statistics.median(per[key])*1e3:.3f}")
