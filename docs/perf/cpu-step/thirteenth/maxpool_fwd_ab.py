"""max pooling's forward with the ReLU fused (resnext2d's layer, 16x32x32x32 NCHW, 3x3/2 p1), through ops.torch, against
PyTorch's relu + max_pool2d_with_indices, interleaved, each after between_ops: medians of 300 (ms)."""
import statistics, time, torch, sys
import torch.nn.functional as F
import ops.torch as otorch
from build_tools.layer_bench import between_ops
torch.set_num_threads(2)
torch.manual_seed(0)
x = torch.randn(16, 32, 32, 32)
ours = lambda: otorch.max_pool2d(x, 3, 2, 1, return_indices=True, input_activation="relu")
theirs = lambda: F.max_pool2d(torch.relu(x), 3, 2, 1, return_indices=True)
y, i = ours(); yr, ir = theirs()
assert torch.equal(y, yr) and torch.equal(i, ir)
T = {"ours": [], "pytorch": []}
for step in range(330):
    for k, f in (("ours", ours), ("pytorch", theirs)):
        between_ops(); t0 = time.perf_counter(); f(); d = time.perf_counter() - t0
        if step >= 30: T[k].append(d)
print(sys.argv[1], " ".join("%s %.3f ms" % (k, 1e3 * statistics.median(v)) for k, v in T.items()))
