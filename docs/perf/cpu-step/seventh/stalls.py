"""The ops of 30 steps (forward and backward of MODEL's sum) that took over 3 ms, PyTorch's model and ours
(torch.profiler, inclusive CPU time of the calling thread): a pool made again after our calls that stalls for
the scheduler's tick would show here.

    PYTHONPATH=. python docs/perf/cpu-step/seventh/stalls.py MODEL
"""
import copy, torch, statistics, sys, collections
from torch.profiler import profile, ProfilerActivity
import ops.torch as otorch
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1]
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build(); ours = otorch.convert(copy.deepcopy(ref))
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(ours, x)
for label, m in (("pytorch", ref), ("ours", ours)):
    for _ in range(3): m.zero_grad(); m(x).sum().backward()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(30): m.zero_grad(); m(x).sum().backward()
    by = collections.defaultdict(list)
    for e in prof.events():
        if e.name.startswith("aten::") or "Function" in e.name:
            by[e.name].append(e.cpu_time_total / 1e3)
    stalls = sorted(((sum(1 for v in vs if v > 3.0), n, len(vs), statistics.median(vs)) for n, vs in by.items()), reverse=True)[:6]
    print(label, [(n, f"{k}/{c} over 3 ms, median {med:.2f}") for k, n, c, med in stalls if k])
