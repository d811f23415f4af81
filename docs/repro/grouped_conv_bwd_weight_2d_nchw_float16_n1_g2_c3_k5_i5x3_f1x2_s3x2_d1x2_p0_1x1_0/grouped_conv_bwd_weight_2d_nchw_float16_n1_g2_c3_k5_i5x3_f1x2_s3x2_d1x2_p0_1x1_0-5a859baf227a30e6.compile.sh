#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-5a859baf227a30e6.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-5a859baf227a30e6.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-5a859baf227a30e6.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_weight_2d_nchw_float16_n1_g2_c3_k5_i5x3_f1x2_s3x2_d1x2_p0_1x1_0-5a859baf227a30e6.vmfb
