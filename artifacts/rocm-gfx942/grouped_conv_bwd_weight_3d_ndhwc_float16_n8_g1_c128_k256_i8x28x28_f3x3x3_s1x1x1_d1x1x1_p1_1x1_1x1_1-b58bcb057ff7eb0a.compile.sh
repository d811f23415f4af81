#!/bin/sh
cd "$(dirname "$0")"
iree-compile grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c128_k256_i8x28x28_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-b58bcb057ff7eb0a.mlir --iree-hal-target-device=hip --iree-rocm-target=gfx942 -o grouped_conv_bwd_weight_3d_ndhwc_float16_n8_g1_c128_k256_i8x28x28_f3x3x3_s1x1x1_d1x1x1_p1_1x1_1x1_1-b58bcb057ff7eb0a.vmfb
