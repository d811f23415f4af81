#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_1d_nwc_float16_n1_g1_c5_k4_i7_f3_s3_d2_p0_2_e1_11628b21cd-70a10f037092e26e.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o grouped_conv_bwd_data_1d_nwc_float16_n1_g1_c5_k4_i7_f3_s3_d2_p0_2_e1_11628b21cd-70a10f037092e26e.hal.mlir
iree-compile --compile-from=hal grouped_conv_bwd_data_1d_nwc_float16_n1_g1_c5_k4_i7_f3_s3_d2_p0_2_e1_11628b21cd-70a10f037092e26e.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --iree-codegen-llvmgpu-use-igemm=false -o grouped_conv_bwd_data_1d_nwc_float16_n1_g1_c5_k4_i7_f3_s3_d2_p0_2_e1_11628b21cd-70a10f037092e26e.vmfb
