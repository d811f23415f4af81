"""Where our step's kernel-call time goes, inside real steps (35 of 40, medians a step): the OpenMP pool's release,
IREE's invoke (a queued call's submission; a plain call's submission and wait), the waits, the RuntimeKernel calls in
all, and our convolution backward in all.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/in_step_parts.py resnext2d
"""
import copy, statistics, sys, time, collections
import torch
import ops.torch as otorch
from ops.torch import calls, kernels
from ops import runtime
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "resnext2d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
ref = build(); ours = otorch.convert(copy.deepcopy(ref))
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(ours, x)
acc = collections.Counter()
def timing(key, f):
    def g(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: acc[key] += time.perf_counter() - t
    return g
rel0 = calls.openmp_release()
calls.openmp_release = lambda: timing("release", rel0)
runtime.finish = timing("waits", runtime.finish)
kernels._conv_backward = timing("conv backward (all)", kernels._conv_backward)
Inv = runtime.Function.invoke
runtime.Function.invoke = timing("Function.invoke (incl. non-queued waits)", Inv)
RK = calls.RuntimeKernel.__call__
calls.RuntimeKernel.__call__ = timing("RuntimeKernel call", RK)
steps = []
for step in range(40):
    acc.clear()
    t = time.perf_counter(); ours.zero_grad(); ours(x).sum().backward(); dt = time.perf_counter() - t
    if step >= 5: steps.append((dt, dict(acc)))
print(name, "step", f"{1e3*statistics.median(s[0] for s in steps):.2f} ms")
for k in steps[0][1]:
    print(f"  {k:45s} {1e3*statistics.median(s[1].get(k, 0) for s in steps):.2f} ms")
