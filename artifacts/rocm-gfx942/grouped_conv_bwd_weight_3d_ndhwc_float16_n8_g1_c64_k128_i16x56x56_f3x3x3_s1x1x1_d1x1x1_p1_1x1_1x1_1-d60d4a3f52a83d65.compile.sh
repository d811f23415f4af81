#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-d60d4a3f52a83d65.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-d60d4a3f52a83d65.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-d60d4a3f52a83d65.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c64_k128_i16x56x56_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-d60d4a3f52a83d65.vmfb
