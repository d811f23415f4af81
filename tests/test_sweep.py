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

import numpy as np
import pytest

from ops import catalog, compiler, targets, tuning, verify
from ops.operator import run

from conftest import DEVICE, SEED

pytestmark = pytest.mark.sweep

COUNT = int(os.environ.get("OPS_SWEEP_PROBLEMS", "60"))
EVERY = int(os.environ.get("OPS_SWEEP_NUMERICS_EVERY", "3"))  # which problems also run: every EVERY-th
TARGETS = ["rocm:gfx942", "cuda:sm_80", "llvm-cpu"]
LAYOUTS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}
DTYPES = ("float16", "bfloat16", "float32")


def _conv_params(rng, rank):
    filters = tuple(int(v) for v in rng.integers(1, 4, rank))
    stride = tuple(int(v) for v in rng.integers(1, 4, rank))
    dilation = tuple(int(v) for v in rng.choice([1, 1, 2, 3], rank))
    padding = tuple((int(lo), int(hi)) for lo, hi in rng.integers(0, 3, (rank, 2)))
    spatial = tuple(int(v) for v in rng.integers(3, 12 if rank < 3 else 7, rank))
    groups = int(rng.choice([1, 1, 2, 3, 4]))
    return dict(batch=int(rng.integers(1, 4)), in_channels=int(rng.integers(1, 6)), out_channels=int(rng.integers(1, 6)),
                input_spatial=spatial, filter_spatial=filters, stride=stride, padding=padding, dilation=dilation,
                layout=str(rng.choice(LAYOUTS[rank])), dtype=str(rng.choice(DTYPES)), groups=groups)


def _pool_params(rng, rank):
    kernel = tuple(int(v) for v in rng.integers(1, 4, rank))
    return dict(batch=int(rng.integers(1, 3)), channels=int(rng.integers(1, 6)),
                input_spatial=tuple(int(v) for v in rng.integers(4, 12 if rank < 3 else 8, rank)), kernel_size=kernel,
                stride=tuple(int(v) for v in rng.integers(1, 4, rank)),
                padding=tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel),
                dilation=tuple(int(v) for v in rng.choice([1, 1, 2], rank)), ceil_mode=bool(rng.integers(2)),
                layout=str(rng.choice(LAYOUTS[rank])), dtype=str(rng.choice(DTYPES)))


def _random_problem(rng, op):
    """A random valid problem of ``op`` (invalid draws, e.g. an output size below 1, are drawn again)."""
    module = catalog.OPERATORS[op]
    while True:
        rank = int(rng.integers(1, 4))
        try:
            if op == "conv_bwd_data":  # the ungrouped operator (groups go to grouped_conv_bwd_data)
                return module.problem_from_params(**{**_conv_params(rng, rank), "groups": 1})
            if op == "grouped_conv_bwd_data":
                epilogue, kinds = [(None, ()), ("add", ("full",)), ("add_relu", ("channel",)), ("bilinear", ("full",)),
                                   ("where(d1 > 0, acc + d0, 0) * alpha", ("channel", "full"))][int(rng.integers(5))]
                return module.problem_from_params(**_conv_params(rng, rank), epilogue=epilogue, d_kinds=kinds)
            if op == "grouped_conv_bwd_weight":
                params = _conv_params(rng, rank)
                out_dtype = "float32" if params["dtype"] != "float32" and rng.integers(2) else None
                return module.problem_from_params(**params, out_dtype=out_dtype)
            if op == "maxpool2d_bwd":
                return module.problem_from_params(**_pool_params(rng, 2), source=str(rng.choice(["indices", "x"])))
            params = _pool_params(rng, 3)
            return module.problem_from_params(**params, count_include_pad=bool(rng.integers(2)),
                                              divisor_override=[None, None, 3][int(rng.integers(3))])
        except ValueError:
            continue


def _problems():
    rng = np.random.default_rng([SEED, 20261122])
    ops = list(catalog.OPERATORS)
    return [(ops[i % len(ops)], _random_problem(rng, ops[i % len(ops)])) for i in range(COUNT)]


PROBLEMS = _problems()


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
        specs = tuning.module_specs(problem, target)
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
