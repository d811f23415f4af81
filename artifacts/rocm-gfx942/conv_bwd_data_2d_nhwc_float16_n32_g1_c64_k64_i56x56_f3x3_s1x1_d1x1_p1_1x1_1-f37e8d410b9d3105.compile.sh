#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-f37e8d410b9d3105.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-f37e8d410b9d3105.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-f37e8d410b9d3105.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n32_g1_c64_k64_i56x56_f3x3_s1x1_d1x1_p1_1x1_1-f37e8d410b9d3105.vmfb
