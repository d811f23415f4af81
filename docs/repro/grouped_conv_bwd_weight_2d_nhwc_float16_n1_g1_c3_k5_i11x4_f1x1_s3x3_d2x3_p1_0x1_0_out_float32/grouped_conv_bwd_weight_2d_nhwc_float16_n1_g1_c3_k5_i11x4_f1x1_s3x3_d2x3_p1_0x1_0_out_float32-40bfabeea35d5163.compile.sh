#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-40bfabeea35d5163.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-40bfabeea35d5163.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-40bfabeea35d5163.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_weight_2d_nhwc_float16_n1_g1_c3_k5_i11x4_f1x1_s3x3_d2x3_p1_0x1_0_out_float32-40bfabeea35d5163.vmfb
