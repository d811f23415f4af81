#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-b1aaacafd2ab2f75.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-b1aaacafd2ab2f75.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-b1aaacafd2ab2f75.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-b1aaacafd2ab2f75.vmfb
