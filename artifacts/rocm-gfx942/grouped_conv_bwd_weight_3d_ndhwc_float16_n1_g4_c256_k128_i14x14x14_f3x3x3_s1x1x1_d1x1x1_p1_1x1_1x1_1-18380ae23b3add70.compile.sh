#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-18380ae23b3add70.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-18380ae23b3add70.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-18380ae23b3add70.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-18380ae23b3add70.vmfb
