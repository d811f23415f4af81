# The shipped max-pooling backward of resnext2d's stem pool (candidates form, 16x32x32x32, 3x3 s2 p1, float32, NCHW:
# mp_plain.mlir, rendered by ops.operators.maxpool2d.render) with other vector tiles on its grid generic, each
# timed whole by iree-benchmark-module on 2 workers (median of 5). Run in a folder holding mp_plain.mlir:
#     python -c "from ops.operators import maxpool2d as m; p = m.problem_from_params(batch=16, channels=32, \
#       input_spatial=(32, 32), kernel_size=3, stride=2, padding=1, layout='NCHW', dtype='float32'); \
#       open('mp_plain.mlir', 'w').write(m.render(p, m.Form(windows='candidates')))"
#     bash docs/perf/cpu-step/twelfth/maxpool_bwd_tiles.sh
# Output (this session): default 0.554 ms; [1,1,1,1,8,2] 0.613; [1,1,1,1,16,2] 0.567; [1,1,1,2,16,2] 0.653;
# [1,1,2,2,16,2] 0.633.
set -e
flags="--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host"
# grid dims (n, c, q_h, r_h, q_w, r_w) = 16x32x16x2x16x2
for v in "default" "1, 1, 1, 1, 8, 2" "1, 1, 1, 1, 16, 2" "1, 1, 1, 2, 16, 2" "1, 1, 2, 2, 16, 2"; do
  if [ "$v" = "default" ]; then cp mp_plain.mlir v.mlir; else
    python3 - "$v" <<'PY'
import sys
v = sys.argv[1]
s = open("mp_plain.mlir").read()
ci = ("attrs = {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
      f"distribution = [2, 32, 16, 2, 16, 2], vector_common_parallel = [{v}]>, translation_info = "
      "#iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>} {")
old = "outs(%grid_dst : tensor<16x32x16x2x16x2xf32>) {"
assert old in s
open("v.mlir", "w").write(s.replace(old, "outs(%grid_dst : tensor<16x32x16x2x16x2xf32>) " + ci))
PY
  fi
  iree-compile v.mlir $flags -o v.vmfb
  fn=$(grep -o 'func.func @[a-z_0-9]*' v.mlir | head -1 | sed 's/func.func @//')
  echo -n "[$v] "
  iree-benchmark-module --module=v.vmfb --device=local-task --task_topology_max_group_count=2 --function=$fn \
    --input=16x32x16x16xf32 --input=16x32x16x16xi64 --input=16x32x32x32xf32 --benchmark_repetitions=5 2>&1 | grep median | grep real_time | awk '{print $2, $3}'
done
