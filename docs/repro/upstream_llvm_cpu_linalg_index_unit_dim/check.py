"""Compile module.mlir for llvm-cpu with IREE 3.13 and compare its result with NumPy's (float64):

    python docs/repro/upstream_llvm_cpu_linalg_index_unit_dim/check.py

Prints the largest error against the largest value; a correct compile gives ~1e-7 of it."""

import itertools
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import iree.runtime as rt

HERE = Path(__file__).resolve().parent
N, G, HO = 1, 2, 2  # the module's static shapes: batch 1 (the unit dim), 2 groups, a 2x2 grad_out


def main() -> int:
    with tempfile.TemporaryDirectory() as work:
        vmfb = Path(work) / "m.vmfb"
        subprocess.run(["iree-compile", "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                        "--iree-llvmcpu-target-cpu=host", str(HERE / "module.mlir"), "-o", str(vmfb)], check=True)
        config = rt.Config("local-task")
        context = rt.SystemContext(config=config)
        context.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(vmfb)))
        rng = np.random.default_rng(0)
        grad_out = rng.standard_normal((N, HO, HO, G)).astype(np.float32)
        w = rng.standard_normal((2, 2, 2, 2, G)).astype(np.float32)
        got = np.asarray(context.modules.module["m"](grad_out, w))
    padded = np.zeros((N, HO + 1, HO + 1, G))
    padded[:, :HO, :HO] = grad_out
    expected = np.zeros((N, HO, 2, HO, 2, G))
    for n, i, r, j, q, g, u, v in itertools.product(*(range(k) for k in (N, HO, 2, HO, 2, G, 2, 2))):
        if 0 <= r + 1 - 2 * u < 3 and 0 <= q + 1 - 2 * v < 3:
            expected[n, i, r, j, q, g] += padded[n, i + u, j + v, g] * w[r, u, q, v, g]
    error = np.abs(got - expected).max()
    print(f"largest error {error:.3g} of largest value {np.abs(expected).max():.3g}")
    return 0 if error <= 1e-5 * np.abs(expected).max() else 1


if __name__ == "__main__":
    sys.exit(main())
