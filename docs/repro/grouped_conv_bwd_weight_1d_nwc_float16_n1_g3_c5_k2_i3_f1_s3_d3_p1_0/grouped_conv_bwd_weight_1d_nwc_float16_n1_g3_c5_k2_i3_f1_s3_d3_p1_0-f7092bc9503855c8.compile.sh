#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-f7092bc9503855c8.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --compile-to=hal -o grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-f7092bc9503855c8.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-f7092bc9503855c8.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 -o grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-f7092bc9503855c8.vmfb
