"""Each distinct kernel-call group of resnext2d's step (a convolution layer's two queued calls, or one call) timed
after different things: nothing, a 2 ms sleep, a PyTorch parallel region (the pool's worker spinning, the call
releasing it), the region and the release (outside the timer), and so on; interleaved, medians of 40, ms.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/layer_conditions.py [INDEX,...]
"""
import statistics, sys, time, torch
from build_tools import layer_bench as lb
from ops.torch import calls
import ops.torch as otorch
torch.set_num_threads(2)
model, x = lb.model_and_input("resnext2d", 0)
otorch.precompile(model, x)
layers = lb.layers(lb.kernel_calls(model, x))
rel = calls.openmp_release()
a = torch.randn(1 << 19)
def busy(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s: pass
conds = {
    "back to back": lambda: None,
    "sleep 2ms": lambda: time.sleep(2e-3),
    "relu": lambda: torch.relu_(a),
    "relu+release": lambda: (torch.relu_(a), rel()),
    "relu+release+sleep2ms": lambda: (torch.relu_(a), rel(), time.sleep(2e-3)),
    "relu+sleep20ms": lambda: (torch.relu_(a), time.sleep(20e-3)),
}
pick = [int(i) for i in sys.argv[1].split(",")] if len(sys.argv) > 1 else range(len(layers))
for i in pick:
    layer = layers[i]
    times = {c: [] for c in conds}
    layer.ours()
    for r in range(40):
        for c, before in conds.items():
            before()
            t = time.perf_counter(); layer.ours(); times[c].append(time.perf_counter() - t)
    print(i, layer.problems[0].name[:60], "  ".join(f"{c} {1e3*statistics.median(v):.3f}" for c, v in times.items()), flush=True)
