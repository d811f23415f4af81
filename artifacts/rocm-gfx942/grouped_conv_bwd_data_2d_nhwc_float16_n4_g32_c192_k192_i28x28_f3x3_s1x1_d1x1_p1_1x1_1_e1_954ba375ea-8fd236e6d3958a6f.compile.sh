#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n4_g32_c192_k192_i28x28_f3x3_s1x1_d1x1_p1_1x1_1_e1_954ba375ea-8fd236e6d3958a6f.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o grouped_conv_bwd_data_2d_nhwc_float16_n4_g32_c192_k192_i28x28_f3x3_s1x1_d1x1_p1_1x1_1_e1_954ba375ea-8fd236e6d3958a6f.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_2d_nhwc_float16_n4_g32_c192_k192_i28x28_f3x3_s1x1_d1x1_p1_1x1_1_e1_954ba375ea-8fd236e6d3958a6f.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n4_g32_c192_k192_i28x28_f3x3_s1x1_d1x1_p1_1x1_1_e1_954ba375ea-8fd236e6d3958a6f.vmfb
