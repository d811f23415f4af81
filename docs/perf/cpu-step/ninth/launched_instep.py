"""Each launched CPU call of resnext2d's step (or MODEL's), timed inside 20 steps (medians), then alone on the same
tensors: back to back, after a PyTorch parallel region, with fresh destinations, and after 16 MB were written
(the caches' contents evicted); ms.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/launched_instep.py [MODEL]
"""
import statistics, sys, time, torch
import ops.torch as otorch
from ops.torch import calls
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "resnext2d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ours = otorch.convert(build())
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(ours, x)
rec = []
orig = calls.CpuLaunchedKernel.__call__
def timed(self, inputs, outputs):
    t = time.perf_counter(); orig(self, inputs, outputs); rec.append((self, time.perf_counter() - t, inputs, outputs))
calls.CpuLaunchedKernel.__call__ = timed
steps = []
for s in range(25):
    rec.clear(); ours.zero_grad(); ours(x).sum().backward()
    if s >= 5: steps.append(list(rec))
n = len(steps[0])
# isolated: the same kernel on the same tensors, back to back, and after a relu region
a = torch.randn(1 << 19)
print(f"{'call':4s} {'in step':>8s} {'alone':>8s} {'after relu':>10s}  plan")
tot = [0, 0, 0]
for i in range(n):
    k, _, ins, outs = steps[-1][i]
    instep = statistics.median(st[i][1] for st in steps)
    alone = []; after = []
    for _ in range(30):
        t = time.perf_counter(); orig(k, ins, outs); alone.append(time.perf_counter() - t)
        torch.relu_(a); t = time.perf_counter(); orig(k, ins, outs); after.append(time.perf_counter() - t)
    al, af = statistics.median(alone), statistics.median(after)
    tot[0] += instep; tot[1] += al; tot[2] += af
    print(f"{i:4d} {1e3*instep:8.3f} {1e3*al:8.3f} {1e3*af:10.3f}  {k.kernels.plan.function[:70]}")
print("sum", [round(1e3 * t, 2) for t in tot])
print("--- fresh outputs each call (torch.empty), alone")
for i in (5, 9, 17, 18, 21):
    k, _, ins, outs = steps[-1][i]
    fresh = []
    for _ in range(30):
        o2 = [torch.empty_like(o) for o in outs]
        t = time.perf_counter(); orig(k, ins, o2); fresh.append(time.perf_counter() - t)
    print(i, f"{1e3*statistics.median(fresh):.3f}", k.kernels.plan.function[:60])
print("--- after writing 16 MB (L2 evicted), alone")
big = torch.empty(1 << 22)
for i in (5, 9, 17, 18, 21):
    k, _, ins, outs = steps[-1][i]
    fl = []
    for _ in range(30):
        big.fill_(1.0)
        t = time.perf_counter(); orig(k, ins, outs); fl.append(time.perf_counter() - t)
    print(i, f"{1e3*statistics.median(fl):.3f}", k.kernels.plan.function[:60])
