"""What a kernel call through ops.torch costs beside IREE's invoke: one call of resnext2d's step (PROBLEM: part of
its name; OP: the kernel op) timed five ways, interleaved, each after a PyTorch parallel region (between_ops):
    op.run                 the call as the step makes it
    kernel(in,fresh out)   from the prepared call's kernel on, a fresh destination
    fresh dest+views       a fresh destination, its buffer views made, the pool released, the invoke
    fresh views            the same destination each time, its buffer views made again
    release+invoke         buffer views made once: the pool's release and the invoke alone
Medians of 30, ms.

    PYTHONPATH=. python docs/perf/cpu-step/eighth/call_path.py maxpool2d_bwd max_pool2d_backward
    PYTHONPATH=. python docs/perf/cpu-step/eighth/call_path.py g1_c32_k32_i16x16_f1x1 conv_backward_weight
"""
import sys, time, statistics, torch
from build_tools import layer_bench as lb
from ops.torch import calls
torch.set_num_threads(2)
model, x = lb.model_and_input("resnext2d", 0)
import ops.torch as otorch
otorch.precompile(model, x)
allcalls = lb.kernel_calls(model, x)
want, kind = sys.argv[1], sys.argv[2]
op, args = [(o, a) for o, a in allcalls if want in lb.problem_of(o, a).name and o.name == kind][0]
prep = op.ready[calls.signature(args)]
k = prep.kernel
inputs = [args[i] for i, _ in prep.reads]
outs = [torch.empty(s, dtype=d, memory_format=prep.memory_format) for s, d in prep.results]
views = [calls.buffer_view(k.device, v) for v in k.views(inputs + outs)]
rel = calls.openmp_release()
def fresh_views():
    v = [calls.buffer_view(k.device, t) for t in k.views(inputs + outs)]
    rel(); calls.batch_scheduled(k.function.invoke, v)
def fresh_dest():
    o = [torch.empty(s, dtype=d, memory_format=prep.memory_format) for s, d in prep.results]
    v = [calls.buffer_view(k.device, t) for t in k.views(inputs + o)]
    rel(); calls.batch_scheduled(k.function.invoke, v)
fns = {"op.run": lambda: op.run(*args), "kernel(in,fresh out)": lambda: k(inputs, [torch.empty(s, dtype=d, memory_format=prep.memory_format) for s, d in prep.results]),
       "fresh dest+views": fresh_dest, "fresh views": fresh_views, "release+invoke": lambda: (rel(), calls.batch_scheduled(k.function.invoke, views))}
res = {f: [] for f in fns}
for _ in range(30):
    for f, fn in fns.items():
        lb.between_ops(); s = time.perf_counter(); fn(); res[f].append(time.perf_counter() - s)
for f, v in res.items(): print(f"{f:22s} {1e3*statistics.median(v):.3f} ms")
