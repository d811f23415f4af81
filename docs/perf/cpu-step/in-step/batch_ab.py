"""The calling thread under ``SCHED_BATCH`` during CPU kernel calls (``policy.CPU_CALLS_SCHED_BATCH``), against the
same calls left under ``SCHED_OTHER``: one converted model's forward+backward+SGD step, interleaved step by step, as
PyTorch runs it, as ours runs it without the switch ("ours_other"), and as ours runs it by default ("ours", the
switch on; PyTorch's OpenMP pool released before each call in both). The step loop is
``../sched-batch/combinations_ab.py``'s (variants b0r1 and b1r1).

    PYTHONPATH=. python docs/perf/cpu-step/in-step/batch_ab.py resnext2d 30
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sched-batch"))

from combinations_ab import main  # noqa: E402

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30, ["b0r1", "b1r1"],
         {"b0r1": "ours_other", "b1r1": "ours"})
