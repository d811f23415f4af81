"""The release of PyTorch's OpenMP pool (omp_pause_resource_all) after a relu on 2 MB, and the relu that makes the
pool again, with the calling thread sleeping SLEEP seconds before each round (0: back to back).

    python docs/perf/cpu-step/seventh/pool_remake.py SLEEP
"""
import time, torch, ctypes, sys, statistics as s
torch.set_num_threads(2)
x = torch.randn(16, 32, 32, 32)
gomp = [l.split()[-1] for l in open("/proc/self/maps") if "libgomp" in l][0]
pause = ctypes.CDLL(gomp).omp_pause_resource_all; pause.argtypes = [ctypes.c_int]
sleep = float(sys.argv[1])
walls, cpus, relus = [], [], []
for i in range(300):
    t0 = time.perf_counter(); torch.relu(x); t1 = time.perf_counter()
    c0 = time.thread_time(); w0 = time.perf_counter()
    pause(1)
    walls.append(time.perf_counter() - w0); cpus.append(time.thread_time() - c0); relus.append(t1 - t0)
    if sleep: time.sleep(sleep)
print("sleep %s: relu %.1f us, release wall %.1f us, cpu %.1f us" % (sleep, s.median(relus)*1e6, s.median(walls)*1e6, s.median(cpus)*1e6))
