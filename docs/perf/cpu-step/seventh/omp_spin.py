"""How long PyTorch's OpenMP worker keeps running after a parallel region (a 16 MB relu): its CPU time
(/proc/self/task/*/schedstat) while the calling thread busy-waits for the window.

    python docs/perf/cpu-step/seventh/omp_spin.py
"""
import os, time, torch
torch.set_num_threads(2)
x = torch.randn(1 << 22)
torch.relu(x)
me = os.getpid(); main = threading_id = None
def cpu_times():
    out = {}
    for t in os.listdir(f"/proc/{me}/task"):
        with open(f"/proc/{me}/task/{t}/schedstat") as f:
            out[t] = int(f.read().split()[0])  # ns on cpu
    return out
for wait in (0.01, 0.02, 0.05, 0.1, 0.3):
    res = []
    for _ in range(5):
        torch.relu(x)
        a = cpu_times(); t0 = time.perf_counter()
        while time.perf_counter() - t0 < wait: pass   # busy main thread
        b = cpu_times()
        others = max(b[t] - a.get(t, 0) for t in b if t != str(me))
        res.append(others / 1e3)
    print(f"after relu, in the next {wait*1e3:.1f} ms the busiest other thread ran {sorted(res)[2]:.0f} us")
