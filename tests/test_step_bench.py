"""build_tools/step_bench's per-call table counts every kernel call of a converted step, whichever path reaches it
(here the CPU's: the eager autograd path, a layer's two gradients launched together)."""

from __future__ import annotations

import collections

import pytest

torch = pytest.importorskip("torch")

import ops.torch as otorch  # noqa: E402
from build_tools import step_bench  # noqa: E402


def test_the_per_call_table_counts_every_kernel_call_of_a_step():
    torch.manual_seed(0)
    model = otorch.convert(torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, stride=2, padding=1), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10)))
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    step_bench.forward_backward(model, x, y, torch.nn.CrossEntropyLoss())  # the kernels made and checked
    table = step_bench._per_call(model, x, y, steps=2, sync=lambda: None)
    counted = collections.Counter(op for row in table for op in row["op"].split("+"))
    # the pool's forward and backward, both layers' weight gradients, the second layer's input gradient (the first
    # layer's input needs none)
    assert counted == {"maxpool2d_fwd": 1, "maxpool2d_bwd": 1, "grouped_conv_bwd_weight": 2, "conv_bwd_data": 1}
    assert all(row["host_us"] > 0 and row["problem"] for row in table)
