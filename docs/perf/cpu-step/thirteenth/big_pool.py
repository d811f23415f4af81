"""Pooling on 8 MB or more (the issue's bandwidth target, 60% of copy): max pooling 3x3/2 p1 on 16x64x56x56 (12.8 MB,
NCHW), its forward (with the ReLU fused, indices int64) and its backward from the indices, and cnn3d-style average
pooling 2x2x2/2 on 4x32x16x64x64 NCDHW (33.6 MB), forward and backward, through ops.torch against PyTorch (relu
then the pooling), interleaved, each call after between_ops, medians of 40 (ms); the bytes each call must move
(its tensors read and written) over our time, against the copy bandwidth build_tools.bench measures in the run.

    PYTHONPATH=. python docs/perf/cpu-step/thirteenth/big_pool.py
"""
import statistics, time
import torch
import torch.nn.functional as F
import ops.torch as otorch
from build_tools import bench
from build_tools.layer_bench import between_ops

torch.set_num_threads(2)
torch.manual_seed(0)
copy = bench.measure_ceilings("local-task", "float32")["copy_bytes_per_s"]
print(f"copy bandwidth {copy / 1e9:.1f} GB/s")


def timed(f, repeat=40):
    times = []
    for _ in range(repeat + 5):
        between_ops(); t0 = time.perf_counter(); f(); times.append(time.perf_counter() - t0)
    return statistics.median(times[5:])


def nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def row(name, ours, theirs, moved):
    a, b = timed(ours), timed(theirs)
    print(f"{name:44s} ours {a * 1e3:7.3f} ms  PyTorch {b * 1e3:7.3f} ms  {b / a:5.2f}x  "
          f"{moved / 1e6:6.1f} MB  {moved / a / 1e9:5.1f} GB/s = {100 * moved / a / copy:3.0f}% of copy")


x = torch.randn(16, 64, 56, 56)
y, i = otorch.max_pool2d(x, 3, 2, 1, return_indices=True, input_activation="relu")
assert torch.equal(y, F.max_pool2d(torch.relu(x), 3, 2, 1))
row("max_pool2d forward, ReLU fused (12.8 MB)", lambda: otorch.max_pool2d(x, 3, 2, 1, return_indices=True,
                                                                          input_activation="relu"),
    lambda: F.max_pool2d(torch.relu(x), 3, 2, 1, return_indices=True), nbytes(x, y, i))
g = torch.randn_like(y)
ours_b = lambda: torch.ops.iree_ck.max_pool2d_backward(g, i, None, list(x.shape), [3, 3], [2, 2], [1, 1], [1, 1], False)
theirs_b = lambda: torch.ops.aten.max_pool2d_with_indices_backward(g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i)
assert torch.equal(ours_b(), theirs_b())
row("max_pool2d backward from indices (12.8 MB)", ours_b, theirs_b, nbytes(g, i, x))
v = torch.randn(4, 32, 16, 64, 64)
a = otorch.avg_pool3d(v, 2, input_activation="relu")
assert torch.allclose(a, F.avg_pool3d(torch.relu(v), 2), rtol=1e-6, atol=1e-7)
row("avg_pool3d forward, ReLU fused (33.6 MB)", lambda: otorch.avg_pool3d(v, 2, input_activation="relu"),
    lambda: F.avg_pool3d(torch.relu(v), 2), nbytes(v, a))
ga = torch.randn_like(a)
ours_a = lambda: torch.ops.iree_ck.avg_pool3d_backward(ga, v, list(v.shape), [2, 2, 2], [2, 2, 2], [0, 0, 0], False,
                                                       True, None)
theirs_a = lambda: torch.ops.aten.threshold_backward(torch.ops.aten.avg_pool3d_backward(
    ga, v, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None), v, 0)
assert torch.allclose(ours_a(), theirs_a())
row("avg_pool3d backward, ReLU fused (33.6 MB)", ours_a, theirs_a, nbytes(ga, v, v))
