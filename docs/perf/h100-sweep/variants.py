"""Build (here, with --build) or run (on the GPU) every module variant of a few sweep problems."""
import json, os, sys
sys.path.insert(0, "tests")
os.environ.setdefault("OPS_TEST_SEED", "109510330"); os.environ.setdefault("OPS_SWEEP_PROBLEMS", "200")
import test_sweep
import numpy as np
from ops import catalog, compiler, runtime, targets, tuning, verify
INDEXES = [2, 71, 110, 181, 0, 3]
cuda = targets.parse_target("cuda:sm_80")
root = os.path.abspath(".gpu/variants")
version = "3.13.0rc20261016"
for i in INDEXES:
    op, p = test_sweep.PROBLEMS[i]
    m = catalog.OPERATORS[op]
    specs = tuning.module_specs(p, m.render_mlir, cuda)
    for j, spec in enumerate(specs):
        from pathlib import Path; d = Path(f"{root}/{i}_{j}")
        if "--build" in sys.argv:
            os.makedirs(d, exist_ok=True)
            json.dump({"compiler_version": version, "modules": []}, open(f"{d}/manifest.json", "w"))
            try:
                compiler.compile_module(spec, spec.path(d, version)); status = "built"
            except compiler.CompileError:
                status = "compile failed"
            print(i, j, status)
            continue
        if not os.path.exists(spec.path(d, version)):
            print(i, j, "not built"); continue
        os.environ["OPS_ARTIFACTS_DIR"] = str(d)
        os.environ["OPS_CACHE_DIR"] = "/tmp/none"
        runtime._functions.clear()
        rng = np.random.default_rng(1)
        inputs = m.random_inputs(p, rng)
        got = m.call(p, inputs, device="cuda")
        err = verify.relative_error(got, m.reference(p, inputs))
        form = "map" if "negative coefficient" in spec.mlir and "%w_0 = linalg.generic {indexing_maps = [affine_map" in spec.mlir and "tensor.extract %weight" not in spec.mlir else "-"
        print(i, j, p.name[:60], spec.extra_flags[-1:] , f"{err:.2e}", "OK" if err <= verify.tolerance(op, p.dtype) else "WRONG")
