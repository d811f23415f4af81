#!/bin/bash
# The cnn3d stem weight gradient's hand-written forms, whole modules through iree-benchmark-module on 2 workers
# (median of 7), two rounds (ms): the shipped per_image_nn form's MLIR (stem_per_image_nn.mlir, its workspace and
# destination arguments removed) against the forms tried in the tenth session.
#     cd docs/perf/cpu-step/tenth && ./module_times.sh
flags="--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host --iree-global-opt-propagate-transposes=false"
forms="stem_per_image_nn stem_kw_shift stem_flat_shift stem_as_conv2d stem_as_conv2d_nchw stem_as_conv3d"
for form in $forms; do iree-compile $form.mlir $flags -o /tmp/$form.vmfb || exit 1; done
for round in 1 2; do
  for form in $forms; do
    function=$(grep -o 'func.func @[a-z_0-9]*' $form.mlir | head -1 | sed 's/func.func @//')
    echo -n "$form "
    iree-benchmark-module --module=/tmp/$form.vmfb --function=$function --device=local-task \
      --task_topology_max_group_count=2 --input=4x3x8x32x32xf32=1 --input=4x16x8x32x32xf32=1 \
      --benchmark_repetitions=7 2>&1 | grep median | grep real_time | awk '{print $2, $3}'
  done
done
