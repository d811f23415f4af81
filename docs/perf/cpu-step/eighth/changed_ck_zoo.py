"""The CK and zoo problems (batch 1, float32) whose CPU module this session changed: the module stop 36 shipped
against this one, interleaved in one process, each checked against the float64 reference (medians of 9 rounds of 5
calls, ms). SPECS is a JSON of each problem's first module spec, dumped with the previous code:

    (cd OLD_TREE && PYTHONPATH=. python -c "$DUMP" /tmp/specs_prev.json)   # DUMP: see dump() below
    PYTHONPATH=. python docs/perf/cpu-step/eighth/changed_ck_zoo.py /tmp/specs_prev.json
"""
import json
import statistics
import sys
import time

import numpy as np

from ops import catalog, compiler, policy, registry, runtime, targets, verify

T = targets.parse_target("llvm-cpu")


def dump(path: str) -> None:
    """Each CK/zoo problem's first CPU module spec (its MLIR and flags), by suite, operator and name."""
    out = {}
    for suite in ("ck_examples", "zoo"):
        for op, name, _ in catalog.problems(suite):
            spec = policy.module_specs(catalog.problem(op, name, suite, batch=1, dtype="float32"), T)[0]
            out[f"{suite}|{op}|{name}"] = {"mlir": spec.mlir, "flags": list(spec.extra_flags)}
    json.dump(out, open(path, "w"))


def main(path: str) -> None:
    previous = json.load(open(path))
    for key, old in previous.items():
        suite, op, name = key.split("|")
        problem = catalog.problem(op, name, suite, batch=1, dtype="float32")
        new = policy.module_specs(problem, T)[0]
        if (new.mlir, list(new.extra_flags)) == (old["mlir"], old["flags"]):
            continue
        module = registry.module(problem)
        inputs = module.random_inputs(problem, np.random.default_rng(0))
        expected = module.reference(problem, inputs)
        arrays = [runtime.to_device(a, "local-task") for a in inputs]
        specs = {"before": compiler.ModuleSpec(problem.name, old["mlir"], T, tuple(old["flags"])), "now": new}
        functions = {label: runtime.load_specs([spec], "local-task") for label, spec in specs.items()}
        (shape, dtype), = module.results(problem)
        outs = {label: runtime.empty(tuple(shape), dtype, "local-task") for label in functions}
        for label, function in functions.items():
            function(*arrays, outs[label])
            assert verify.relative_error(outs[label].to_host(), expected) < 1e-5, (key, label)
        times = {label: [] for label in functions}
        for _ in range(9):
            for label, function in functions.items():
                kept = []
                for _ in range(5):
                    started = time.perf_counter()
                    function(*arrays, outs[label])
                    kept.append(time.perf_counter() - started)
                times[label].append(statistics.median(kept))
        before, now = (1e3 * statistics.median(times[label]) for label in functions)
        print(f"{suite:11s} {name:28s} {problem.name:90s} before {before:8.3f}  now {now:8.3f}  {before / now:5.2f}x",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
