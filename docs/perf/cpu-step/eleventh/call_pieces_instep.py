"""Where a kernel call's time goes inside a training step: KernelOp.run, Prepared.__call__ and
CpuLaunchedKernel.__call__ replaced by copies with timers between their lines (the signature and its lookup; the
inputs' layout copies; the destinations' torch.empty; the 64-byte alignment check; the slot addresses; the runner,
which runs the module's dispatches), 40 steps after 8, each call's medians (us).

    PYTHONPATH=. python docs/perf/cpu-step/eleventh/call_pieces_instep.py resnext2d|cnn3d
"""
import statistics, time, sys, torch
import ops.torch as otorch
from ops.torch import kernels, calls
from ops.torch.calls import aligned, launch_workspace, CPU_ALIGNMENT
from build_tools import train
torch.set_num_threads(2)
name = sys.argv[1] if len(sys.argv) > 1 else "resnext2d"
build, shape = train.MODELS[name]
torch.manual_seed(0)
model = otorch.convert(build())
x = torch.randn(train.BATCH["cpu"][name], *shape)
otorch.precompile(model, x, progress=False)
T = []
cur = {}
def mark(k, t0):
    t = time.perf_counter(); cur[k] = t - t0; return t
def run(self, *args):
    cur.clear(); t = time.perf_counter()
    key = calls.signature(args)
    call = self.ready.get(key)
    if call is None: call = self.ready[key] = kernels._prepare(self.name, args, self.fallback)
    t = mark("sig", t)
    r = call(args)
    mark("call", t); T.append((self.name, dict(cur)))
    return r
def pcall(self, args):
    t = time.perf_counter()
    memory_format = self.memory_format
    inputs = [args[i].contiguous(memory_format=memory_format) if copy else args[i] for i, copy in self.reads]
    t = mark("reads", t)
    outputs = [torch.empty(shape, dtype=dtype, device=self.device, memory_format=memory_format) for shape, dtype in self.results]
    t = mark("empty", t)
    self.kernel(inputs, outputs)
    t = mark("kernel", t)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)
def kcall(self, inputs, outputs):
    t = time.perf_counter()
    tensors = aligned(inputs, CPU_ALIGNMENT) + outputs
    t = mark("aligned", t)
    workspace = launch_workspace(self.workspace_bytes) if self.workspace_bytes else 0
    bases = [tensors[a].data_ptr() + offset if a is not None else workspace + offset for a, offset in self.slots]
    n = torch.get_num_threads()
    t = mark("bases", t)
    self.kernels(bases, n)
    t = mark("runner", t)
kernels.KernelOp.run = run; calls.Prepared.__call__ = pcall; calls.CpuLaunchedKernel.__call__ = kcall
def step():
    model(x).sum().backward(); model.zero_grad(set_to_none=True)
for _ in range(8): step()
T.clear(); step(); n = len(T); T.clear()
for _ in range(40): step()
keys = ["sig", "reads", "empty", "aligned", "bases", "runner", "call"]
print("   %-22s " % "op" + " ".join("%8s" % k for k in keys))
for i in range(n):
    rows = T[i::n]
    print("%2d %-22s " % (i, rows[0][0]) + " ".join("%8.1f" % (statistics.median(r[1].get(k, 0) for r in rows) * 1e6) for k in keys))
