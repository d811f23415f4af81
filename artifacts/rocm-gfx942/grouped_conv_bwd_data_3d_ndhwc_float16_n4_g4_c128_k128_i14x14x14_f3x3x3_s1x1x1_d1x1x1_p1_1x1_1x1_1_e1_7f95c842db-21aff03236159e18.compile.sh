#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-21aff03236159e18.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o grouped_conv_bwd_data_3d_ndhwc_float16_n4_g4_c128_k128_i14x14x14_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1_e1_7f95c842db-21aff03236159e18.vmfb
