#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-469937d06316b013.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-469937d06316b013.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-469937d06316b013.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_weight_1d_nwc_float16_n1_g3_c5_k2_i3_f1_s3_d3_p1_0-469937d06316b013.vmfb
