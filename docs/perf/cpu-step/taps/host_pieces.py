"""The host path's pieces, each timed alone (best of 5 loops): PYTHONPATH=. python docs/perf/cpu-step/taps/host_pieces.py"""
import time, os, torch
from ops.torch import calls
torch.set_num_threads(2)
go = torch.randn(16, 64, 8, 8); w = torch.randn(64, 32, 1, 1); x = torch.randn(16, 32, 8, 8)
args = (go, w, x, [16, 32, 8, 8], [1, 1], [0, 0, 0, 0], [1, 1], 1)
def t(name, f, n=20000):
    for _ in range(500): f()
    best = 1e9
    for _ in range(5):
        s = time.perf_counter()
        for _ in range(n): f()
        best = min(best, (time.perf_counter() - s) / n * 1e6)
    print(f"{name:40s} {best:7.2f} us")
t("signature", lambda: calls.signature(args))
def sig2(args):
    return tuple((a.shape, a.stride(), a.dtype, a.get_device()) if isinstance(a, torch.Tensor) else tuple(a) if isinstance(a, list) else a for a in args)
t("signature, Size and get_device", lambda: sig2(args))
t("hash(signature)", lambda: hash(calls.signature(args)))
t("torch.empty", lambda: torch.empty((16, 32, 8, 8), dtype=torch.float32, device=torch.device("cpu"), memory_format=torch.contiguous_format))
t("torch.empty shape only", lambda: torch.empty((16, 32, 8, 8)))
dev = torch.device("cpu")
t("torch.empty dev kw", lambda: torch.empty((16, 32, 8, 8), dtype=torch.float32, device=dev))
from torch.utils.dlpack import to_dlpack
t("to_dlpack", lambda: to_dlpack(go))
t("sched get", lambda: os.sched_getscheduler(0))
p = os.sched_param(0)
t("sched set other", lambda: os.sched_setscheduler(0, os.SCHED_OTHER, p))
rel = calls.openmp_release()
t("omp release (pool gone)", lambda: rel())
t("omp release after relu", lambda: (torch.relu(torch.empty(1<<19)), rel()), 2000)
t("relu alone", lambda: torch.relu(torch.empty(1<<19)), 2000)
