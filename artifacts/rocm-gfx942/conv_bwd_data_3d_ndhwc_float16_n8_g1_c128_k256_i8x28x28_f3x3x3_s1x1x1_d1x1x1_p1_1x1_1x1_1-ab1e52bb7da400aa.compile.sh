#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_3d_ndhwc_float16_n8_g1_c128_k256_i8x28x28_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-ab1e52bb7da400aa.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c128_k256_i8x28x28_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-ab1e52bb7da400aa.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_3d_ndhwc_float16_n8_g1_c128_k256_i8x28x28_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-ab1e52bb7da400aa.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c128_k256_i8x28x28_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-ab1e52bb7da400aa.vmfb
