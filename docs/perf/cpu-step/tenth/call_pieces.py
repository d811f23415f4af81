"""What a tiny convolution's call costs, piece by piece (us, means of 5000 calls after 200): PyTorch's conv and
backward, our forward, each kernel op's run, the prepared call, the launched kernel, the runner; then a whole
forward+backward and the time inside its backward.

    PYTHONPATH=. python docs/perf/cpu-step/tenth/call_pieces.py
"""
import time, torch, torch.nn as nn, torch.nn.functional as F
import ops.torch as otorch
from ops.torch import functional as Fn, kernels, calls
torch.set_num_threads(2)
torch.manual_seed(0)
x = torch.randn(1, 4, 8, 8, requires_grad=True); w = torch.randn(4, 4, 3, 3, requires_grad=True)
g = torch.randn(1, 4, 8, 8)
def t(label, f, n=5000):
    for _ in range(200): f()
    s = time.perf_counter_ns()
    for _ in range(n): f()
    print(f"{label:40s} {(time.perf_counter_ns()-s)/n/1e3:7.2f} us")
xd = x.detach()
t("F.conv2d (grad)", lambda: F.conv2d(x, w, None, 1, 1))
t("F.conv2d no grad", lambda: F.conv2d(xd, w.detach(), None, 1, 1))
t("otorch.conv2d", lambda: Fn.conv2d(x, w, None, 1, 1))
t("kernels.conv", lambda: kernels.conv(x, w, None, [1,1], [1,1,1,1], [1,1], 1, False))
t("torch_conv", lambda: kernels.torch_conv(x, w, None, [1,1], [1,1,1,1], [1,1], 1))
args_i = (g, w.detach(), None, [1, 4, 8, 8], [1,1], [1,1,1,1], [1,1], 1)
args_w = (xd, g, [4,4,3,3], [1,1], [1,1,1,1], [1,1], 1)
t("run bwd input", lambda: kernels.conv_backward_input.run(*args_i))
t("run bwd weight", lambda: kernels.conv_backward_weight.run(*args_w))
t("signature", lambda: calls.signature(args_w))
prep = kernels.conv_backward_weight.ready[calls.signature(args_w)]
t("Prepared call", lambda: prep(args_w))
k = prep.kernel
outs = [torch.empty(4,4,3,3)]
ins = [xd, g]
t("CpuLaunchedKernel", lambda: k(ins, outs))
ws = calls.launch_workspace(k.workspace_bytes)
bases = [xd.data_ptr() + o if a is not None and a == 0 else (g.data_ptr() + o if a == 1 else (outs[0].data_ptr() + o if a == 2 else ws + o)) for a, o in k.slots]
print(k.slots)
t("Kernels(bases)", lambda: k.kernels(bases, 2))
t("Kernels(bases) 1 thread", lambda: k.kernels(bases, 1))
y = F.conv2d(x, w, None, 1, 1)
t("pt conv backward (aten)", lambda: torch.ops.aten.convolution_backward(g, xd, w.detach(), None, [1,1],[1,1],[1,1], False, [0,0], 1, [True, True, False]))
def fb(m):
    y = m(x); y.sum().backward()
conv = nn.Conv2d(4,4,3,padding=1,bias=False)
ours = otorch.convert(nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, bias=False)))
t("pt step", lambda: fb(conv))
t("ours step", lambda: fb(ours))
import ops.torch.kernels as K
orig = K._conv_backward
acc = []
def timed(ctx, *g):
    s = time.perf_counter_ns(); r = orig(ctx, *g); acc.append(time.perf_counter_ns() - s); return r
K._conv_backward = timed
t("ours step (bwd timed)", lambda: fb(ours))
import statistics
print("in _conv_backward", statistics.median(acc) / 1e3)
yy = ours(x)
t("ours forward", lambda: ours(x))
t("sum+backward only", lambda: ours(x).sum().backward())
def only_bwd():
    y = ours(x).sum()
    s = time.perf_counter_ns(); y.backward(); return time.perf_counter_ns() - s
v = [only_bwd() for _ in range(3000)]
print("backward() alone", statistics.median(v)/1e3)
def only_bwd_pt():
    y = conv(x).sum()
    s = time.perf_counter_ns(); y.backward(); return time.perf_counter_ns() - s
v = [only_bwd_pt() for _ in range(3000)]
print("pt backward() alone", statistics.median(v)/1e3)
acc2 = {"in": [], "w": []}
ri, rw = K.conv_backward_input.run, K.conv_backward_weight.run
def mk(label, f):
    def g(*a):
        s = time.perf_counter_ns(); r = f(*a); acc2[label].append(time.perf_counter_ns() - s); return r
    return g
K.conv_backward_input.run = mk("in", ri); K.conv_backward_weight.run = mk("w", rw)
acc.clear()
for _ in range(3000): fb(ours)
print({k: statistics.median(v)/1e3 for k, v in acc2.items()}, statistics.median(acc)/1e3)
y = ours(x).sum()
gg = []
def hook(m, gi, go): gg.append(go)
