#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-a8542d1d9aaedaea.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-a8542d1d9aaedaea.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-a8542d1d9aaedaea.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-a8542d1d9aaedaea.vmfb
