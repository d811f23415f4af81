"""Max-pooling backward's CPU forms (candidates, slices, extract) through the CPU launcher on PyTorch's threads, as
ops.torch runs them since the ninth session, on the eighth session's problems (pool_ab.py): each checked against
the float64 reference, then timed interleaved, each call after a PyTorch parallel region; medians of ROUNDS
(default 9) rounds of 9 calls, ms.

    PYTHONPATH=. python docs/perf/cpu-step/ninth/pool_launched.py
"""
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "eighth"))
from conv_forms import launched  # noqa: E402
from pool_ab import FORMS, PROBLEMS  # noqa: E402

from ops import policy, registry, targets, verify  # noqa: E402

CPU = targets.target_for_device("local-task")
BETWEEN = torch.empty(1 << 19)


def main() -> None:
    torch.set_num_threads(2)
    rounds = int(os.environ.get("ROUNDS", 9))
    for problem in PROBLEMS:
        module = registry.module(problem)
        inputs = module.random_inputs(problem, np.random.default_rng(0))
        expected = module.reference(problem, inputs)
        offered = {f.windows for f in policy.target_forms(problem, CPU)}
        thunks, errors = {}, {}
        for name, form in FORMS.items():
            if name not in offered:
                continue
            thunks[name], outs = launched(policy.module_spec(problem, CPU, options=form), inputs, module.results(problem))
            thunks[name]()
            errors[name] = verify.relative_error(outs[0].numpy(), expected)
        times = {name: [] for name in thunks}
        for _ in range(rounds):
            for name, thunk in thunks.items():
                samples = []
                for _ in range(9):
                    torch.relu_(BETWEEN)
                    started = time.perf_counter()
                    thunk()
                    samples.append(time.perf_counter() - started)
                times[name].append(1e3 * statistics.median(samples))
        cells = "  ".join(f"{name} {statistics.median(t):6.3f}" for name, t in times.items())
        print(f"{problem.name:100s} {cells}  err {max(errors.values()):.1e}", flush=True)


if __name__ == "__main__":
    main()
