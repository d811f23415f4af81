"""local-sync against local-task, per kernel call of a step: each call of MODEL's step timed (wall, us) on
local-task (PyTorch's OpenMP pool released first, as shipped) and on local-sync (the calling thread does the work;
the pool is not released), alternating steps, medians of the last 80%; then the steps' medians.

    PYTHONPATH=. python docs/perf/cpu-step/sixth/local_sync.py MODEL

local-sync takes the tensors through ``import_host_allocation``: DLPack's import allows READ|WRITE only, and
local-sync's inline command buffer refuses a copy into such a buffer (DISCARD_WRITE), where local-task's
does not check.
"""
import collections
import statistics
import sys
import time

import iree.runtime as rt
import torch
from torch import nn

import ops.torch as otorch
from build_tools import train
from ops import runtime
from ops.torch import calls

torch.set_num_threads(2)
ELEMENTS = {torch.float32: rt.HalElementType.FLOAT_32, torch.float16: rt.HalElementType.FLOAT_16,
            torch.bfloat16: rt.HalElementType.BFLOAT_16, torch.int64: rt.HalElementType.SINT_64}
MEMORY = rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE
USAGE = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING


def imported(hal_device, t: torch.Tensor):
    """``t``'s memory as a buffer view that allows every access (DLPack's allows READ|WRITE)."""
    array = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).detach().numpy()
    buffer = hal_device.allocator.import_host_allocation(array, MEMORY, USAGE)
    return rt.HalBufferView(buffer, list(t.shape), ELEMENTS[t.dtype])


class SyncKernel(calls.RuntimeKernel):
    def __init__(self, problem, views):
        super().__init__(runtime.function_for(problem, "local-sync"), "local-sync", views, False)

    def __call__(self, inputs, outputs):
        self.function.invoke([imported(self.device, v) for v in self.views(calls.aligned(inputs, 64) + outputs)])


times = collections.defaultdict(lambda: ([], []))
state = {"sync": False}
_kernel_for = calls.kernel_for


def both(problem, device, views):
    task, sync = _kernel_for(problem, device, views), SyncKernel(problem, views)

    def kernel(inputs, outputs):
        started = time.perf_counter()
        (sync if state["sync"] else task)(inputs, outputs)
        times[problem.name][state["sync"]].append(time.perf_counter() - started)
    return kernel


def main() -> None:
    calls.kernel_for = both
    name = sys.argv[1]
    build, shape = train.MODELS[name]
    torch.manual_seed(0)
    model = otorch.convert(build())
    batch = train.BATCH["cpu"][name]
    x, y = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))
    otorch.precompile(model, x)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    steps = []
    for step in range(40):
        state["sync"] = step % 2 == 1
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        nn.CrossEntropyLoss()(model(x), y).backward()
        optimizer.step()
        steps.append((state["sync"], time.perf_counter() - started))
    print(f"{'problem':90s} {'task us':>8s} {'sync us':>8s}")
    for problem, (task, sync) in times.items():
        task, sync = task[len(task) // 5:], sync[len(sync) // 5:]
        print(f"{problem[:90]:90s} {statistics.median(task) * 1e6:8.0f} {statistics.median(sync) * 1e6:8.0f}")
    for label, sync in (("local-task", False), ("local-sync", True)):
        print(f"median step on {label}: {1e3 * statistics.median([t for s, t in steps[4:] if s == sync]):.2f} ms")


main()
