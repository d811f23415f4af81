"""IREE's batch_matmul of each per_image(_nn) weight gradient's per-image shape in layer_bench's models (batch, M, K,
N; grad_out's or the columns' matrix transposed where marked), with IREE's default configuration and with a few
pinned ones (distribution (M, N), vector (M rows, N columns, K)): whole modules through iree-benchmark-module on 2
workers, median of 5 (ms). Run in a scratch directory:

    python docs/perf/cpu-step/tenth/matmul_sweep.py
"""
import subprocess
C = "iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host".split()
SHAPES = [(16, 128, 64, 64, False), (128, 72, 64, 8, True), (16, 64, 256, 64, False), (16, 64, 256, 32, False),
          (128, 36, 256, 4, True), (16, 32, 256, 32, False), (16, 32, 1024, 27, False), (4, 288, 128, 32, False),
          (16, 108, 1024, 8, False), (4, 81, 8192, 16, False), (16, 64, 64, 64, False), (16, 576, 64, 64, False),
          (16, 288, 64, 64, False), (16, 288, 256, 32, False), (16, 147, 1024, 32, False), (16, 144, 64, 32, False),
          (16, 144, 256, 24, False), (16, 96, 256, 24, False), (16, 96, 1024, 16, False)]
def src(b, m, k, n, bt, cfg):
    btype = f"tensor<{b}x{n}x{k}xf32>" if bt else f"tensor<{b}x{k}x{n}xf32>"
    maps = "indexing_maps = [affine_map<(b, m, n, r) -> (b, m, r)>, affine_map<(b, m, n, r) -> (b, n, r)>, affine_map<(b, m, n, r) -> (b, m, n)>]" if bt else ""
    head, attr = "", ""
    if cfg:
        d, v = cfg
        head = f"""#config = #iree_cpu.lowering_config<distribution = [1, {d[0]}, {d[1]}, 0], vector_common_parallel = [1, {v[0]}, {v[1]}, 0], vector_reduction = [0, 0, 0, {v[2]}]>
#translation = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>
#compilation = #iree_codegen.compilation_info<lowering_config = #config, translation_info = #translation>
"""
        attr = "{compilation_info = #compilation}"
    out = f"tensor<{b}x{m}x{n}xf32>"
    return head + f"""func.func @main(%a: tensor<{b}x{m}x{k}xf32>, %bb: {btype}) -> {out} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {out}
  %f = linalg.fill ins(%z : f32) outs(%e : {out}) -> {out}
  %r = linalg.batch_matmul {maps} {attr} ins(%a, %bb : tensor<{b}x{m}x{k}xf32>, {btype}) outs(%f : {out}) -> {out}
  return %r : {out}
}}""", [f"{b}x{m}x{k}xf32", (f"{b}x{n}x{k}xf32" if bt else f"{b}x{k}x{n}xf32")]
def t(text, ins):
    open("s.mlir", "w").write(text)
    r = subprocess.run(C + ["s.mlir", "-o", "s.vmfb"], capture_output=True, text=True)
    if r.returncode: return None
    out = subprocess.run(["iree-benchmark-module", "--module=s.vmfb", "--function=main", "--device=local-task", "--task_topology_max_group_count=2", "--benchmark_repetitions=5"] + [f"--input={i}=1" for i in ins], capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if "real_time_median" in l]
    v = line[0].split()
    return float(v[1]) * (1e-3 if v[2] == "us" else 1)
def divs(x, hi): return [d for d in range(1, hi + 1) if x % d == 0]
for b, m, k, n, bt in SHAPES:
    base = t(*src(b, m, k, n, bt, None))
    res = {}
    rows = [r for r in divs(m, 12) if r >= 4] or [m if m < 4 else max(divs(m, 12))]
    cols = [c for c in (16, 32) if n % c == 0] or [n]
    for r in rows[-2:]:
        for c in cols:
            dist_m = max(d for d in divs(m, 64) if d % r == 0)
            res[(dist_m, r, c)] = t(*src(b, m, k, n, bt, ((dist_m, n), (r, c, 16))))
    best = min((v, key) for key, v in res.items() if v)
    print(f"{(b, m, k, n, bt)!s:32s} default {base:.3f} ms  " + "  ".join(f"{key}:{v:.3f}" if v else f"{key}:fail" for key, v in res.items()) + f"  best {base / best[0]:.2f}x", flush=True)
