"""Where a tiny backward call's host time goes (conv_backward_input on 1x1x4x4, through the ready call), by line.
Needs line_profiler (pip install line_profiler); its own overhead inflates every line about 2x.

    PYTHONPATH=. python docs/perf/cpu-step/sixth/call_python.py
"""
import timeit

import torch
from line_profiler import LineProfiler

from ops import runtime
from ops.torch import calls, kernels

torch.set_num_threads(2)
go, w = torch.randn(1, 1, 4, 4), torch.randn(1, 1, 1, 1)
args = (go, w, None, [1, 1, 4, 4], [1, 1], [0, 0, 0, 0], [1, 1], 1)


def call():
    return kernels.conv_backward_input.run(*args)


call()
ready = next(iter(kernels.conv_backward_input.ready.values()))
kernel = ready.kernel
views = [calls.buffer_view(kernel.device, v) for v in kernel.views([go, w, torch.empty(1, 1, 4, 4)])]
for name, f in (("the call", call), ("IREE's invoke alone", lambda: kernel.function.invoke(views))):
    print(f"{name:24s} {min(timeit.repeat(f, number=3000, repeat=5)) / 3000 * 1e6:7.1f} us")
profiler = LineProfiler(kernels.KernelOp.run, calls.Prepared.__call__, calls.RuntimeKernel.__call__,
                        runtime.Function.invoke, calls.batch_scheduled)
profiled = profiler(call)
for _ in range(3000):
    profiled()
profiler.print_stats(output_unit=1e-6)
