#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-a5133fb090beda32.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external --compile-to=hal -o avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-a5133fb090beda32.hal.mlir
iree-compile --compile-from=hal avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-a5133fb090beda32.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=mi300x --iree-execution-model=async-external -o avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-a5133fb090beda32.vmfb
