#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1-839df7f45d325b29.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1-839df7f45d325b29.hal.mlir
iree-compile --compile-from=hal conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1-839df7f45d325b29.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o conv_bwd_data_2d_nhwc_float32_n32_g1_c256_k256_i28x28_f3x3_s2x2_d1x1_p1_1x1_1-839df7f45d325b29.vmfb
