"""Each leaf module's forward time in a converted model against PyTorch's (forward hooks, 30 forwards, medians, ms).

    PYTHONPATH=. python docs/perf/cpu-step/tenth/forward_layers.py resnext2d|cnn3d
"""
import copy, sys, torch, time, statistics
import ops.torch as otorch
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "resnext2d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build(); ours = otorch.convert(copy.deepcopy(ref))
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(ours, x, progress=False)
for _ in range(3): ours(x).sum().backward(); ref(x).sum().backward()
def leaves(m):
    kids = list(m.children())
    return [m] if not kids else [l for k in kids for l in leaves(k)]
def timed_forward(model):
    times = {}
    hooks = []
    for i, l in enumerate(leaves(model)):
        def pre(mod, inp, i=i): times.setdefault(i, []).append(-time.perf_counter())
        def post(mod, inp, out, i=i): times[i][-1] += time.perf_counter()
        hooks += [l.register_forward_pre_hook(pre), l.register_forward_hook(post)]
    for _ in range(30): model(x)
    for h in hooks: h.remove()
    return {i: statistics.median(v) * 1e3 for i, v in times.items()}
a, b = timed_forward(ref), timed_forward(ours)
la, lb = leaves(ref), leaves(ours)
for i in a:
    print(f"{i:2d} {type(lb[i]).__name__:22s} {a[i]:7.3f} {b[i]:7.3f} {b[i]-a[i]:+7.3f}")
print("sum", round(sum(a.values()), 3), round(sum(b.values()), 3))
