"""Any valid problem compiles on every target, without per-problem entries: random problems of all five
operators (1D/2D/3D, strides, dilations, padding, groups, dtypes, layouts) are compiled for rocm:gfx942,
cuda:sm_80 and llvm-cpu, and a subset runs on the CPU against the float64 references.

Slow (minutes), so out of the default run: ``python3 -m pytest -m sweep`` (``OPS_SWEEP_PROBLEMS`` changes the
count, 60 by default, ``OPS_SWEEP_NUMERICS_EVERY`` which of them also run, every third by default; the seed is
the session's, printed in the header). ``OPS_SWEEP_ARTIFACTS=DIR`` keeps the compiled modules in DIR; a GPU
machine with only iree-base-runtime then runs the numerics there, with the same seed and count:
``OPS_TEST_DEVICE=cuda OPS_ARTIFACTS_DIR=DIR OPS_TEST_SEED=S python3 -m pytest -m sweep -k subset``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from ops import catalog, compiler, targets, policy, verify
from ops.api import run

from conftest import DEVICE, SEED

pytestmark = pytest.mark.sweep

COUNT = int(os.environ.get("OPS_SWEEP_PROBLEMS", "60"))
EVERY = int(os.environ.get("OPS_SWEEP_NUMERICS_EVERY", "3"))  # which problems also run: every EVERY-th
TARGETS = ["rocm:gfx942", "cuda:sm_80", "llvm-cpu"]
PROBLEMS = catalog.random_problems(SEED, COUNT)


def test_every_problem_compiles_for_every_target(monkeypatch):
    print(f"sweep seed {SEED}: {len(PROBLEMS)} problems x {TARGETS}")
    keep = os.environ.get("OPS_SWEEP_ARTIFACTS")
    if keep:  # the modules land there, an artifacts directory for a GPU machine's run of the numerics
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, "manifest.json"), "w") as manifest:
            manifest.write(f'{{"compiler_version": "{compiler.installed_compiler_version()}", "modules": []}}\n')
        monkeypatch.setenv("OPS_CACHE_DIR", keep)
    jobs = [(op, problem, targets.parse_target(t)) for op, problem in PROBLEMS for t in TARGETS]

    def build(job):
        op, problem, target = job
        specs = policy.module_specs(problem, target)
        try:
            compiler.find_or_compile(specs)
            return None
        except compiler.CompileError as error:
            lines = [line for line in str(error).splitlines() if "error" in line] or str(error).splitlines()
            return f"{op} {problem.name} on {target}: {lines[0][:300]}"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(build, jobs) if f]
    assert not failures, f"{len(failures)} of {len(jobs)} modules failed to compile:\n" + "\n".join(failures)


@pytest.mark.parametrize("index", range(0, COUNT, EVERY))
def test_a_subset_matches_the_references(index, rng):
    op, problem = PROBLEMS[index]
    module = catalog.OPERATORS[op]
    inputs = module.random_inputs(problem, rng)
    got = run(problem, inputs, device=DEVICE)
    error = verify.relative_error(got, module.reference(problem, inputs))
    assert error <= verify.tolerance(op, problem.dtype), f"{problem.name}: relative error {error:.3e}"
