#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-af2bd82ee539ddff.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o grouped_conv_bwd_weight_3d_ndhwc_float16_n1_g4_c256_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-af2bd82ee539ddff.vmfb
