#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1-49cdbe0abea972c8.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops --compile-to=hal -o conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1-49cdbe0abea972c8.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1-49cdbe0abea972c8.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops -o conv_bwd_data_2d_nhwc_float16_n128_g1_c256_k256_i71x71_f3x3_s2x2_d1x1_p1_1x1_1-49cdbe0abea972c8.vmfb
