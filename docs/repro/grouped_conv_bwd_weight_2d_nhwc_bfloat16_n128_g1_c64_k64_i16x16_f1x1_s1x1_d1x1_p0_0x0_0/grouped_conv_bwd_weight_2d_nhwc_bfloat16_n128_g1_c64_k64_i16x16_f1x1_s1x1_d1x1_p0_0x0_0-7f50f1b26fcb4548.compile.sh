#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-7f50f1b26fcb4548.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-7f50f1b26fcb4548.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-7f50f1b26fcb4548.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_weight_2d_nhwc_bfloat16_n128_g1_c64_k64_i16x16_f1x1_s1x1_d1x1_p0_0x0_0-7f50f1b26fcb4548.vmfb
