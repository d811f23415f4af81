#!/bin/sh
set -e
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-f2680a6a29a6d142.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external --compile-to=hal -o avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-f2680a6a29a6d142.hal.mlir
iree-compile --compile-from=hal avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-f2680a6a29a6d142.hal.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 --iree-execution-model=async-external -o avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-f2680a6a29a6d142.vmfb
