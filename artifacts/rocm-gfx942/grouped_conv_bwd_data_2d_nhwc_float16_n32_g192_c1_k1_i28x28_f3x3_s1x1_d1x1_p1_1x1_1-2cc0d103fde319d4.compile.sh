#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_2d_nhwc_float16_n32_g192_c1_k1_i28x28_f3x3_s1x1_d1x1_p1_1x1_1-2cc0d103fde319d4.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g192_c1_k1_i28x28_f3x3_s1x1_d1x1_p1_1x1_1-2cc0d103fde319d4.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_2d_nhwc_float16_n32_g192_c1_k1_i28x28_f3x3_s1x1_d1x1_p1_1x1_1-2cc0d103fde319d4.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o grouped_conv_bwd_data_2d_nhwc_float16_n32_g192_c1_k1_i28x28_f3x3_s1x1_d1x1_p1_1x1_1-2cc0d103fde319d4.vmfb
