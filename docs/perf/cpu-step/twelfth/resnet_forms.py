"""Every CPU form of the ResNet layer set's two convolution layers that miss both of the issue's rules (3 x 3
128 -> 128 on 4 x 4, and the strided 3 x 3 64 -> 128 on 8 x 8, batch 16, float32, NCHW): each gradient's forms
(policy.forms_for, in the policy's order: the first is the shipped one) compiled, run through the CPU launcher on
PyTorch's threads, checked against the first form's result, and timed (an 8 MB pass before each call; medians of
40, ms).

    PYTHONPATH=. python docs/perf/cpu-step/twelfth/resnet_forms.py
"""
import statistics, tempfile, time
from pathlib import Path
import numpy as np, torch
from ops import compiler, policy, registry, targets
from ops.launch import cpu as cpu_launch
from ops.torch import calls
from ops.torch.plans import RELU_BACKWARD
from ops.operators import grouped_conv_bwd_data as gd, grouped_conv_bwd_weight as gw, conv_bwd_data as cd
torch.set_num_threads(2)
target = targets.parse_target("llvm-cpu")
z = lambda *s: np.zeros(s, np.float32)  # noqa: E731
problems = {
    "3x3 128 4x4 data+relu": gd.normalize(z(16, 128, 4, 4), z(128, 128, 3, 3), (z(16, 128, 4, 4),), groups=1,
                                          epilogue=RELU_BACKWARD, params={}, input_shape=(16, 128, 4, 4), stride=(1, 1),
                                          padding=((1, 1), (1, 1)), dilation=(1, 1), layout="NCHW")[0],
    "3x3 128 4x4 weight": gw.normalize(z(16, 128, 4, 4), z(16, 128, 4, 4), groups=1, filter_spatial=(3, 3),
                                       stride=(1, 1), padding=((1, 1), (1, 1)), dilation=(1, 1), layout="NCHW"),
    "3x3 s2 64->128 8x8 data": cd.normalize(z(16, 128, 4, 4), z(128, 64, 3, 3), input_shape=(16, 64, 8, 8),
                                            stride=(2, 2), padding=((1, 1), (1, 1)), dilation=(1, 1), layout="NCHW"),
    "3x3 s2 64->128 8x8 weight": gw.normalize(z(16, 64, 8, 8), z(16, 128, 4, 4), groups=1, filter_spatial=(3, 3),
                                              stride=(2, 2), padding=((1, 1), (1, 1)), dilation=(1, 1), layout="NCHW"),
}
flush = torch.empty(1 << 21)
rng = np.random.default_rng(0)
work = Path(tempfile.mkdtemp())
for label, problem in problems.items():
    module = registry.module(problem)
    inputs = [torch.from_numpy(np.ascontiguousarray(a, np.float32)) for a in module.random_inputs(problem, rng)
              if np.ndim(a) > 1]
    first = None
    how = policy.lowering(problem, target, None)
    for number, form in enumerate(policy.forms_for(problem, target, None)):
        spec = compiler.ModuleSpec(problem.name, module.render(problem, form, how), target,
                                   tuple(policy.flags_for(problem, target, form)))
        path = work / f"{problem.name}_{number}.vmfb"
        compiler.compile_module(spec, path)
        loaded = cpu_launch.load(spec, path, path.read_bytes())
        if isinstance(loaded, str):
            print(f"{label:28s} form {number}: no plan ({loaded})"); continue
        kernel = calls.CpuLaunchedKernel(*loaded, torch.device("cpu"))
        (shape, dtype), = registry.module(problem).results(problem)
        def run():
            out = torch.empty(shape)
            kernel(inputs, [out])
            return out
        result = run()
        first = result if first is None else first
        same = float((result - first).norm() / first.norm())
        times = []
        for _ in range(45):
            flush.relu_(); t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
        print(f"{label:28s} form {number}: {1e3 * statistics.median(times[5:]):.3f} ms  (vs form 0: {same:.1e})  {form}")
