"""Known-answer checks on a CUDA GPU: which module serves each problem, and what the check adds to its first call.

    python -m build_tools.verify_run --prepare [--sets catalog,wrong,bf16,sweep:17017:200,...]   # here: compile
    python -m build_tools.verify_run [--sets ...] [--json out.json]                               # on the GPU

Sets: ``catalog`` (ck_examples and zoo), ``sweep:SEED:COUNT`` (the compile sweep's random problems,
``ops.catalog.random_problems``), ``random:SEED:COUNT:CONFIG`` (``build_tools.random_layers``' layers of the models'
families, CONFIG ``bf16_cl`` or ``f32_nchw``), ``wrong`` (the problems IREE 3.13 computed wrong on the H100: sweep
seed 109510330's 2, 110 and 181 and seed 17017's 0, 32 and 71, docs/perf/h100-sweep), ``bf16`` (the bfloat16 weight
gradients of ``build_tools.train``'s 2D model, channels-last: the 1x1 ones were wrong on the H100).
``--prepare`` compiles, for ``cuda:sm_80`` into ``$OPS_CACHE_DIR``, the first form of every problem and, for
``wrong`` and ``bf16``, every form and fallback flag set, so that the GPU machine (no compiler) can pass over a
module that fails its check. On the GPU, in one process and in order, each problem's launcher kernel is made as
``ops.torch`` makes it (``executor.launched``: load, known-answer check, next form on a failure), timed, and then
run on other random inputs, judged as the check judges.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from build_tools import random_layers
from ops import arrays, catalog, compiler, executor, known_answer, policy, registry, runtime, targets

CUDA = targets.parse_target("cuda:sm_80")
# 50 and 51 run before 71: its fault needs them; 107, 127, 172 and 176 were first caught by the check (H100, run A)
WRONG = {109510330: (2, 110, 181), 17017: (0, 32, 50, 51, 71, 107, 127, 172, 176)}


def problems(name: str) -> list:
    if name == "catalog":
        return [problem for suite in ("ck_examples", "zoo") for _, _, problem in catalog.problems(suite)]
    if name.startswith("sweep:"):
        _, seed, count = name.split(":")
        return [problem for _, problem in catalog.random_problems(int(seed), int(count))]
    if name == "wrong":
        return [catalog.random_problems(seed, 200)[i][1] for seed, indices in WRONG.items() for i in indices]
    if name == "bf16":
        return train_problems()
    if name.startswith("random:"):
        _, seed, count, config = name.split(":")
        return [catalog.entry_problem(e) for e in random_layers.suite(int(seed), int(count), config)["problems"]]
    raise SystemExit(f"unknown set {name!r}")


def train_problems() -> list:
    """The weight-gradient problems of train.py's 2D model in bfloat16, channels-last (recorded, nothing runs)."""
    import torch

    import ops.torch as otorch
    from ops.torch import kernels
    from build_tools.train import BATCH, MODELS

    build, shape = MODELS["resnext2d"]
    model = otorch.convert(build().to(torch.bfloat16).to(memory_format=torch.channels_last))
    x = torch.randn(BATCH["cuda"]["resnext2d"], *shape, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    with kernels.recording() as problems:
        model(x).float().sum().backward()
    return list({p.name: p for p in problems if p.op == "grouped_conv_bwd_weight"}.values())


def prepare(sets: list[str], jobs: int) -> int:
    work = []
    for name in sets:
        every_form = name in ("wrong", "bf16")
        for problem in problems(name):
            specs = policy.module_specs(problem, CUDA)
            work += [[spec] for spec in specs] if every_form else [specs]

    def build(specs):
        try:
            compiler.find_or_compile(specs)
            return None
        except compiler.CompileError as error:
            return f"{specs[0].name}: {str(error).splitlines()[0][:200]}"

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        failed = [f for f in pool.map(build, work) if f]
    print(f"{len(work) - len(failed)} of {len(work)} modules ready in {compiler.cache_dir()}; {len(failed)} do not compile")
    for line in failed:
        print("  ", line)
    return 0


def check_on_gpu(problem, device) -> dict:
    """``problem``'s kernel made as ops.torch makes it, timed, then checked on other inputs against float64."""
    from ops.torch import calls

    seen, checks = [], []
    gate_call, verify_ = known_answer.Gate.__call__, known_answer.verify

    def noting(self, spec, path, data):
        accepted = gate_call(self, spec, path, data)
        seen.append({"module": path.name, "accepted": accepted,
                     **({"refused": self.refused[-1][1].describe(),
                         "through_iree_runtime": _through_runtime(problem, spec, data)} if not accepted else {})})
        return accepted

    def timed(p, run):
        start = time.perf_counter()
        verdict = verify_(p, run)
        checks.append(time.perf_counter() - start)
        return verdict

    known_answer.Gate.__call__, known_answer.verify = noting, timed
    start = time.perf_counter()
    try:
        kernel = executor.launched(problem, calls.host(device), "cuda")
        kernel, outcome = (kernel, "launched") if callable(kernel) else (None, "no plan")
    except known_answer.WrongResultError as error:
        kernel, outcome = None, f"refused every form: {error}"
    finally:
        known_answer.Gate.__call__, known_answer.verify = gate_call, verify_
    record = {"problem": problem.name, "outcome": outcome, "first_use_s": time.perf_counter() - start,
              "check_s": sum(checks), "modules": seen}
    inputs = registry.module(problem).random_inputs(problem, np.random.default_rng(1))
    if kernel is not None:  # the served kernel on other inputs, judged as the check judges (sampled when large)
        results = executor.known_run(kernel, inputs).results
    elif outcome == "no plan":  # IREE's runtime serves it, checked on its load
        try:
            results = executor.known_run(arrays.ready(problem, "cuda"), inputs).results
            record["outcome"] = "no plan: iree.runtime"
        except known_answer.WrongResultError as error:
            record["outcome"], results = f"no plan: iree.runtime refused every form: {error}", None
    else:
        results = None
    if results is not None:
        verdict = known_answer.judge(problem, inputs, results)
        record["served_worst"] = verdict.worst
        record["within_tolerance"] = verdict.passed
    return record


def _through_runtime(problem, spec, data: bytes) -> str:
    """A module the launcher's check refused, run through IREE's runtime instead: the same verdict or not."""
    function = runtime.loaded_function(spec, data, "cuda", runtime.get_device("cuda"))
    inputs = known_answer.inputs_for(problem)
    return known_answer.judge(problem, inputs, arrays.known_run(function, problem, inputs).results).describe()


def run(sets: list[str], out: str | None) -> int:
    import torch

    device = torch.device("cuda", torch.cuda.current_device())
    results = {}
    for name in sets:
        records = [check_on_gpu(problem, device) for problem in problems(name)]
        results[name] = records
        refused = [r for r in records if "refused every form" in r["outcome"]]
        passed_over = [r for r in records if any(not m["accepted"] for m in r["modules"])]
        wrong = [r for r in records if r.get("within_tolerance") is False]
        checks = [r["check_s"] for r in records if r["check_s"]]  # 0: a verdict recalled, or no plan
        print(f"\n== {name}: {len(records)} problems; a module refused by its check in {len(passed_over)}, every form "
              f"refused in {len(refused)}; served results outside tolerance: {len(wrong)}")
        if checks:
            slowest = max(records, key=lambda r: r["check_s"])
            print(f"   check time: median {statistics.median(checks):.3f} s, max {max(checks):.3f} s ({slowest['problem']})")
        for r in passed_over + wrong:
            print(f"   {r['problem']}: {r['outcome']}; modules {r['modules']}; served: {r.get('served_worst')} x tolerance")
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="catalog,wrong,bf16")
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    return prepare(sets, args.jobs) if args.prepare else run(sets, args.json)


if __name__ == "__main__":
    sys.exit(main())
