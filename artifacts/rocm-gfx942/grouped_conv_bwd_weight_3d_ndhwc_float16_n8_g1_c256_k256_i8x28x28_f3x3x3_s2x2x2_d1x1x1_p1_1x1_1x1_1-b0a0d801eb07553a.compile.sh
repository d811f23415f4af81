#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-b0a0d801eb07553a.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-b0a0d801eb07553a.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-b0a0d801eb07553a.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-b0a0d801eb07553a.vmfb
