#!/bin/bash
# Each dispatch of a module alone: IREE's own per-dispatch benchmarks (--iree-hal-dump-executable-benchmarks-to),
# each timed by iree-benchmark-module on 2 workers (median of 3, us). The times run about 25% above the dispatches'
# share of the whole module's time (each benchmark call is submitted alone), so compare them with each other.
#     docs/perf/cpu-step/tenth/dispatch_times.sh FILE.mlir [extra iree-compile flags]
src=$1; shift
d=/tmp/dispatch_times_$(basename ${src%.mlir}); rm -rf $d; mkdir -p $d
flags="--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --iree-llvmcpu-target-cpu=host"
iree-compile $src $flags "$@" --iree-hal-dump-executable-benchmarks-to=$d -o /dev/null || exit 1
for f in $d/*.mlir; do iree-compile $f $flags "$@" -o ${f%.mlir}.vmfb 2>/dev/null; done
for f in $d/*.vmfb; do
  name=$(grep -o 'func.func @[a-z_0-9]*' ${f%.vmfb}.mlir | head -1 | sed 's/func.func @//; s/.*_dispatch_/dispatch_/')
  echo -n "$name "
  iree-benchmark-module --module=$f --device=local-task --task_topology_max_group_count=2 --batch_size=1 \
    --benchmark_repetitions=3 2>&1 | grep median | grep real_time | awk '{print $2, $3}'
done
