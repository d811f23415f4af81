#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_3d_ndhwc_float16_n3_g2_c4_k3_i5x6x5_f1x1x1_s3x3x3_d1x3x1_p2_1x2_0x2_1-1c722ce8c6f21c78.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_3d_ndhwc_float16_n3_g2_c4_k3_i5x6x5_f1x1x1_s3x3x3_d1x3x1_p2_1x2_0x2_1-1c722ce8c6f21c78.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_3d_ndhwc_float16_n3_g2_c4_k3_i5x6x5_f1x1x1_s3x3x3_d1x3x1_p2_1x2_0x2_1-1c722ce8c6f21c78.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_3d_ndhwc_float16_n3_g2_c4_k3_i5x6x5_f1x1x1_s3x3x3_d1x3x1_p2_1x2_0x2_1-1c722ce8c6f21c78.vmfb
