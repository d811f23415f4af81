#!/bin/sh
cd "$(dirname "$0")"
iree-compile avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-f467e09d6dce7336.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o avgpool3d_bwd_ndhwc_float16_n8_c256_i8x28x28_o4x14x14_k3x3x3_s2x2x2_d1x1x1_p1_1x1_1x1_1-f467e09d6dce7336.vmfb
