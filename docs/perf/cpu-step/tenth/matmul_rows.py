"""IREE's CPU batch_matmul of the cnn3d stem weight gradient's per-image shape (4 images, M rows = C*F = 81, N = K
= 16, a reduction of 8192 positions) against the same with other row counts: whole modules through
iree-benchmark-module, 2 workers, median of 7 (ms). Run in a scratch directory:

    python docs/perf/cpu-step/tenth/matmul_rows.py
"""
import subprocess

COMPILE = ("iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu "
           "--iree-llvmcpu-target-cpu=host").split()
SHAPES = {"m81": (4, 81, 16, 8192), "m80": (4, 80, 16, 8192), "m84": (4, 84, 16, 8192), "m88": (4, 88, 16, 8192),
          "m96": (4, 96, 16, 8192), "m27": (4, 27, 16, 8192), "m32": (4, 32, 16, 8192), "m1": (4, 1, 16, 8192),
          "m16_n81": (4, 16, 81, 8192), "m81_one_image": (1, 81, 16, 32768)}


def source(b: int, m: int, n: int, k: int) -> str:
    out = f"tensor<{b}x{m}x{n}xf32>"
    return f"""func.func @main(%a: tensor<{b}x{m}x{k}xf32>, %b: tensor<{b}x{k}x{n}xf32>) -> {out} {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : {out}
  %filled = linalg.fill ins(%zero : f32) outs(%empty : {out}) -> {out}
  %r = linalg.batch_matmul ins(%a, %b : tensor<{b}x{m}x{k}xf32>, tensor<{b}x{k}x{n}xf32>) outs(%filled : {out}) -> {out}
  return %r : {out}
}}"""


def median_ms(name: str, b: int, m: int, n: int, k: int) -> str:
    with open(f"{name}.mlir", "w") as f:
        f.write(source(b, m, n, k))
    subprocess.run(COMPILE + [f"{name}.mlir", "-o", f"{name}.vmfb"], check=True)
    out = subprocess.run(["iree-benchmark-module", f"--module={name}.vmfb", "--function=main", "--device=local-task",
                          "--task_topology_max_group_count=2", "--benchmark_repetitions=7",
                          f"--input={b}x{m}x{k}xf32=1", f"--input={b}x{k}x{n}xf32=1"], capture_output=True, text=True)
    line = next(l for l in out.stdout.splitlines() if "real_time_median" in l)
    return " ".join(line.split()[1:3])


for name, shape in SHAPES.items():
    print(f"{name:14s} {'x'.join(map(str, shape)):16s} {median_ms(name, *shape)}", flush=True)
