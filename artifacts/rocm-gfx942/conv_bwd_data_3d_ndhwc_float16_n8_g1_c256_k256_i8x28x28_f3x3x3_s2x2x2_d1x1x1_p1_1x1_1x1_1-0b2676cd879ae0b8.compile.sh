#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-0b2676cd879ae0b8.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-0b2676cd879ae0b8.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-0b2676cd879ae0b8.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_3d_ndhwc_float16_n8_g1_c256_k256_i8x28x28_f3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-0b2676cd879ae0b8.vmfb
