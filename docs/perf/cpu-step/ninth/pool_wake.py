"""How long PyTorch's next parallel region (a 2 MB relu_) takes after the calling thread slept: its OpenMP worker
spins after each region (GOMP_SPINCOUNT), then sleeps; medians and means of 40, us.

    python docs/perf/cpu-step/ninth/pool_wake.py
"""
import statistics, time, torch
torch.set_num_threads(2)
a = torch.randn(1 << 19)
for s in (0, 1e-3, 5e-3, 10e-3, 20e-3, 40e-3):
    ts = []
    for i in range(40):
        torch.relu_(a); time.sleep(s) if s else None
        t = time.perf_counter(); torch.relu_(a); ts.append(time.perf_counter() - t)
    print(f"relu after sleep {1e3*s:5.1f} ms: median {1e6*statistics.median(ts):8.1f} us mean {1e6*sum(ts)/len(ts):8.1f}")
