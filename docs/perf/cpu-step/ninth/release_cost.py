"""What ops.torch's release of PyTorch's OpenMP pool (omp_pause_resource_all) costs the calling thread: right after
a parallel region (the worker spinning), after 20 ms (the worker asleep) and after 1 ms; then again (no pool).

    PYTHONPATH=. python docs/perf/cpu-step/ninth/release_cost.py
"""
import statistics, time, torch
from ops.torch import calls
torch.set_num_threads(2)
rel = calls.openmp_release()
a = torch.randn(1 << 19)
for label, before in (("after relu", lambda: torch.relu_(a)), ("after relu+sleep 20ms", lambda: (torch.relu_(a), time.sleep(0.02))),
                      ("after relu+busy 1ms", lambda: (torch.relu_(a), time.sleep(0.001)))):
    ts, ts2 = [], []
    for i in range(60):
        before()
        t = time.perf_counter(); rel(); t1 = time.perf_counter(); rel(); t2 = time.perf_counter()
        ts.append(t1 - t); ts2.append(t2 - t1)
    print(f"{label:24s} release {1e6*statistics.median(ts):8.1f} us (mean {1e6*sum(ts)/len(ts):8.1f}); again {1e6*statistics.median(ts2):6.1f} us")
