"""The calling thread's CPU time in the parts of a CPU kernel call, inside 20 forward+backward passes of resnext2d
(each part wrapped, nested: run > Prepared > RuntimeKernel > batch_scheduled, which holds IREE's invoke).

    PYTHONPATH=. python docs/perf/cpu-step/sched-batch/call_cpu.py
"""
import time, statistics, torch
from build_tools import layer_bench
from ops.torch import kernels, calls
import ops.torch as otorch
torch.set_num_threads(2)
model, x = layer_bench.model_and_input("resnext2d", 0)
otorch.precompile(model, x)
for _ in range(3): model(x).sum().backward()
rec = {}
def timed(name, f):
    def g(*a, **k):
        c = time.thread_time()
        r = f(*a, **k)
        rec.setdefault(name, []).append(time.thread_time() - c)
        return r
    return g
calls.signature = timed("signature", calls.signature)
orig_kernel_call = calls.RuntimeKernel.__call__
calls.RuntimeKernel.__call__ = timed("RuntimeKernel", orig_kernel_call)
calls.Prepared.__call__ = timed("Prepared", calls.Prepared.__call__)
calls.batch_scheduled = timed("batch_scheduled(incl invoke)", calls.batch_scheduled)
kernels.KernelOp.run = timed("run", kernels.KernelOp.run)
for _ in range(20): model(x).sum().backward()
for k, v in rec.items():
    print(f"{k}: per step {1e3*sum(v)/20:.2f} ms CPU, per call median {1e6*statistics.median(v):.0f} us ({len(v)/20:.0f}/step)")
