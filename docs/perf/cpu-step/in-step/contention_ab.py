"""PyTorch's OpenMP workers against IREE's: one converted model's forward+backward+SGD step, interleaved step by
step, as PyTorch runs it, as ours runs it with PyTorch's OpenMP pool kept ("ours", the code before
``policy.CPU_CALLS_RELEASE_OPENMP``), and as ours runs it with the pool released (``omp_pause_resource_all``)
before every kernel call ("ours_paused"). IREE runtime flags (``IREE_FLAGS``, e.g.
``--task_topology_group_count=1``) are parsed before the first device is made. ``contention_ab.txt`` was recorded
before ``policy.CPU_CALLS_SCHED_BATCH``; both variants here leave it off, as then. The step loop is
``../sched-batch/combinations_ab.py``'s (variants b0r0 and b0r1).

    IREE_FLAGS="" PYTHONPATH=. python docs/perf/cpu-step/in-step/contention_ab.py resnext2d 30
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sched-batch"))

from combinations_ab import main  # noqa: E402

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30, ["b0r0", "b0r1"],
         {"b0r0": "ours", "b0r1": "ours_paused"}, prefix=f"flags={os.environ.get('IREE_FLAGS', '')!r} ")
