"""A tiny convolution's forward+backward in a loop (ours or PyTorch's), for perf:

    PYTHONPATH=. perf record -g -o perf.ours python docs/perf/cpu-step/tenth/tiny_loop.py ours 30000
    perf report -i perf.ours --no-children --sort pid,dso -g none
"""
import sys, time, torch, torch.nn as nn
import ops.torch as otorch
torch.set_num_threads(2)
torch.manual_seed(0)
m = nn.Conv2d(4, 4, 3, padding=1, bias=False)
if sys.argv[1] == "ours":
    m = otorch.convert(nn.Sequential(m))
x = torch.randn(1, 4, 8, 8, requires_grad=True)
for _ in range(500): m(x).sum().backward()
t = time.perf_counter()
for _ in range(int(sys.argv[2])): m(x).sum().backward()
print((time.perf_counter() - t) / int(sys.argv[2]) * 1e6, "us")
