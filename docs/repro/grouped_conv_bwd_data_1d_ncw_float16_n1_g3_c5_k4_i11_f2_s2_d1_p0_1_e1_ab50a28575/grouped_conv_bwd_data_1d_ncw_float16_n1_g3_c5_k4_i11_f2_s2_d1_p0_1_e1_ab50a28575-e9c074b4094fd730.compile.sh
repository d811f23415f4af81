#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_1d_ncw_float16_n1_g3_c5_k4_i11_f2_s2_d1_p0_1_e1_ab50a28575-e9c074b4094fd730.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_data_1d_ncw_float16_n1_g3_c5_k4_i11_f2_s2_d1_p0_1_e1_ab50a28575-e9c074b4094fd730.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_1d_ncw_float16_n1_g3_c5_k4_i11_f2_s2_d1_p0_1_e1_ab50a28575-e9c074b4094fd730.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_data_1d_ncw_float16_n1_g3_c5_k4_i11_f2_s2_d1_p0_1_e1_ab50a28575-e9c074b4094fd730.vmfb
