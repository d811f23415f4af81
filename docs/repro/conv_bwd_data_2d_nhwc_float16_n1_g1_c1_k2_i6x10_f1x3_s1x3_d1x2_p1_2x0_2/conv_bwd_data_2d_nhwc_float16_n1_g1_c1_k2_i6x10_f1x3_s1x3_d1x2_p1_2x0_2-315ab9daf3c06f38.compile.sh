#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n1_g1_c1_k2_i6x10_f1x3_s1x3_d1x2_p1_2x0_2-315ab9daf3c06f38.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --iree-codegen-llvmgpu-use-igemm=false --compile-to=hal -o conv_bwd_data_2d_nhwc_float16_n1_g1_c1_k2_i6x10_f1x3_s1x3_d1x2_p1_2x0_2-315ab9daf3c06f38.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float16_n1_g1_c1_k2_i6x10_f1x3_s1x3_d1x2_p1_2x0_2-315ab9daf3c06f38.hal.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --iree-codegen-llvmgpu-use-igemm=false -o conv_bwd_data_2d_nhwc_float16_n1_g1_c1_k2_i6x10_f1x3_s1x3_d1x2_p1_2x0_2-315ab9daf3c06f38.vmfb
