#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_2d_nchw_bfloat16_n128_g1_c128_k64_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-5544c2ac978cecae.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_weight_2d_nchw_bfloat16_n128_g1_c128_k64_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-5544c2ac978cecae.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_2d_nchw_bfloat16_n128_g1_c128_k64_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-5544c2ac978cecae.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_weight_2d_nchw_bfloat16_n128_g1_c128_k64_i8x8_f1x1_s1x1_d1x1_p0_0x0_0-5544c2ac978cecae.vmfb
