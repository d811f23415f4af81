import os, sys
sys.path.insert(0, "tests")
os.environ.setdefault("OPS_TEST_SEED", "109510330"); os.environ.setdefault("OPS_SWEEP_PROBLEMS", "200")
import test_sweep
import numpy as np
import iree.runtime as rt
from ops import catalog, verify
from ops.operators import grouped_conv_bwd_data as g
op, p = test_sweep.PROBLEMS[71]
m = catalog.OPERATORS[op]
inputs = m.random_inputs(p, np.random.default_rng(1))
ref = m.reference(p, inputs)
args = g.module_arguments(p, inputs)
for name, driver in [(n, d) for n in ("orig", "map", "map2") for d in (sys.argv[1:] or ["cuda", "local-task"])]:
    path = f".gpu/p71_{name}{'_cpu' if driver == 'local-task' else ''}.vmfb"
    dev = rt.get_device(driver)
    inst = rt.VmInstance()
    mod = rt.VmModule.copy_buffer(inst, open(path, "rb").read())
    ctx = rt.SystemContext(vm_modules=[mod], config=rt.Config(device=dev))
    f = ctx.modules.module[p.name]
    dst = rt.asdevicearray(dev, np.full(p.input_shape, np.nan, np.float32))
    got = f(*[np.ascontiguousarray(a) for a in args], dst).to_host()
    print(name, driver, f"{verify.relative_error(got, ref):.2e}")
