"""Each CK/zoo problem (batch 1, float32) whose CPU module this change replaced: the previous module against the new
one, interleaved in one process (medians of 7, ms). ``previous_module_keys.json`` holds the previous code's module
keys (commit 80ed8ac, ``policy.module_specs`` of each problem); its modules must be in the cache (a run of
``build_tools.bench`` with that code puts them there).

    PYTHONPATH=. python docs/perf/cpu-step/changed_modules.py
"""
import json, time, statistics, numpy as np, sys
from pathlib import Path
import ops
from ops import catalog, policy, targets, compiler, runtime, registry
T = targets.parse_target("llvm-cpu"); dev = runtime.get_device("local-task")
before = json.load(open(Path(__file__).with_name("previous_module_keys.json")))
version = compiler.compiler_version()
cache = compiler.cache_dir() / "llvm-cpu"
rng = np.random.default_rng(0)
rows = []
for suite in ("ck_examples", "zoo"):
    for op, name, _ in catalog.problems(suite):
        p = catalog.problem(op, name, suite, batch=1, dtype="float32")
        new = policy.module_specs(p, T)[0]
        old_key = before.get(f"llvm-cpu|{p.name}")
        if old_key is None:
            continue
        # the module the previous code shipped: its first spec (snapshot taken with the previous code)
        if new.key(version) == old_key[0]:
            continue
        old_path = cache / f"{p.name}-{old_key[0][:16]}.vmfb"
        if not old_path.exists():
            print("no old module for", name, file=sys.stderr); continue
        mod = registry.module(p)
        ins = [ops.to_device(a, "local-task") for a in mod.random_inputs(p, rng)]
        outs = [ops.to_device(np.zeros(s, dtype=d), "local-task") for s, d in mod.results(p)]
        fns = [runtime.loaded_function(new, old_path.read_bytes(), "local-task", dev),
               runtime.loaded_function(new, compiler.find_or_compile(new).read_bytes(), "local-task", dev)]
        ts = [[], []]
        for f in fns: f(*ins, *outs)
        for _ in range(7):
            for i, f in enumerate(fns):
                s = time.perf_counter(); f(*ins, *outs); ts[i].append(time.perf_counter() - s)
        b, a = (1e3 * statistics.median(t) for t in ts)
        rows.append((suite, op, name, b, a))
        print(f"| {suite} | {op} | {name} | {b:.2f} | {a:.2f} | {b/a:.2f}× |", flush=True)
